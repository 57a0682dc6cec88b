import type { Clock } from '../lib/clock.ts'
import type { SecretBox } from '../lib/secret-box.ts'
import type { Db } from './sqlite/client.ts'
import type { FirstRun } from './stores/bootstrap.ts'
import type { CategoryStore } from './stores/categories.ts'
import type { DiscussionStore } from './stores/discussions.ts'
import type { OAuthStore } from './stores/oauth.ts'
import type { SecurityLogStore } from './stores/security-log.ts'
import type { SessionStore } from './stores/sessions.ts'
import type { SiteStore } from './stores/sites.ts'
import type { TokenStore } from './stores/tokens.ts'
import type { UserStore } from './stores/users.ts'

// The database a process runs on, whichever engine holds it: the stores it builds (one
// asynchronous interface for both engines, db/stores/async.ts), a probe for the health check, and
// close. The service and the command line reach the database through this and nothing else.

/** The most a published payload may hold, in UTF-8 bytes (PostgreSQL's NOTIFY takes under 8000). */
export const EVENT_PAYLOAD_MAX_BYTES = 7_000

/** What a channel may be called: short, lower-case, so that every engine can carry it as it is. */
export const EVENT_CHANNEL = /^[a-z][a-z0-9_]{0,30}$/

/**
 * Messages between the processes serving one database (docs/decisions.md, "Shared between the
 * processes"): every subscriber of a channel hears every payload published on it, the
 * publisher's own included, in one order that is the same for every subscriber, within
 * milliseconds. Best effort: nothing is kept for a subscriber that was not listening (a process
 * starting, or one whose connection broke for a moment), and nothing is published while the
 * engine cannot reach its database. PostgreSQL carries them with LISTEN/NOTIFY on a connection of
 * their own; SQLite within the process, since one process serves a SQLite file.
 */
export interface EngineEvents {
  /** Resolves once the payload is sent; rejects when it cannot be sent now. */
  publish(channel: string, payload: string): Promise<void>
  /**
   * From the moment the promise resolves, `handler` hears every payload published on `channel`
   * (it must not throw). Rejects when the database cannot be reached now; the engine goes on
   * trying, and the handler hears what is published once it succeeds.
   */
  subscribe(channel: string, handler: (payload: string) => void): Promise<void>
}

/** Refuses a channel name or a payload that some engine could not carry. */
export function checkEvent(channel: string, payload?: string): void {
  if (!EVENT_CHANNEL.test(channel)) throw new Error(`an event channel is lower-case letters, digits and _, not "${channel}"`)
  if (payload !== undefined && Buffer.byteLength(payload) > EVENT_PAYLOAD_MAX_BYTES) {
    throw new Error(`an event payload holds at most ${EVENT_PAYLOAD_MAX_BYTES} bytes`)
  }
}

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
  /** oidc-provider's records, under the OAuth adapter (db/stores/oauth.ts). */
  oauth(clock: Clock): OAuthStore
  /** The security log (db/stores/security-log.ts). */
  securityLog(clock: Clock): SecurityLogStore
  /** The demo site on a database without any site (db/stores/bootstrap.ts); null otherwise. */
  bootstrapFirstRun(clock: Clock, box: SecretBox): Promise<FirstRun | null>
  /** Messages to and from the other processes on this database; connects when first used. */
  readonly events: EngineEvents
  /** Resolves when the database answers a real read; rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

