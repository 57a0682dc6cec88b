import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { drizzle, migrate } from '../drizzle.ts'
import type { SqliteDb } from '../engine.ts'
import { resources } from '../../lib/resources.ts'
import * as schema from '../schema/sqlite.ts'

export type Db = SqliteDb

// How long a write waits for another process's write lock. better-sqlite3 waits synchronously, so
// the server keeps this short and answers 503 past it (app.ts); a command line waits longer.
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/**
 * Opens (creating when needed) the one SQLite file of a Service Desk process and brings its schema
 * up to date. `:memory:` gives a private database, as the tests use.
 */
export function openDatabase(file: string, { busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS }: { busyTimeoutMs?: number } = {}): Db {
  if (file !== ':memory:') {
    // The file holds password hashes and keys: a new one (and its -wal and -shm, which SQLite
    // makes with the same mode) is readable by its owner only, in a folder only they can enter.
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600))
  }
  const memory = file === ':memory:'
  const sqlite = new Database(memory ? migratedImage() : file, { nativeBinding: resources.sqliteBinding })
  sqlite.pragma('journal_mode = WAL')
  // FULL: every commit is synced to the write-ahead log before the request is answered, so an
  // acknowledged write survives a killed process (NORMAL would too) and a power cut (NORMAL may
  // lose the last commits). test/hardening/crash.test.ts kills the server mid-burst to prove it.
  sqlite.pragma('synchronous = FULL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma(`busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
  const db = drizzle({ client: withStatementCache(sqlite), schema })
  // Everything else that reaches for the connection itself gets it as it is.
  Object.assign(db, { $client: sqlite })
  if (!memory) migrate(db, { migrationsFolder: resources.migrations })
  return db
}

let image: Buffer | undefined

/**
 * An empty database with every migration applied, made once per process: a private database opens
 * as a copy of it. The suite opens one for most of its tests, and migrating each was about a tenth
 * of the time it took to build an app.
 */
function migratedImage(): Buffer {
  if (!image) {
    const sqlite = new Database(':memory:', { nativeBinding: resources.sqliteBinding })
    migrate(drizzle({ client: sqlite, schema }), { migrationsFolder: resources.migrations })
    image = sqlite.serialize()
    sqlite.close()
  }
  return image
}

/** How many statements drizzle's side of a connection keeps, the least recently used going first. */
export const STATEMENT_CACHE_SIZE = 500

/**
 * The connection as drizzle sees it, keeping its statements by their SQL. better-sqlite3 compiles
 * a statement at every call of `prepare`, which drizzle makes at every run of a query it did not
 * prepare itself: tens of microseconds each, where running the statement takes a few. A store
 * written once for both engines (db/port.ts) builds the statements of its transactions as it runs
 * them, so they are compiled once here and found again by their text. Given out again, a statement
 * is back in its default mode: drizzle asks for rows as arrays (`raw()`) each time it wants them.
 */
export function withStatementCache(sqlite: Database.Database): Database.Database {
  const statements = new Map<string, Database.Statement>()
  function prepare(source: string): Database.Statement {
    let statement = statements.get(source)
    if (statement) {
      statements.delete(source)
      if (statement.reader) statement.raw(false)
    } else {
      statement = sqlite.prepare(source)
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!)
    }
    statements.set(source, statement)
    return statement
  }
  return new Proxy(sqlite, {
    get(target, key) {
      if (key === 'prepare') return prepare
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
