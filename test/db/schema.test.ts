import { is } from '../../db/drizzle.ts'
import { getTableConfig, SQLiteTable } from '../../db/drizzle.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../../db/sqlite/client.ts'
import * as schema from '../../db/schema/sqlite.ts'
import { systemClock } from '../../lib/clock.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('the migrated file matches the schema: every table, index and foreign key', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.$client.close())
  const tables = Object.values(schema).filter((value) => is(value, SQLiteTable))
  t.ok(tables.length >= 5)
  for (const table of tables) {
    const config = getTableConfig(table)
    const indexes = (db.$client.prepare(`PRAGMA index_list(${config.name})`).all() as { name: string }[]).map((i) => i.name)
    for (const index of config.indexes) t.ok(indexes.includes(index.config.name), `${config.name}: index ${index.config.name}`)
    const keys = db.$client.prepare(`PRAGMA foreign_key_list(${config.name})`).all() as { table: string; on_delete: string }[]
    t.equal(keys.length, config.foreignKeys.length, `${config.name}: foreign keys`)
    for (const fk of config.foreignKeys) {
      const target = getTableConfig(fk.reference().foreignTable).name
      const onDelete = (fk.onDelete ?? 'no action').toUpperCase()
      t.ok(keys.some((k) => k.table === target && k.on_delete === onDelete), `${config.name} -> ${target} on delete ${onDelete}`)
    }
  }
})

t.test('the pragmas of decisions: WAL, foreign keys, busy timeout, every commit synced', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.$client.close())
  t.equal(db.$client.pragma('foreign_keys', { simple: true }), 1)
  t.equal(db.$client.pragma('busy_timeout', { simple: true }), 5000, 'a command line waits up to 5 s')
  t.equal(db.$client.pragma('synchronous', { simple: true }), 2, 'FULL')
  const server = openDatabase(':memory:', { busyTimeoutMs: 1000 })
  t.teardown(() => server.$client.close())
  t.equal(server.$client.pragma('busy_timeout', { simple: true }), 1000, 'the server waits less')
})

t.test('a private database is a copy of one migrated once: the schema of a migrated file, and nothing shared with another', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-schema-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = openDatabase(join(dir, 'service.db'))
  const one = openDatabase(':memory:')
  const two = openDatabase(':memory:')
  t.teardown(() => [file, one, two].forEach((db) => db.$client.close()))
  const shape = (db: typeof file) => db.$client.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all()
  t.same(shape(one), shape(file), 'every table, index and trigger of a migrated file')
  const applied = (db: typeof file) => db.$client.prepare('SELECT hash FROM __drizzle_migrations ORDER BY id').all()
  t.same(applied(one), applied(file), 'and every migration recorded as applied')
  t.ok(applied(one).length >= 10)

  one.$client.prepare("INSERT INTO sites (permalink, name, multipass_key, created_at) VALUES ('mine', 'Mine', 'k', 0)").run()
  t.same(one.$client.prepare('SELECT permalink FROM sites').all(), [{ permalink: 'mine' }])
  t.same(two.$client.prepare('SELECT permalink FROM sites').all(), [], 'a row written in one private database is not in another')
  const fresh = openDatabase(':memory:')
  t.teardown(() => fresh.$client.close())
  t.same(fresh.$client.prepare('SELECT count(*) AS n FROM sites').get(), { n: 0 }, 'nor in one opened after it')
})

t.test('the token look-up, the limit count and the per-sender count of mail use their indexes', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.$client.close())
  const plan = (sql: string, ...params: unknown[]) => JSON.stringify(db.$client.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params))
  t.match(plan('SELECT * FROM personal_tokens WHERE fingerprint = ?', 'f'), 'personal_tokens_fingerprint_unique')
  t.match(
    plan('SELECT count(*) FROM personal_tokens WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?', 1, 0),
    'personal_tokens_owner_idx',
  )
  // Each message taken in counts its sender's of the last minute (db/stores/mail.ts, takenFrom): by this index, not every message of the site.
  t.match(plan('SELECT count(*) FROM mail_messages WHERE site_id = ? AND sender = ? AND created_at >= ?', 1, 'carol@customer.example', 0), 'mail_messages_sender_idx')
})

t.test('the system clock is the wall clock', async (t) => {
  const before = Date.now()
  const now = systemClock()
  t.ok(now >= before && now <= Date.now())
})
