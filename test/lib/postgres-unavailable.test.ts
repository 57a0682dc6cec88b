import { connect, createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import type pg from 'pg'
import { sql } from '../../db/drizzle.ts'
import { openPostgres, type PgDb } from '../../db/postgres/client.ts'
import { pooledTransaction } from '../../db/postgres/engine.ts'
import { unavailableStore } from '../../lib/database-errors.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// PostgreSQL's "not now" (docs/decisions.md, "PostgreSQL", Unavailable): what lib/database-errors.ts
// answers 503 with Retry-After, and what it leaves to the error handler. The errors are real ones,
// from the test server and node-postgres, wherever a test can provoke them; the rest (a full disk,
// a crash, a server starting) are built with the code PostgreSQL gives them.

const BUSY = { retryAfter: 1, body: { error: 'service_unavailable', message: 'The database is busy. Try again in a moment.' } }
const DOWN = { retryAfter: 5, body: { error: 'service_unavailable', message: 'The database cannot be reached right now. Try again in a moment.' } }
const FULL = { retryAfter: 60, body: { error: 'service_unavailable', message: 'The server is out of storage space, so nothing can be saved right now.' } }

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code })
/** As drizzle throws a failed query: its own error, the driver's as the cause. */
const wrapped = (cause: unknown) => new Error('Failed query: select 1\nparams: ', { cause })

t.test('each code of PostgreSQL that means "not now" is 503, at the top or as the cause', async (t) => {
  const cases: [string, object][] = [
    ['40001', BUSY], // serialization_failure
    ['40P01', BUSY], // deadlock_detected
    ['55P03', BUSY], // lock_not_available
    ['57014', BUSY], // query_canceled (statement_timeout)
    ['53300', BUSY], // too_many_connections
    ['57P01', DOWN], // admin_shutdown
    ['57P02', DOWN], // crash_shutdown
    ['57P03', DOWN], // cannot_connect_now
    ['25006', DOWN], // read_only_sql_transaction
    ['53100', FULL], // disk_full
    ['ECONNREFUSED', DOWN],
    ['08000', DOWN], // connection_exception, and the whole class 08
    ['08003', DOWN],
    ['08006', DOWN],
    ['08P01', DOWN],
  ]
  for (const [code, answer] of cases) {
    t.same(unavailableStore(withCode(code)), { code, ...answer }, code)
    t.same(unavailableStore(wrapped(withCode(code))), { code, ...answer }, `${code} as the cause of drizzle's error`)
  }
})

t.test('a socket error is an outage only as the cause of a failed query: a client that hangs up is none', async (t) => {
  for (const code of ['ECONNRESET', 'ETIMEDOUT', 'EPIPE']) {
    t.equal(unavailableStore(withCode(code)), null, `${code} by itself`)
    t.same(unavailableStore(wrapped(withCode(code))), { code, ...DOWN }, `${code} under a failed query`)
  }
})

t.test('node-postgres errors without a code are known by their message, at the top or as the cause', async (t) => {
  for (const message of ['timeout exceeded when trying to connect', 'Connection terminated unexpectedly', 'Connection terminated', 'Client has encountered a connection error and is not queryable']) {
    t.same(unavailableStore(new Error(message)), { code: 'connection', ...DOWN }, message)
    t.same(unavailableStore(wrapped(new Error(message))), { code: 'connection', ...DOWN }, `${message}, as the cause`)
  }
  t.same(unavailableStore(withCode('XX999', 'Connection terminated')), { code: 'XX999', ...DOWN }, 'an unknown code keeps its name in the log')
  t.equal(unavailableStore(new Error('the query said: Connection terminated')), null, 'only a message that starts so')
})

t.test('anything else is not "not now": the error handler answers it', async (t) => {
  for (const code of ['23505', '23503', '42P01', '42601', '22P02', 'XX000', '3D000', '28P01', 'ENOTFOUND']) {
    t.equal(unavailableStore(withCode(code)), null, code)
    t.equal(unavailableStore(wrapped(withCode(code))), null, `${code} as the cause`)
  }
  t.equal(unavailableStore(new Error('Failed query: select 1')), null, 'no cause')
  t.equal(unavailableStore(undefined), null)
  t.equal(unavailableStore({ code: 40001 }), null, 'a code is a string')
  t.equal(unavailableStore(withCode('SQLITE_CONSTRAINT', 'Connection terminated')), null, "SQLite's codes are SQLite's")
})

t.test('the causes are followed two deep, and a chain that loops ends', async (t) => {
  t.same(unavailableStore(wrapped(wrapped(withCode('57014')))), { code: '57014', ...BUSY })
  t.equal(unavailableStore(wrapped(wrapped(wrapped(withCode('57014'))))), null, 'three deep is past the look')
  const loop = new Error('a', { cause: new Error('b') })
  ;(loop.cause as Error).cause = loop
  t.equal(unavailableStore(loop), null)
})

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

