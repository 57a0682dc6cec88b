import { openDatabase, type Db } from './client.ts'
import type { Engine } from './engine.ts'
import { asyncFacade } from './stores/async.ts'
import { bootstrapFirstRun } from './stores/bootstrap.ts'
import { createCategoryStore } from './stores/categories.ts'
import { createDiscussionStore } from './stores/discussions.ts'
import { createSessionStore } from './stores/sessions.ts'
import { createSiteStore } from './stores/sites.ts'
import { createTokenStore } from './stores/tokens.ts'
import { createUserStore } from './stores/users.ts'

/** The engine over one SQLite file (created and migrated when needed); `:memory:` is a private one. */
export function openSqliteEngine(file: string, options: { busyTimeoutMs?: number } = {}): Engine {
  return sqliteEngine(openDatabase(file, options))
}

/** The engine over an open SQLite connection; its stores answer through the asynchronous facade. */
export function sqliteEngine(db: Db): Engine {
  // A real read of the file (its schema page), prepared once.
  const probe = db.$client.prepare('SELECT count(*) FROM sqlite_schema').pluck()
  return {
    kind: 'sqlite',
    sqlite: db,
    sites: (clock) => asyncFacade(createSiteStore(db, clock)),
    users: (clock, box) => asyncFacade(createUserStore(db, clock, box)),
    sessions: (clock) => asyncFacade(createSessionStore(db, clock)),
    tokens: (clock, onFlushError) => asyncFacade(createTokenStore(db, clock, onFlushError)),
    // A discussion's author may be a new account, written in the discussion's own transaction.
    discussions: (clock, box) => asyncFacade(createDiscussionStore(db, clock, createUserStore(db, clock, box))),
    categories: (clock) => asyncFacade(createCategoryStore(db, clock)),
    bootstrapFirstRun: (clock, box) => bootstrapFirstRun(db, clock, box),
    async ping() {
      probe.get()
    },
    async close() {
      db.$client.close()
    },
  }
}
