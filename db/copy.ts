import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type pg from 'pg'
import { redactPostgresAddress } from '../lib/database-address.ts'
import { resources } from '../lib/resources.ts'
import { createSecretBox } from '../lib/secret-box.ts'
import { getPgTableConfig } from './drizzle-postgres.ts'
import { openPostgres } from './postgres/client.ts'
import * as schema from './schema/postgres.ts'
import { StoreError } from './stores/errors.ts'
import { openLegacyToken } from './stores/legacy-tokens.ts'

// `service-desk copy`: a whole SQLite database into an empty PostgreSQL one, ids kept (docs/decisions.md,
// "PostgreSQL, the second engine"). The tables are the same on both engines, column for column
// (db/schema/postgres.ts), so each row goes across as it is, a moment as the same millisecond and a
// flag as true or false. Everything happens in one PostgreSQL transaction: the rows, then a check
// of every table against the source, then each identity sequence moved past the highest id, then
// the commit; a failure or a difference rolls it all back. The source is read in one read
// transaction (a snapshot), so a service still writing to it does not tear the copy.

/** The tables in an order their foreign keys allow. */
export const COPIED_TABLES = [
  schema.sites,
  schema.users,
  schema.memberships,
  schema.personalTokens,
  schema.personalTokenAddresses,
  // The staff's identity providers and who their subjects are, before the sessions they made.
  schema.signInProviders,
  schema.signInLinks,
  schema.webSessions,
  // Invitations to the staff: one mailed before the move is taken after it, once.
  schema.invitations,
  schema.categories,
  schema.discussions,
  schema.comments,
  schema.discussionCounts,
  // The team's queue: each discussion's tag rows, and the sites' saved replies.
  schema.discussionTags,
  // Custom fields: each site's, removed ones too, and each discussion's values as a filter finds them.
  schema.fields,
  schema.fieldValues,
  // Merges: what an undo within the day puts back.
  schema.discussionMerges,
  // The reports' day rows and their times' buckets (their facts are the discussions' columns).
  schema.reportDays,
  schema.reportTimes,
  schema.savedReplies,
  // The sites' rules, and each firing (the discussions' history; what keeps a rule on time to once).
  schema.rules,
  schema.ruleFirings,
  schema.oauthRecords,
  schema.securityEvents,
  schema.auditEvents,
  // Business hours.
  schema.schedules,
  schema.slaPolicies,
  schema.secondFactors,
  schema.recoveryCodes,
  // Answered passkey challenges: copied too, so one answered before the move stays answered.
  schema.usedChallenges,
  // What fair use counted in the current windows: moving the database does not reset them.
  schema.rateLimitWindows,
  // Attachments: the files of the sites, their bytes, and what names them. (The bytes each site's
  // files take, site_file_usage, are not copied: the target's trigger on files counts them as they go in.)
  schema.files,
  schema.filePieces,
  schema.attachments,
  // The applications registered at mail providers, which connected mailboxes renew their tokens at.
  schema.mailProviders,
  // Mail: the sites' addresses, and the messages taken in (so none is taken twice after the move).
  schema.mailboxes,
  schema.mailMessages,
  // Who else a discussion's mail goes to.
  schema.participants,
  // What the sites say of senders: allowed, or blocked as spam.
  schema.senderRules,
  // Where mail is at home: the copy finds itself elsewhere and holds mail and webhooks until resumed.
  schema.mailHome,
  // The sites' webhooks (before the outbox, whose rows name them).
  schema.webhooks,
  // What is still to be mailed or posted: a reply or an event queued before the move is sent after it.
  schema.outbox,
  // The log of the webhooks' tries: three days of it move too.
  schema.webhookDeliveries,
  // The customers' links: one mailed before the move still works, once, after it.
  schema.customerLinks,
  // The change feed: a client reading it goes on from its cursor after the move.
  schema.discussionChanges,
  // The Idempotency-Keys of the last 24 hours: a retry after the move still gets the first answer.
  schema.idempotencyKeys,
]

const ROWS_PER_INSERT = 5_000
const ROWS_PER_FETCH = 10_000
// A table of bytes (file pieces of up to 256 KiB) goes across a few megabytes at a time instead.
const BYTES_PER_INSERT = 16 * 1024 * 1024
const ROWS_OF_BYTES_PER_FETCH = 32
const COPY_STATEMENT_TIMEOUT_MS = 10 * 60_000

