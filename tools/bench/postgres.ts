import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { openPostgres } from '../../db/postgres/client.ts'
import type { Dataset } from './datasets.ts'
import { REPO } from './service-cli.ts'

// The PostgreSQL side of a run: the server (BENCH_POSTGRES_URL or --postgres, by default the local
// one the test suite uses), and the seeded datasets there. Each PostgreSQL dataset is a copy of the
// SQLite dataset of the same size (tools/bench/datasets.ts), so both engines serve the same rows,
// the same tokens and the same password hashes: its schema (bench_10k, bench_100k, bench_1m) is made
// by the service's own migrations (db/postgres/client.ts, as a start of the service makes it), then
// every table is copied from the SQLite file with multi-row INSERTs (one statement per
// 5,000 rows, the rows passed as one array per column and expanded by unnest). The schema is kept
// between runs: its comment names the SQLite dataset and the migrations it was made from, and a
// schema whose comment and row counts match is used as it is.

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test'

/** Tables in the order their foreign keys allow; the migrations' own table is not copied. */
const TABLES = ['sites', 'users', 'memberships', 'categories', 'discussions', 'comments', 'discussion_counts', 'personal_tokens', 'web_sessions']
const MIGRATIONS_TABLE = '__drizzle_migrations'
const ROWS_PER_INSERT = 5_000

export const schemaFor = (discussions: number) =>
  `bench_${discussions >= 1_000_000 && discussions % 1_000_000 === 0 ? `${discussions / 1_000_000}m` : discussions % 1_000 === 0 ? `${discussions / 1_000}k` : discussions}`

/** The service's address of a schema on the server: what `serve --db` and the baseline take. */
export function schemaAddress(url: string, schema: string): string {
  const address = new URL(url)
  address.searchParams.set('schema', schema)
  return address.toString()
}

/** Undefined when the server answers a query within 3 s; otherwise why not. */
export async function postgresUnavailable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return undefined
  } catch (error) {
    return (error as Error).message || String(error)
  } finally {
    await client.end().catch(() => {})
  }
}

/** The PostgreSQL migrations, hashed: a change to them makes new schemas. */
function migrationsHash(): string {
  const dir = join(REPO, 'db', 'postgres', 'migrations')
  const files = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(d, e.name)) : [join(d, e.name)]))
  const hash = createHash('sha256')
  for (const file of files(dir).sort()) hash.update(relative(REPO, file)).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex').slice(0, 12)
}

/** What a cached schema must say it was made from. */
function marker(source: Dataset): string {
  return `service-desk bench: copy of ${relative(REPO, source.file)} built ${source.builtAt}, postgres migrations ${migrationsHash()}`
}

function sqliteCounts(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return Object.fromEntries(TABLES.map((t) => [t, (db.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n]))
  } finally {
    db.close()
  }
}

async function postgresCounts(client: pg.Client, schema: string): Promise<Record<string, number> | undefined> {
  const counts: Record<string, number> = {}
  for (const t of TABLES) {
    try {
      counts[t] = (await client.query<{ n: number }>(`SELECT count(*)::integer AS n FROM "${schema}"."${t}"`)).rows[0].n
    } catch {
      return undefined
    }
  }
  return counts
}

export interface PostgresDataset extends Dataset {
  /** The schema's name; `file` is its address (postgres://...?schema=NAME). */
  schema: string
  /** Seconds the copy took when it was made in this run; undefined when it was cached. */
  copySeconds?: number
  rows: Record<string, number>
}

/**
 * The PostgreSQL copy of a seeded SQLite dataset, from the schema kept on the server or made now.
 * Servers read it and the service records its tokens' last use there; nothing else writes to it.
 */
