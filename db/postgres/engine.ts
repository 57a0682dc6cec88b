import { createHash } from 'node:crypto'
import pg from 'pg'
import type { EventEmitter } from 'node:events'
import { sql, type Column } from '../drizzle.ts'
import { checkEvent, engineOver, siteWatchers, type Engine, type EngineEvents, type SiteChanges } from '../engine.ts'
import { preparedOn, type Executor, type LastStatementsOf, type StorePort } from '../port.ts'
import * as tables from '../schema/postgres.ts'
import type { PostgresOptions } from '../../lib/database-address.ts'
import { drizzlePostgres } from '../drizzle-postgres.ts'
import { guardConnection, openPostgres, pingPostgres, type PgDb } from './client.ts'
import { arrivals, type Arrivals } from './arrivals.ts'
import { createPostgresListing } from './listing.ts'
import { postgresSearch } from './search.ts'

/** The engine over a PostgreSQL database (`postgres://...`), its schema migrated when needed. */
export async function openPostgresEngine(address: string, options: PostgresOptions = {}): Promise<Engine> {
  return postgresEngine(await openPostgres(address, options))
}

export function postgresEngine(db: PgDb): Engine {
  const events = postgresEvents(db.$client)
  const admission = arrivals()
  const port = postgresPort(db, admission)
  return engineOver(port, (on, total) => createPostgresListing(db, on.db, total), {
    sqlite: undefined,
    requestArrived: (admit) => admission.arrived(admit),
    ping: () => pingPostgres(db),
    async place() {
      const query = "SELECT (SELECT system_identifier FROM pg_control_system())::text AS server, (SELECT oid FROM pg_database WHERE datname = current_database())::text AS database, current_schema() AS schema"
      const { server, database, schema } = (await db.$client.query<{ server: string; database: string; schema: string }>(query)).rows[0]!
      return `postgres:${server}/${database}/${schema}`
    },
    events: events.events,
    siteChanges: postgresSiteChanges(events.events),
    async close() {
      await events.close()
      await db.$client.end()
    },
  })
}

/** No failure yet (a work may throw anything, undefined too). */
const NONE = Symbol('none')

/**
 * A transaction on a connection of the pool, given back whatever happens. drizzle's own on a pool
 * (node-postgres, 0.45.4) runs BEGIN before the try whose finally gives the connection back, so a
 * BEGIN that fails (the connection died while it sat idle: a restart, a failover, a silent network
 * past the deadline) keeps its connection lent for good, and after as many as the pool holds the
 * service answers no one until restarted (drizzle-orm#6023, #6241, open; seen here as a test's app
 * that could not close after an outage). The connection goes back to the pool only when it is known
 * good, the transaction committed or its work failed and the rollback went through; otherwise
 * (BEGIN, COMMIT or ROLLBACK failed) it is destroyed, and the pool opens another when asked.
 */
export async function pooledTransaction<T>(pool: pg.Pool, work: (tx: Executor, client: pg.PoolClient) => Promise<T>): Promise<T> {
  // A connection that fails as it opens fails with its socket's error (ECONNRESET from a server or
  // a middlebox that resets it): its cause, as a failed query's is, so that it reads as the
  // database's failure, not a client's that hung up (lib/database-errors.ts).
  const client = await pool.connect().catch((error: unknown) => {
    throw new Error('no connection to the database could be opened', { cause: error })
  })
  let workFailure: unknown = NONE
  let failure: unknown = NONE
  try {
    // drizzle on this one connection: its transaction neither takes nor gives back a connection.
    return await drizzlePostgres({ client }).transaction(async (tx) => {
      try {
        return await work(tx as unknown as Executor, client)
      } catch (error) {
        workFailure = error
        throw error
      }
    })
  } catch (error) {
    failure = error
    throw error
  } finally {
    const good = failure === NONE || failure === workFailure
    // Pipelined for its last statements and those sent together alone (pipelinedOn): idle again now.
    ;(client as unknown as Wire).pipeline = false
    // true: pg-pool destroys the connection rather than keeping it.
    client.release(good ? undefined : true)
  }
}

