import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import t from 'tap'
import { drizzle, migrate } from '../../db/drizzle.ts'
import { saveFile } from '../../db/stores/files.ts'
import { resources } from '../../lib/resources.ts'
import { buildTestApp, rawRows } from '../fixtures/app.ts'
import { POSTGRES_URL, TEST_ENGINE } from '../fixtures/postgres.ts'
import { migrationsBefore, postgresBefore } from '../fixtures/migrations.ts'

// Engines: both: each engine keeps the count by its own triggers (the migration site_file_usage).
// The bytes a site's files take, which its space is held against (docs/decisions.md,
// "Attachments"), are one row a site kept by triggers on files: the migration counts the files
// already there, and every insert, naming, move and removal of a file moves it, whoever writes it;
// a file being written (`pending:`) counts nothing. The stores read that row (db/stores/files.ts).

const BEFORE = { sqlite: '0041_site_file_usage', postgres: '0040_site_file_usage' }
const SITES = `
INSERT INTO sites (id, permalink, name, multipass_key, created_at) VALUES (1, 'a', 'A', 'k', $now), (2, 'b', 'B', 'k', $now), (3, 'c', 'C', 'k', $now);
INSERT INTO files (id, site_id, sha256, size, content_type, created_at) VALUES
  (1, 1, 'aa', 100, 'text/plain', $now), (2, 1, 'bb', 250, 'text/plain', $now), (3, 1, 'pending:x', 7, 'text/plain', $now),
  (4, 2, 'aa', 40, 'text/plain', $now);
`
// After the migration, each writer the triggers stand for: a file named, one written and then
// named, one removed, one moved to another site, a site removed with its files.
const CHANGES = [
  ["INSERT INTO files (id, site_id, sha256, size, content_type, created_at) VALUES (5, 3, 'cc', 9, 'text/plain', $now)", { 1: 350, 2: 40, 3: 9 }],
  ["INSERT INTO files (id, site_id, sha256, size, content_type, created_at) VALUES (6, 2, 'pending:y', 0, 'text/plain', $now)", { 1: 350, 2: 40, 3: 9 }],
  ["UPDATE files SET sha256 = 'dd', size = 60 WHERE id = 6", { 1: 350, 2: 100, 3: 9 }],
  ['DELETE FROM files WHERE id = 1', { 1: 250, 2: 100, 3: 9 }],
  ['DELETE FROM files WHERE id = 3', { 1: 250, 2: 100, 3: 9 }],
  ['UPDATE files SET site_id = 3 WHERE id = 2', { 1: 0, 2: 100, 3: 259 }],
  ['DELETE FROM sites WHERE id = 2', { 1: 0, 3: 259 }],
] as const
const AFTER_MIGRATION = { 1: 350, 2: 40 }
const usageOf = (rows: Array<{ site_id: number; bytes: number | string }>) => Object.fromEntries(rows.map((r) => [r.site_id, Number(r.bytes)]))

t.test('SQLite: the migration counts the files there, and the triggers every change after', { skip: TEST_ENGINE !== 'sqlite' }, async (t) => {
  const sqlite = new Database(join(t.testdir({}), 'old.db'))
  t.teardown(() => sqlite.close())
  sqlite.pragma('foreign_keys = ON')
  migrate(drizzle({ client: sqlite }), { migrationsFolder: migrationsBefore(t, resources.migrations, BEFORE.sqlite) })
  sqlite.exec(SITES.replaceAll('$now', '0'))
  migrate(drizzle({ client: sqlite }), { migrationsFolder: resources.migrations })
  const usage = () => usageOf(sqlite.prepare('SELECT site_id, bytes FROM site_file_usage ORDER BY site_id').all() as never)
  t.same(usage(), AFTER_MIGRATION, 'each content once, the half-written one not')
  for (const [statement, expected] of CHANGES) {
    sqlite.exec(statement.replaceAll('$now', '0'))
    t.same(usage(), expected, statement)
  }
})

t.test('PostgreSQL: the migration counts the files there, and the trigger every change after', { skip: TEST_ENGINE !== 'postgres' }, async (t) => {
  const { client, schema, rest } = await postgresBefore(t, BEFORE.postgres)
  await client.query(SITES.replaceAll('$now', 'now()'))
  await rest()
  // Another session whose search_path does not name the schema: the trigger's function finds its table all the same.
  const other = new pg.Client({ connectionString: POSTGRES_URL })
  await other.connect()
  t.teardown(() => other.end())
  const usage = async () => usageOf((await client.query('SELECT site_id, bytes FROM site_file_usage ORDER BY site_id')).rows)
  t.same(await usage(), AFTER_MIGRATION, 'each content once, the half-written one not')
  for (const [statement, expected] of CHANGES) {
    await other.query(`SET search_path = public; ${statement.replaceAll('$now', 'now()').replace(/\b(files|sites)\b/, `"${schema}".$1`)}`)
    t.same(await usage(), expected, statement)
  }
})

t.test("the stores' paths keep it: a file kept, the same content again, an upload discarded or swept, each site its own", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const a = await app.sites.add('a', 'A')
  const b = await app.sites.add('b', 'B')
  const ann = await app.users.insert({ email: 'ann@example.test' }, null)
  const limits = { fileBytes: 1024, siteBytes: 64 }
  const summed = async (siteId: number) => Number((await rawRows(app, `SELECT coalesce(sum(size), 0) AS n FROM files WHERE site_id = ${siteId} AND sha256 NOT LIKE 'pending:%'`))[0]!.n)
  const both = async () => [await app.files.usage(a.id), await app.files.usage(b.id)]
  const agrees = async (expected: number[], what: string) => {
    t.same(await both(), expected, what)
    t.same(await both(), [await summed(a.id), await summed(b.id)], `${what}: the sum of the files`)
  }
  await agrees([0, 0], 'no file yet')
  const one = await saveFile(app.files, { siteId: a.id, uploaderId: ann.id, name: 'one.txt' }, [Buffer.alloc(40, 1)], limits)
  await saveFile(app.files, { siteId: a.id, uploaderId: ann.id, name: 'again.txt' }, [Buffer.alloc(40, 1)], limits)
  await agrees([40, 0], 'a file, and the same content again')
  await saveFile(app.files, { siteId: b.id, uploaderId: ann.id, name: 'b.txt' }, [Buffer.alloc(60, 2)], limits)
  await agrees([40, 60], "the other site's file is the other site's")
  await t.rejects(saveFile(app.files, { siteId: a.id, uploaderId: ann.id, name: 'over.txt' }, [Buffer.alloc(30, 3)], limits), /would pass its space/, "a site's space is its own: the other's 60 bytes do not count")
  await agrees([40, 60], 'a refused file counts nothing')
  const two = await saveFile(app.files, { siteId: a.id, uploaderId: ann.id, name: 'two.txt' }, [Buffer.alloc(20, 4)], limits)
  await agrees([60, 60], 'a second content')
  await app.files.discard(a.id, ann.id, [two.id])
  await agrees([40, 60], 'an upload discarded takes its file')
  clock.advanceDays(2)
  t.same(await app.files.sweep(), { uploads: 3, files: 2 }, 'what no comment took, after a day')
  t.same(one.size, 40)
  await agrees([0, 0], 'swept')
})
