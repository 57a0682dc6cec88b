import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig } from '../config.ts'
import { resources } from '../lib/resources.ts'
import { keyFileFor } from '../lib/server-key.ts'
import { StoreError } from '../db/stores/errors.ts'
import type { Command } from './command.ts'

// `service-desk backup <file>`: a consistent copy of the live database through SQLite's online
// backup API, safe while the server runs (it reads a snapshot; the server keeps writing). The copy
// is written beside its destination under a temporary name, checked, synced, and only then renamed
// into place, so a half-made backup never carries the real name.

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

export const backupCommand: Command = {
  words: ['backup'],
  args: ['FILE'],
  options: { db: { type: 'string' } },
  usage: 'backup FILE [--db FILE]',
  summary: 'Copy the database, consistently, while the server runs. FILE must not exist yet.',
  faultScope: ([target], values, io) => {
    const { dbFile } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
    return {
      files: `${dbFile} or the folder of ${target}`,
      paths: [dbFile, resolve(target!)],
      outcome: 'No backup was made (the partial copy was removed), and the database was not changed.',
    }
  },
  async run([target], values, io) {
    const { dbFile, secret } = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
    const destination = resolve(target!)
    if (!existsSync(dbFile)) throw new StoreError(`there is no database at ${dbFile}`, 'not_found')
    if (resolve(dbFile) === destination) throw new StoreError('the backup must go to another file than the database', 'invalid')
    if (existsSync(destination)) throw new StoreError(`${target} already exists; choose a new name`, 'conflict')
    if (!existsSync(dirname(destination))) throw new StoreError(`the folder of ${target} does not exist`, 'not_found')

    const partial = join(dirname(destination), `.${basename(destination)}.partial-${process.pid}`)
    const source = new Database(dbFile, { fileMustExist: true, nativeBinding: resources.sqliteBinding })
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
      const fd = openSync(partial, 'r+')
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(partial, destination)
      const size = statSync(destination).size
      io.stdout(`Backed up ${totalPages} pages (${megabytes(size)}) to ${target} in ${io.clock() - started} ms; integrity check: ok.\n`)
      io.stdout(
        secret === undefined
          ? `The server key is not in the copy: keep ${keyFileFor(dbFile)} with it (legacy tokens and sessions need it).\n`
          : 'The server key is not in the copy: keep SERVICE_SECRET with it (legacy tokens and sessions need it).\n',
      )
      return 0
    } finally {
      source.close()
      rmSync(partial, { force: true })
    }
  },
}
