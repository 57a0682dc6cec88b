import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { buildTestApp, sqliteOf } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { HEALTH_DEADLINE_MS } from '../../routes/health.ts'
import { webClient, personWithPassword } from '../fixtures/web.ts'

// Engines: both: a database that never answers is answered 503 within the check's own deadline, on each engine's own connection.

function tempFile(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-db-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'service.db')
}

const count = (app: Parameters<typeof sqliteOf>[0], table: string) =>
  sqliteOf(app).$client.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number

t.test('a new database file, and its write-ahead log, are readable by their owner only', { skip: SQLITE_ONLY && 'SQLite faults, made in SQLite itself' }, async (t) => {
  const databaseAddress = join(tempFile(t), '..', 'data', 'service.db')
  const { app } = await buildTestApp(t, { config: { databaseAddress } })
  sqliteOf(app).$client.exec('CREATE TABLE scratch (x)')
  for (const file of [databaseAddress, `${databaseAddress}-wal`]) t.equal(statSync(file).mode & 0o777, 0o600, file)
  t.equal(statSync(join(databaseAddress, '..')).mode & 0o777, 0o700, 'a new data folder is private too')
})

t.test('GET /healthz: 200 while the database answers, 503 when it does not', { skip: SQLITE_ONLY && 'SQLite faults, made in SQLite itself' }, async (t) => {
  const { app } = await buildTestApp(t)
  const ok = await app.inject({ url: '/healthz' })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { status: 'ok', database: 'ok' })
  t.equal(ok.headers['cache-control'], 'no-store')
  t.equal((await app.inject({ method: 'HEAD', url: '/healthz' })).statusCode, 200, 'HEAD for probes that want no body')
  t.equal((await app.inject({ url: '/healthz', headers: { accept: 'application/vnd.service-v2+json' } })).statusCode, 200, 'unversioned')

  sqliteOf(app).$client.close()
  const down = await app.inject({ url: '/healthz' })
  t.equal(down.statusCode, 503)
  t.same(down.json(), { status: 'unavailable', database: 'unavailable' })
  t.equal(down.headers['retry-after'], '5')
})

t.test('GET /healthz: a database that never answers (paused, silent) is answered 503 within the check\'s own deadline, not waited on', async (t) => {
  const { app } = await buildTestApp(t)
  const ping = app.database.ping
  // A read that never ends, as a paused server's.
  app.database.ping = () => new Promise<void>(() => {})
  t.teardown(() => void (app.database.ping = ping))
  const started = Date.now()
  const paused = await app.inject({ url: '/healthz' })
  const took = Date.now() - started
  t.equal(paused.statusCode, 503)
  t.same(paused.json(), { status: 'unavailable', database: 'unavailable' })
  t.ok(took >= HEALTH_DEADLINE_MS - 50 && took < HEALTH_DEADLINE_MS + 1_500, `answered after ${took} ms`)
  app.database.ping = ping
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'and 200 once it answers')
})

t.test("a write meeting another process's lock: 503 with Retry-After after the short wait, nothing half-written", { skip: SQLITE_ONLY && 'SQLite faults, made in SQLite itself' }, async (t) => {
  const databaseAddress = tempFile(t)
  const { app, ann, questions, api } = await discussionApp(t, { config: { databaseAddress }, busyTimeoutMs: 100 })
  const before = count(app, 'discussions')

  const other = new Database(databaseAddress)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const started = Date.now()
  const res = await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Locked out', body: 'words' })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '1')
  t.same(res.json(), { error: 'service_unavailable', message: 'The database is busy. Try again in a moment.' })
  t.ok(Date.now() - started < 4000, 'answered after the busy wait, not hung')
  t.equal((await api('GET', '/demo/discussions')).statusCode, 200, 'reads go on while another process writes')

  other.exec('ROLLBACK')
  t.equal(count(app, 'discussions'), before, 'the refused write left nothing')
  const again = await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Once free', body: 'words' })
  t.equal(again.statusCode, 201, 'the same request succeeds once the lock is gone')
  t.equal(ann.site.permalink, 'demo')
})

t.test('a full disk or an unwritable file: 503 with Retry-After, on the API and on the pages, and the data as it was', { skip: SQLITE_ONLY && 'SQLite faults, made in SQLite itself' }, async (t) => {
  const { app, questions, api, create } = await discussionApp(t)
  const person = await personWithPassword(app)
  const page = webClient(app)
  t.equal((await page.signIn(person.email, person.password)).statusCode, 303)
  await create({ title: 'Before the disk filled' })
  const before = { discussions: count(app, 'discussions'), tokens: count(app, 'personal_tokens') }
  const pages = sqliteOf(app).$client.pragma('page_count', { simple: true }) as number
  sqliteOf(app).$client.pragma(`max_page_count = ${pages}`)

  const res = await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Too much', body: 'x'.repeat(60_000) })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '60')
  t.equal(res.json().error, 'service_unavailable')
  t.match(res.json().message, 'out of storage space')

  // A file that cannot be written (a read-only mount, say), met by the token page.
  sqliteOf(app).$client.pragma('query_only = ON')
  const created = await page.createToken({ name: 'while read-only', access: 'read', expires: '30' })
  t.equal(created.statusCode, 503, 'the token page says so too')
  t.equal(created.headers['retry-after'], '60')
  t.match(created.body, 'The database cannot be written right now.')
  sqliteOf(app).$client.pragma('query_only = OFF')

  t.same({ discussions: count(app, 'discussions'), tokens: count(app, 'personal_tokens') }, before, 'nothing half-written')
  t.equal(sqliteOf(app).$client.pragma('integrity_check', { simple: true }), 'ok')
  t.equal((await api('GET', '/demo/discussions')).statusCode, 200, 'reading still works')
})
