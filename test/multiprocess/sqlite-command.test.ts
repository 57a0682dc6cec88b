import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { TEST_ENGINE } from '../fixtures/postgres.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'
import { command } from './processes.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// One service process serves a SQLite file, and the command line changes it beside it: a token the
// command revokes is refused by the running server at once (its read cache sees the file change:
// db/sqlite/read-cache.ts, tested within one process in test/db/sqlite-read-cache.test.ts).

t.test('a token revoked by the command line is refused by the running server at once', {
  skip: TEST_ENGINE !== 'sqlite' && 'a SQLite file shared by real processes: runs in the SQLite run of the suite',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-command-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { SERVICE_DB: join(dir, 'service.db') }
  const server = await startServer(t, env)
  const token = await bannerToken(server)
  const get = () => fetch(`http://127.0.0.1:${server.port}/demo`, { headers: { authorization: `Bearer ${token}` } }).then((res) => res.status)
  t.equal(await get(), 200, 'the first-run token works')
  t.equal(await get(), 200, 'and is remembered')
  const revoked = await command(['token', 'revoke', 'demo', '1'], env)
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(revoked.stdout, /^token 1 \(.*\) revoked\n$/)
  t.equal(await get(), 401, 'refused on the very next request')
  const refused = await command(['token', 'revoke', 'demo', '99'], env)
  t.not(refused.code, 0, 'a command that fails says so')
})
