// SERVICE_DB names the database: a SQLite file (the default, ./data/service.db) or a PostgreSQL
// address. This module reads the address without loading either driver, so the command line and the
// configuration stay light (db/engine.ts opens the database itself).

/** The settings of a PostgreSQL database (docs/decisions.md, "PostgreSQL"). */
export interface PostgresOptions {
  /** Connections each process keeps at most. */
  poolSize?: number
  /** A statement running longer is cancelled and its request answered 503. */
  statementTimeoutMs?: number
  /** How long a request waits for a free connection before it is answered 503. */
  connectTimeoutMs?: number
  /**
   * How long a start may wait for the schema's migration, its own or another process's it waits
   * behind (a statement of it, or the wait for the lock); not a request's statement timeout.
   */
  migrationTimeoutMs?: number
  /** Told of a connection that broke (the process logs it; it never ends the process). */
  onConnectionError?: (error: Error) => void
}

export const DEFAULT_POOL_SIZE = 10
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000
export const DEFAULT_MIGRATION_TIMEOUT_MS = 10 * 60_000

export function isPostgresAddress(address: string): boolean {
  return /^postgres(ql)?:\/\//i.test(address)
}

/**
 * Why `address` names no database this service opens, or undefined when it names one: a
 * postgres:// (or postgresql://) address, or a SQLite file's path. An address of any other scheme
 * (mysql:, sqlite:, file:) is refused, not taken as a file name: that would quietly make an empty
 * database under a strange name (a folder `sqlite:.`). A Windows drive (`C:\data`) is a path.
 */
export function databaseAddressProblem(address: string): string | undefined {
  if (address.trim() === '') return 'must not be empty'
  if (isPostgresAddress(address)) {
    return URL.canParse(address) ? undefined : `is not a PostgreSQL address this service can read: postgres://user:password@host:5432/database`
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(address)?.[1]
  if (scheme === undefined || /^[a-z]:[\\/]/i.test(address)) return undefined
  const path = address.slice(scheme.length + 1).replace(/^\/\/(?=\/)/, '')
  if (/^(sqlite3?|file)$/i.test(scheme)) return `is a ${scheme}: address; give the SQLite file's path alone (${path || './data/service.db'})`
  return `is a ${scheme}: address; a database is a SQLite file's path or a postgres:// (or postgresql://) address`
}

/**
 * A `postgres://` address split into what the driver takes and the schema the service's tables
 * live in: `?schema=name` (default `public`) puts one service, or one test, in a schema of its own.
 */
export function parsePostgresAddress(address: string): { connectionString: string; schema: string } {
  const url = new URL(address)
  const schemaName = url.searchParams.get('schema') ?? 'public'
  url.searchParams.delete('schema')
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schemaName)) {
    throw new Error(`the schema "${schemaName}" must be lower-case letters, digits and _ (at most 63)`)
  }
  return { connectionString: url.toString(), schema: schemaName }
}

/** The address with its password hidden, for logs and messages. */
export function redactPostgresAddress(address: string): string {
  try {
    const url = new URL(address)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return 'postgres://(an address that does not parse)'
  }
}

