import { randomBytes } from 'node:crypto'
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ConfigError } from './config-error.ts'
import { isPostgresAddress } from './database-address.ts'

// The server key encrypts what must be shown again (docs/decisions.md, "Legacy account token"). It is
// SERVICE_SECRET when set; otherwise a key file in the data folder, made on first start.

export const KEY_FILE = 'service.key'
/** SERVICE_SECRET, or the key file's content, has at least this many characters. */
export const MIN_SECRET_LENGTH = 32

/** Where the key file of a database lives: beside it, in the data folder. */
export function keyFileFor(databaseAddress: string): string {
  return join(dirname(databaseAddress), KEY_FILE)
}

/**
 * The server secret: the configured one, a new random one for a private in-memory database (the
 * tests), or the key file's, creating the file (mode 0600) when there is none yet.
 */
export function serverSecret({ secret, databaseAddress }: { secret?: string; databaseAddress: string }): string {
  if (secret !== undefined) return secret
  if (databaseAddress === ':memory:') return newSecret()
  if (isPostgresAddress(databaseAddress)) {
    throw new ConfigError('a PostgreSQL database needs SERVICE_SECRET, the same in every process (there is no data folder for a key file)')
  }
  const file = keyFileFor(databaseAddress)
  ensureKeyFile(file)
  const stored = readFileSync(file, 'utf8').trim()
  if (stored.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`the key file ${file} must hold at least ${MIN_SECRET_LENGTH} characters; restore it or set SERVICE_SECRET`)
  }
  return stored
}

function newSecret(): string {
  return randomBytes(32).toString('hex')
}

/**
 * Writes a new key to a private temporary file and links it into place. The link either makes the
 * complete file appear at once or fails because the file exists (made by an earlier start, or by a
 * second process racing this one), and the existing key wins. A key is never half-written nor replaced.
 */
function ensureKeyFile(file: string): void {
  // A key made by an earlier start is only read: nothing is written, so a full or read-only disk
  // does not stop a start (or a read-only command) that has its key already.
  if (existsSync(file)) return
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`
  writeFileSync(temporary, `${newSecret()}\n`, { mode: 0o600, flag: 'wx' })
  try {
    linkSync(temporary, file)
  } catch (error) {
    /* c8 ignore next: only a file system without hard links fails otherwise; there is none to test on */
    if ((error as { code?: string }).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temporary)
  }
}
