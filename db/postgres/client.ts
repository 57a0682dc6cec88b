import pg from 'pg'
import { sql } from '../drizzle.ts'
import { drizzlePostgres, migratePostgres, type NodePgDatabase } from '../drizzle-postgres.ts'
import { resources } from '../../lib/resources.ts'
import { parsePostgresAddress, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MIGRATION_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS, type PostgresOptions } from '../../lib/database-address.ts'
import * as schema from '../schema/postgres.ts'

export type PgDb = NodePgDatabase<typeof schema> & { $client: pg.Pool }

/** How long past the statement timeout the client waits for an answer before it gives the connection up: the server's cancel comes first when it got the statement. */
export const QUERY_DEADLINE_MARGIN_MS = 1_000
/** The first TCP keep-alive probe of an idle connection, so a peer gone without a word is noticed. */
const KEEP_ALIVE_MS = 10_000

/** Node-postgres's words when a query's client-side deadline passed (query_timeout). */
const READ_TIMEOUT = 'Query read timeout'

/**
 * The settings every connection of the service is opened with (the pool's and the events
 * connection's, db/postgres/engine.ts): the statement timeout (the server cancels a statement
 * past it), a client-side deadline above it (a server paused or silent never answers at all), TCP
 * keep-alive, and idle_in_transaction_session_timeout (the server rolls back a transaction whose
 * client went silent, and lets its locks go) (docs/decisions.md, "The database's bad moments").
 */
export function connectionSettings(options: PostgresOptions = {}) {
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS
  return {
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + QUERY_DEADLINE_MARGIN_MS,
    idle_in_transaction_session_timeout: 2 * statementTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEP_ALIVE_MS,
  }
}

/**
 * Every connection gets, at its birth (the pool's 'connect'), what keeps its end from ending the process: an error
 * listener of its own (pg-pool takes its idle listener off a connection while it is lent, so a
 * connection that breaks under a request would throw an uncaught error), and a connection whose
 * query passed its client-side deadline is destroyed, so the pool drops it rather than lending a
 * silent connection again.
 */
export function guardConnection(client: pg.Client, onError: (error: Error) => void) {
  client.on('error', onError)
  // The class's query, looked up at each call (not kept from the connection's birth), so that
  // whatever wraps pg.Client.prototype.query later (a test counting statements) still sees it.
  const classQuery = () => Object.getPrototypeOf(client).query as (...args: unknown[]) => unknown
  ;(client as { query: unknown }).query = (...args: unknown[]) => {
    const result = classQuery().apply(client, args)
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if ((error as Error | undefined)?.message === READ_TIMEOUT) (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
      })
    }
    return result
  }
}

// Every process migrates at start; a lock per schema makes the others on that schema wait for the
// first one, while processes on other schemas (tests, several services on one database) go on.
const migrationLock = (schema: string) => `service-desk migrate ${schema}`

/**
 * A pool on the database, its schema brought up to date first (under a lock, so processes take
 * turns). The migration has a connection of its own, outside the pool, with the migration's
 * deadline rather than a request's statement timeout: a process started beside one that is
 * migrating waits for it in the lock, and a slow migration statement (an index on a large table)
 * is not cancelled at the statement timeout (docs/decisions.md, "The database's bad moments").
 */
export async function openPostgres(address: string, options: PostgresOptions = {}): Promise<PgDb> {
  const { connectionString, schema: schemaName } = parsePostgresAddress(address)
  const onError = (error: Error) => options.onConnectionError?.(error)
  const opening = {
    connectionString,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    application_name: 'service-desk',
    options: `-c search_path=${schemaName}`,
  }
  const migrating = new pg.Client({ ...opening, ...connectionSettings({ statementTimeoutMs: options.migrationTimeoutMs ?? DEFAULT_MIGRATION_TIMEOUT_MS }) })
  guardConnection(migrating, onError)
  try {
    await migrating.connect()
    await migrating.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [migrationLock(schemaName)])
    // The lock is the session's: ending the connection (below, on every path) lets it go.
    await migrating.query(`CREATE SCHEMA IF NOT EXISTS "${schemaName}"`)
    await migratePostgres(drizzlePostgres({ client: migrating, schema }), {
      migrationsFolder: resources.postgresMigrations,
      migrationsSchema: schemaName,
    })
  } finally {
    await migrating.end()
  }
  const pool = new pg.Pool({ ...opening, max: options.poolSize ?? DEFAULT_POOL_SIZE, ...connectionSettings(options) })
  // An idle connection that breaks (the server restarted) is dropped by the pool; a lent one by
  // the request that holds it, which gets its error (a 503); neither ends the process.
  pool.on('error', onError)
  pool.on('connect', (client) => guardConnection(client, onError))
  return drizzlePostgres({ client: pool, schema }) as PgDb
}

/** Resolves when the database answers a real read. */
export async function pingPostgres(db: PgDb): Promise<void> {
  await db.execute(sql`SELECT 1`)
}
