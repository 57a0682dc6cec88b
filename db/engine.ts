import type { Clock } from '../lib/clock.ts'
import type { SecretBox } from '../lib/secret-box.ts'
import type Database from 'better-sqlite3'
import type { BetterSQLite3Database } from './drizzle.ts'
import type { StorePort } from './port.ts'
import type * as sqliteTables from './schema/sqlite.ts'
import { bootstrapFirstRun, type FirstRun } from './stores/bootstrap.ts'
import { createCategoryStore, type CategoryStore } from './stores/categories.ts'
import { createCredentialInventory, type CredentialInventory } from './stores/credential-inventory.ts'
import type { ListingOf } from './stores/discussion-listing.ts'
import { createDiscussionStore, type DiscussionStore } from './stores/discussions.ts'
import { createFileStore, type FileStore } from './stores/files.ts'
import { createMailStore, type MailStore } from './stores/mail.ts'
import { createOutboxStore, type OutboxStore } from './stores/outbox.ts'
import { createWebhookStore, type EventSink, type WebhookStore } from './stores/webhooks.ts'
import { createCustomerLinkStore, type CustomerLinkStore } from './stores/customer-links.ts'
import { createInvitationStore, type InvitationStore } from './stores/invitations.ts'
import { createOAuthStore, type OAuthStore } from './stores/oauth.ts'
import { createRateLimitStore, type RateLimitStore } from './stores/rate-limits.ts'
import { createSavedReplyStore, type SavedReplyStore } from './stores/saved-replies.ts'
import { createRuleStore, type RuleStore } from './stores/rules.ts'
import { createMergeStore, type MergeStore } from './stores/merges.ts'
import { createFieldStore, type FieldStore } from './stores/fields.ts'
import { createSignInProviderStore, type SignInProviderStore } from './stores/sign-in-providers.ts'
import { createCustomerDataStore, type CustomerDataStore } from './stores/customer-data.ts'
import { createErasureStore, type ErasureStore } from './stores/erasure.ts'
import { createScheduleStore, type ScheduleStore } from './stores/schedules.ts'
import { createSlaPolicyStore, type SlaPolicyStore } from './stores/sla-policies.ts'
import { createReportStore, type ReportStore } from './stores/reports.ts'
import { createSenderStore, type SenderStore } from './stores/senders.ts'
import { createSearchStore, type SearchStore } from './stores/search.ts'
import { createChangeStore, type ChangeStore } from './stores/changes.ts'
import { createIdempotencyStore, type IdempotencyStore } from './stores/idempotency.ts'
import { createSecondFactorStore, type SecondFactorStore } from './stores/second-factors.ts'
import { createSecurityLog, type SecurityLogStore } from './stores/security-log.ts'
import { createSessionStore, type SessionStore } from './stores/sessions.ts'
import { createSiteStore, type SiteStore } from './stores/sites.ts'
import { createTokenStore, type TokenStore } from './stores/tokens.ts'
import { createUserStore, type UserStore } from './stores/users.ts'

// The database a process runs on, whichever engine holds it: the stores it builds (written once
// for both engines over the engine's port, db/port.ts), a transaction, a probe for the health
// check, and close. The service and the command line reach the database through this and nothing
// else.

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

/**
 * Changes to what a site shows (its version moved: a discussion, a comment, an owner, a tag), seen
 * by every process on the database, whichever made them, the command line's included: the one
 * notice channel of the live pages (docs/decisions.md, "The team's queue"). PostgreSQL tells them
 * by NOTIFY from a trigger on the site's version, at commit; SQLite by the change counter of the
 * file that the read cache watches (db/sqlite/site-changes.ts). Several changes close together may
 * be heard as one.
 */
export interface SiteChanges {
  /** `handler` hears of the changes to the site committed from now on (it must not throw), until the function returned is called. */
  watch(siteId: number, handler: () => void): () => void
}

/** Who watches which site, for either engine's SiteChanges. */
export function siteWatchers() {
  const watching = new Map<number, Set<() => void>>()
  return {
    /** Adds a watcher; the function returned takes it off. */
    add(siteId: number, handler: () => void): () => void {
      const handlers = watching.get(siteId) ?? new Set()
      watching.set(siteId, handlers.add(handler))
      return () => {
        handlers.delete(handler)
        if (handlers.size === 0 && watching.get(siteId) === handlers) watching.delete(siteId)
      }
    },
    sites: () => [...watching.keys()],
    get size() {
      return watching.size
    },
    /** Tells every watcher of the site, each later and on its own (a watcher must not throw, as an event handler must not). */
    fire(siteId: number): void {
      for (const handler of watching.get(siteId) ?? []) queueMicrotask(handler)
    },
  }
}

