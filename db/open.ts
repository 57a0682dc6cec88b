import { isPostgresAddress, type PostgresOptions } from '../lib/database-address.ts'
import type { Engine } from './engine.ts'

/**
 * The database at `address`: a postgres:// address opens PostgreSQL (db/postgres/engine.ts, loaded
 * only then), anything else is a SQLite file. Either is migrated to the current schema first.
 */
export async function openEngine(address: string, options: { busyTimeoutMs?: number; postgres?: PostgresOptions } = {}): Promise<Engine> {
  if (isPostgresAddress(address)) {
    const { openPostgresEngine } = await import('./postgres/engine.ts')
    return openPostgresEngine(address, options.postgres)
  }
  const { openSqliteEngine } = await import('./sqlite/engine.ts')
  return openSqliteEngine(address, { busyTimeoutMs: options.busyTimeoutMs })
}
