import t, { type Test } from 'tap'
import { bannerToken, startServer, type RunningServer } from '../fixtures/server.ts'
import { sharedDatabase } from './two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Fair use across real service processes (issue 33; docs/decisions.md, "Fair use"): two
// processes on one database, as an operator runs them behind a proxy, on the suite's engine (one
// SQLite file, or one PostgreSQL schema), enforce one limit between them; a process started again
// finds the window where the others left it.

/** The suite's shared database (two-apps.ts), as the processes' environment. */
async function databaseEnv(t: Test): Promise<Record<string, string>> {
  const { databaseAddress, secret } = await sharedDatabase(t)
  return { SERVICE_DB: databaseAddress, ...(secret === undefined ? {} : { SERVICE_SECRET: secret }) }
}

const site = (server: RunningServer, token: string) =>
  fetch(`http://127.0.0.1:${server.port}/demo`, { headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${token}` } })

t.test('two processes on one database: their 200s add up to the limit, and a restart does not reset the window', async (t) => {
  // A day's window: the test cannot straddle two.
  const env = { ...(await databaseEnv(t)), SERVICE_RATE_LIMIT_READS: '5', SERVICE_RATE_LIMIT_WINDOW: '86400' }
  const one = await startServer(t, env)
  const token = await bannerToken(one)
  const two = await startServer(t, env)

  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => site(i % 2 ? one : two, token)))
  const statuses = answers.map((res) => res.status)
  t.equal(statuses.filter((status) => status === 200).length, 5, `five served between them (${statuses.join(' ')})`)
  t.equal(statuses.filter((status) => status === 429).length, 7)
  const refused = answers.find((res) => res.status === 429)!
  t.match(await refused.json(), { error: 'rate_limited' })
  t.match(refused.headers.get('ratelimit'), /^"reads";r=0;t=\d+$/)

  t.equal(await one.stop(), 0, 'the first process stops cleanly')
  const again = await startServer(t, env)
  t.equal((await site(again, token)).status, 429, 'the process started again finds the window spent')
})