type Kind = 'moment' | 'flag' | 'number' | 'text' | 'bytes'
const CAST: Record<Kind, string> = { moment: 'timestamptz', flag: 'boolean', number: 'integer', text: 'text', bytes: 'bytea' }

interface TableShape {
  name: string
  columns: Array<{ name: string; kind: Kind }>
  /** The primary key's columns: the order rows are read and checked in. */
  key: string[]
  identity: boolean
}

function kindOf(columnType: string): Kind {
  if (columnType === 'PgTimestamp') return 'moment'
  if (columnType === 'PgBoolean') return 'flag'
  if (columnType === 'PgInteger') return 'number'
  if (columnType === 'PgCustomColumn') return 'bytes'
  return 'text'
}

/** The shape of a table, from the PostgreSQL schema (the SQLite one has the same columns, test/db/postgres/schema.test.ts). */
function shapeOf(table: (typeof COPIED_TABLES)[number]): TableShape {
  const config = getPgTableConfig(table)
  const columns = config.columns.map((c) => ({ name: c.name, kind: kindOf(c.columnType) }))
  const key = config.primaryKeys[0]?.columns.map((c) => c.name) ?? config.columns.filter((c) => c.primary).map((c) => c.name)
  return { name: config.name, columns, key, identity: key.length === 1 && key[0] === 'id' }
}

/**
 * A value as the checksum sees it, whichever engine it was read from: a moment as milliseconds
 * since the epoch (SQLite keeps the number, PostgreSQL gives a Date), a flag as true or false
 * (SQLite keeps 0 or 1), a number as a number, text as it is, and NULL as null.
 */
export function normalise(kind: Kind, value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (kind === 'moment') return value instanceof Date ? value.getTime() : Number(value)
  if (kind === 'flag') return value === true || value === 1
  if (kind === 'number') return Number(value)
  if (kind === 'bytes') return (value as Buffer).toString('hex')
  return value
}

/** The count and checksum of one table on one side. */
export interface Digest {
  rows: number
  /** SHA-256, hex, over the rows in primary key order, each its normalised values as a JSON array and a newline. */
  sha256: string
}

function digester(shape: TableShape) {
  const hash = createHash('sha256')
  let rows = 0
  return {
    add(row: unknown[]) {
      hash.update(`${JSON.stringify(row.map((value, i) => normalise(shape.columns[i]!.kind, value)))}\n`)
      rows++
    },
    done: (): Digest => ({ rows, sha256: hash.digest('hex') }),
  }
}

const quoted = (name: string) => `"${name}"`

/** SQLite orders text by its bytes; PostgreSQL, told COLLATE "C", the same way. */
function orderBy(shape: TableShape, engine: 'sqlite' | 'postgres'): string {
  const kinds = new Map(shape.columns.map((c) => [c.name, c.kind]))
  return shape.key.map((k) => (engine === 'postgres' && kinds.get(k) === 'text' ? `${quoted(k)} COLLATE "C"` : quoted(k))).join(', ')
}

function sqliteRows(source: Database.Database, shape: TableShape): IterableIterator<unknown[]> {
  const columns = shape.columns.map((c) => quoted(c.name)).join(', ')
  return source.prepare(`SELECT ${columns} FROM ${quoted(shape.name)} ORDER BY ${orderBy(shape, 'sqlite')}`).raw(true).iterate() as IterableIterator<unknown[]>
}

function sqliteDigest(source: Database.Database, shape: TableShape): Digest {
  const digest = digester(shape)
  for (const row of sqliteRows(source, shape)) digest.add(row)
  return digest.done()
}

/** The same count and checksum of the table in PostgreSQL, read through a cursor in the copy's transaction. */
async function postgresDigest(client: pg.PoolClient, shape: TableShape): Promise<Digest> {
  const digest = digester(shape)
  const columns = shape.columns.map((c) => quoted(c.name)).join(', ')
  await client.query(`DECLARE copied NO SCROLL CURSOR FOR SELECT ${columns} FROM ${quoted(shape.name)} ORDER BY ${orderBy(shape, 'postgres')}`)
  const fetch = shape.columns.some((c) => c.kind === 'bytes') ? ROWS_OF_BYTES_PER_FETCH : ROWS_PER_FETCH
  for (;;) {
    const { rows } = await client.query<unknown[]>({ text: `FETCH ${fetch} FROM copied`, rowMode: 'array' })
    for (const row of rows) digest.add(row)
    if (rows.length < fetch) break
  }
  await client.query('CLOSE copied')
  return digest.done()
}

