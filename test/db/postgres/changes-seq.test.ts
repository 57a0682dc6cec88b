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
// The change feed numbers a site's changes from its row (sites.changes_seq, db/stores/changes.ts):
// a database made before that column goes on numbering after the changes it already has.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

// Two sites: one with three changes (of a discussion that is not there: the rows' keys are not checked) (numbered 1, 2 and 5: a number is never given twice, gaps may be), one with none.
const SITES = "INSERT INTO sites (id, permalink, name, multipass_key, created_at) VALUES (1, 'one', 'One', 'k1', $at), (2, 'two', 'Two', 'k2', $at)"
const CHANGES = "INSERT INTO discussion_changes (site_id, seq, kind, discussion_id, comment_id, at) VALUES (1, 1, 'discussion.created', 10, NULL, $at), (1, 2, 'comment.created', 10, 7, $at), (1, 5, 'discussion.updated', 10, NULL, $at)"

t.test('SQLite: a database of the migrations before it numbers each site on from its last change', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'changes-seq-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'desk.db')
  const older = new Database(file)
  migrate(drizzle(older), { migrationsFolder: migrationsBefore(t, resources.migrations, '0038_changes_seq') })
  const at = Date.UTC(2026, 0, 1)
  // The discussions the changes name do not matter here: their keys are not checked.
  older.pragma('foreign_keys = OFF')
  older.prepare(SITES.replaceAll('$at', '@at')).run({ at })
  older.prepare(CHANGES.replaceAll('$at', '@at')).run({ at })
  older.close()
  const db = openDatabase(file)
  t.teardown(() => db.$client.close())
  t.same(db.$client.prepare('SELECT id, changes_seq AS last FROM sites ORDER BY id').all(), [{ id: 1, last: 5 }, { id: 2, last: 0 }])
})

t.test('PostgreSQL: the same', { skip: down }, async (t) => {
  const address = await freshPostgresAddress(t)
  const { connectionString, schema } = parsePostgresAddress(address)
  const client = new pg.Client({ connectionString, options: `-c search_path=${schema}` })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA "${schema}"`)
    await migratePostgres(drizzlePostgres(client), { migrationsFolder: migrationsBefore(t, resources.postgresMigrations, '0037_changes_seq'), migrationsSchema: schema })
    const at = new Date(Date.UTC(2026, 0, 1))
    await client.query("SET session_replication_role = 'replica'")
    await client.query(SITES.replaceAll('$at', '$1'), [at])
    await client.query(CHANGES.replaceAll('$at', '$1'), [at])
  } finally {
    await client.end()
  }
  const db = await openPostgres(address)
  t.teardown(() => db.$client.end())
  const { rows } = await db.$client.query('SELECT id, changes_seq AS last FROM sites ORDER BY id')
  t.same(rows, [{ id: 1, last: 5 }, { id: 2, last: 0 }])
})
