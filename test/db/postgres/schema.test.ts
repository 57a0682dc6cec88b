import { createRequire } from 'node:module'
import pg from 'pg'
import t from 'tap'
import { getTableConfig, is, SQLiteTable, type Column, type SQL } from '../../../db/drizzle.ts'
import { openPostgres } from '../../../db/postgres/client.ts'
import { getPgTableConfig } from '../../../db/drizzle-postgres.ts'
import * as pgSchema from '../../../db/schema/postgres.ts'
import * as sqliteSchema from '../../../db/schema/sqlite.ts'
import { freshPostgresAddress, POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// db/schema/postgres.ts mirrors db/schema/sqlite.ts table for table (docs/decisions.md, "Schema and
// migrations"): the same tables, columns, keys and indexes, so the stores read the same rows from
// either engine and a database moves across unchanged. Then the migrated PostgreSQL database
// itself, read from its catalog, against the schema the stores are written for.

// The same drizzle as db/drizzle-postgres.ts loads (one copy: `is` compares classes).
const { PgTable } = createRequire(import.meta.url)('drizzle-orm/pg-core') as typeof import('drizzle-orm/pg-core')

type TableConfig = ReturnType<typeof getTableConfig> | ReturnType<typeof getPgTableConfig>

const names = (columns: Column[]) => columns.map((c) => c.name)

/** A partial index's condition as text, the same on both engines: `state <> 'deleted'`. */
function condition(where: SQL | undefined): string | null {
  if (!where) return null
  return (where.queryChunks as unknown[])
    .map((chunk) => (chunk && typeof chunk === 'object' && 'columnType' in chunk ? (chunk as Column).name : (chunk as { value: string[] }).value.join('')))
    .join('')
}

/**
 * A column's default as both engines mean it: a moment (PostgreSQL's Date; SQLite's milliseconds,
 * written as SQL, since drizzle would write a Date there as JSON text) as its milliseconds.
 */
function defaultOf(value: unknown): unknown {
  if (value instanceof Date) return value.getTime()
  if (typeof value === 'object' && value !== null && 'queryChunks' in value) return Number((value as SQL).queryChunks.map((chunk) => (chunk as { value: string[] }).value.join('')).join(''))
  return value
}

/** What the two engines must agree on, per table; `trailingId` says where PostgreSQL's indexes end with the id. */
function describe(config: TableConfig) {
  return {
    name: config.name,
    columns: config.columns.map((c) => ({
      name: c.name,
      // PostgreSQL's bytea is a custom type to drizzle; SQLite's blob is a buffer: the same bytes.
      type: c.dataType === 'custom' && c.getSQLType() === 'bytea' ? 'buffer' : c.dataType,
      notNull: c.notNull,
      primary: c.primary,
      unique: c.isUnique,
      default: defaultOf(c.default),
      enum: c.enumValues ?? null,
    })),
    primaryKey: config.primaryKeys.map((key) => names(key.columns)),
    indexes: config.indexes
      .map((index) => ({ name: index.config.name ?? '(no name)', unique: !!index.config.unique, columns: names(index.config.columns as Column[]), where: condition(index.config.where) }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    // Each reference's callback runs here: reference() resolves the table it points to.
    foreignKeys: config.foreignKeys
      .map((key) => {
        const reference = key.reference()
        return {
          columns: names(reference.columns),
          table: (is(reference.foreignTable, SQLiteTable) ? getTableConfig(reference.foreignTable as never) : getPgTableConfig(reference.foreignTable as never)).name,
          foreignColumns: names(reference.foreignColumns),
          onDelete: key.onDelete ?? 'no action',
          onUpdate: key.onUpdate ?? 'no action',
        }
      })
      .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
    checks: config.checks.length,
    uniqueConstraints: config.uniqueConstraints.length,
  }
}

const sqliteTables = new Map(Object.values(sqliteSchema).filter((v) => is(v, SQLiteTable)).map((table) => [getTableConfig(table as never).name, describe(getTableConfig(table as never))]))
const pgTables = new Map(Object.values(pgSchema).filter((v) => is(v, PgTable)).map((table) => [getPgTableConfig(table as never).name, describe(getPgTableConfig(table as never))]))
/** PostgreSQL's 64-bit columns (`table.column`), a number to drizzle as SQLite's integer is: SQLite's integer holds 64 bits. */
const pgBigints = new Set(Object.values(pgSchema).filter((v) => is(v, PgTable)).flatMap((table) => getPgTableConfig(table as never).columns.filter((c) => c.getSQLType() === 'bigint').map((c) => `${getPgTableConfig(table as never).name}.${c.name}`)))

t.test('the same tables on both engines', async (t) => {
  t.same([...pgTables.keys()].sort(), [...sqliteTables.keys()].sort())
  t.same([...pgTables.keys()].sort(), ['attachments', 'audit_events', 'categories', 'comments', 'customer_links', 'discussion_changes', 'discussion_counts', 'discussion_merges', 'discussion_tags', 'discussions', 'field_values', 'fields', 'file_pieces', 'files', 'idempotency_keys', 'invitations', 'mail_home', 'mail_messages', 'mail_providers', 'mailboxes', 'memberships', 'oauth_records', 'outbox', 'participants', 'personal_token_addresses', 'personal_tokens', 'rate_limit_windows', 'recovery_codes', 'report_days', 'report_times', 'rule_firings', 'rules', 'saved_replies', 'schedules', 'search_backfill', 'second_factors', 'security_events', 'sender_rules', 'sign_in_links', 'sign_in_providers', 'site_file_usage', 'sites', 'sla_policies', 'used_challenges', 'users', 'web_sessions', 'webhook_deliveries', 'webhooks'])
})

t.test('table by table: columns, keys, indexes and foreign keys alike', async (t) => {
  for (const [name, sqlite] of sqliteTables) {
    const postgres = pgTables.get(name)!
    t.same(postgres.columns, sqlite.columns, `${name}: the same columns, types, nullability, defaults and values`)
    t.same(postgres.primaryKey, sqlite.primaryKey, `${name}: the same composite primary key`)
    t.same(postgres.foreignKeys, sqlite.foreignKeys, `${name}: the same foreign keys`)
    t.same([postgres.checks, postgres.uniqueConstraints], [sqlite.checks, sqlite.uniqueConstraints], `${name}: no checks, no unique constraints beside the indexes`)
    t.same(postgres.indexes.map((i) => i.name), sqlite.indexes.map((i) => i.name), `${name}: the same indexes by name`)
    for (const [i, index] of postgres.indexes.entries()) {
      const other = sqlite.indexes[i]!
      // SQLite's rowid ends every index by itself; PostgreSQL's listing indexes name the id, the
      // tie-break of every listing order. That, and only that, may differ.
      const columns = !index.unique && index.columns.at(-1) === 'id' && other.columns.at(-1) !== 'id' ? index.columns.slice(0, -1) : index.columns
      t.same({ ...index, columns }, other, `${name}: ${index.name}`)
    }
  }
  // sites, used_challenges, rate_limit_windows and mail_home have their primary key only (compared above).
  const keyed = [...pgTables.values()].filter((table) => table.foreignKeys.length + table.indexes.length > 0).map((table) => table.name)
  t.same([...pgTables.keys()].filter((name) => !keyed.includes(name)).sort(), ['mail_home', 'rate_limit_windows', 'search_backfill', 'sites', 'used_challenges'], 'every other table has a key or an index to compare')
})

t.test('the comparison itself sees a difference', async (t) => {
  // Guards against a describe() that always agrees: the engines' own differences show through it.
  const sqlite = sqliteTables.get('discussions')!
  const postgres = pgTables.get('discussions')!
  t.not(JSON.stringify(postgres.indexes), JSON.stringify(sqlite.indexes), 'the trailing id is seen')
  t.equal(postgres.indexes.filter((i) => i.columns.at(-1) === 'id').length, 12, 'twelve listing indexes end with the id')
  t.same(postgres.foreignKeys.map((k) => [k.columns[0], k.table, k.onDelete]), [
    ['assignee_id', 'users', 'set null'],
    ['author_id', 'users', 'no action'],
    ['category_id', 'categories', 'no action'],
    ['site_id', 'sites', 'cascade'],
  ])
})

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

t.test('a freshly migrated database is the schema: columns, keys, indexes, foreign keys', { skip: down }, async (t) => {
  const address = await freshPostgresAddress(t)
  const schema = new URL(address).searchParams.get('schema')!
  const db = await openPostgres(address, { poolSize: 1 })
  t.teardown(() => db.$client.end())
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  t.teardown(() => client.end())
  const rows = async <R extends pg.QueryResultRow>(text: string) => (await client.query<R>(text, [schema])).rows

  const tables = await rows<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_name <> '__drizzle_migrations' ORDER BY 1")
  t.same(tables.map((r) => r.name), [...pgTables.keys(), 'discussion_search'].sort(), 'the tables, and the search index that migration 0018 makes by hand')

  const columns = await rows<{ table: string; name: string; nullable: string; type: string; precision: number | null; identity: string; default: string | null }>(
    `SELECT table_name AS table, column_name AS name, is_nullable AS nullable, data_type AS type, datetime_precision AS precision,
            is_identity AS identity, column_default AS default
       FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
  )
  const indexes = await rows<{ table: string; name: string; unique: boolean; primary: boolean; partial: boolean; columns: string[] }>(
    `SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary, ix.indpred IS NOT NULL AS partial,
            array(SELECT a.attname::text FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns
       FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 ORDER BY 1, 2`,
  )
  const foreignKeys = await rows<{ table: string; columns: string[]; target: string; targetColumns: string[]; onDelete: string; onUpdate: string }>(
    `SELECT t.relname AS table, f.relname AS target, c.confdeltype AS "onDelete", c.confupdtype AS "onUpdate",
            array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns,
            array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
                  JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n) AS "targetColumns"
       FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class f ON f.oid = c.confrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 AND c.contype = 'f'`,
  )
  t.same(
    indexes.filter((i) => i.table === 'discussion_search').map((i) => [i.name, i.columns]),
    [['discussion_search_document_idx', ['document']], ['discussion_search_pkey', ['discussion_id']]],
    'the search index: its GIN index and its key',
  )
  const TYPES: Record<string, string> = { number: 'integer', string: 'text', boolean: 'boolean', date: 'timestamp with time zone', buffer: 'bytea' }
  const ACTIONS: Record<string, string> = { a: 'no action', c: 'cascade', r: 'restrict', n: 'set null', d: 'set default' }

  for (const [name, table] of pgTables) {
    t.same(
      columns.filter((c) => c.table === name).map((c) => ({ name: c.name, notNull: c.nullable === 'NO', type: c.type, precision: c.type === 'timestamp with time zone' ? c.precision : null, identity: c.identity === 'YES', default: c.default })),
      table.columns.map((c) => ({
        name: c.name,
        notNull: c.notNull,
        type: pgBigints.has(`${name}.${c.name}`) ? 'bigint' : TYPES[c.type],
        precision: c.type === 'date' ? 3 : null,
        identity: c.name === 'id' && c.primary,
        // PostgreSQL spells a text default as a cast literal.
        default: c.default === undefined ? null : typeof c.default === 'string' ? `'${c.default}'::text` : c.type === 'date' ? `'${new Date(c.default as number).toISOString().replace('T', ' ').replace('.000Z', '+00')}'::timestamp with time zone` : String(c.default),
      })),
      `${name}: the columns, in order, with their types, nullability, identity and defaults`,
    )
    const mine = indexes.filter((i) => i.table === name)
    t.same(
      mine.filter((i) => i.primary).map((i) => i.columns),
      table.primaryKey.length ? table.primaryKey : [table.columns.filter((c) => c.primary).map((c) => c.name)],
      `${name}: the primary key`,
    )
    t.same(
      mine.filter((i) => !i.primary).map(({ name, unique, partial, columns }) => ({ name, unique, partial, columns })),
      [
        ...table.indexes.map((i) => ({ name: i.name, unique: i.unique, partial: i.where !== null, columns: i.columns })),
        // A column's own unique() is an index too, named by drizzle as the migration made it.
        ...table.columns.filter((c) => c.unique).map((c) => ({ name: `${name}_${c.name}_unique`, unique: true, partial: false, columns: [c.name] })),
      ].sort((a, b) => a.name.localeCompare(b.name)),
      `${name}: the indexes, by name, kind and columns`,
    )
    t.same(
      foreignKeys
        .filter((k) => k.table === name)
        .map((k) => ({ columns: k.columns, table: k.target, foreignColumns: k.targetColumns, onDelete: ACTIONS[k.onDelete], onUpdate: ACTIONS[k.onUpdate] }))
        .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
      table.foreignKeys,
      `${name}: the foreign keys`,
    )
  }
})
