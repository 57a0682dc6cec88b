import { randomBytes } from 'node:crypto'
import t from 'tap'
import { apiCall, bannerToken, startServer } from '../fixtures/server.ts'
import { sharedDatabase } from './two-apps.ts'
import { bannerSignIn, command } from './processes.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Issue 54: a token revoked through one service process is refused by the other's very next
// request, while that other process is busy with the token's own requests: what it shares among
// requests arriving together (db/postgres/arrivals.ts) or remembers (db/sqlite/read-cache.ts) never
// answers a request that started after the revocation committed. Two real processes on one
// database of the suite's engine, a third (the command line) to make the token.

const CONNECTIONS = 16

t.test('a revocation through one process is refused by the next request the other starts, under load', async (t) => {
  const { databaseAddress, secret } = await sharedDatabase(t)
  const env = { SERVICE_DB: databaseAddress, SERVICE_SECRET: secret ?? randomBytes(32).toString('hex'), SERVICE_RATE_LIMIT_READS: '100000000' }
  const one = await startServer(t, env)
  const admin = await bannerToken(one)
  const two = await startServer(t, env)
  const made = await command(['token', 'create', 'demo', bannerSignIn(one).email, '--name', 'under load', '--access', 'read', '--expires', '30'], env)
  t.equal(made.code, 0, made.stderr)
  const value = made.stdout.trim()
  const id = ((await apiCall(one, admin, 'GET', '/demo/credentials')).json.credentials as Array<{ id: string; name: string }>).find((c) => c.name === 'under load')!.id

  // Sixteen clients ask the second process with the token, one request after another each, and
  // note when each request started and how it was answered.
  const answers: Array<{ started: number; status: number }> = []
  let loading = true
  const client = async () => {
    while (loading) {
      const started = performance.now()
      const res = await fetch(`http://127.0.0.1:${two.port}/demo`, { headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${value}` } })
      await res.arrayBuffer()
      answers.push({ started, status: res.status })
    }
  }
  const clients = Array.from({ length: CONNECTIONS }, client)
  while (answers.filter((a) => a.status === 200).length < 200) await new Promise((resolve) => setTimeout(resolve, 10))

  // Revoked through the first process's API: committed when its answer arrives.
  const revoked = await apiCall(one, admin, 'POST', '/demo/credentials/revoke', { ids: [id], reason: 'revoked under load' })
  t.equal(revoked.status, 200)
  const committed = performance.now()
  const seenAfter = answers.length
  while (answers.length < seenAfter + 200) await new Promise((resolve) => setTimeout(resolve, 10))
  loading = false
  await Promise.all(clients)

  const after = answers.filter((a) => a.started > committed)
  t.ok(after.length >= 200, `${after.length} requests started after the revocation committed`)
  t.equal(after.filter((a) => a.status === 200).length, 0, 'none of them answered')
  // Refused as a revoked token (401), then, once the address has spent its failures on it (some
  // by requests under way at the commit), 429.
  t.same([...new Set(after.map((a) => a.status))].filter((status) => status !== 401 && status !== 429), [], 'only refusals')
  t.ok(answers.some((a) => a.status === 401), 'refused as a revoked token')
  t.ok(answers.filter((a) => a.started < committed && a.status === 200).length >= 200, 'the token worked under the same load before')
})
