import pg from 'pg'
import type { Clock } from '../lib/clock.ts'
import { parsePostgresAddress, redactPostgresAddress, type PostgresOptions } from '../lib/database-address.ts'
import type { SecretBox } from '../lib/secret-box.ts'
import type { Engine } from '../db/engine.ts'
import { openPostgres, type PgDb } from '../db/postgres/client.ts'
import { postgresEngine, postgresPort } from '../db/postgres/engine.ts'
import { createOAuthStore } from '../db/stores/oauth.ts'
import { createSecurityLog } from '../db/stores/security-log.ts'
import { createSessionStore } from '../db/stores/sessions.ts'
import { createCategoryStore } from '../db/postgres/stores/categories.ts'
import { createSiteStore } from '../db/postgres/stores/sites.ts'
import { createTokenStore } from '../db/postgres/stores/tokens.ts'
import { createUserStore } from '../db/postgres/stores/users.ts'

// The command line's PostgreSQL side, loaded only for a postgres:// address (cli/admin.ts), as
// db/open.ts loads the engine: a command on SQLite never loads the driver.

/** Why the database could not be reached, in one line, without the password. */
export function unreachable(address: string, error: unknown): Error {
  const { message, code } = error as { message?: string; code?: string }
  // A refused connection to a name with several addresses is an AggregateError without a message.
  return new Error(`cannot open the PostgreSQL database ${redactPostgresAddress(address)}: ${message || code}`, { cause: error })
}

/**
 * The engine on the database at `address`, migrated, as openEngine (db/open.ts) makes it, and the
 * pool under it: a command's store calls share one transaction of that pool (storesOver), and seed
 * writes its batches there.
 */
export async function openPostgresCommand(address: string, options?: PostgresOptions): Promise<{ engine: Engine; db: PgDb }> {
  let db: PgDb
  try {
    db = await openPostgres(address, options)
  } catch (error) {
    throw unreachable(address, error)
  }
  return { engine: postgresEngine(db), db }
}

/** The stores of an administration command, on `q`: the pool, or one transaction of it (then every write goes in it). */
export function storesOver(q: PgDb, clock: Clock, box: SecretBox) {
  const port = postgresPort(q)
  return {
    sites: createSiteStore(q, clock),
    users: createUserStore(q, clock, box),
    tokens: createTokenStore(q, clock),
    sessions: createSessionStore(port, clock),
    categories: createCategoryStore(q, clock),
    securityLog: createSecurityLog(port, clock),
    oauth: createOAuthStore(port, clock),
  }
}

/** Runs `run` with the stores over one transaction, committed when it resolves, rolled back when it throws. */
export function inTransaction<T>(db: PgDb, clock: Clock, box: SecretBox, run: (stores: ReturnType<typeof storesOver>) => Promise<T>): Promise<T> {
  // A transaction is a PgDatabase of the same driver and schema (db/postgres/stores/executor.ts):
  // the stores run on it as on the pool, and their own transactions become savepoints in it.
  return db.transaction((tx) => run(storesOver(tx as unknown as PgDb, clock, box)))
}

/** The moments (drizzle's created_at) of the migrations the database holds, before anything is migrated. */
export async function appliedPostgresMigrations(address: string): Promise<number[]> {
  const { connectionString, schema } = parsePostgresAddress(address)
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000 })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (error) {
    await client.end().catch(() => {})
    throw unreachable(address, error)
  }
  try {
    // The schema's name is checked by parsePostgresAddress: letters, digits and _ only. No schema
    // yet, or no migration table in it: nothing was migrated.
    const table = `"${schema}"."__drizzle_migrations"`
    const { rows: [{ present }] } = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [table])
    const { rows } = present ? await client.query<{ at: string }>(`SELECT created_at AS at FROM ${table}`) : { rows: [] }
    return rows.map((row) => Number(row.at))
  } finally {
    await client.end()
  }
}

/** The same, once the engine migrated the database (the pool's search_path is its schema). */
export async function postgresMigrationsIn(db: PgDb): Promise<number[]> {
  const { rows } = await db.$client.query<{ at: string }>('SELECT created_at AS at FROM __drizzle_migrations')
  return rows.map((row) => Number(row.at))
}
