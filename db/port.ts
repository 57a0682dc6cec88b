import { sql, type Column, type SQL, type SQLWrapper } from './drizzle.ts'
import type { NodePgQueryResultHKT, PgDatabase, PgTable } from './drizzle-postgres.ts'
import type * as tables from './schema/postgres.ts'
import type { SearchDocument, SearchQuery, Section } from '../lib/search-text.ts'

// What a store written once for both engines runs on (docs/decisions.md, "One store, two
// engines"): the engine's drizzle database (the pool or connection, or a transaction of it) and its
// tables, a transaction, and the few things the engines say differently, each named here once.
//
// The store bodies are typed with PostgreSQL's drizzle types; on SQLite the same calls reach
// drizzle's SQLite builders, which take the same chain (select/insert/update/delete, where,
// returning, onConflictDoNothing/DoUpdate, prepare(name), execute) and answer the same rows: the
// schemas are twins (test/db/postgres/schema.test.ts). A shared store keeps to that common part:
// no row locks but through `locked`, no `db.execute`, nothing read from a write but its RETURNING
// rows, no synchronous `.get/.all/.run` (test/house/stores.test.ts); every store runs in both
// passes of the suite, so a call one engine lacks fails there.

export type Tables = typeof tables
export type Executor = PgDatabase<NodePgQueryResultHKT, Tables>

/** A select that `locked` can hold the rows of: PostgreSQL's builder, which has `for`. */
interface Lockable {
  for(strength: 'no key update', config?: { of: PgTable }): unknown
}

export interface StorePort {
  readonly kind: 'sqlite' | 'postgres'
  /** Where the statements run: the engine's database, or the transaction `atomic` opened. */
  readonly db: Executor
  readonly tables: Tables
  /**
   * Runs `work` as one transaction on the port it is given, committed when it resolves and rolled
   * back when it throws. SQLite: BEGIN IMMEDIATE, with the connection alone (db/sqlite/gate.ts);
   * PostgreSQL: a pooled connection under READ COMMITTED, so what a transaction decides on must be
   * `locked` first. Inside another one, a savepoint.
   */
  atomic<T>(work: (port: StorePort) => Promise<T>): Promise<T>
  /**
   * The select, holding the rows it reads (of `table`, when it joins) until the transaction ends:
   * FOR NO KEY UPDATE on PostgreSQL (the lock its own UPDATE takes, which leaves the foreign-key
   * checks of other writes alone); as it is on SQLite, whose transaction has the database alone.
   */
  locked<Q extends Lockable>(select: Q, table?: PgTable): Q
  /**
   * The statement `build` prepares on this port's database, built once and kept by `name` for as
   * long as the port lives: for the life of the process on SQLite, whose transactions run on the
   * same connection; on PostgreSQL, for the pool's life too, a transaction of the pool running the
   * pool's statement on its own connection (db/postgres/engine.ts, `onConnection`). Building a
   * statement (drizzle's SQL from the builder) costs tens of microseconds, running a prepared one a few.
   */
  prepared<S>(name: string, build: (db: Executor) => S): S
  /**
   * An id or number a request names, as the database compares it: bigint on PostgreSQL, so that one
   * past its integer is simply not found, as on SQLite, instead of an out-of-range error (an
   * integer column compared to a bigint still uses its index); the value itself on SQLite.
   */
  wide(value: number | SQLWrapper): SQL
  /**
   * A moment bound through a raw placeholder (`sql.placeholder` inside `sql\`\``, which skips the
   * column's own mapping): milliseconds on SQLite, a Date on PostgreSQL.
   */
  moment(at: Date): unknown
  /** A flag bound the same way: 1 or 0 on SQLite, a boolean on PostgreSQL. */
  flag(value: boolean): unknown
  /** A text column in the order of its bytes: SQLite's own order, PostgreSQL's under COLLATE "C". */
  inByteOrder(column: Column): SQL
  /** The text column folded as SQLite's COLLATE NOCASE folds it (ASCII letters only), for ordering. */
  folded(column: Column): SQL
  /**
   * `load` remembered by its key until the database changes, where the engine can tell that
   * cheaply (SQLite, db/sqlite/read-cache.ts); on PostgreSQL, where another process's commit
   * cannot be seen without asking, `load` itself. It takes a share of the connection where it
   * must: a store method whose only read it is may be `unguarded`.
   */
  remember<V>(load: (key: string) => Promise<V>): (key: string) => Promise<V>
  /**
   * A read by key for what a request reads as it arrives, before anything else (its
   * authentication), given as `loadMany`, which reads several keys at once (its values in the
   * order of its keys): on SQLite, `remember` of one key at a time; on PostgreSQL, the keys asked
   * for by the requests admitted together (Engine.requestArrived) read in one statement, started
   * once they had all arrived, so it sees whatever committed before any of them arrived
   * (docs/decisions.md, "One round trip to authenticate"). Called from anywhere but the start of an
   * admitted request, it may share a read that started before the caller's own last write: only
   * authentication calls it.
   */
  onArrival<V>(loadMany: (keys: string[]) => Promise<V[]>): (key: string) => Promise<V>
  /**
   * The condition that `column` is one of a list bound as the placeholder `name`: `= any(...)` of
   * an array on PostgreSQL, `in` the values of a JSON array on SQLite; the list is bound as
   * `list(values)` makes it.
   */
  anyOf(column: Column, name: string): SQL
  /** A list of texts or ids as `anyOf` takes it bound: an array on PostgreSQL, its JSON on SQLite. */
  list(values: ReadonlyArray<string | number>): unknown
  /**
   * The store with each method (and each nested store's) taken as a share of the connection
   * (db/sqlite/gate.ts) on SQLite; the store itself on PostgreSQL, whose transactions have
   * connections of their own.
   */
  guard<S extends object>(store: S): S
  /** The full-text index, which each engine keeps its own way (db/sqlite/search.ts, db/postgres/search.ts). */
  readonly search: SearchIndex
  /**
   * What `make` makes, once per engine (its transactions share it), kept by `name` for the engine's
   * life: what the stores remember between requests (db/stores/sites.ts, keptSites).
   */
  kept<V>(name: string, make: () => V): V
  /**
   * PostgreSQL: `run` once the transaction this port is in has committed, never when it rolls back
   * (a savepoint's, when the transaction around it commits with it); on the pool outside any
   * transaction, at once; on a transaction opened elsewhere (a test's), never. For what a process
   * keeps of a row its own write moved (db/stores/sites.ts, siteMovedBy). Absent on SQLite, whose
   * reads are in the process and remembered by its read cache, so nothing is kept that a commit
   * could move on.
   */
  onCommitted?(run: () => void): void
  /**
   * PostgreSQL, in a transaction `atomic` opened on the pool (and its savepoints): `send` is one of
   * the transaction's last statements, sent once its work is done, in the order of `order` (then of
   * the calls), each behind the one before without waiting for its answer, and the COMMIT (a
   * savepoint's RELEASE) behind them; a failure of one fails the transaction (the savepoint) with
   * its error. Absent elsewhere: see `lastly`, which sends at once there, and `lastlyNow`.
   */
  readonly last?: LastStatementsOf
  /**
   * PostgreSQL, in a transaction `atomic` opened on the pool: the statements `sends` send, sent
   * together (pipelined, in one write to the socket), answered in their order. See `together`.
   */
  together?(sends: Array<() => Promise<unknown>>): Promise<unknown[]>
}

