import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t, { type Test } from 'tap'
import { buildApp } from '../../../app.ts'
import { BASE_URL, rawRowsAt, SITE_URL, testClock } from '../../fixtures/app.ts'
import { addressOf, copyOfTemplate, dropTestDatabase, emptied, onDatabase, POSTGRES_URL, postgresAnswers, pristineOf } from '../../fixtures/postgres.ts'

// Engines: both: it tests the PostgreSQL fixture itself, so it runs in the PostgreSQL pass alone.
// Within npm test a PostgreSQL test's database is handed to a later test of its process, emptied
// (test/fixtures/postgres.ts, docs/development.md "Where the time goes"): what the later test gets
// must be what a fresh copy of the template is, row for row and sequence for sequence, and a
// database whose tables a test changed (a table dropped, a trigger added to make a store fail) is
// never handed out again. A test's statements behind the stores' back go through one session of
// its database, which the emptying ends.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`

/** A new copy of the template, dropped after the test. */
async function copy(t: Test): Promise<string> {
  const name = await copyOfTemplate()
  t.teardown(() => dropTestDatabase(name))
  return name
}

/** A client on the test database `name`, the service's schema first on its path, for `work`. */
function inDesk<T>(name: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  return onDatabase(name, async (client) => {
    await client.query('SET search_path = desk')
    return work(client)
  })
}

/** Every table's rows and every sequence's place, as JSON text: two databases alike give the same. */
function contents(name: string): Promise<string> {
  return inDesk(name, async (client) => {
    const tables = (await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'desk' ORDER BY 1")).rows
    const rows: Record<string, unknown> = {}
    for (const { name: table } of tables) {
      // Without the moments the migrations wrote at copy time, which are the template's in both.
      rows[table] = (await client.query(`SELECT * FROM "${table}" ORDER BY 1`)).rows
    }
    const sequences = (await client.query("SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'desk' ORDER BY 1")).rows
    return JSON.stringify({ rows, sequences })
  })
}

/** An app on the test database `name` that writes a site, its staff, a discussion and a token, then closes. */
async function writeInto(name: string): Promise<number> {
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, databaseAddress: addressOf(name), secret: randomBytes(32).toString('hex'), outboxSend: false }, clock: testClock() })
  try {
    await app.ready()
    const site = await app.sites.add('acme', 'Acme')
    const user = await app.users.insert({ email: 'ann@example.test' }, null)
    await app.users.addStaff(site.id, user.id)
    await app.tokens.create({ siteId: site.id, userId: user.id, name: 'a token', access: 'write', expiresInDays: 30 })
    return site.id
  } finally {
    await app.close()
  }
}

t.test('a database emptied after its test is what a fresh copy is: the same rows, the same sequences, the same ids again', { skip: down }, async (t) => {
  const fresh = await copy(t)
  const used = await copy(t)
  const pristine = await pristineOf(used)
  const before = await contents(fresh)
  t.equal(await contents(used), before, 'two fresh copies are alike')

  t.equal(await writeInto(used), 1)
  t.not(await contents(used), before, 'a test wrote into it')
  t.equal(await emptied(used, pristine), true)
  t.equal(await contents(used), before, 'emptied, it is a fresh copy again: the migrations’ rows back, every other table empty, every sequence where it was')
  t.equal(await writeInto(used), 1, 'and the next test’s first site is site 1 again')
})

t.test('what is still connected to a database is ended before it is emptied', { skip: down }, async (t) => {
  const name = await copy(t)
  const pristine = await pristineOf(name)
  await writeInto(name)
  // A process the test killed may leave a session behind, here one in a transaction holding a row lock.
  const url = new URL(POSTGRES_URL)
  url.pathname = `/${name}`
  const leftover = new pg.Client({ connectionString: url.toString(), options: '-c search_path=desk' })
  await leftover.connect()
  const ended = new Promise<Error>((resolve) => leftover.on('error', resolve))
  await leftover.query('BEGIN')
  await leftover.query('SELECT * FROM sites FOR UPDATE')
  t.equal(await emptied(name, pristine), true, 'emptied, not waiting on the lock')
  t.match((await ended).message, /terminat/, 'the leftover session was ended')
  t.equal(await inDesk(name, async (client) => (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM sites')).rows[0]!.n), 0)
})

t.test('a database whose tables a test changed is never handed out again', { skip: down }, async (t) => {
  const changes = [
    'DROP TABLE idempotency_keys',
    "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no'; END $$; CREATE TRIGGER refuse BEFORE DELETE ON web_sessions FOR EACH STATEMENT EXECUTE FUNCTION refuse()",
    'ALTER TABLE sites ADD COLUMN extra integer',
    'ALTER TABLE comments ALTER COLUMN body DROP NOT NULL',
    'CREATE INDEX extra ON users (email)',
    'CREATE SCHEMA other',
    'REVOKE ALL ON discussions FROM PUBLIC; GRANT SELECT ON discussions TO PUBLIC',
  ]
  for (const change of changes) {
    const name = await copy(t)
    const pristine = await pristineOf(name)
    await inDesk(name, (client) => client.query(change))
    await writeInto(name).catch(() => undefined)
    const sites = () => inDesk(name, async (client) => (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM sites')).rows[0]!.n)
    const written = await sites()
    t.equal(await emptied(name, pristine), false, `refused after: ${change}`)
    t.equal(await sites(), written, 'and left as it was')
  }
})

t.test("a test's statements behind the stores' back share one session of its database, which its emptying ends", { skip: down }, async (t) => {
  const name = await copy(t)
  const session = async () => Number((await rawRowsAt(addressOf(name), 'SELECT pg_backend_pid() AS pid'))[0]!.pid)
  const first = await session()
  t.same(await Promise.all([session(), session()]), [first, first], 'the next statements, side by side too, on the same session')
  t.equal(await emptied(name, await pristineOf(name)), true)
  const next = await session()
  t.not(next, first, "emptied for the next test: the last test's session was ended, and a new one started")
  t.equal(await session(), next, 'and kept for its statements')
})
