import { createServer } from 'node:net'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openPostgres } from '../../../db/postgres/client.ts'
import { openPostgresEngine, postgresEngine } from '../../../db/postgres/engine.ts'
import { unavailableStore } from '../../../lib/database-errors.ts'
import { freshPostgresAddress, POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'
import journal from '../../../db/postgres/migrations/meta/_journal.json' with { type: 'json' }

// The migrations drizzle-kit generated for PostgreSQL (npm run db:generate).
const MIGRATIONS = journal.entries.length

// Opening a PostgreSQL database (db/postgres/client.ts): the pool with the settings asked for, the
// schema made and migrated under an advisory lock, so processes starting together take turns; a
// failed open ends its pool and says why; the health probe reads for real.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

/** Runs one statement on the test server, outside any schema of the service. */
async function direct<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    return (await client.query<R>(text, values)).rows
  } finally {
    await client.end()
  }
}

const schemaOf = (address: string) => new URL(address).searchParams.get('schema')!

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** client.ts with a pg whose pools and clients it makes are kept here, to see whether a failed open ended its own. */
async function recordingClient(t: Test) {
  const pools: pg.Pool[] = []
  const clients: { ended: boolean }[] = []
  class RecordingPool extends pg.Pool {
    constructor(config?: pg.PoolConfig) {
      super(config)
      pools.push(this)
    }
  }
  class RecordingClient extends pg.Client {
    record = { ended: false }
    constructor(config?: pg.ClientConfig) {
      super(config)
      clients.push(this.record)
      this.on('end', () => (this.record.ended = true))
    }
  }
  const client = await t.mockImport<typeof import('../../../db/postgres/client.ts')>('../../../db/postgres/client.ts', {
    pg: { default: Object.create(pg, { Pool: { value: RecordingPool }, Client: { value: RecordingClient } }) },
  })
  return { openPostgres: client.openPostgres, pools, clients }
}

t.test('the pool has the settings asked for, and the tables are in the schema of the address', options, async (t) => {
  const address = await freshPostgresAddress(t)
  const db = await openPostgres(address, { poolSize: 2, statementTimeoutMs: 1_234, connectTimeoutMs: 2_000 })
  t.teardown(() => db.$client.end())
  t.equal(db.$client.options.max, 2)
  t.equal(db.$client.options.connectionTimeoutMillis, 2_000)
  const { rows } = await db.$client.query<{ timeout: string; path: string; name: string }>(
    "SELECT current_setting('statement_timeout') AS timeout, current_setting('search_path') AS path, current_setting('application_name') AS name",
  )
  t.same(rows, [{ timeout: '1234ms', path: schemaOf(address), name: 'service-desk' }])
  const tables = await direct<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [schemaOf(address)])
  t.same(tables.map((r) => r.table_name), ['__drizzle_migrations', 'attachments', 'audit_events', 'categories', 'comments', 'customer_links', 'discussion_changes', 'discussion_counts', 'discussion_merges', 'discussion_search', 'discussion_tags', 'discussions', 'field_values', 'fields', 'file_pieces', 'files', 'idempotency_keys', 'invitations', 'mail_home', 'mail_messages', 'mail_providers', 'mailboxes', 'memberships', 'oauth_records', 'outbox', 'participants', 'personal_token_addresses', 'personal_tokens', 'rate_limit_windows', 'recovery_codes', 'report_days', 'report_times', 'rule_firings', 'rules', 'saved_replies', 'schedules', 'search_backfill', 'second_factors', 'security_events', 'sender_rules', 'sign_in_links', 'sign_in_providers', 'site_file_usage', 'sites', 'sla_policies', 'used_challenges', 'users', 'web_sessions', 'webhook_deliveries', 'webhooks'])

  const defaults = await openPostgres(address)
  t.teardown(() => defaults.$client.end())
  t.equal(defaults.$client.options.max, 10, 'ten connections by default')
  t.equal(defaults.$client.options.connectionTimeoutMillis, 5_000, 'a 5 s wait for one')
  t.same((await defaults.$client.query("SELECT current_setting('statement_timeout') AS timeout")).rows, [{ timeout: '5s' }], 'a 5 s statement timeout')
})

t.test('four engines opening one new schema at once, as four processes starting together: all open it, and it is migrated once', options, async (t) => {
  // Without the lock, CREATE SCHEMA and drizzle's CREATE TABLE of its journal race: most rounds
  // end with "duplicate key value violates unique constraint" for one engine or more.
  for (let round = 0; round < 3; round++) {
    const address = await freshPostgresAddress(t)
    const engines = await Promise.all(Array.from({ length: 4 }, () => openPostgresEngine(address, { poolSize: 1 })))
    t.teardown(() => Promise.all(engines.map((e) => e.close())))
    const migrations = await direct<{ n: number }>(`SELECT count(*)::integer AS n FROM "${schemaOf(address)}".__drizzle_migrations`)
    t.same(migrations, [{ n: MIGRATIONS }], `round ${round}: the ${MIGRATIONS} migrations, applied once`)
    const sites = await Promise.all(engines.map((e, i) => e.sites(Date.now).add(`site-${i}`)))
    t.same(sites.map((s) => s.permalink), ['site-0', 'site-1', 'site-2', 'site-3'], `round ${round}: every engine writes`)
  }
  const address = await freshPostgresAddress(t)
  const first = await openPostgresEngine(address, { poolSize: 1 })
  t.teardown(() => first.close())
  const again = await openPostgresEngine(address, { poolSize: 1 })
  t.teardown(() => again.close())
  t.same(await direct(`SELECT count(*)::integer AS n FROM "${schemaOf(address)}".__drizzle_migrations`), [{ n: MIGRATIONS }], 'a later start migrates nothing')
})

