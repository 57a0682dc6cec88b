import type { Clock } from '../lib/clock.ts'
import type { SecretBox } from '../lib/secret-box.ts'
import type { Db } from './client.ts'
import type { FirstRun } from './stores/bootstrap.ts'
import type { CategoryStore } from './stores/categories.ts'
import type { DiscussionStore } from './stores/discussions.ts'
import type { SessionStore } from './stores/sessions.ts'
import type { SiteStore } from './stores/sites.ts'
import type { TokenStore } from './stores/tokens.ts'
import type { UserStore } from './stores/users.ts'

// The database a process runs on, whichever engine holds it: the stores it builds (one
// asynchronous interface for both engines, db/stores/async.ts), a probe for the health check, and
// close. The service and the command line reach the database through this and nothing else.

export interface Engine {
  readonly kind: 'sqlite' | 'postgres'
  /** The SQLite connection itself, for what only SQLite has (online backup, query plans); undefined on PostgreSQL. */
  readonly sqlite: Db | undefined
  sites(clock: Clock): SiteStore
  users(clock: Clock, box: SecretBox): UserStore
  sessions(clock: Clock): SessionStore
  /** `onFlushError` hears of a batch of last-used times that could not be written. */
  tokens(clock: Clock, onFlushError?: (error: unknown) => void): TokenStore
  discussions(clock: Clock, box: SecretBox): DiscussionStore
  categories(clock: Clock): CategoryStore
  /** The demo site on a database without any site (db/stores/bootstrap.ts); null otherwise. */
  bootstrapFirstRun(clock: Clock, box: SecretBox): Promise<FirstRun | null>
  /** Resolves when the database answers a real read; rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

