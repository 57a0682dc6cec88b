import { parseArgs } from 'node:util'
import { createHash } from 'node:crypto'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import multipart from '@fastify/multipart'

// The baseline of the file scenarios (tools/bench/files.ts): the bare stack keeping an uploaded
// file in SQLite and sending it back, as one would write it without the service. The house rule:
// it imports none of the project's modules. Each upload is read whole (@fastify/multipart's
// toBuffer), hashed, and kept as one blob row; a download sends the row's blob. No authentication,
// no logging, no limits but the multipart plugin's file size, no type detection.
//
// node tools/bench/.cache/baseline/baseline-files.mjs --db FILE --port N (bundled by servers.ts)

const { values } = parseArgs({ options: { db: { type: 'string' }, port: { type: 'string' }, 'base-url': { type: 'string' }, 'site-url': { type: 'string' } } })
const db = new Database(values.db!)
db.pragma('journal_mode = WAL')
db.exec('CREATE TABLE IF NOT EXISTS bare_files (id INTEGER PRIMARY KEY, name TEXT NOT NULL, sha256 TEXT NOT NULL, bytes BLOB NOT NULL)')
const insert = db.prepare('INSERT INTO bare_files (name, sha256, bytes) VALUES (?, ?, ?)')
const read = db.prepare('SELECT name, sha256, bytes FROM bare_files WHERE id = ?')

const app = Fastify()
await app.register(multipart, { limits: { fileSize: 10 * 1024 * 1024 } })
app.get('/bare', async () => ({ ok: true }))
app.post('/uploads', async (request, reply) => {
  const file = await request.file()
  if (!file) return reply.code(400).send({ error: 'no file' })
  const bytes = await file.toBuffer()
  const { lastInsertRowid } = insert.run(file.filename, createHash('sha256').update(bytes).digest('hex'), bytes)
  return reply.code(201).send({ uploads: [{ id: Number(lastInsertRowid), size: bytes.length }] })
})
app.get('/attachments/:id', async (request, reply) => {
  const row = read.get(Number((request.params as { id: string }).id)) as { name: string; sha256: string; bytes: Buffer } | undefined
  if (!row) return reply.code(404).send({ error: 'not found' })
  return reply.header('content-type', 'application/octet-stream').header('etag', `"${row.sha256}"`).send(row.bytes)
})
await app.listen({ port: Number(values.port), host: '127.0.0.1' })