/** A value as PostgreSQL's array of the column's type takes it. */
function toPostgres(kind: Kind, value: unknown): unknown {
  if (value === null) return null
  if (kind === 'moment') return new Date(value as number).toISOString()
  if (kind === 'flag') return value === 1
  return value
}

/** Copies one table, ROWS_PER_INSERT rows a statement, each column one array; returns how many. */
async function copyTable(source: Database.Database, client: pg.PoolClient, shape: TableShape): Promise<number> {
  const names = shape.columns.map((c) => quoted(c.name)).join(', ')
  const arrays = shape.columns.map((c, i) => `$${i + 1}::${CAST[c.kind]}[]`).join(', ')
  const insert = `INSERT INTO ${quoted(shape.name)} (${names}) SELECT * FROM unnest(${arrays})`
  let batch: unknown[][] = shape.columns.map(() => [])
  let size = 0
  let bytes = 0
  let total = 0
  const flush = async () => {
    await client.query(insert, batch)
    total += size
    batch = shape.columns.map(() => [])
    size = 0
    bytes = 0
  }
  for (const row of sqliteRows(source, shape)) {
    row.forEach((value, i) => {
      batch[i]!.push(toPostgres(shape.columns[i]!.kind, value))
      if (shape.columns[i]!.kind === 'bytes') bytes += (value as Buffer).length
    })
    if (++size === ROWS_PER_INSERT || bytes >= BYTES_PER_INSERT) await flush()
  }
  if (size > 0) await flush()
  return total
}

export interface TableReport {
  table: string
  source: Digest
  target: Digest
}

export interface CopyReport {
  tables: TableReport[]
  /** Whether every table's count and checksum are the same on both sides; if not, nothing was kept. */
  verified: boolean
  /** One account's sealed legacy token, to tell under which server key the tokens are sealed (sealedUnder). */
  sealedSample: { fingerprint: string; sealed: string } | undefined
}

