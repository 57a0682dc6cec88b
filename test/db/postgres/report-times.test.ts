import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import t from 'tap'
import { drizzle, migrate } from '../../../db/drizzle.ts'
import { drizzlePostgres, migratePostgres } from '../../../db/drizzle-postgres.ts'
import { openDatabase } from '../../../db/sqlite/client.ts'
import { openPostgres } from '../../../db/postgres/client.ts'
import { parsePostgresAddress } from '../../../lib/database-address.ts'
import { resources } from '../../../lib/resources.ts'
import { freshPostgresAddress, POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'
import { migrationsBefore } from '../../fixtures/migrations.ts'

// Engines: both: it migrates a database of each engine in one process, so it runs in the PostgreSQL pass alone.
// The reports' times were histograms kept whole in their day rows (JSON of bucket to count); they
// are one row a bucket now (report_times, db/stores/reports.ts). A database made before keeps every
// count of every bucket, and its day rows lose the columns.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

const SITES = "INSERT INTO sites (id, permalink, name, multipass_key, created_at) VALUES (1, 'one', 'One', 'k1', $at)"
// Two day rows: one with times in three histograms (the JSON as each engine wrote it, spaced or not), one with none.
const DAYS = `INSERT INTO report_days (site_id, dimension, day, key, created, first_reply, first_reply_business, resolution, resolution_business) VALUES
  (1, 'all', '2026-11-02', '', 3, '{"5": 2, "130": 1}', '{"5":3}', '{}', '{"960": 1, "1024": 4}'),
  (1, 'tag', 'M2026-11', 'billing', 1, '{}', '{}', '{}', '{}')`
const TIMES = 'SELECT dimension, day, key, timing, bucket, count FROM report_times ORDER BY dimension, day, key, timing, bucket'
const EXPECTED = [
  { dimension: 'all', day: '2026-11-02', key: '', timing: 'first_reply', bucket: 5, count: 2 },
  { dimension: 'all', day: '2026-11-02', key: '', timing: 'first_reply', bucket: 130, count: 1 },
  { dimension: 'all', day: '2026-11-02', key: '', timing: 'first_reply_business', bucket: 5, count: 3 },
  { dimension: 'all', day: '2026-11-02', key: '', timing: 'resolution_business', bucket: 960, count: 1 },
  { dimension: 'all', day: '2026-11-02', key: '', timing: 'resolution_business', bucket: 1024, count: 4 },
]
const DAY_COLUMNS = ['site_id', 'dimension', 'day', 'key', 'created', 'resolved', 'reopened', 'replies', 'first_replies', 'sla_kept', 'sla_breached', 'rated_good', 'rated_bad']

t.test('SQLite: a database of the migrations before it keeps every bucket of every histogram, one row each', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'report-times-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'desk.db')
  const older = new Database(file)
  migrate(drizzle(older), { migrationsFolder: migrationsBefore(t, resources.migrations, '0039_report_times') })
  older.prepare(SITES.replaceAll('$at', '@at')).run({ at: Date.UTC(2026, 0, 1) })
  older.prepare(DAYS).run()
  older.close()
  const db = openDatabase(file)
  t.teardown(() => db.$client.close())
  t.same(db.$client.prepare(TIMES).all(), EXPECTED)
  t.same((db.$client.prepare('PRAGMA table_info(report_days)').all() as Array<{ name: string }>).map((c) => c.name), DAY_COLUMNS)
  t.same(db.$client.prepare('SELECT key, created FROM report_days ORDER BY key').all(), [{ key: '', created: 3 }, { key: 'billing', created: 1 }], 'the day rows themselves stay')
})

t.test('PostgreSQL: the same', { skip: down }, async (t) => {
  const address = await freshPostgresAddress(t)
  const { connectionString, schema } = parsePostgresAddress(address)
  const client = new pg.Client({ connectionString, options: `-c search_path=${schema}` })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA "${schema}"`)
    await migratePostgres(drizzlePostgres(client), { migrationsFolder: migrationsBefore(t, resources.postgresMigrations, '0038_report_times'), migrationsSchema: schema })
    await client.query(SITES.replaceAll('$at', '$1'), [new Date(Date.UTC(2026, 0, 1))])
    await client.query(DAYS)
  } finally {
    await client.end()
  }
  const db = await openPostgres(address)
  t.teardown(() => db.$client.end())
  t.same((await db.$client.query(TIMES)).rows, EXPECTED)
  const columns = await db.$client.query("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'report_days' ORDER BY ordinal_position")
  t.same(columns.rows.map((c: { column_name: string }) => c.column_name), DAY_COLUMNS)
  t.same((await db.$client.query('SELECT key, created FROM report_days ORDER BY key')).rows, [{ key: '', created: 3 }, { key: 'billing', created: 1 }], 'the day rows themselves stay')
})
