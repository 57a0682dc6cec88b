import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { V1 } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'

// Engines: one: what SIGTERM and a closing app do to connections and to what is pending (a real process on a SQLite file). Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 6, item 4: SIGTERM stops accepting, lets the request in flight finish, writes the pending
// last-used times, and closes the database.

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test('SIGTERM: no new connections, the request in flight completes, last-used flushed, database closed', { skip: SQLITE_ONLY && 'a real process on a SQLite file, whichever the pass: the SQLite pass runs it' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-shutdown-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const databaseAddress = join(dir, 'service.db')
  const server = await startServer(t, { SERVICE_DB: databaseAddress })
  const token = await bannerToken(server)
  const headers = { authorization: `Bearer ${token}`, accept: V1 }
  const categoryId = ((await (await fetch(`${server.base}/demo/categories`, { headers })).json()) as { categories: { id: number }[] }).categories[0]!.id

  // A create whose body arrives in two halves, with the SIGTERM in between.
  const body = JSON.stringify({ title: 'Sent across the shutdown', body: 'x'.repeat(4000) })
  const socket = connect(server.port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let answer = ''
  socket.on('data', (chunk) => (answer += chunk))
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.write(
    `POST /demo/categories/${categoryId}/discussions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n` +
      `Accept: ${V1}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 100)}`,
  )
  await pause(200)
  server.child.kill('SIGTERM')
  await pause(300)

  await t.rejects(fetch(`${server.base}/healthz`), 'a new connection is refused once shutting down')
  t.equal(server.child.exitCode, null, 'the process waits for the request in flight')
  socket.write(body.slice(100))
  await closed
  t.match(answer, /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight was answered, not cut')
  t.match(answer, /connection: close/i, 'and told the connection is closing')
  t.equal(await server.stop(), 0, 'then the process exits 0')

  t.notOk(existsSync(`${databaseAddress}-wal`), 'the database was closed: its write-ahead log was checkpointed and removed')
  const db = new Database(databaseAddress, { readonly: true })
  t.teardown(() => db.close())
  t.equal(db.prepare("SELECT count(*) FROM discussions WHERE title = 'Sent across the shutdown'").pluck().get(), 1, 'its write is stored')
  t.ok(db.prepare('SELECT last_used_at FROM personal_tokens').pluck().all().some((at) => at !== null), 'the last use of the token was written')
})

t.test('in process: an answer made while the app closes tells its keep-alive client to go', async (t) => {
  const { app, ann, questions } = await discussionApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const body = JSON.stringify({ title: 'Answered while closing', body: 'words' })
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let answer = ''
  socket.on('data', (chunk) => (answer += chunk))
  const ended = new Promise((resolve) => socket.once('close', resolve))
  socket.write(
    `POST /demo/categories/${questions.id}/discussions HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${ann.bearer.authorization}\r\n` +
      `Accept: ${V1}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
  )
  await pause(100)
  const closing = app.close()
  await pause(100)
  socket.write(body.slice(10))
  await ended
  await closing
  t.match(answer, /^HTTP\/1\.1 201 Created\r\n/)
  t.match(answer, /\r\nconnection: close\r\n/i)
})
