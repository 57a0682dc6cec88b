import pg from 'pg'
import { sql } from '../drizzle.ts'
import { drizzlePostgres, migratePostgres, type NodePgDatabase } from '../drizzle-postgres.ts'
import { resources } from '../../lib/resources.ts'
import { parsePostgresAddress, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS, type PostgresOptions } from '../../lib/database-address.ts'
import * as schema from '../schema/postgres.ts'

export type PgDb = NodePgDatabase<typeof schema> & { $client: pg.Pool }

// Every process migrates at start; a lock per schema makes the others on that schema wait for the
// first one, while processes on other schemas (tests, several services on one database) go on.
const migrationLock = (schema: string) => `service-desk migrate ${schema}`

/** A pool on the database, its schema brought up to date (under a lock, so processes take turns). */
export async function openPostgres(address: string, options: PostgresOptions = {}): Promise<PgDb> {
  const { connectionString, schema: schemaName } = parsePostgresAddress(address)
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    application_name: 'service-desk',
    options: `-c search_path=${schemaName}`,
  })
  // An idle connection that breaks (the server restarted) is dropped by the pool; without a
  // listener its error would end the process.
  pool.on('error', () => {})
  const db = drizzlePostgres({ client: pool, schema }) as PgDb
  try {
    const client = await pool.connect()
    try {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [migrationLock(schemaName)])
      try {
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${schemaName}"`)
        await migratePostgres(drizzlePostgres({ client, schema }), {
          migrationsFolder: resources.postgresMigrations,
          migrationsSchema: schemaName,
        })
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [migrationLock(schemaName)])
      }
    } finally {
      client.release()
    }
  } catch (error) {
    await pool.end()
    throw error
  }
  return db
}

/** Resolves when the database answers a real read. */
export async function pingPostgres(db: PgDb): Promise<void> {
  await db.execute(sql`SELECT 1`)
}