export async function postgresDataset(source: Dataset, url: string, log: (line: string) => void): Promise<PostgresDataset> {
  const schema = schemaFor(source.discussions)
  const address = schemaAddress(url, schema)
  const expected = sqliteCounts(source.file)
  const wanted = marker(source)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const comment = (await client.query<{ c: string | null }>('SELECT obj_description(oid, \'pg_namespace\') AS c FROM pg_namespace WHERE nspname = $1', [schema])).rows[0]?.c
    if (comment === wanted) {
      const counts = await postgresCounts(client, schema)
      if (counts && TABLES.every((t) => counts[t] === expected[t])) {
        return { ...source, file: address, schema, bytes: await schemaBytes(client, schema), fromCache: true, rows: counts }
      }
      log(`PostgreSQL schema ${schema}: its row counts are not the SQLite dataset's; made again`)
    }

    const started = performance.now()
    log(`copying the ${source.discussions.toLocaleString('en')}-discussion dataset into PostgreSQL schema ${schema} (kept afterwards)`)
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    // The tables, indexes and constraints as the service makes them: its migrations, run as a start runs them.
    const db = await openPostgres(address, { poolSize: 1 })
    await db.$client.end()
    const sqlite = new Database(source.file, { readonly: true, fileMustExist: true })
    try {
      const present = (await client.query<{ t: string }>('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1', [schema])).rows.map((r) => r.t)
      const unknown = present.filter((t) => t !== MIGRATIONS_TABLE && !TABLES.includes(t))
      if (unknown.length) throw new Error(`PostgreSQL schema ${schema} has tables the bench does not copy: ${unknown.join(', ')} (tools/bench/postgres.ts, TABLES)`)
      await client.query('BEGIN')
      for (const table of TABLES) {
        const t0 = performance.now()
        const rows = await copyTable(sqlite, client, schema, table)
        if (rows >= 100_000) log(`  ${table}: ${rows.toLocaleString('en')} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
      }
      // Identity columns go on from the largest id copied, as they would after the same inserts.
      for (const table of TABLES) {
        const identity = (await client.query<{ c: string }>("SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND is_identity = 'YES'", [schema, table])).rows
        for (const { c } of identity) {
          await client.query(`SELECT setval(pg_get_serial_sequence('"${schema}"."${table}"', '${c}'), coalesce((SELECT max("${c}") FROM "${schema}"."${table}"), 0) + 1, false)`)
        }
      }
      await client.query(`COMMENT ON SCHEMA "${schema}" IS ${pg.escapeLiteral(wanted)}`)
      await client.query('COMMIT')
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {})
      throw error
    } finally {
      sqlite.close()
    }
    // Statistics and the visibility map as a database in service has them (autovacuum would get there later).
    for (const table of TABLES) await client.query(`VACUUM ANALYZE "${schema}"."${table}"`)
    const counts = (await postgresCounts(client, schema))!
    for (const t of TABLES) if (counts[t] !== expected[t]) throw new Error(`PostgreSQL schema ${schema}: ${t} has ${counts[t]} rows, the SQLite dataset ${expected[t]}`)
    const copySeconds = (performance.now() - started) / 1000
    log(`  copied in ${copySeconds.toFixed(1)} s: ${address}`)
    return { ...source, file: address, schema, bytes: await schemaBytes(client, schema), fromCache: false, copySeconds, rows: counts }
  } finally {
    await client.end()
  }
}

async function schemaBytes(client: pg.Client, schema: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
    [schema],
  )
  return Number(rows[0].n)
}

/** One table from SQLite into PostgreSQL, the values converted by the PostgreSQL column's type. */
async function copyTable(sqlite: Database.Database, client: pg.Client, schema: string, table: string): Promise<number> {
  const columns = (
    await client.query<{ name: string; type: string }>(
      'SELECT column_name AS name, format_type(a.atttypid, a.atttypmod) AS type FROM information_schema.columns c JOIN pg_attribute a ON a.attname = c.column_name AND a.attrelid = format(\'%I.%I\', c.table_schema, c.table_name)::regclass WHERE c.table_schema = $1 AND c.table_name = $2 ORDER BY c.ordinal_position',
      [schema, table],
    )
  ).rows
  const sqliteColumns = new Set((sqlite.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>).map((c) => c.name))
  const missing = columns.filter((c) => !sqliteColumns.has(c.name))
  if (missing.length) throw new Error(`${table}: PostgreSQL has columns SQLite has not: ${missing.map((c) => c.name).join(', ')}`)
  const convert = columns.map((c): ((v: unknown) => unknown) => {
    if (c.type.startsWith('timestamp')) return (v) => (v === null ? null : new Date(v as number).toISOString())
    if (c.type === 'boolean') return (v) => (v === null ? null : v === 1 || v === true)
    return (v) => v
  })
  const names = columns.map((c) => `"${c.name}"`).join(', ')
  const insert = `INSERT INTO "${schema}"."${table}" (${names}) SELECT * FROM unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`
  const select = sqlite.prepare(`SELECT ${names} FROM "${table}"`).raw(true)
  let batch: unknown[][] = columns.map(() => [])
  let size = 0
  let total = 0
  const flush = async () => {
    if (size === 0) return
    await client.query(insert, batch)
    total += size
    batch = columns.map(() => [])
    size = 0
  }
  for (const row of select.iterate() as IterableIterator<unknown[]>) {
    for (let i = 0; i < row.length; i++) batch[i].push(convert[i](row[i]))
    if (++size === ROWS_PER_INSERT) await flush()
  }
  await flush()
  return total
}
