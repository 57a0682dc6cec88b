import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { SECRET_VARIABLE } from '../config.ts'
import { isPostgresAddress, redactPostgresAddress } from '../lib/database-address.ts'
import { keyFileFor } from '../lib/server-key.ts'
import { grouped } from '../lib/numbers.ts'
import type { CopyReport } from '../db/copy.ts'
import { UsageError, type Command, type Io } from './command.ts'

// `service-desk copy --from FILE --to ADDRESS`: a SQLite database into an empty PostgreSQL one
// (db/copy.ts), the check of every table printed, and what the service on PostgreSQL needs to keep
// the tokens and sessions working: the server key the SQLite side sealed them under.

const EXIT_DIFFERS = 1

type Sample = NonNullable<CopyReport['sealedSample']>

const shellQuoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`

/** The check, one line per table: the rows on each side, the checksum, and whether they are the same. */
function checkTable(report: CopyReport): string {
  const header = ['table', 'sqlite rows', 'postgres rows', 'sha256 (sqlite)', 'sha256 (postgres)', '']
  const lines = report.tables.map((t) => {
    const same = t.source.rows === t.target.rows && t.source.sha256 === t.target.sha256
    return [t.table, String(t.source.rows), String(t.target.rows), t.source.sha256.slice(0, 16), t.target.sha256.slice(0, 16), same ? 'same' : 'DIFFERENT']
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const numeric = new Set([1, 2])
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (numeric.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return `${[header, ...lines].map(format).join('\n')}\n`
}

/** Which server key the service on PostgreSQL must run with, so the copied legacy tokens and sessions keep working. */
function serverKeyAdvice(report: CopyReport, from: string, io: Io, opens: (sample: Sample, secret: string) => boolean): void {
  const sample = report.sealedSample
  const keyFile = keyFileFor(from)
  const secret = io.env[SECRET_VARIABLE]?.trim()
  if (!sample) {
    io.stdout(`Server key: no account holds a legacy token yet; run the service on PostgreSQL with ${SECRET_VARIABLE} set, the same in every process.\n`)
  } else if (secret !== undefined && opens(sample, secret)) {
    io.stdout(`Server key: ${SECRET_VARIABLE} opens the copied legacy tokens; run the service on PostgreSQL with this same ${SECRET_VARIABLE}.\n`)
  } else if (existsSync(keyFile) && opens(sample, readFileSync(keyFile, 'utf8').trim())) {
    io.stdout(
      `Server key: the legacy tokens were sealed under the key file ${keyFile}; run the service on PostgreSQL with ${SECRET_VARIABLE} set to its ` +
        `content, the same in every process, or legacy tokens cannot be shown and supporters must sign in again:\n` +
        `  ${SECRET_VARIABLE}="$(cat ${shellQuoted(keyFile)})"\n`,
    )
  } else {
    io.stderr(
      `Server key: neither ${SECRET_VARIABLE} nor ${keyFile} opens the copied legacy tokens; run the service on PostgreSQL with the server key ` +
        'the SQLite service used, or legacy tokens cannot be shown and supporters must sign in again.\n',
    )
  }
}

export const copyCommand: Command = {
  words: ['copy'],
  args: [],
  options: {
    from: { type: 'string', value: 'FILE', about: 'the SQLite file to copy (required; it is only read)' },
    to: { type: 'string', value: 'ADDRESS', about: 'the postgres:// address of an empty database, or of a schema (?schema=name) (required)' },
  },
  usage: 'copy --from FILE --to ADDRESS',
  summary:
    'Copy a whole SQLite database into an empty PostgreSQL one (ids, password hashes, tokens and sessions kept) in one transaction, ' +
    'then check every table on both sides and say which SERVICE_SECRET the service there needs.',
  faultScope: (_args, values) => ({ files: String(values.from), paths: [resolve(String(values.from))], outcome: 'Nothing was copied.' }),
  async run(_args, values, io) {
    const { from, to } = values
    if (typeof from !== 'string') throw new UsageError('--from is required: the SQLite file to copy')
    if (typeof to !== 'string') throw new UsageError('--to is required: the postgres:// address to copy into')
    if (isPostgresAddress(from)) throw new UsageError('--from must be a SQLite file, not a postgres:// address')
    if (!isPostgresAddress(to)) throw new UsageError(`--to must be a postgres:// address, not "${to}"`)
    const { copyDatabase, sealedUnder } = await import('../db/copy.ts')
    const report = await copyDatabase(from, to, {
      onTable: (table, rows, ms) => io.stderr(`copied ${table}: ${grouped(rows)} row${rows === 1 ? '' : 's'} in ${ms} ms\n`),
    })
    io.stdout(checkTable(report))
    const rows = report.tables.reduce((sum, t) => sum + t.source.rows, 0)
    const target = redactPostgresAddress(to)
    if (!report.verified) {
      const differing = report.tables.filter((t) => t.source.rows !== t.target.rows || t.source.sha256 !== t.target.sha256).map((t) => t.table)
      io.stdout(`The copy differs from ${from} in ${differing.join(', ')}: it was rolled back, nothing was copied to ${target}.\n`)
      return EXIT_DIFFERS
    }
    io.stdout(`Copied ${grouped(rows)} rows in ${report.tables.length} tables from ${from} to ${target}; every count and checksum is the same on both sides.\n`)
    serverKeyAdvice(report, from, io, sealedUnder)
    return 0
  },
}