t.test('a server that does not answer: the open fails with the driver\'s error, and no pool is made', options, async (t) => {
  const { openPostgres: open, pools, clients } = await recordingClient(t)
  const error = await open(`postgres://postgres@127.0.0.1:${await closedPort()}/test?schema=nowhere`, { connectTimeoutMs: 2_000 }).catch((e: unknown) => e)
  t.match(error, { code: 'ECONNREFUSED' })
  t.match(unavailableStore(error), { code: 'ECONNREFUSED', retryAfter: 5, body: { error: 'service_unavailable', message: /cannot be reached/ } })
  t.same(pools, [], 'the pool is made only once the schema is migrated')
  t.equal(clients.length, 1, 'the migration\'s connection was tried')
  await t.rejects(openPostgres(`postgres://postgres@127.0.0.1:${await closedPort()}/test`), { code: 'ECONNREFUSED' }, 'the module itself, unmocked')
})

t.test('a migration that fails: the error is thrown, its connection ended with the lock, no pool is made', options, async (t) => {
  const { openPostgres: open, pools, clients } = await recordingClient(t)
  const address = await freshPostgresAddress(t)
  // A schema that holds a table of the same name already, not the service's.
  await direct(`CREATE SCHEMA "${schemaOf(address)}"; CREATE TABLE "${schemaOf(address)}".sites (other text)`)
  const error = await open(address, { poolSize: 1 }).catch((e: unknown) => e)
  t.match(error, { cause: { code: '42P07', message: 'relation "sites" already exists' } })
  t.equal(unavailableStore(error), null, 'no outage: a start that fails for good')
  t.same(pools, [], 'no pool')
  t.same(clients, [{ ended: true }], 'the migration\'s connection ended')
  // The schema's advisory lock went with it: opened again, the migration fails on the table, not on
  // waiting for the lock (which the migration's deadline would end with 57014).
  await t.rejects(openPostgres(address, { poolSize: 1, migrationTimeoutMs: 2_000 }), { cause: { code: '42P07' } }, 'the module itself, unmocked')
})

t.test('a start beside a migration that takes longer than the statement timeout waits for it, up to the migration\'s deadline', options, async (t) => {
  // Another process migrating the schema: a connection holding its lock, as openPostgres takes it.
  const address = await freshPostgresAddress(t)
  const lock = `service-desk migrate ${schemaOf(address)}`
  const other = new pg.Client({ connectionString: POSTGRES_URL })
  await other.connect()
  t.teardown(() => other.end())
  await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lock])
  const started = Date.now()
  const opening = openPostgres(address, { poolSize: 1, statementTimeoutMs: 300 })
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await other.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lock])
  const db = await opening
  t.teardown(() => db.$client.end())
  t.ok(Date.now() - started >= 1_000, 'it waited for the lock, past three statement timeouts')
  t.same(await direct(`SELECT count(*)::integer AS n FROM "${schemaOf(address)}".__drizzle_migrations`), [{ n: MIGRATIONS }], 'then migrated the schema')
  t.same((await db.$client.query("SELECT current_setting('statement_timeout') AS timeout")).rows, [{ timeout: '300ms' }], 'the pool\'s requests keep the statement timeout')

  // A migration that never ends: the start gives up at the migration's deadline, and says why.
  const stuck = await freshPostgresAddress(t)
  const stuckLock = `service-desk migrate ${schemaOf(stuck)}`
  await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [stuckLock])
  const { openPostgres: open, pools, clients } = await recordingClient(t)
  await t.rejects(open(stuck, { migrationTimeoutMs: 500 }), { code: '57014' }, 'cancelled at the migration\'s deadline')
  t.same(pools, [], 'no pool')
  t.same(clients, [{ ended: true }], 'the waiting connection ended')
  t.same(await direct('SELECT count(*)::integer AS n FROM information_schema.schemata WHERE schema_name = $1', [schemaOf(stuck)]), [{ n: 0 }], 'nothing of the schema made')
})

t.test('a schema name that would need quoting is refused before any connection', async (t) => {
  const { openPostgres: open, pools } = await recordingClient(t)
  await t.rejects(open('postgres://postgres@127.0.0.1:1/test?schema=Bad-Name'), { message: 'the schema "Bad-Name" must be lower-case letters, digits and _ (at most 63)' })
  t.same(pools, [], 'no pool was made')
})

t.test('the health probe reads for real: it fails while no connection can be had, and after close', options, async (t) => {
  const engine = await openPostgresEngine(await postgresTestAddress(t), { poolSize: 1 })
  await t.resolves(engine.ping())
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 1, connectTimeoutMs: 500 })
  t.teardown(() => db.$client.end())
  const busy = postgresEngine(db)
  const held = await db.$client.connect()
  const error = await busy.ping().catch((e: unknown) => e)
  t.match(unavailableStore(error), { code: 'connection', retryAfter: 5 }, 'no connection in time: 503')
  held.release()
  await t.resolves(busy.ping(), 'and it answers again once one is free')
  await engine.close()
  await t.rejects(engine.ping(), 'a closed engine does not answer')
})


// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.