/** A transaction's connection, the statements and kept things of the pool it came from (`onConnection`), and what runs once it commits. */
interface Lent {
  pool: pg.Pool
  statements: StorePort['prepared']
  kept: StorePort['kept']
  client: pg.ClientBase
  committed: Array<() => void>
  /** The transaction's (or savepoint's) last statements (StorePort.last). */
  last: LastStatementsOf
}

/** What of node-postgres's connection the last statements use: whether it is busy, and its socket. */
interface Wire {
  pipeline: boolean
  readyForQuery: boolean
  _activeQuery: unknown
  _queryQueue: unknown[]
  _sentQueryQueue: unknown[]
  connection: EventEmitter & { stream: { cork(): void; uncork(): void } }
}

/** How many statements the connection has been given and not answered yet. */
const unanswered = (wire: Wire) => (wire._activeQuery ? 1 : 0) + wire._queryQueue.length + wire._sentQueryQueue.length

/**
 * The connection's transaction status ('I', 'T' or 'E') once what it was given is answered:
 * node-postgres gives a failed statement its error when the error arrives, before the server's
 * ready-for-query that carries the status, which may come in a later read of the socket.
 */
async function settledStatus(client: pg.ClientBase): Promise<string | null> {
  const wire = client as unknown as Wire
  // A failed statement is taken off the connection at its error; the connection is not ready until the server says so.
  while (unanswered(wire) > 0 || !wire.readyForQuery) {
    const ended = await new Promise<boolean>((resolve) => {
      const ready = () => settle(false)
      const end = () => settle(true)
      const settle = (gone: boolean) => {
        wire.connection.off('readyForQuery', ready).off('end', end)
        resolve(gone)
      }
      wire.connection.on('readyForQuery', ready).on('end', end)
    })
    if (ended) break
  }
  return client.getTransactionStatus()
}

/**
 * The last statements of a transaction or savepoint (StorePort.last). `send` sends them all at the
 * end of its work, pipelined: the connection, idle then, is switched to node-postgres's pipeline
 * mode (pg 8.23), which writes a statement at once rather than when the one before is answered, so
 * they and the COMMIT (or RELEASE) queued after them reach the server together, and the rows they
 * take are held for the server's time alone. A connection is pipelined only in a transaction that
 * sends such statements (these, and those sent `together`): a pipelined connection ends differently
 * under a failure (it waits for the statements it sent), and the outage handling is written for the
 * usual kind; pooledTransaction switches it back before it gives the connection back. A statement
 * that fails aborts the transaction, whose COMMIT the server then answers as a ROLLBACK without an
 * error: `failure` is its error, which the transaction throws.
 */
function lastStatements() {
  const queued: Array<{ order: string; send: () => Promise<unknown> }> = []
  let sent: Promise<Array<PromiseSettledResult<unknown>>> = Promise.resolve([])
  const inOrder = () => queued.splice(0).sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0))
  const firstFailure = (settled: Array<PromiseSettledResult<unknown>>) => settled.find((r): r is PromiseRejectedResult => r.status === 'rejected')?.reason
  return {
    queue(order: string, send: () => Promise<unknown>): void {
      queued.push({ order, send })
    },
    /** Sends them in their order now, pipelined, and waits for their answers. */
    async now(client: pg.ClientBase): Promise<void> {
      const failed = firstFailure(await Promise.allSettled(pipelinedOn(client, inOrder().map((statement) => statement.send))))
      if (failed !== undefined) throw failed
    },
    /** Sends them in their order (a stable sort: the calls' order within one), with the COMMIT queued next (pipelinedOn); nothing is awaited. */
    send(client: pg.ClientBase): void {
      const statements = inOrder()
      if (statements.length === 0) return
      const wire = client as unknown as Wire
      const before = unanswered(wire)
      sent = Promise.allSettled(pipelinedOn(client, statements.map((statement) => statement.send)))
      // One that awaited before it sent would be sent after the COMMIT queued next: refused, loudly,
      // the transaction rolled back (every one of them runs in the suite's PostgreSQL pass).
      if (unanswered(wire) - before !== statements.length) throw new Error('a last statement must be sent before its first await (db/port.ts, lastly)')
    },
    /** The first of their failures, once all have answered. */
    async failure(): Promise<unknown> {
      return firstFailure(await sent)
    },
  }
}