/** The last statements of a transaction (StorePort.last). */
export interface LastStatementsOf {
  /** `send` queued, sent by `order` once the work is done. */
  queue(order: string, send: () => Promise<unknown>): void
  /** Those queued so far sent now, and answered: for a write whose next statements need them done. */
  now(): Promise<void>
}

/**
 * A write to a row that every write of a site writes (the site's row, its counts' and its day rows:
 * db/stores/changes.ts, discussion-counts.ts, reports.ts), which holds it until its transaction
 * ends: one of the transaction's last statements where the port has them (`StorePort.last`), so a
 * row another write of the site waits for is taken just before the COMMIT that gives it back
 * (docs/decisions.md, "Writes as light as reads (issue 75)"); sent now elsewhere. Also a write
 * nothing in its transaction reads after (a discussion's search document), which then costs no
 * round trip of its own. `send` must send its statement before it first awaits. The orders: what
 * takes no row another write waits for ('0'), the sites' rows ('a|' and the site's id), the feed's
 * rows a create numbered ('b'), the counts' rows ('c|' and their lock order), the day rows ('d'), their times' rows ('e').
 */
export async function lastly(port: StorePort, order: string, send: () => Promise<unknown>): Promise<void> {
  if (port.last) port.last.queue(order, send)
  else await send()
}

/**
 * The last statements `lastly` queued so far in the transaction of `port`, sent now and answered:
 * before a statement that needs them done (a category's removal, once its discussions' counts
 * moved off it). Nothing where the port sends them at once.
 */
export async function lastlyNow(port: StorePort): Promise<void> {
  await port.last?.now()
}

/**
 * Statements that need no answer of each other, each sent by one of `sends` before its first await:
 * in a transaction of the pool on PostgreSQL, sent together (one write, one round trip, run by the
 * server one after the other in their order); elsewhere one after the other. Their answers, in order.
 */
export async function together<T extends unknown[]>(port: StorePort, ...sends: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (port.together) return (await port.together(sends)) as T
  const answers: unknown[] = []
  for (const send of sends) answers.push(await send())
  return answers as T
}

/** The order of a site's row among a transaction's last statements (lastly): by id, as every write takes several. */
export const siteOrder = (siteId: number): string => `a|${String(siteId).padStart(16, '0')}`

/** What a search asks of the index: the newest discussions that match, among those `where` keeps. */
export interface SearchWindow {
  query: SearchQuery
  /** The sections the words are looked for in (a customer's: the title and the text); all when undefined. */
  sections?: readonly Section[]
  /** The scope and the filters, over the discussions table. */
  where: SQL
  /** How many at most: the newest by id. */
  limit: number
}