/** Refuses a channel name or a payload that some engine could not carry. */
export function checkEvent(channel: string, payload?: string): void {
  if (!EVENT_CHANNEL.test(channel)) throw new Error(`an event channel is lower-case letters, digits and _, not "${channel}"`)
  if (payload !== undefined && Buffer.byteLength(payload) > EVENT_PAYLOAD_MAX_BYTES) {
    throw new Error(`an event payload holds at most ${EVENT_PAYLOAD_MAX_BYTES} bytes`)
  }
}

/** The drizzle database over a SQLite file's one connection (db/sqlite/client.ts opens it). */
export type SqliteDb = BetterSQLite3Database<typeof sqliteTables> & { $client: Database.Database }

/** The stores, each made for a clock (and the server key's box where it seals or opens). */
export interface EngineStores {
  sites(clock: Clock): SiteStore
  users(clock: Clock, box: SecretBox): UserStore
  sessions(clock: Clock): SessionStore
  /** `onFlushError` hears of a batch of last-used times that could not be written. */
  tokens(clock: Clock, onFlushError?: (error: unknown) => void, events?: EventSink): TokenStore
  /** `events` hears of each change, in its transaction (db/stores/webhooks.ts). */
  discussions(clock: Clock, box: SecretBox, events?: EventSink): DiscussionStore
  /** Merges of discussions and their undoing (db/stores/merges.ts); `events` hears of each change. */
  merges(clock: Clock, box: SecretBox, events?: EventSink): MergeStore
  categories(clock: Clock): CategoryStore
  /** A site's custom fields (db/stores/fields.ts). */
  fields(clock: Clock): FieldStore
  /** A site's saved replies (db/stores/saved-replies.ts). */
  savedReplies(clock: Clock): SavedReplyStore
  /** A site's rules (db/stores/rules.ts); their actions' events go to `events`. */
  rules(clock: Clock, box: SecretBox, events: EventSink): RuleStore
  /** A site's business hours (db/stores/schedules.ts). */
  schedules(clock: Clock): ScheduleStore
  /** A site's SLA policies (db/stores/sla-policies.ts). */
  slaPolicies(clock: Clock): SlaPolicyStore
  /** The reports over the sites' day rows (db/stores/reports.ts). */
  reports(clock: Clock, siteWeb: (permalink: string) => string): ReportStore
  /** What the sites say of senders: allowed, or blocked as spam (db/stores/senders.ts). */
  senders(clock: Clock): SenderStore
  /** Full-text search over the discussions, and the backfill of its index (db/stores/search.ts). */
  search(): SearchStore
  /** The change feed's reads (db/stores/changes.ts); the discussion store writes it. */
  changes(): ChangeStore
  /** The Idempotency-Keys the API's clients sent (db/stores/idempotency.ts); the box seals the answers kept. */
  idempotency(clock: Clock, box: SecretBox): IdempotencyStore
  /** The files of attachments (db/stores/files.ts). */
  files(clock: Clock): FileStore
  /** The sites' mailboxes and the messages taken in (db/stores/mail.ts); the box seals new users' legacy tokens. */
  mail(clock: Clock, box: SecretBox): MailStore
  /** What leaves the process, queued with its cause (db/stores/outbox.ts). */
  outbox(clock: Clock): OutboxStore
  /** The links mailed to customers to sign in or to post (db/stores/customer-links.ts); the box digests and seals them. */
  customerLinks(clock: Clock, box: SecretBox, events?: EventSink): CustomerLinkStore
  /** Invitations to the sites' staff (db/stores/invitations.ts). */
  invitations(clock: Clock, box: SecretBox): InvitationStore
  /** The sites' webhook endpoints and the log of their deliveries (db/stores/webhooks.ts); the box seals their secrets. */
  webhooks(clock: Clock, box: SecretBox): WebhookStore
  /** oidc-provider's records, under the OAuth adapter (db/stores/oauth.ts). */
  oauth(clock: Clock): OAuthStore
  /** The security log (db/stores/security-log.ts). */
  securityLog(clock: Clock): SecurityLogStore
  /** A site's credentials inventory (db/stores/credential-inventory.ts). */
  inventory(clock: Clock): CredentialInventory
  /** Second factors and recovery codes (db/stores/second-factors.ts); the box seals and digests them. */
  secondFactors(clock: Clock, box: SecretBox): SecondFactorStore
  /** The sites' identity providers for their staff's sign-in (db/stores/sign-in-providers.ts); the box seals their secrets. */
  signInProviders(clock: Clock, box: SecretBox): SignInProviderStore
  /** What a site holds of one customer, for their export (db/stores/customer-data.ts). */
  customerData(clock: Clock): CustomerDataStore
  erasure(clock: Clock, box: SecretBox, events?: EventSink): ErasureStore
  /** What fair use took from each key's budget, shared by the processes (db/stores/rate-limits.ts). */
  rateLimits(): RateLimitStore
}