/**
 * What `sends` send, pipelined on the connection `client` (idle, it is switched to node-postgres's
 * pipeline mode: a statement written at once, not when the one before is answered; pooledTransaction
 * switches it back) and corked until the promises' turn is over, so that they, and any statement
 * queued in that turn (a COMMIT), leave in one write: a write to the socket is a system call that
 * costs as much as the rest of a statement's work in this process. Their answers' promises.
 */
function pipelinedOn(client: pg.ClientBase, sends: Array<() => Promise<unknown>>): Array<Promise<unknown>> {
  const wire = client as unknown as Wire
  if (wire.readyForQuery && wire._queryQueue.length === 0) wire.pipeline = true
  const { stream } = wire.connection
  stream.cork()
  try {
    return sends.map((send) => send())
  } finally {
    process.nextTick(() => stream.uncork())
  }
}

/** Why a transaction whose statement failed, its error caught by its work, is not committed (withLast). */
export const ABORTED = 'a statement of this transaction failed and its work went on: PostgreSQL has aborted it, and it is not committed (catch a statement\'s failure in a savepoint, db/port.ts atomic)'

/**
 * Runs `work` in `transaction` (a transaction or savepoint) with its last statements (`lastStatements`),
 * sent as its work ends; a failure of one of them is the transaction's.
 */
async function withLast<T, C extends pg.ClientBase>(transaction: (work: (tx: Executor, client: C) => Promise<T>) => Promise<T>, work: (tx: Executor, client: C, last: LastStatementsOf) => Promise<T>): Promise<T> {
  const last = lastStatements()
  let result: T
  try {
    result = await transaction(async (tx, client) => {
      const done = await work(tx, client, { queue: last.queue, now: () => last.now(client) })
      // A statement of the work failed and the work caught its error: the server has aborted the
      // transaction, and would answer its COMMIT as a ROLLBACK without an error, the write lost
      // while its caller is told it was made. Refused: the work fails, as its statement did.
      if ((await settledStatus(client)) === 'E') throw new Error(ABORTED)
      last.send(client)
      return done
    })
  } catch (error) {
    // A savepoint's RELEASE fails after a statement of its own failed: that one is the cause.
    throw (await last.failure()) ?? error
  }
  const failed = await last.failure()
  if (failed !== undefined) throw failed
  return result
}

/**
 * The port of the shared stores (db/port.ts) on the pool (which admits the requests that arrive), or
 * on a transaction of it: `lent`, its connection and the pool's statements, when the pool's port
 * opened it (`atomic`); a transaction opened elsewhere (a test's, the seeder's) builds its own.
 */
