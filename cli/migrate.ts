import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig } from '../config.ts'
import { isPostgresAddress, redactPostgresAddress } from '../lib/database-address.ts'
import { resources } from '../lib/resources.ts'
import { checkDatabaseFile, openCommandDatabase } from './admin.ts'
import { DB_OPTION, type Command } from './command.ts'

// `service-desk migrate`: brings the schema up to date, as every start of the service and every
// command does (under a lock on PostgreSQL, so processes take turns), and says which migrations
// that ran. For a deployment that migrates before it starts the new version.

interface JournalEntry {
  when: number
  tag: string
}

/** drizzle-kit's list of the migrations, oldest first; `when` is what the database records of each. */
function journal(folder: string): JournalEntry[] {
  return (JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: JournalEntry[] }).entries
}

/** The migrations a SQLite file holds (their moments); none for a file not made yet. */
function appliedSqliteMigrations(file: string): number[] {
  if (!existsSync(file)) return []
  const db = new Database(file, { readonly: true, fileMustExist: true, nativeBinding: resources.sqliteBinding })
  try {
    // No migration table: a file that was never migrated.
    const migrated = db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = '__drizzle_migrations'").pluck().get() === 1
    return migrated ? (db.prepare('SELECT created_at FROM __drizzle_migrations').pluck().all() as unknown[]).map(Number) : []
  } finally {
    db.close()
  }
}

export const migrateCommand: Command = {
  words: ['migrate'],
  args: [],
  options: DB_OPTION,
  usage: 'migrate [--db ADDRESS]',
  summary: 'Bring the database schema up to date (every start does it too) and say which migrations ran.',
  async run(_args, values, io) {
    const config = loadConfig({ env: io.env, flags: { db: values.db as string | undefined } })
    const postgres = isPostgresAddress(config.databaseAddress)
    const label = postgres ? `PostgreSQL database ${redactPostgresAddress(config.databaseAddress)}` : `SQLite database ${config.databaseAddress}`
    const known = journal(postgres ? resources.postgresMigrations : resources.migrations)
    const pg = postgres ? await import('./postgres.ts') : undefined
    const before = new Set(pg ? await pg.appliedPostgresMigrations(config.databaseAddress) : appliedSqliteMigrations(config.databaseAddress))
    checkDatabaseFile(config.databaseAddress, io, true)
    const { engine, postgres: pool } = await openCommandDatabase(config)
    let after: number[]
    try {
      after = pool ? await pg!.postgresMigrationsIn(pool) : appliedSqliteMigrations(config.databaseAddress)
    } finally {
      await engine.close()
    }
    const migrations = `${known.length} migrations` // each engine has shipped several since its first release
    const ran = known.filter((m) => after.includes(m.when) && !before.has(m.when)).map((m) => m.tag)
    if (ran.length > 0) {
      io.stdout(`${label}: ran ${ran.join(', ')}; the schema is current (${migrations}).\n`)
    } else {
      io.stdout(`${label}: the schema was current (${migrations}, the last ${known.at(-1)!.tag}); nothing ran.\n`)
    }
    return 0
  },
}
