import type { FastifyReply, FastifyRequest } from 'fastify'

// SQLite failures that say "not now" rather than "never": another process holds the write lock,
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

/** The 503 answer for an error of better-sqlite3 (whose `code` is the extended SQLite code), or null. */
export function unavailableStore(error: unknown): Unavailable | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return null
  // Extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_IOERR_WRITE) share their primary code's answer.
  const primary = code.split('_').slice(0, 2).join('_')
  const found = UNAVAILABLE[primary]
  if (!found) return null
  return { code, retryAfter: found.retryAfter, body: { error: 'service_unavailable', message: found.message } }
}

/**
 * For an error that means "not now": logs it, sets 503 and Retry-After on the reply and returns
 * what to tell the client (the API sends the body, the pages a page with its message); else null.
 */
export function answerUnavailable(error: unknown, request: FastifyRequest, reply: FastifyReply): Unavailable | null {
  const unavailable = unavailableStore(error)
  if (!unavailable) return null
  request.log.warn({ code: unavailable.code }, 'database unavailable')
  reply.code(503).header('retry-after', String(unavailable.retryAfter))
  return unavailable
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