export function postgresPort(q: Executor, admission?: Arrivals, lent?: Lent): StorePort {
  // drizzle keeps what it runs on as $client: the pool of the engine, or nothing on a transaction.
  const { $client } = q as { $client?: unknown }
  const pool = $client instanceof pg.Pool ? $client : undefined
  // Built once for the pool's life; a transaction of the pool (and its savepoints) runs them on its connection.
  const statements = lent?.statements ?? preparedOn(q)
  const kept = lent?.kept ?? (preparedOn(q) as StorePort['kept'])
  const prepared = lent ? onConnection(lent) : statements
  const port: StorePort = {
    kind: 'postgres',
    db: q,
    tables,
    // On the pool, a connection of its own that goes back whatever happens (pooledTransaction), and
    // what waited for its commit run after; in a transaction, a savepoint on its connection, whose
    // own waiting work joins the transaction's once it is released.
    async atomic<T>(work: (port: StorePort) => Promise<T>): Promise<T> {
      if (pool) {
        const committed: Array<() => void> = []
        const result = await withLast<T, pg.PoolClient>((inner) => pooledTransaction(pool, inner), (tx, client, last) => work(postgresPort(tx, undefined, { pool, statements, kept, client, committed, last })))
        for (const run of committed) run()
        return result
      }
      if (!lent) return q.transaction((tx) => work(postgresPort(tx)))
      const committed: Array<() => void> = []
      const result = await withLast<T, pg.ClientBase>((inner) => q.transaction((tx) => inner(tx as unknown as Executor, lent.client)), (tx, _client, last) => work(postgresPort(tx, undefined, { ...lent, committed, last })))
      lent.committed.push(...committed)
      return result
    },
    locked: (select, table) => select.for('no key update', table && { of: table }) as typeof select,
    prepared,
    wide: (value) => sql`${value}::bigint`,
    moment: (at) => at,
    flag: (value) => value,
    inByteOrder: (column: Column) => sql`${column} COLLATE "C"`,
    // lower() under the "C" collation folds the ASCII letters only, as COLLATE NOCASE does.
    folded: (column: Column) => sql`lower(${column} COLLATE "C")`,
    remember: (load) => load,
    // In a transaction, or on a pool no server admits requests to, all calls are one generation: a
    // read is shared only while it is under way (the command line, which calls none).
    onArrival: (loadMany) => (admission ?? arrivals()).batched(loadMany),
    anyOf: (column: Column, name: string) => sql`${column} = any(${sql.placeholder(name)})`,
    list: plannedOnce,
    guard: (store) => store,
    search: postgresSearch(q, prepared),
    kept,
    onCommitted: lent ? (run) => void lent.committed.push(run) : pool ? (run) => run() : () => {},
    ...(lent && { last: lent.last, together: (sends: Array<() => Promise<unknown>>) => Promise.all(pipelinedOn(lent.client, sends)) }),
  }
  return port
}

/**
 * PostgreSQL takes an array bound to a statement for ten values (its estimate of a parameter's
 * length): told of fewer, its plan for those few looks cheaper than the one it keeps, so it plans the
 * statement again at every call (a custom plan: 0.2-0.35 ms of its CPU for the authentication's read,
 * docs/decisions.md, "Plans that are made once"). A list of fewer is filled up to ten with its first
 * value, which `= any(...)` matches as before: planned once on each connection.
 */
const ARRAY_PLANNED = 10
export function plannedOnce<V extends string | number>(values: readonly V[]): readonly V[] {
  return values.length === 0 || values.length >= ARRAY_PLANNED ? values : [...values, ...Array<V>(ARRAY_PLANNED - values.length).fill(values[0]!)]
}

/**
 * `prepared` in a transaction of the pool: the statement the pool built, run on the transaction's
 * connection, a copy of it whose client is that connection (drizzle's prepared query runs on its
 * `client`; its text, parameters and mapping are the pool's, built once). Building a statement was
 * a third of a write's CPU in the service's process when each transaction built its own
 * (docs/development.md, "Statements built once"). A statement that does not run on the pool's
 * connections is refused, loudly: a drizzle that kept its connection elsewhere would fail every
 * write of the suite's PostgreSQL pass here, not run on the pool behind the transaction's back.
 */
function onConnection({ pool, statements, client }: Lent): StorePort['prepared'] {
  const copies = new Map<string, unknown>()
  return <S>(name: string, build: (db: Executor) => S): S => {
    let copy = copies.get(name)
    if (!copy) {
      const statement = statements(name, build) as { client?: unknown }
      if (statement.client !== pool) throw new Error(`the statement ${name} does not run on the pool's connections, so it cannot run on a transaction's`)
      copies.set(name, (copy = Object.create(statement, { client: { value: client } })))
    }
    return copy as S
  }
}

/**
 * The sites' changes on PostgreSQL: the trigger of migration 0016 (sites_version_changed) NOTIFYs
 * the site's id on the channel `site_changes` at each commit that moved its version, whichever
 * process or command made it; this process listens on its events connection once anything watches.
 */
function postgresSiteChanges(events: EngineEvents): SiteChanges {
  const watchers = siteWatchers()
  let listening = false
  return {
    watch(siteId, handler) {
      const stop = watchers.add(siteId, handler)
      if (!listening) {
        listening = true
        // When the database cannot be reached now, the events connection keeps trying and listens once it can.
        events.subscribe('site_changes', (payload) => watchers.fire(Number(payload))).catch(() => {})
      }
      return stop
    },
  }
}

type Handler = (payload: string) => void

