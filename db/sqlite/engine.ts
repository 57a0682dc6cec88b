import { resolve } from 'node:path'
import { sql, type Column } from '../drizzle.ts'
import { openDatabase, type Db } from './client.ts'
import { checkEvent, type Engine, type EngineEvents } from '../engine.ts'
import type { Executor, StorePort, Tables } from '../port.ts'
import * as tables from './schema.ts'
import { asyncFacade } from '../stores/async.ts'
import { bootstrapFirstRun } from '../stores/bootstrap.ts'
import { createCategoryStore } from '../stores/categories.ts'
import { createDiscussionStore } from '../stores/discussions.ts'
import { createOAuthStore } from '../stores/oauth.ts'
import { createSecurityLog } from '../stores/security-log.ts'
import { createSessionStore } from '../stores/sessions.ts'
import { createSiteStore } from '../stores/sites.ts'
import { createTokenStore } from '../stores/tokens.ts'
import { createUserStore } from '../stores/users.ts'

/** The engine over one SQLite file (created and migrated when needed); `:memory:` is a private one. */
export function openSqliteEngine(file: string, options: { busyTimeoutMs?: number } = {}): Engine {
  return sqliteEngine(openDatabase(file, options))
}

/** The engine over an open SQLite connection; its stores answer through the asynchronous facade. */
export function sqliteEngine(db: Db): Engine {
  // A real read of the file (its schema page), prepared once.
  const probe = db.$client.prepare('SELECT count(*) FROM sqlite_schema').pluck()
  const port = sqlitePort(db)
  const events = sqliteEvents(db.$client.memory ? `:memory: ${++memories}` : resolve(db.$client.name))
  return {
    kind: 'sqlite',
    sqlite: db,
    sites: (clock) => asyncFacade(createSiteStore(db, clock)),
    users: (clock, box) => asyncFacade(createUserStore(db, clock, box)),
    sessions: (clock) => createSessionStore(port, clock),
    tokens: (clock, onFlushError) => asyncFacade(createTokenStore(db, clock, onFlushError)),
    // A discussion's author may be a new account, written in the discussion's own transaction.
    discussions: (clock, box) => asyncFacade(createDiscussionStore(db, clock, createUserStore(db, clock, box))),
    categories: (clock) => asyncFacade(createCategoryStore(db, clock)),
    oauth: (clock) => createOAuthStore(port, clock),
    securityLog: (clock) => createSecurityLog(port, clock),
    bootstrapFirstRun: (clock, box) => bootstrapFirstRun(db, clock, box),
    async ping() {
      probe.get()
    },
    events: events.events,
    async close() {
      events.close()
      db.$client.close()
    },
  }
}

/**
 * The port of the stores written once for both engines (db/port.ts): drizzle's SQLite database
 * under PostgreSQL's types (the calls the stores make are the same on both), moments as
 * milliseconds, text in SQLite's own byte order.
 */
export function sqlitePort(db: Db): StorePort {
  return {
    kind: 'sqlite',
    db: db as unknown as Executor,
    tables: tables as unknown as Tables,
    moment: (at) => at.getTime(),
    inByteOrder: (column: Column) => sql`${column}`,
  }
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