/** The migrations the SQLite file holds must be all of this version's: the tables are then the ones copied. */
function checkSource(source: Database.Database, file: string): void {
  const journal = JSON.parse(readFileSync(join(resources.migrations, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ when: number }> }
  let applied: number[]
  try {
    applied = source.prepare('SELECT created_at FROM __drizzle_migrations').pluck().all() as number[]
  } catch {
    throw new StoreError(`${file} is not a Service Desk database`, 'invalid')
  }
  if (journal.entries.some((entry) => !applied.map(Number).includes(entry.when))) {
    throw new StoreError(`${file} is an older Service Desk database: bring it up to date first (service-desk migrate --db ${file})`, 'invalid')
  }
}

/** Refuses a target that holds anything: a copy goes into an empty database (or schema) only. */
async function checkTargetEmpty(client: pg.PoolClient, shapes: TableShape[], to: string): Promise<void> {
  const { rows: sites } = await client.query<{ permalink: string }>('SELECT permalink FROM sites ORDER BY id LIMIT 4')
  const where = redactPostgresAddress(to)
  if (sites.length > 0) {
    const named = sites.slice(0, 3).map((s) => s.permalink).join(', ') + (sites.length > 3 ? ', ...' : '')
    throw new StoreError(
      `the target ${where} already holds sites (${named}); copy into an empty database or a new schema (?schema=name), nothing was copied`,
      'conflict',
    )
  }
  for (const shape of shapes) {
    const { rows } = await client.query(`SELECT 1 FROM ${quoted(shape.name)} LIMIT 1`)
    if (rows.length > 0) {
      throw new StoreError(`the target ${where} already holds rows in ${shape.name}; copy into an empty database or a new schema (?schema=name), nothing was copied`, 'conflict')
    }
  }
}

/**
 * Copies the SQLite database `from` into the PostgreSQL database `to` (created and migrated when
 * needed), which must hold nothing yet. Resolves with the check of every table; when a table
 * differs, the transaction was rolled back and nothing was kept.
 */
export async function copyDatabase(
  from: string,
  to: string,
  options: { onTable?: (table: string, rows: number, ms: number) => void } = {},
): Promise<CopyReport> {
  if (!existsSync(from)) throw new StoreError(`there is no database at ${from}`, 'not_found')
  const source = new Database(from, { readonly: true, fileMustExist: true, nativeBinding: resources.sqliteBinding })
  try {
    checkSource(source, from)
    // One connection; a statement (a batch of rows, a read of the check) may take longer than a request's.
    const target = await openPostgres(to, { poolSize: 1, statementTimeoutMs: COPY_STATEMENT_TIMEOUT_MS }).catch((error: Error) => {
      throw new Error(`cannot open the PostgreSQL database ${redactPostgresAddress(to)}: ${error.message}`, { cause: error })
    })
    try {
      const client = await target.$client.connect()
      let failed: Error | undefined
      let report: CopyReport
      try {
        // One snapshot of the source for the copy and its check.
        source.exec('BEGIN')
        await client.query('BEGIN')
        report = await copyInTransaction(source, client, to, options.onTable)
        await client.query(report.verified ? 'COMMIT' : 'ROLLBACK')
        // Rows loaded in bulk: the planner learns of them now rather than at autovacuum's next turn
        // (until then it plans for empty tables: a search of a million took 1.4 s instead of 18 ms).
        if (report.verified) await client.query(`ANALYZE ${COPIED_TABLES.map((table) => quoted(getPgTableConfig(table).name)).join(', ')}`)
      } catch (error) {
        failed = error as Error
        throw error
      } finally {
        source.exec('COMMIT')
        // After a failure the connection is closed, not given back: PostgreSQL rolls back what it began.
        client.release(failed)
      }
      return report
    } finally {
      await target.$client.end()
    }
  } finally {
    source.close()
  }
}

async function copyInTransaction(source: Database.Database, client: pg.PoolClient, to: string, onTable: ((table: string, rows: number, ms: number) => void) | undefined): Promise<CopyReport> {
  const shapes = COPIED_TABLES.map(shapeOf)
  // Nothing else writes to these tables until the copy commits (a service started on the target too early waits).
  await client.query(`LOCK TABLE ${shapes.map((s) => quoted(s.name)).join(', ')} IN EXCLUSIVE MODE`)
  await checkTargetEmpty(client, shapes, to)
  for (const shape of shapes) {
    const started = performance.now()
    try {
      const rows = await copyTable(source, client, shape)
      onTable?.(shape.name, rows, Math.round(performance.now() - started))
    } catch (error) {
      throw new Error(`copying ${shape.name}: ${(error as Error).message}; nothing was copied`, { cause: error })
    }
  }
  const tables: TableReport[] = []
  for (const shape of shapes) tables.push({ table: shape.name, source: sqliteDigest(source, shape), target: await postgresDigest(client, shape) })
  const verified = tables.every((t) => t.source.rows === t.target.rows && t.source.sha256 === t.target.sha256)
  if (verified) {
    // New rows go on from the highest id copied, as after the same inserts on PostgreSQL.
    for (const shape of shapes.filter((s) => s.identity)) {
      await client.query(
        `SELECT setval(pg_get_serial_sequence(format('%I.%I', current_schema(), $1::text), 'id'), coalesce((SELECT max(id) FROM ${quoted(shape.name)}), 0) + 1, false)`,
        [shape.name],
      )
    }
    // The search index is not copied: the target's service makes it from the rows, in batches
    // (db/stores/search.ts, backfill), or `service-desk search index` does at once.
    await client.query('UPDATE search_backfill SET below = coalesce((SELECT max(id) FROM discussions), 0) + 1')
  }
  const sample = source
    .prepare('SELECT legacy_token_fingerprint AS fingerprint, legacy_token_encrypted AS sealed FROM users WHERE legacy_token_encrypted IS NOT NULL ORDER BY id LIMIT 1')
    .get() as { fingerprint: string; sealed: string } | undefined
  return { tables, verified, sealedSample: sample }
}

/** Whether `secret` is the server key the legacy token was sealed under (the service must then run with it). */
export function sealedUnder(sample: { fingerprint: string; sealed: string }, secret: string): boolean {
  try {
    openLegacyToken(createSecretBox(secret), sample)
    return true
  } catch {
    return false
  }
}
