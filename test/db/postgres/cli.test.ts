import t from 'tap'
import { cliRunner } from '../../fixtures/cli.ts'
import { POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'

// Engines: both: it asks what the command line does on a PostgreSQL schema alone, so it runs in the PostgreSQL pass alone.
// The administration commands on PostgreSQL (test/cli/admin.test.ts asks their words, options and
// exits in the SQLite pass): a command of several writes is one transaction (SQLite's is
// test/cli/faults.test.ts), and a migration table that is not drizzle's is said.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

t.test('on PostgreSQL a command of several writes is one transaction: user disable', options, async (t) => {
  const { run, query } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  await run(['user', 'add', 'ann@example.test'])
  // The second write of the command fails, as a lost connection or a full disk would fail it.
  await query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes today'; END $$`)
  await query('CREATE TRIGGER refuse BEFORE DELETE ON web_sessions FOR EACH STATEMENT EXECUTE FUNCTION refuse()')
  const result = await run(['user', 'disable', 'ann@example.test'])
  t.equal(result.code, 1)
  t.match(result.stderr, /no deletes today/)
  t.equal(result.stdout, '', 'nothing announced')
  t.same(await query('SELECT disabled FROM users'), [{ disabled: false }], 'the account was not disabled without its sessions ending')
  await query('DROP TRIGGER refuse ON web_sessions')
  t.equal((await run(['user', 'disable', 'ann@example.test'])).stdout, 'user ann@example.test disabled\n')
  t.same(await query('SELECT disabled FROM users'), [{ disabled: true }])
})

t.test('migrate on a PostgreSQL schema whose migration table is not drizzle\'s: it says what failed', options, async (t) => {
  const { run, db, query } = await cliRunner(t, { unmigrated: true })
  const schema = new URL(db).searchParams.get('schema')!
  await query(`CREATE SCHEMA ${schema}`)
  await query(`CREATE TABLE ${schema}.__drizzle_migrations (id integer)`)
  const result = await run(['migrate'])
  t.equal(result.code, 1)
  t.match(result.stderr, /^service-desk: column "created_at" does not exist\n$/)
})
