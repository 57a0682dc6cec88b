import pg from 'pg'
import { parsePostgresAddress, redactPostgresAddress, type PostgresOptions } from '../lib/database-address.ts'
import type { Engine } from '../db/engine.ts'
import { ownWords } from './faults.ts'
import { openPostgres, type PgDb } from '../db/postgres/client.ts'
import { postgresEngine } from '../db/postgres/engine.ts'

// The command line's PostgreSQL side, loaded only for a postgres:// address (cli/admin.ts), as
// db/open.ts loads the engine: a command on SQLite never loads the driver.

/** Why the database could not be reached, in one line, without the password. */
export function unreachable(address: string, error: unknown): Error {
  // A refused connection to a name with several addresses is an AggregateError without a message.
  return new Error(`cannot open the PostgreSQL database ${redactPostgresAddress(address)}: ${ownWords(error) || (error as { code?: string }).code}`, { cause: error })
}

/**
 * The engine on the database at `address`, migrated, as openEngine (db/open.ts) makes it, and the
 * pool under it, where seed writes its batches.
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
