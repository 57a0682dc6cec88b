import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { drizzle, migrate } from '../../db/drizzle.ts'
import { resources } from '../../lib/resources.ts'
import { TEST_ENGINE } from '../fixtures/postgres.ts'
import { migrationsBefore, postgresBefore } from '../fixtures/migrations.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The migration that brought the queue's "waiting for the team" (awaiting_team, issue 48) marks
// the discussions already there: those whose newest public comment is a customer's. A database
// migrated to the one before it gets discussions of each kind, then the rest of the migrations.

const BEFORE = { sqlite: '0014_mail_fetch', postgres: '0013_mail_fetch' }

// Four discussions: a customer's unanswered; answered by the team; answered, then a note; the team's own.
const ROWS = `
INSERT INTO sites (id, permalink, name, multipass_key, created_at) VALUES (1, 's', 'S', 'k', $now);
INSERT INTO users (id, email, email_key, name, created_at) VALUES (1, 'c@x.example', 'c@x.example', 'C', $now), (2, 's@x.example', 's@x.example', 'S', $now);
INSERT INTO categories (id, site_id, name, permalink, public, created_at) VALUES (1, 1, 'G', 'g', $true, $now);
INSERT INTO discussions (id, site_id, number, title, permalink, state, public, author_id, category_id, created_at, updated_at, last_updated_at, comments_count)
  VALUES (1, 1, 1, 'a', 'a', 'new', $true, 1, 1, $now, $now, $now, 1), (2, 1, 2, 'b', 'b', 'open', $true, 1, 1, $now, $now, $now, 2),
         (3, 1, 3, 'c', 'c', 'open', $true, 1, 1, $now, $now, $now, 3), (4, 1, 4, 'd', 'd', 'open', $true, 2, 1, $now, $now, $now, 1);
INSERT INTO comments (discussion_id, number, author_id, by_supporter, body, internal, via, created_at) VALUES
  (1, 1, 1, $false, 'x', $false, 'api', $now),
  (2, 1, 1, $false, 'x', $false, 'api', $now), (2, 2, 2, $true, 'x', $false, 'api', $now),
  (3, 1, 1, $false, 'x', $false, 'api', $now), (3, 2, 2, $true, 'x', $false, 'api', $now), (3, 3, 2, $true, 'x', $true, 'api', $now),
  (4, 1, 2, $true, 'x', $false, 'api', $now);
`

t.test('SQLite: the migration marks what is owed an answer', { skip: TEST_ENGINE !== 'sqlite' }, async (t) => {
  const dir = t.testdir({})
  const sqlite = new Database(join(dir, 'old.db'))
  t.teardown(() => sqlite.close())
  migrate(drizzle({ client: sqlite }), { migrationsFolder: migrationsBefore(t, resources.migrations, BEFORE.sqlite) })
  sqlite.exec(ROWS.replaceAll('$now', '0').replaceAll('$true', '1').replaceAll('$false', '0'))
  migrate(drizzle({ client: sqlite }), { migrationsFolder: resources.migrations })
  t.same(sqlite.prepare('SELECT number, awaiting_team AS a FROM discussions ORDER BY number').all(), [{ number: 1, a: 1 }, { number: 2, a: 0 }, { number: 3, a: 0 }, { number: 4, a: 0 }])
})

t.test('PostgreSQL: the migration marks what is owed an answer', { skip: TEST_ENGINE !== 'postgres' }, async (t) => {
  const { client, rest } = await postgresBefore(t, BEFORE.postgres)
  await client.query(ROWS.replaceAll('$now', 'now()').replaceAll('$true', 'true').replaceAll('$false', 'false'))
  await rest()
  t.same((await client.query('SELECT number, awaiting_team AS a FROM discussions ORDER BY number')).rows, [{ number: 1, a: true }, { number: 2, a: false }, { number: 3, a: false }, { number: 4, a: false }])
})
