import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import * as schema from './schema.ts'

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database }

// Resolved from this file's folder, which is the same in a checkout and in an installed package.
const migrationsFolder = join(import.meta.dirname, 'migrations')

/**
 * Opens (creating when needed) the one SQLite file of a Service Desk process and brings its schema
 * up to date. `:memory:` gives a private database, as the tests use.
 */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const sqlite = new Database(file)
  sqlite.pragma('journal_mode = WAL')
  // In WAL mode NORMAL never corrupts the file; a commit is durable once the WAL is checkpointed
  // or synced, which the hardening issue revisits with a crash test.
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('busy_timeout = 5000')
  const db = drizzle({ client: sqlite, schema })
  migrate(db, { migrationsFolder })
  return db
}
