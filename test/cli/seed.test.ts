import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'
import { POSTGRES_URL, postgresAnswers } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// `service-desk seed` writes the same rows on both engines for the same seed (db/sqlite/seed.ts on
// SQLite, db/postgres/seed.ts on PostgreSQL, both drawing from db/stores/seed.ts): the benchmarks compare the engines on the
// same data. One database of each, the same commands, then every row compared.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)

/** A value as both engines can agree on: a moment as milliseconds, a flag as 0 or 1, a count as a number. */
function plain(value: unknown): unknown {
  if (value instanceof Date) return value.getTime()
  if (typeof value === 'boolean') return Number(value)
  return value
}

const TABLES: Array<[string, string]> = [
  ['users', 'id, email, email_key, name, disabled, created_at, legacy_token_expires_at'],
  ['memberships', 'site_id, user_id, role, created_at'],
  ['categories', 'id, site_id, name, permalink, public, created_at'],
  ['discussions', 'id, site_id, number, title, permalink, state, state_before_delete, public, author_id, category_id, created_at, updated_at, last_updated_at, comments_count, awaiting_team, channel, sla_policy_id, sla_reply_since, sla_first_replied_at, first_reply_due_at, next_reply_due_at, due_at, sla_breached, sla_told, sla_alert_at'],
  ['comments', 'id, discussion_id, number, author_id, by_supporter, body, internal, via, created_at'],
  ['discussion_counts', 'site_id, category_id, state, public, count'],
]

t.test('the same seed gives the same rows on SQLite and on PostgreSQL, batch after batch', { skip: down }, async (t) => {
  const sqlite = await cliRunner(t, { engine: 'sqlite' })
  const postgres = await cliRunner(t, { engine: 'postgres' })
  const outputs = []
  for (const side of [sqlite, postgres]) {
    const said: string[] = []
    const run = async (argv: string[], stdin?: string) => {
      const result = await side.run(argv, { stdin })
      t.equal(result.code, 0, `${side.engine}: ${argv.join(' ')}: ${result.stderr}`)
      said.push(result.stdout.replace(/ in \d+\.\d s\n$/, '\n'))
    }
    await run(['site', 'add', 'demo'])
    // More than one batch; no supporter yet, so the seed makes one.
    await run(['seed', 'demo', '--discussions', '2100', '--seed', '3'])
    // The site's own supporters answer now, and the numbers and customers go on.
    await run(['user', 'add', 'ann@example.test', '--password-stdin'], 'correct horse battery')
    await run(['staff', 'add', 'demo', 'ann@example.test'])
    await run(['category', 'add', 'demo', 'Another'])
    await run(['seed', 'demo', '--discussions', '30', '--seed', '4'])
    outputs.push(said)
  }
  t.same(outputs[1], outputs[0], 'the commands said the same')
  for (const [table, columns] of TABLES) {
    const read = async (side: typeof sqlite) =>
      (await side.query(`SELECT ${columns} FROM ${table} ORDER BY ${columns.split(', ').slice(0, table === 'discussion_counts' ? 4 : 2).join(', ')}`)).map((row) =>
        Object.values(row).map(plain),
      )
    const [left, right] = [await read(sqlite), await read(postgres)]
    t.ok(left.length > 0, `${table}: ${left.length} rows`)
    t.same(right, left, `${table}: every row the same`)
  }
})
