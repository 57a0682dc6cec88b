import type { Engine } from '../engine.ts'
import type { PostgresOptions } from '../../lib/database-address.ts'
import { openPostgres, pingPostgres, type PgDb } from './client.ts'
import { bootstrapFirstRun } from './stores/bootstrap.ts'
import { createCategoryStore } from './stores/categories.ts'
import { createDiscussionStore } from './stores/discussions.ts'
import { createSessionStore } from './stores/sessions.ts'
import { createSiteStore } from './stores/sites.ts'
import { createTokenStore } from './stores/tokens.ts'
import { createUserStore } from './stores/users.ts'

/** The engine over a PostgreSQL database (`postgres://...`), its schema migrated when needed. */
export async function openPostgresEngine(address: string, options: PostgresOptions = {}): Promise<Engine> {
  return postgresEngine(await openPostgres(address, options))
}

export function postgresEngine(db: PgDb): Engine {
  return {
    kind: 'postgres',
    sqlite: undefined,
    sites: (clock) => createSiteStore(db, clock),
    users: (clock, box) => createUserStore(db, clock, box),
    sessions: (clock) => createSessionStore(db, clock),
    tokens: (clock, onFlushError) => createTokenStore(db, clock, onFlushError),
    discussions: (clock, box) => createDiscussionStore(db, clock, box),
    categories: (clock) => createCategoryStore(db, clock),
    bootstrapFirstRun: (clock, box) => bootstrapFirstRun(db, clock, box),
    ping: () => pingPostgres(db),
    async close() {
      await db.$client.end()
    },
  }
}