/**
 * The full-text index of the discussions (docs/decisions.md, "Search"): one document per
 * discussion, written in the transaction of the change that made it (db/stores/search.ts).
 */
export interface SearchIndex {
  /** Writes the discussion's document in place of the one it had; `fresh`: the discussion is new, it had none. */
  write(discussionId: number, document: SearchDocument, fresh?: boolean): Promise<void>
  /**
   * Writes a batch of the backfill: each document only where its discussion has none yet, for a
   * write since the batch read its comments has written a fresher one.
   */
  writeBatch(documents: Array<{ discussionId: number; document: SearchDocument }>): Promise<void>
  /**
   * After a backfill wrote many documents: PostgreSQL's planner is told what the index now holds
   * (ANALYZE), so that it reads a common word's matches newest first; SQLite's FTS5 needs nothing.
   */
  settle(): Promise<void>
  /** The newest discussions that match, each with how well (higher is better), newest first. */
  window(request: SearchWindow): Promise<Array<{ id: number; score: number }>>
}

/**
 * A placeholder bound as it is given, not through a column's mapping (which `sql.placeholder` in
 * `values()` and `where()` goes through): for `set()`, and for moments given through `port.moment`.
 */
export const given = (name: string): SQL => sql`${sql.placeholder(name)}`

/**
 * A statement written as SQL, prepared by `name` on PostgreSQL (parsed and planned by the server once
 * per connection, as the builders' `prepare(name)` are): `text` names its values with
 * sql.placeholder, and `execute` binds them and answers the driver's result. Built inside
 * `port.prepared`, it runs on a transaction's connection as the builders' statements do
 * (db/postgres/engine.ts, `onConnection`). For what the builders cannot say (a data-modifying
 * WITH, a cast to tsvector); PostgreSQL only.
 */
export function namedStatement<R = Record<string, unknown>>(db: Executor, name: string, text: SQL): { execute(values: Record<string, unknown>): Promise<{ rows: R[] }> } {
  const { dialect, session } = db as unknown as { dialect: { sqlToQuery(text: SQL): { sql: string; params: unknown[] } }; session: { prepareQuery(query: unknown, fields: undefined, name: string, arrayMode: false): { execute(values: Record<string, unknown>): Promise<{ rows: R[] }> } } }
  return session.prepareQuery(dialect.sqlToQuery(text), undefined, name, false)
}

/**
 * How long a statement's name may be: PostgreSQL keeps the first 63 bytes of one, so two longer
 * names alike in those would be one statement on the server and two to node-postgres.
 */
export const STATEMENT_NAME_MOST = 63

/** `prepared` over `db`: each statement built on it once, kept by its name in this closure. */
export function preparedOn(db: Executor): StorePort['prepared'] {
  const statements = new Map<string, unknown>()
  return <S>(name: string, build: (db: Executor) => S): S => {
    if (!statements.has(name)) {
      // Checked once, as the statement is built: a request's later calls only find it.
      if (name.length > STATEMENT_NAME_MOST) throw new Error(`a statement's name has at most ${STATEMENT_NAME_MOST} characters: ${name}`)
      statements.set(name, build(db))
    }
    return statements.get(name) as S
  }
}

const UNGUARDED = Symbol('unguarded')

/**
 * A store method that `guard` leaves as it is: one that waits on something that needs the
 * connection alone (an earlier flush's transaction) and takes the gate only through `atomic`
 * (waiting inside a share, it would keep that transaction from ever starting); one whose only
 * read is remembered (`remember` takes the gate itself where it must); or one that does not touch
 * the connection at all during the call.
 */
export function unguarded<F extends (...args: never[]) => unknown>(method: F): F {
  return Object.assign(method, { [UNGUARDED]: true })
}

/** Whether `member` was marked with `unguarded`. */
export function isUnguarded(member: unknown): boolean {
  return typeof member === 'function' && UNGUARDED in member
}

/** A page's bounds as both engines take them: a negative limit is no limit, a negative offset 0. */
export function pageBounds(offset: number, limit: number): { offset: number; limit: number } {
  return { offset: Math.max(0, offset), limit: limit < 0 ? Number.MAX_SAFE_INTEGER : limit }
}

/**
 * A store's statement built at its first execution, not when its store is made: every app (each
 * process's, each test's) makes all its stores as it starts, and a process runs few of their
 * statements; building one (drizzle's SQL, then SQLite's compile) is tens of microseconds, and all
 * of them were about a tenth of an app's build (docs/decisions.md, "What every build paid for").
 * Built once, it is kept for the store's life, as before.
 */
export function onFirstUse<S extends { execute(...args: never[]): unknown }>(build: () => S): Pick<S, 'execute'> {
  let statement: S | undefined
  return { execute: ((...args: never[]) => (statement ??= build()).execute(...args)) as S['execute'] }
}
