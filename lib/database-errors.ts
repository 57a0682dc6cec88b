// Database failures that say "not now" rather than "never": another process holds the write lock,
// the disk is full, or the file cannot be written. A request that meets one did not happen (its
// transaction rolled back), so it is answered 503 with Retry-After and may be sent again.

const UNAVAILABLE: Record<string, { retryAfter: number; message: string }> = {
  SQLITE_BUSY: { retryAfter: 1, message: 'The database is busy. Try again in a moment.' },
  SQLITE_LOCKED: { retryAfter: 1, message: 'The database is busy. Try again in a moment.' },
  SQLITE_FULL: { retryAfter: 60, message: 'The server is out of storage space, so nothing can be saved right now.' },
  SQLITE_READONLY: { retryAfter: 60, message: 'The database cannot be written right now.' },
  SQLITE_IOERR: { retryAfter: 60, message: 'The database cannot be written right now.' },
}

export interface Unavailable {
  code: string
  retryAfter: number
  body: { error: 'service_unavailable'; message: string }
}

// PostgreSQL's and its driver's: the server down, restarting or failing over (the connection
// refused, reset or ended by the server), no free connection in time, a statement past its timeout,
// a transaction that lost a serialization race or a deadlock, the server out of room. drizzle wraps
// a failed query; its cause is the driver's error.
const POSTGRES_BUSY = { retryAfter: 1, message: 'The database is busy. Try again in a moment.' }
const POSTGRES_DOWN = { retryAfter: 5, message: 'The database cannot be reached right now. Try again in a moment.' }
const POSTGRES: Record<string, { retryAfter: number; message: string }> = {
  '40001': POSTGRES_BUSY, // serialization_failure
  '40P01': POSTGRES_BUSY, // deadlock_detected
  '55P03': POSTGRES_BUSY, // lock_not_available
  '57014': POSTGRES_BUSY, // query_canceled: the statement timeout
  '53300': POSTGRES_BUSY, // too_many_connections
  '57P01': POSTGRES_DOWN, // admin_shutdown
  '57P02': POSTGRES_DOWN, // crash_shutdown
  '57P03': POSTGRES_DOWN, // cannot_connect_now: starting or in recovery
  '25006': POSTGRES_DOWN, // read_only_sql_transaction: a standby after a failover
  '53100': UNAVAILABLE.SQLITE_FULL!, // disk_full
  ECONNREFUSED: POSTGRES_DOWN,
}
// A socket's failure is the database's only as the cause of a failed query or of a connection that
// could not be opened (db/postgres/engine.ts, pooledTransaction): a client that drops its own
// request is an ECONNRESET too, and no outage.
const SOCKET: Record<string, { retryAfter: number; message: string }> = { ECONNRESET: POSTGRES_DOWN, ETIMEDOUT: POSTGRES_DOWN, EPIPE: POSTGRES_DOWN }
// What node-postgres throws without a code: the pool's wait for a connection, a connection ended.
const POSTGRES_MESSAGES = [/^timeout exceeded when trying to connect/i, /^Connection terminated/i, /^Client has encountered a connection error/i, /^Query read timeout$/]

function postgresUnavailable(error: unknown): Unavailable | null {
  for (let e = error, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown }
    const known =
      (typeof code === 'string' && (POSTGRES[code] ?? (depth > 0 ? SOCKET[code] : undefined) ?? (code.startsWith('08') ? POSTGRES_DOWN : undefined))) ||
      (typeof message === 'string' && POSTGRES_MESSAGES.some((m) => m.test(message)) ? POSTGRES_DOWN : undefined)
    if (known) return { code: typeof code === 'string' ? code : 'connection', retryAfter: known.retryAfter, body: { error: 'service_unavailable', message: known.message } }
  }
  return null
}

/**
 * The 503 answer for an error that means "not now", or null: better-sqlite3's (whose `code` is the
 * extended SQLite code) and PostgreSQL's.
 */
export function unavailableStore(error: unknown): Unavailable | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return postgresUnavailable(error)
  // Extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE) share their primary code's answer.
  const primary = code.split('_').slice(0, 2).join('_')
  const found = UNAVAILABLE[primary]
  if (!found) return null
  return { code, retryAfter: found.retryAfter, body: { error: 'service_unavailable', message: found.message } }
}

/**
 * The storage faults a command line tells apart, each with its own exit code (cli/faults.ts): the
 * database locked by another process, a full disk, a file or file system that cannot be written,
 * and a failing disk. From SQLite's codes (better-sqlite3) and from the file system's (node:fs,
 * met before SQLite opens the file: the folder, the key file).
 */
export type StorageFault = 'busy' | 'full' | 'read_only' | 'io'

const FAULTS: Record<string, StorageFault> = {
  SQLITE_BUSY: 'busy',
  SQLITE_LOCKED: 'busy',
  SQLITE_FULL: 'full',
  ENOSPC: 'full',
  EDQUOT: 'full',
  SQLITE_READONLY: 'read_only',
  SQLITE_CANTOPEN: 'read_only',
  SQLITE_PERM: 'read_only',
  EROFS: 'read_only',
  EACCES: 'read_only',
  EPERM: 'read_only',
  SQLITE_IOERR: 'io',
  EIO: 'io',
}

// The calls of node:fs that fail for a full disk or a read-only one (a failed write names no path).
const FILE_CALLS = new Set(['open', 'write', 'mkdir', 'link', 'unlink', 'rename', 'fsync', 'close', 'ftruncate', 'copyfile', 'chmod'])

export function storageFault(error: unknown): StorageFault | null {
  const { code, path, syscall } = (error ?? {}) as { code?: unknown; path?: unknown; syscall?: unknown }
  if (typeof code !== 'string') return null
  // Extended SQLite codes (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED) are their primary code's kind.
  if (code.startsWith('SQLITE_')) return FAULTS[code.split('_').slice(0, 2).join('_')] ?? null
  // A system error is a storage fault only from a file: EACCES from listen() on port 80 is not one.
  const fromFile = typeof path === 'string' || FILE_CALLS.has(syscall as string)
  return fromFile ? (FAULTS[code] ?? null) : null
}

/**
 * Whether `error` is a unique constraint refusing a row (on the unique index of `on` when given):
 * PostgreSQL's 23505 (drizzle throws the driver's error as its cause; a few causes down are looked
 * at), whose constraint drizzle names `<table>_<column>_unique`; better-sqlite3's
 * SQLITE_CONSTRAINT_UNIQUE, whose message names the columns as `<table>.<column>`.
 */
export function isUniqueViolation(error: unknown, on?: { table: string; column: string }): boolean {
  for (let e = error as { code?: unknown; constraint?: unknown; message?: unknown; cause?: unknown } | null | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code === '23505') return on === undefined || e.constraint === `${on.table}_${on.column}_unique`
    if (e.code === 'SQLITE_CONSTRAINT_UNIQUE') return on === undefined || e.message === `UNIQUE constraint failed: ${on.table}.${on.column}`
  }
  return false
}