/** The stores over `port`, each method a share of the connection where the engine needs that (port.guard). */
export function storesOver(port: StorePort, listingOf: ListingOf): EngineStores {
  const { guard } = port
  return {
    sites: (clock) => guard(createSiteStore(port, clock)),
    users: (clock, box) => guard(createUserStore(port, clock, box)),
    sessions: (clock) => guard(createSessionStore(port, clock)),
    tokens: (clock, onFlushError, events) => guard(createTokenStore(port, clock, onFlushError, events)),
    discussions: (clock, box, events) => guard(createDiscussionStore(port, clock, box, listingOf, events)),
    merges: (clock, box, events) => guard(createMergeStore(port, clock, box, events)),
    categories: (clock) => guard(createCategoryStore(port, clock)),
    fields: (clock) => guard(createFieldStore(port, clock)),
    savedReplies: (clock) => guard(createSavedReplyStore(port, clock)),
    rules: (clock, box, events) => guard(createRuleStore(port, clock, box, events)),
    schedules: (clock) => guard(createScheduleStore(port, clock)),
    slaPolicies: (clock) => guard(createSlaPolicyStore(port, clock)),
    reports: (clock, siteWeb) => guard(createReportStore(port, clock, siteWeb)),
    senders: (clock) => guard(createSenderStore(port, clock)),
    search: () => guard(createSearchStore(port)),
    changes: () => guard(createChangeStore(port)),
    idempotency: (clock, box) => guard(createIdempotencyStore(port, clock, box)),
    files: (clock) => guard(createFileStore(port, clock)),
    mail: (clock, box) => guard(createMailStore(port, clock, box)),
    outbox: (clock) => guard(createOutboxStore(port, clock)),
    customerLinks: (clock, box, events) => guard(createCustomerLinkStore(port, clock, box, events)),
    invitations: (clock, box) => guard(createInvitationStore(port, clock, box)),
    webhooks: (clock, box) => guard(createWebhookStore(port, clock, box)),
    oauth: (clock) => guard(createOAuthStore(port, clock)),
    securityLog: (clock) => guard(createSecurityLog(port, clock)),
    inventory: (clock) => guard(createCredentialInventory(port, clock)),
    secondFactors: (clock, box) => guard(createSecondFactorStore(port, clock, box)),
    signInProviders: (clock, box) => guard(createSignInProviderStore(port, clock, box)),
    customerData: (clock) => guard(createCustomerDataStore(port, clock)),
    erasure: (clock, box, events) => guard(createErasureStore(port, clock, box, events)),
    rateLimits: () => guard(createRateLimitStore(port)),
  }
}

/** The engine's side of an Engine: its port and how it reads a listing's page; the rest is the same for both. */
export function engineOver(
  port: StorePort,
  listingOf: ListingOf,
  own: Pick<Engine, 'sqlite' | 'events' | 'siteChanges' | 'ping' | 'place' | 'close' | 'requestArrived'>,
): Engine {
  return {
    kind: port.kind,
    ...own,
    ...storesOver(port, listingOf),
    atomic: (work) => port.atomic((tx) => work(storesOver(tx, listingOf))),
    bootstrapFirstRun: (clock, box) => bootstrapFirstRun(port, clock, box, listingOf),
  }
}

export interface Engine extends EngineStores {
  readonly kind: 'sqlite' | 'postgres'
  /** The SQLite connection itself, for what only SQLite has (online backup, query plans); undefined on PostgreSQL. */
  readonly sqlite: SqliteDb | undefined
  /**
   * Runs `work` with stores over one transaction (db/port.ts, `atomic`): committed when it
   * resolves, rolled back when it throws; the stores' own transactions are savepoints in it.
   */
  atomic<T>(work: (stores: EngineStores) => Promise<T>): Promise<T>
  /** The demo site on a database without any site (db/stores/bootstrap.ts); null otherwise. */
  bootstrapFirstRun(clock: Clock, box: SecretBox): Promise<FirstRun | null>
  /** Messages to and from the other processes on this database; connects when first used. */
  readonly events: EngineEvents
  /** The changes to each site's discussions, made by any process on the database. */
  readonly siteChanges: SiteChanges
  /**
   * A request arrived at the server, which goes on with it once `admit` is called: what the engine
   * remembers of the database is checked again before it answers that request
   * (db/sqlite/read-cache.ts); on PostgreSQL, which remembers nothing between requests, at once.
   */
  requestArrived(admit: () => void): void
  /** Resolves when the database answers a real read; rejects otherwise. */
  ping(): Promise<void>
  /**
   * Where the database is, as the same text for every process on it and another for a copy of it:
   * SQLite, its file's real path; PostgreSQL, the server's system identifier, the database's oid
   * and the schema (a database restored elsewhere, or copied, is another place: plugins/mail.ts).
   */
  place(): Promise<string>
  close(): Promise<void>
}

