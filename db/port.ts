import type { Column, SQL } from './drizzle.ts'
import type { NodePgQueryResultHKT, PgDatabase } from './postgres/drizzle.ts'
import type * as tables from './postgres/schema.ts'

// What a store written once for both engines runs on (docs/decisions.md, "One store, two
// engines"): the engine's drizzle database (the pool or connection, or a transaction of it) and its
// tables, and the few things the engines say differently, each named here once.
//
// The store bodies are typed with PostgreSQL's drizzle types; on SQLite the same calls reach
// drizzle's SQLite builders, which take the same chain (select/insert/update/delete, where,
// returning, onConflictDoNothing/DoUpdate, prepare(name), execute) and answer the same rows: the
// schemas are twins (test/db/postgres/schema.test.ts). A shared store keeps to that common part:
// no row locks (`.for()`), no `db.execute`, nothing read from a write but its RETURNING rows, no
// synchronous `.get/.all/.run` (test/house/stores.test.ts); every store runs in both passes of the
// suite, so a call one engine lacks fails there.

export type Tables = typeof tables
export type Executor = PgDatabase<NodePgQueryResultHKT, Tables>

export interface StorePort {
  readonly kind: 'sqlite' | 'postgres'
  /** Where the statements run: the engine's database, or a transaction of it. */
  readonly db: Executor
  readonly tables: Tables
  /**
   * A moment bound through a raw placeholder (`sql.placeholder` inside `sql\`\``, which skips the
   * column's own mapping): milliseconds on SQLite, a Date on PostgreSQL.
   */
  moment(at: Date): unknown
  /** A text column in the order of its bytes: SQLite's own order, PostgreSQL's under COLLATE "C". */
  inByteOrder(column: Column): SQL
}
