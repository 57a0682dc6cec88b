import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import { isPostgresAddress, redactPostgresAddress } from '../lib/database-address.ts'
import { storageFault, type StorageFault } from '../lib/database-errors.ts'

// A command that meets a storage fault (the database locked by another process, a full disk, a file
// that cannot be written, a failing disk) says what failed, what it did not change, and what to do,
// and exits with a code of its own per kind, so that a script can tell them apart.

export const EXIT_BUSY = 3
export const EXIT_DISK_FULL = 4
export const EXIT_READ_ONLY = 5
export const EXIT_IO = 6

export const FAULT_EXIT_CODES: Record<StorageFault, number> = { busy: EXIT_BUSY, full: EXIT_DISK_FULL, read_only: EXIT_READ_ONLY, io: EXIT_IO }

/** What a command that stopped on a fault tells: the files the advice names, and what it left as it was. */
export interface FaultScope {
  files: string
  /** The files whose disks are looked at: an I/O error on a disk with no room left is a full disk. */
  paths: string[]
  outcome: string
}

/** What a fault's advice names for the database: its file, or a PostgreSQL address (no file to look at) without its password. */
export function databaseFiles(databaseAddress: string): Pick<FaultScope, 'files' | 'paths'> {
  return isPostgresAddress(databaseAddress) ? { files: redactPostgresAddress(databaseAddress), paths: [] } : { files: databaseAddress, paths: [databaseAddress] }
}

/** Less room than this on the disk of a file makes an I/O error a full disk. */
const NEARLY_FULL_BYTES = 1024 * 1024

/**
 * Whether the disk of one of the files has (almost) no room left. SQLite reports a disk that fills
 * up while it makes its shared-memory file (-shm) as "disk I/O error", not "database or disk is full".
 */
export function nearlyFull(paths: string[]): boolean {
  return paths.some((path) => {
    try {
      const disk = statfsSync(dirname(path))
      return disk.bavail * disk.bsize < NEARLY_FULL_BYTES
    } catch {
      return false
    }
  })
}

export const NOTHING_CHANGED = 'Nothing was changed.'

const WHAT: Record<StorageFault, string> = {
  busy: 'the database is locked by another process',
  full: 'the disk is full',
  read_only: 'the database cannot be written',
  io: 'the disk failed to read or write',
}

const ADVICE: Record<StorageFault, (files: string) => string> = {
  busy: (files) => `Another process held the write lock of ${files} for more than 5 seconds (a long seed, say); run the command again when it is done.`,
  full: (files) => `Free some space on the disk that holds ${files} (df -h shows it), then run the command again.`,
  read_only: (files) =>
    `Check that ${files} is a file (not a folder) that this user can write, in a folder it can write (ls -l), ` +
    'on a file system not mounted read-only; then run the command again.',
  io: (files) => `Check the disk that holds ${files} (dmesg, the system log), then run the command again; restore a backup if the file is damaged.`,
}

/** The exit code and the message for an error that is a storage fault, else null. */
export function describeFault(error: unknown, scopeOf: () => FaultScope): { code: number; message: string } | null {
  let fault = storageFault(error)
  if (!fault) return null
  const scope = scopeOf()
  if (fault === 'io' && nearlyFull(scope.paths)) fault = 'full'
  return {
    code: FAULT_EXIT_CODES[fault],
    message: `service-desk: ${WHAT[fault]} (${(error as Error).message}).\n${scope.outcome} ${ADVICE[fault](scope.files)}\n`,
  }
}

/** What an error says; a query that failed says what its driver said, without the statement and its values. */
export function ownWords(error: unknown): string {
  const { message, query, cause } = error as { message: string; query?: unknown; cause?: unknown }
  return typeof query === 'string' && cause instanceof Error ? cause.message : message
}

/** The PostgreSQL error itself (its SQLSTATE and words), the error or one it wraps; undefined for any other. */
function postgresError(error: unknown): { code: string; message: string } | undefined {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return { code: e.code, message: String(e.message) }
  }
  return undefined
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * How to mend a PostgreSQL refusal that has a known fix, named for the address's role and
 * database (one sentence to end the error's line); '' for any other error.
 */
export function postgresFix(error: unknown, databaseAddress: string | undefined): string {
  const refusal = postgresError(error)
  if (refusal === undefined || databaseAddress === undefined || !isPostgresAddress(databaseAddress) || !URL.canParse(databaseAddress)) return ''
  const url = new URL(databaseAddress)
  const role = decodeURIComponent(url.username) || 'ROLE'
  const database = decodeURIComponent(url.pathname.slice(1)) || role
  switch (refusal.code) {
    case '42501': {
      const schema = url.searchParams.get('schema') ?? 'public'
      if (refusal.message.includes('for schema')) {
        return ` The role ${role} must own the schema ${schema} to make the service's tables in it; as a superuser: ALTER SCHEMA ${quoted(schema)} OWNER TO ${quoted(role)};`
      }
      return (
        ` The role ${role} must own the database ${database}, or have CREATE on it, to make the service's schema; as a superuser: ` +
        `ALTER DATABASE ${quoted(database)} OWNER TO ${quoted(role)}; (or GRANT CREATE ON DATABASE ${quoted(database)} TO ${quoted(role)};)`
      )
    }
    case '3D000':
      return ` Create it first, owned by the service's role: createdb --owner=${role} ${database} (in psql: CREATE DATABASE ${quoted(database)} OWNER ${quoted(role)};)`
    case '28000':
      return ` Create the role first: createuser --pwprompt ${role} (in psql: CREATE ROLE ${quoted(role)} LOGIN PASSWORD '...';)`
    default:
      return ''
  }
}

/** For --help and the README. */
export const EXIT_CODES_HELP = [
  'Exit codes:',
  '  0  done',
  '  1  refused (an unknown site or user, a duplicate, a limit: nothing was changed), or another failure',
  '  2  a command line or a setting that does not fit',
  `  ${EXIT_BUSY}  the database is locked by another process: run the command again later`,
  `  ${EXIT_DISK_FULL}  the disk is full: free some space, then run the command again`,
  `  ${EXIT_READ_ONLY}  the database, or its folder, cannot be written`,
  `  ${EXIT_IO}  the disk failed to read or write`,
  `  On ${EXIT_BUSY} to ${EXIT_IO} nothing was changed (seed keeps the batches it finished).`,
].join('\n')