/** A pool on a fresh schema that has a table `t` of two rows. */
async function database(t: Test, options: Parameters<typeof openPostgres>[1] = {}) {
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 3, ...options })
  t.teardown(() => db.$client.end())
  await db.$client.query('CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL); INSERT INTO t VALUES (1, 0), (2, 0)')
  return db
}

/** One connection of the pool, for the test alone. */
async function connection(t: Test, db: PgDb): Promise<pg.PoolClient> {
  const client = await db.$client.connect()
  t.teardown(() => client.release(true))
  return client
}

/** The server process running `SELECT pg_sleep(...)` with `marker` in it, once it is asleep. */
async function sleeper(db: PgDb, marker: string): Promise<number> {
  for (;;) {
    const { rows } = await db.$client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE $1 AND pid <> pg_backend_pid()",
      [`%${marker}%`],
    )
    if (rows[0]) return rows[0].pid
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * A pool of one connection on a fresh schema, through a relay of the test's in front of the server:
 * `cut()` resets the connections open now; after `reset(true)`, a new one is reset as it opens.
 */
async function relayed(t: Test) {
  const { hostname, port } = new URL(POSTGRES_URL)
  const sockets = new Set<Socket>()
  let resetting = false
  const relay = createServer((client) => {
    if (resetting) return void client.resetAndDestroy()
    const upstream = connect(Number(port || 5432), hostname)
    sockets.add(client)
    for (const s of [client, upstream]) s.on('error', () => s.destroy())
    client.on('close', () => (upstream.destroy(), sockets.delete(client)))
    upstream.on('close', () => client.destroy())
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => relay.close(resolve)))
  const address = new URL(await postgresTestAddress(t))
  address.hostname = '127.0.0.1'
  address.port = String((relay.address() as { port: number }).port)
  const db = await openPostgres(address.toString(), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  return {
    db,
    cut: () => {
      for (const socket of sockets) socket.resetAndDestroy()
    },
    /** Whether a new connection is reset as it opens. */
    reset: (now: boolean) => void (resetting = now),
  }
}

t.test('real failures from a real server', { skip: down }, async (t) => {
  t.test('a server that is not there: ECONNREFUSED, no cause needed', async (t) => {
    const error = await openPostgres(`postgres://postgres@127.0.0.1:${await closedPort()}/test`, { connectTimeoutMs: 2_000 }).catch((e: unknown) => e)
    t.match(error, { code: 'ECONNREFUSED' })
    t.same(unavailableStore(error), { code: 'ECONNREFUSED', ...DOWN })
  })

  t.test("a statement past its timeout: 57014 under drizzle's error", async (t) => {
    // The pool's one connection, its timeout cut short after the migration (which it would cut).
    const db = await database(t, { poolSize: 1 })
    await db.$client.query("SET statement_timeout = '20ms'")
    const error = await db.execute(sql`SELECT pg_sleep(2)`).catch((e: unknown) => e)
    t.match(error, { query: 'SELECT pg_sleep(2)', cause: { code: '57014', message: /statement timeout/ } }, "drizzle's error, the driver's as its cause")
    t.same(unavailableStore(error), { code: '57014', ...BUSY })
    t.same((await db.execute(sql`SELECT 1 AS one`)).rows, [{ one: 1 }], 'the pool serves the next one')
  })

  t.test('no free connection in time: the pool gives up waiting', async (t) => {
    const db = await database(t, { poolSize: 1, connectTimeoutMs: 500 })
    await connection(t, db)
    const error = await db.execute(sql`SELECT 1`).catch((e: unknown) => e)
    t.same(unavailableStore(error), { code: 'connection', ...DOWN })
    t.match(error, { cause: { message: /^timeout exceeded when trying to connect/ } })
  })

  t.test('the server ends the connection (a restart, a failover): 57P01, then "Connection terminated"', async (t) => {
    const db = await database(t)
    const victim = await connection(t, db)
    victim.on('error', () => {})
    const running = victim.query('SELECT pg_sleep(5) -- terminated').catch((e: unknown) => e)
    await db.$client.query('SELECT pg_terminate_backend($1)', [await sleeper(db, '-- terminated')])
    const error = await running
    t.match(error, { code: '57P01' })
    t.same(unavailableStore(error), { code: '57P01', ...DOWN })
    const after = await victim.query('SELECT 1').catch((e: unknown) => e)
    t.same(unavailableStore(after), { code: 'connection', ...DOWN }, (after as Error).message)
  })

  t.test('a connection closed under a running query: "Connection terminated"', async (t) => {
    const db = await database(t)
    const client = await db.$client.connect()
    const running = client.query('SELECT pg_sleep(5)').catch((e: unknown) => e)
    client.release(true)
    const error = await running
    t.match(error, { message: /^Connection terminated/ })
    t.same(unavailableStore(error), { code: 'connection', ...DOWN })
  })

  t.test('the network cut under a query: ECONNRESET as the cause of the failed query', async (t) => {
    const { db, cut } = await relayed(t)
    const watcher = await database(t)
    const running = db.execute(sql`SELECT pg_sleep(5) -- cut`).catch((e: unknown) => e)
    await sleeper(watcher, '-- cut')
    cut()
    const error = await running
    t.match(error, { query: 'SELECT pg_sleep(5) -- cut', cause: { code: 'ECONNRESET' } })
    t.same(unavailableStore(error), { code: 'ECONNRESET', ...DOWN })
    t.same((await db.execute(sql`SELECT 1 AS one`)).rows, [{ one: 1 }], 'the pool reconnects')
  })

  t.test('a connection reset as it opens (a restart, a middlebox): ECONNRESET as the cause of the transaction that could not begin', async (t) => {
    const relay = await relayed(t)
    const { db } = relay
    // The pool's connection cut while idle, and every new one reset as it opens.
    relay.reset(true)
    relay.cut()
    while (db.$client.totalCount > 0) await new Promise((resolve) => setTimeout(resolve, 5))
    const error = await pooledTransaction(db.$client, async () => 'begun').catch((e: unknown) => e)
    t.match(error, { cause: { code: 'ECONNRESET' } })
    t.same(unavailableStore(error), { code: 'ECONNRESET', ...DOWN }, 'an outage, not a client that hung up')
    relay.reset(false)
    t.equal(await pooledTransaction(db.$client, async () => 'begun'), 'begun', 'the pool opens a good one once the server takes it again')
  })

  t.test('a lost serialization race, a deadlock, a lock not had in time: 40001, 40P01, 55P03', async (t) => {
    const db = await database(t)
    const [a, b] = [await connection(t, db), await connection(t, db)]

    await a.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
    await a.query('SELECT * FROM t')
    await b.query('UPDATE t SET v = v + 1 WHERE id = 1')
    const lost = await a.query('UPDATE t SET v = v + 1 WHERE id = 1').catch((e: unknown) => e)
    await a.query('ROLLBACK')
    t.same(unavailableStore(lost), { code: '40001', ...BUSY }, (lost as Error).message)

    await a.query('BEGIN')
    await b.query('BEGIN')
    await a.query('UPDATE t SET v = v + 1 WHERE id = 1')
    await b.query('UPDATE t SET v = v + 1 WHERE id = 2')
    const crossed = await Promise.all([
      a.query('UPDATE t SET v = v + 1 WHERE id = 2').catch((e: unknown) => e),
      b.query('UPDATE t SET v = v + 1 WHERE id = 1').catch((e: unknown) => e),
    ])
    await a.query('ROLLBACK')
    await b.query('ROLLBACK')
    const deadlock = crossed.find((r) => r instanceof Error)
    t.equal(crossed.filter((r) => r instanceof Error).length, 1, 'one of the two is chosen to fail')
    t.same(unavailableStore(deadlock), { code: '40P01', ...BUSY }, (deadlock as Error).message)

    await a.query('BEGIN')
    await a.query('SELECT * FROM t WHERE id = 1 FOR UPDATE')
    await b.query('BEGIN')
    await b.query("SET LOCAL lock_timeout = '20ms'")
    const waited = await b.query('SELECT * FROM t WHERE id = 1 FOR UPDATE').catch((e: unknown) => e)
    await b.query('ROLLBACK')
    await a.query('ROLLBACK')
    t.same(unavailableStore(waited), { code: '55P03', ...BUSY }, (waited as Error).message)
  })

  t.test('a server that cannot be written (a standby): 25006', async (t) => {
    const db = await database(t)
    const error = await db.transaction(async (tx) => {
      await tx.execute(sql`SET TRANSACTION READ ONLY`)
      await tx.execute(sql`UPDATE t SET v = 1`)
    }).catch((e: unknown) => e)
    t.match(error, { cause: { code: '25006' } })
    t.same(unavailableStore(error), { code: '25006', ...DOWN })
  })

  t.test('a mistake is no outage: a unique violation, a missing table, bad syntax', async (t) => {
    const db = await database(t)
    for (const statement of [sql`INSERT INTO t VALUES (1, 0)`, sql`SELECT * FROM no_such_table`, sql`SELEC 1`]) {
      const error = await db.execute(statement).catch((e: unknown) => e)
      t.match(error, { query: String, cause: { code: /^[0-9A-Z]{5}$/ } })
      t.equal(unavailableStore(error), null, (error as { cause: Error }).cause.message)
    }
  })
})
