import { spawn } from 'node:child_process'
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig } from '../config.ts'
import { isPostgresAddress, parsePostgresAddress, redactPostgresAddress } from '../lib/database-address.ts'
import { resources } from '../lib/resources.ts'
import { keyFileFor } from '../lib/server-key.ts'
import { StoreError } from '../db/stores/errors.ts'
import { DB_OPTION, type Command, type Io } from './command.ts'

// `service-desk backup <file>`: a consistent copy of the live database, safe while the server runs
// (it reads a snapshot; the server keeps writing). On SQLite through its online backup API; on
// PostgreSQL through pg_dump (the PostgreSQL client's own tool, which must be on the PATH), its
// custom format, of the service's schema alone. The copy is written beside its destination under a
// temporary name (readable by its owner only), checked, synced, and only then renamed into place,
// so a half-made backup never carries the real name.

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

/** Syncs the finished copy and gives it the real name. */
function settle(partial: string, destination: string): number {
  const fd = openSync(partial, 'r+')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(partial, destination)
  return statSync(destination).size
}

/** The pg_dump command line for the database at `address` (the password apart, for PGPASSWORD), into `file`. */
export function pgDumpCommand(address: string, file: string): { args: string[]; password: string | undefined } {
  const { connectionString, schema } = parsePostgresAddress(address)
  const url = new URL(connectionString)
  const password = url.password ? decodeURIComponent(url.password) : undefined
  url.password = ''
  // The custom format (compressed, restored table by table with pg_restore), the service's schema
  // only (its tables, sequences and drizzle's migration table), no owners or grants, so it restores
  // into another database whoever runs it.
  const args = ['--format=custom', '--no-owner', '--no-privileges', `--schema=${schema}`, `--file=${file}`, `--dbname=${url.toString()}`]
  return { args, password }
}

/** Runs pg_dump; resolves when it succeeded, rejects with what it said otherwise. */
function runPgDump(args: string[], password: string | undefined, io: Io): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // The password goes in the environment, never the command line (which any user can list).
    const child = spawn('pg_dump', args, { env: { ...io.env, ...(password === undefined ? {} : { PGPASSWORD: password }) }, stdio: ['ignore', 'ignore', 'pipe'] })
    let said = ''
    child.stderr.on('data', (chunk) => (said += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      if (code === 0) resolvePromise()
      else reject(new StoreError(`pg_dump failed (exit ${code}): ${said.trim().split('\n').join(' ')}`, 'invalid'))
    })
  })
}

/** `backup` on PostgreSQL: pg_dump of the service's schema, or, without pg_dump, how to make one. */
async function backupPostgres(address: string, target: string, destination: string, io: Io): Promise<number> {
  const partial = join(dirname(destination), `.${basename(destination)}.partial-${process.pid}`)
  const { args, password } = pgDumpCommand(address, partial)
  try {
    closeSync(openSync(partial, 'wx', 0o600))
    const started = io.clock()
    try {
      await runPgDump(args, password, io)
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error
      const shown = pgDumpCommand(address, target).args.map((arg) => `'${arg}'`).join(' ')
      throw new StoreError(
        `pg_dump is not on the PATH: install the PostgreSQL client tools (the server's major version or later), or make the backup where they are: ` +
          `PGPASSWORD=... pg_dump ${shown}`,
        'not_found',
      )
    }
    const size = settle(partial, destination)
    const { schema } = parsePostgresAddress(address)
    io.stdout(`Backed up schema ${schema} of ${redactPostgresAddress(address)} (${megabytes(size)}) to ${target} with pg_dump in ${io.clock() - started} ms.\n`)
    // The dump makes its schema; public is in every new database already, which pg_restore reports and goes past.
    io.stdout(`Restore it into an empty database with: pg_restore --no-owner --no-privileges --dbname=ADDRESS ${target}\n`)
    io.stdout('The server key is not in the copy: keep SERVICE_SECRET with it (legacy tokens and sessions need it).\n')
    return 0
  } finally {
    rmSync(partial, { force: true })
  }
}

export const backupCommand: Command = {
  words: ['backup'],
  args: ['FILE'],
  options: DB_OPTION,
  usage: 'backup FILE [--db ADDRESS]',
  summary: 'Copy the database, consistently, while the server runs (PostgreSQL: with pg_dump). FILE must not exist yet.',
  faultScope: ([target], values, io) => {
    const { databaseAddress } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
    return {
      files: isPostgresAddress(databaseAddress) ? `the folder of ${target}` : `${databaseAddress} or the folder of ${target}`,
      paths: isPostgresAddress(databaseAddress) ? [resolve(target!)] : [databaseAddress, resolve(target!)],
      outcome: 'No backup was made (the partial copy was removed), and the database was not changed.',
    }
  },
  async run([target], values, io) {
    const { databaseAddress, secret } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
    const destination = resolve(target!)
    const postgres = isPostgresAddress(databaseAddress)
    if (!postgres && !existsSync(databaseAddress)) throw new StoreError(`there is no database at ${databaseAddress}`, 'not_found')
    if (!postgres && resolve(databaseAddress) === destination) throw new StoreError('the backup must go to another file than the database', 'invalid')
    if (existsSync(destination)) throw new StoreError(`${target} already exists; choose a new name`, 'conflict')
    if (!existsSync(dirname(destination))) throw new StoreError(`the folder of ${target} does not exist`, 'not_found')
    if (postgres) return backupPostgres(databaseAddress, target!, destination, io)

    const partial = join(dirname(destination), `.${basename(destination)}.partial-${process.pid}`)
    const source = new Database(databaseAddress, { fileMustExist: true, nativeBinding: resources.sqliteBinding })
    try {
      // Made first, empty, readable by the owner only: the copy holds password hashes and keys.
      closeSync(openSync(partial, 'wx', 0o600))
      const started = io.clock()
      const { totalPages } = await source.backup(partial)
      const copy = new Database(partial, { fileMustExist: true, nativeBinding: resources.sqliteBinding })
      try {
        const check = copy.pragma('integrity_check', { simple: true })
        if (check !== 'ok') throw new StoreError(`the copy failed its integrity check: ${String(check)}`, 'invalid')
        // One self-contained file, whatever journal mode the live database uses.
        copy.pragma('journal_mode = DELETE')
      } finally {
        copy.close()
      }
      const size = settle(partial, destination)
      io.stdout(`Backed up ${totalPages} pages (${megabytes(size)}) to ${target} in ${io.clock() - started} ms; integrity check: ok.\n`)
      io.stdout(
        secret === undefined
          ? `The server key is not in the copy: keep ${keyFileFor(databaseAddress)} with it (legacy tokens and sessions need it).\n`
          : 'The server key is not in the copy: keep SERVICE_SECRET with it (legacy tokens and sessions need it).\n',
      )
      return 0
    } finally {
      source.close()
      rmSync(partial, { force: true })
    }
  },
}