// After a broken connection the events client tries again after this pause, doubled at each
// failure up to the most.
export const EVENTS_RETRY_FIRST_MS = 100
export const EVENTS_RETRY_MOST_MS = 5_000

/**
 * The engine's events (db/engine.ts) as LISTEN/NOTIFY, on one connection of their own, opened when
 * first used (the command line never opens it) with the pool's settings: a LISTEN holds its
 * connection, which the pool could not lend to a request. Broken, it is opened again after a pause
 * and listens again; what was published meanwhile is lost. NOTIFY delivers in the order of commit,
 * the same for every listener, and to the publishing connection too.
 */
function postgresEvents(pool: pg.Pool): { events: EngineEvents; close(): Promise<void> } {
  const handlers = new Map<string, Handler[]>()
  let client: pg.Client | undefined
  let opening: Promise<pg.Client> | undefined
  let schema = ''
  let retryMs = 0
  let retry: NodeJS.Timeout | undefined
  let closed = false

  // Channels belong to the whole database; the schema in the name keeps apart the services (and
  // the tests) that share one database in schemas of their own. A name holds 63 bytes at most.
  function nameOf(channel: string) {
    const name = `${channel}:${schema}`
    return Buffer.byteLength(name) <= 63 ? name : `${channel}:${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`
  }
  const listen = (connection: pg.Client, channel: string) => connection.query(`LISTEN "${nameOf(channel).replaceAll('"', '""')}"`)

  // One statement at a time on the connection (pg no longer queues them), in the order asked.
  let tail: Promise<unknown> = Promise.resolve()
  function inTurn<T>(work: (connection: pg.Client) => Promise<T>): Promise<T> {
    const turn = tail.then(async () => work(await connection()))
    tail = turn.catch(() => {})
    return turn
  }

  function deliver(name: string, payload: string) {
    // Only the channels that have handlers are listened to.
    for (const handler of handlers.get(name.slice(0, name.indexOf(':')))!) queueMicrotask(() => handler(payload))
  }

  async function open(): Promise<pg.Client> {
    const next = new pg.Client({ ...pool.options, password: pool.options.password, application_name: 'service-desk events', keepAlive: true })
    next.on('notification', (message) => deliver(message.channel, message.payload as string))
    // Broken, or silent past a statement's deadline (destroyed then): opened again.
    guardConnection(next, () => lost(next))
    next.on('end', () => lost(next))
    try {
      await next.connect()
      schema = (await next.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]!.schema
      for (const channel of handlers.keys()) await listen(next, channel)
      if (closed) throw new Error('the database is closed')
    } catch (error) {
      void next.end().catch(() => {})
      throw error
    }
    client = next
    retryMs = 0
    return next
  }

  function connection(): Promise<pg.Client> {
    if (closed) return Promise.reject(new Error('the database is closed'))
    if (client) return Promise.resolve(client)
    return (opening ??= open().finally(() => (opening = undefined)))
  }

  function lost(broken: pg.Client) {
    if (client !== broken) return
    client = undefined
    void broken.end().catch(() => {})
    reconnect()
  }

  /** Opens the connection again after a pause, while anything listens. */
  function reconnect() {
    if (closed || handlers.size === 0) return
    clearTimeout(retry)
    retryMs = Math.min(retryMs * 2 || EVENTS_RETRY_FIRST_MS, EVENTS_RETRY_MOST_MS)
    retry = setTimeout(() => void connection().catch(reconnect), retryMs)
    retry.unref()
  }

  return {
    events: {
      async publish(channel, payload) {
        checkEvent(channel, payload)
        await inTurn((connection) => connection.query('SELECT pg_notify($1, $2)', [nameOf(channel), payload]))
      },
      async subscribe(channel, handler) {
        checkEvent(channel)
        handlers.set(channel, [...(handlers.get(channel) ?? []), handler])
        try {
          await inTurn((connection) => listen(connection, channel))
        } catch (error) {
          reconnect()
          throw error
        }
      },
    },
    async close() {
      closed = true
      clearTimeout(retry)
      await Promise.resolve(opening).catch(() => {})
      const last = client
      client = undefined
      if (last) await last.end()
    },
  }
}
