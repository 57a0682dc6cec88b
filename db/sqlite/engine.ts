import { existsSync, realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import { sql, type Column } from '../drizzle.ts'
import { openDatabase, type Db } from './client.ts'
import { Gate } from './gate.ts'
import { closeReadCache, readCache } from './read-cache.ts'
import { checkEvent, engineOver, type Engine, type EngineEvents } from '../engine.ts'
import { isUnguarded, preparedOn, type Executor, type StorePort, type Tables } from '../port.ts'
import * as tables from '../schema/sqlite.ts'
import { createSqliteListing } from './listing.ts'
import { sqliteSearch } from './search.ts'
import { sqliteSiteChanges } from './site-changes.ts'

/** The engine over one SQLite file (created and migrated when needed); `:memory:` is a private one. */
export function openSqliteEngine(file: string, options: { busyTimeoutMs?: number } = {}): Engine {
  return sqliteEngine(openDatabase(file, options))
}

/** The engine over an open SQLite connection; its stores take their turns on it through the gate (db/sqlite/gate.ts). */
export function sqliteEngine(db: Db): Engine {
  // A real read of the file (its schema page), prepared once.
  const probe = db.$client.prepare('SELECT count(*) FROM sqlite_schema').pluck()
  const port = sqlitePort(db)
  const events = sqliteEvents(db.$client.memory ? `:memory: ${++memories}` : resolve(db.$client.name))
  const siteChanges = sqliteSiteChanges(db)
  // One connection: every port of it, a transaction's too, reads pages on it.
  return engineOver(port, (_port, total) => createSqliteListing(db, total), {
    sqlite: db,
    requestArrived: (admit) => readCache(db).arrived(admit),
    async ping() {
      probe.get()
    },
    // A database in memory (the tests') is a place of its own.
    place: async () => `sqlite:${existsSync(db.$client.name) ? realpathSync(db.$client.name) : db.$client.name}`,
    events: events.events,
    siteChanges,
    async close() {
      siteChanges.close()
      events.close()
      closeReadCache(db)
      db.$client.close()
    },
  })
}

/**
 * The port of the stores written once for both engines (db/port.ts): drizzle's SQLite database
 * under PostgreSQL's types (the calls the stores make are the same on both), its transactions
 * behind the connection's gate (db/sqlite/gate.ts), moments as milliseconds, text in SQLite's own
 * byte order, and the read cache.
 */
export function sqlitePort(db: Db): StorePort {
  const client = db.$client
  // The gate and the open group belong to the connection, whichever of its ports takes a turn.
  const connection = connections.get(db) ?? { gate: new Gate(), group: undefined }
  connections.set(db, connection)
  const { gate } = connection
  let savepoints = 0

  /** Undoes what failed, where SQLite has not undone it itself (a full disk or an I/O error ends the whole transaction); the failure is what is thrown. */
  function undo(statements: string[], error: unknown): never {
    if (client.inTransaction) for (const statement of statements) client.exec(statement)
    throw error
  }

  async function nested<T>(work: () => Promise<T>): Promise<T> {
    // After a failure SQLite answered by ending the transaction, a savepoint would open a new one.
    if (!client.inTransaction) throw new Error('the transaction has ended: SQLite rolled it back after an earlier failure')
    const name = `sd_${++savepoints}`
    client.exec(`SAVEPOINT ${name}`)
    try {
      const result = await work()
      client.exec(`RELEASE ${name}`)
      return result
    } catch (error) {
      return undo([`ROLLBACK TO ${name}`, `RELEASE ${name}`], error)
    }
  }

  /**
   * Group commit (docs/decisions.md, "Writes as light as reads"): a transaction that ends while
   * another waits for the connection leaves its own open for it, and the last of them commits them
   * all at once, with one sync of the log for all, where each would have waited for its own. Each
   * runs as before, alone on the connection and in order, the ones after the first each in a
   * savepoint (its failure undoes its own work only); each is answered only once the COMMIT that
   * holds it has returned, so an answer never tells of a write that a crash could still lose. A
   * share of the connection (a read) is first in line only after a COMMIT: nothing reads what is
   * not committed. The connection's `group`: the ended transactions still waiting for the COMMIT,
   * or undefined when none is open.
   */

  /** Settles the transactions of the group: committed, or lost with `error`. */
  function settle(error?: unknown): void {
    const members = connection.group ?? []
    connection.group = undefined
    for (const member of members) {
      if (error === undefined) member.resolve()
      else member.reject(error)
    }
  }

  /**
   * One top-level transaction, with the connection alone: its result, and what resolves once it is
   * committed (a COMMIT left to a transaction after it) or rejects when that COMMIT failed.
   */
  async function inGroup<T>(work: () => Promise<T>): Promise<{ result: T; committed?: Promise<void> }> {
    const joined = connection.group !== undefined
    // IMMEDIATE: the write lock first, so another process's write makes this one wait (up to the
    // busy timeout) at the start rather than fail halfway.
    if (!joined) client.exec('BEGIN IMMEDIATE')
    let result: T
    try {
      result = joined ? await nested(work) : await work()
    } catch (error) {
      if (!joined) undo(['ROLLBACK'], error)
      // Undone to its savepoint; or SQLite ended the whole transaction, and with it those before.
      if (!client.inTransaction) settle(error)
      else if (!gate.exclusiveNext) {
        try {
          commitGroup()
        } catch {
          // A failed COMMIT is given to the transactions it held; this one fails with its own error.
        }
      }
      throw error
    }
    if (gate.exclusiveNext && (connection.group?.length ?? 0) + 1 < GROUP_MOST) {
      const committed = new Promise<void>((resolve, reject) => (connection.group ??= []).push({ resolve, reject }))
      // Awaited by its caller once the gate has let go; a failure meanwhile is not unhandled.
      committed.catch(() => {})
      return { result, committed }
    }
    commitGroup()
    return { result }
  }

  /** Commits the open transaction, settling the group's members; a failed COMMIT is thrown to its caller and given to each of them. */
  function commitGroup(): void {
    try {
      client.exec('COMMIT')
    } catch (error) {
      if (client.inTransaction) client.exec('ROLLBACK')
      settle(error)
      throw error
    }
    settle()
  }

  const port: StorePort = {
    kind: 'sqlite',
    db: db as unknown as Executor,
    tables: tables as unknown as Tables,
    async atomic(work) {
      if (gate.inExclusive) return nested(() => work(port))
      const { result, committed } = await gate.exclusive(() => inGroup(() => work(port)))
      await committed
      return result
    },
    locked: (select) => select,
    // Kept for the connection's life, transactions included: they run on the same connection.
    prepared: preparedOn(db as unknown as Executor),
    wide: (value) => sql`${value}`,
    moment: (at) => at.getTime(),
    flag: (value) => (value ? 1 : 0),
    inByteOrder: (column: Column) => sql`${column}`,
    folded: (column: Column) => sql`${column} COLLATE NOCASE`,
    remember: (load) => {
      const memo = readCache(db).memo(load)
      // What is remembered is answered without a share while the gate is open (a look-up of every
      // API request, spared the share's bookkeeping); a miss is one synchronous read, as a share's.
      return (key) => (gate.open ? memo(key) : gate.shared(() => memo(key)))
    },
    // A request's own reads as it arrives are remembered, one key at a time, as the others are: the read cache sees every commit.
    onArrival: (loadMany) => port.remember(async (key) => (await loadMany([key]))[0]!),
    anyOf: (column: Column, name: string) => sql`${column} in (select value from json_each(${sql.placeholder(name)}))`,
    list: (values) => JSON.stringify(values),
    guard: (store) => guarded(gate, store),
    search: sqliteSearch(db),
    kept: preparedOn(db as unknown as Executor) as StorePort['kept'],
  }
  return port
}

/** What the ports of one connection share: its gate, and the transactions of the group left open for the next. */
interface Connection {
  readonly gate: Gate
  group: Array<{ resolve: () => void; reject: (error: unknown) => void }> | undefined
}
const connections = new WeakMap<Db, Connection>()

/**
 * The most transactions one COMMIT holds: the first of them waits for the others' work before it
 * is answered (under load, well under a millisecond each).
 */
export const GROUP_MOST = 16

/** `store` with each method, nested stores' alike, run as a share of the connection. */
function guarded<S extends object>(gate: Gate, store: S): S {
  const guard: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(store)) {
    guard[key] =
      typeof member !== 'function'
        ? guarded(gate, member as object)
        : isUnguarded(member)
          ? member
          : (...args: unknown[]) => gate.shared(async () => member(...args))
  }
  return guard as S
}

type Handler = (payload: string) => void
type Subscriptions = Map<string, Handler[]>

// One process serves a SQLite file (docs/decisions.md), so its events stay in the process: every
// engine of the process on one file shares a bus (the tests run two apps on one file), and an
// in-memory database has one of its own. A bus lives while an engine on it is open.
const buses = new Map<string, Set<Subscriptions>>()
let memories = 0

/** The events of one engine on the bus `key`; close takes the engine off it. */
function sqliteEvents(key: string): { events: EngineEvents; close(): void } {
  const engines = buses.get(key) ?? new Set<Subscriptions>()
  buses.set(key, engines)
  const mine: Subscriptions = new Map()
  engines.add(mine)
  return {
    events: {
      async publish(channel, payload) {
        checkEvent(channel, payload)
        // Later, as NOTIFY is, to the subscribers of this moment, each on its own, in order.
        for (const subscriptions of engines) for (const handler of subscriptions.get(channel) ?? []) queueMicrotask(() => handler(payload))
      },
      async subscribe(channel, handler) {
        checkEvent(channel)
        mine.set(channel, [...(mine.get(channel) ?? []), handler])
      },
    },
    close() {
      engines.delete(mine)
      if (engines.size === 0) buses.delete(key)
    },
  }
}
