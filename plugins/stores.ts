import fp from 'fastify-plugin'
import type { CategoryStore } from '../db/stores/categories.ts'
import type { SavedReplyStore } from '../db/stores/saved-replies.ts'
import { createRuleSink, type RuleStore } from '../db/stores/rules.ts'
import type { ScheduleStore } from '../db/stores/schedules.ts'
import type { SlaPolicyStore } from '../db/stores/sla-policies.ts'
import type { ReportStore } from '../db/stores/reports.ts'
import type { SenderStore } from '../db/stores/senders.ts'
import type { CredentialInventory } from '../db/stores/credential-inventory.ts'
import type { CustomerLinkStore } from '../db/stores/customer-links.ts'
import type { InvitationStore } from '../db/stores/invitations.ts'
import type { DiscussionStore } from '../db/stores/discussions.ts'
import type { MergeStore } from '../db/stores/merges.ts'
import type { FieldStore } from '../db/stores/fields.ts'
import type { SearchStore } from '../db/stores/search.ts'
import type { ChangeStore } from '../db/stores/changes.ts'
import type { IdempotencyStore } from '../db/stores/idempotency.ts'
import type { FileStore } from '../db/stores/files.ts'
import type { MailStore } from '../db/stores/mail.ts'
import type { OutboxStore } from '../db/stores/outbox.ts'
import type { OAuthStore } from '../db/stores/oauth.ts'
import type { SecondFactorStore } from '../db/stores/second-factors.ts'
import type { SignInProviderStore } from '../db/stores/sign-in-providers.ts'
import type { CustomerDataStore } from '../db/stores/customer-data.ts'
import type { ErasureStore } from '../db/stores/erasure.ts'
import type { SecurityLogStore } from '../db/stores/security-log.ts'
import type { SessionStore } from '../db/stores/sessions.ts'
import type { SiteStore } from '../db/stores/sites.ts'
import type { TokenStore } from '../db/stores/tokens.ts'
import type { UserStore } from '../db/stores/users.ts'
import { createEventSink, type EventRender, type EventSink, type StoreEvent, type WebhookStore } from '../db/stores/webhooks.ts'
import type { Urls } from '../lib/urls.ts'

// Every store is built by the database's engine (db/engine.ts), which knows nothing of Fastify
// (the CLI builds the same stores); each plugin here builds one over the app's database and decorates the instance
// with it. Routes and plugins use the decorations and never build a store of their own.

declare module 'fastify' {
  interface FastifyInstance {
    sites: SiteStore
    users: UserStore
    sessions: SessionStore
    tokens: TokenStore
    discussions: DiscussionStore
    /** Merges of discussions into others, and their undoing (db/stores/merges.ts). */
    merges: MergeStore
    /** A site's custom fields (db/stores/fields.ts). */
    fields: FieldStore
    categories: CategoryStore
    savedReplies: SavedReplyStore
    rules: RuleStore
    schedules: ScheduleStore
    slaPolicies: SlaPolicyStore
    reports: ReportStore
    senders: SenderStore
    discussionSearch: SearchStore
    changes: ChangeStore
    idempotencyKeys: IdempotencyStore
    files: FileStore
    mailboxes: MailStore
    outbox: OutboxStore
    customerLinks: CustomerLinkStore
    /** Invitations to the site's staff (routes/web/admin-team.ts, routes/api/team.ts). */
    invitations: InvitationStore
    oauthRecords: OAuthStore
    securityLog: SecurityLogStore
    inventory: CredentialInventory
    secondFactors: SecondFactorStore
    /** The identity providers the sites' staff sign in at (db/stores/sign-in-providers.ts). */
    signInProviders: SignInProviderStore
    /** What a site holds of one customer, for their export (db/stores/customer-data.ts). */
    customerData: CustomerDataStore
    /** A customer's erasure, and the site's retention (db/stores/erasure.ts). */
    erasure: ErasureStore
    webhooks: WebhookStore
    /**
     * Tells the site's webhooks of a change and runs the site's rules it starts, in the change's
     * transaction (db/stores/webhooks.ts, db/stores/rules.ts); the stores are given it.
     */
    events: EventSink
    /** Tells of an event whose cause another library wrote (an application authorized): in a transaction of its own, right after. */
    tellAfter(event: StoreEvent): Promise<void>
  }
}

const STORE = { fastify: '5.x', dependencies: ['config', 'database'] }

export const siteStore = fp(
  async (fastify) => {
    fastify.decorate('sites', fastify.database.sites(fastify.clock))
  },
  { ...STORE, name: 'site-store' },
)

/** Accounts, roles and legacy tokens; the server key's box seals the legacy tokens. */
export const userStore = fp(
  async (fastify) => {
    fastify.decorate('users', fastify.database.users(fastify.clock, fastify.secretBox))
  },
  { ...STORE, name: 'user-store', dependencies: [...STORE.dependencies, 'server-key'] },
)

export const sessionStore = fp(
  async (fastify) => {
    fastify.decorate('sessions', fastify.database.sessions(fastify.clock))
  },
  { ...STORE, name: 'session-store' },
)

/**
 * The sites' webhook endpoints, and the sink of events the other stores are given: `render` makes
 * an event's resource its v1 JSON (app.ts passes the routes' views, which the stores cannot see).
 */
export const webhookStore = fp<{ render: (urls: Urls) => EventRender }>(
  async (fastify, { render }) => {
    const events = createRuleSink(createEventSink(fastify.clock, render(fastify.urls)), fastify.clock, fastify.secretBox)
    const webhooks = fastify.database.webhooks(fastify.clock, fastify.secretBox)
    fastify.decorate('webhooks', webhooks)
    fastify.decorate('events', events)
    fastify.decorate('tellAfter', (event: StoreEvent) => webhooks.tell(events, event))
  },
  { ...STORE, name: 'webhook-store', dependencies: [...STORE.dependencies, 'server-key'] },
)

/** Personal API tokens: create, list, revoke, look up, and the batched last-used writes. */
export const tokenStore = fp(
  async (fastify) => {
    const tokens = fastify.database.tokens(fastify.clock, (error) => {
      fastify.log.warn({ err: error }, 'could not record when personal tokens were last used')
    }, fastify.events)
    fastify.decorate('tokens', tokens)
    // Registered after the database plugin, so this runs before the file is closed.
    fastify.addHook('onClose', async () => {
      await tokens.flush()
    })
  },
  { ...STORE, name: 'token-store', dependencies: [...STORE.dependencies, 'webhook-store'] },
)

/** Discussions, their comments, the files attached to them, the categories they are filed in, the mail that makes them, and a customer's data on request. */
export const discussionStores = fp(
  async (fastify) => {
    fastify.decorate('discussions', fastify.database.discussions(fastify.clock, fastify.secretBox, fastify.events))
    fastify.decorate('merges', fastify.database.merges(fastify.clock, fastify.secretBox, fastify.events))
    fastify.decorate('fields', fastify.database.fields(fastify.clock))
    fastify.decorate('categories', fastify.database.categories(fastify.clock))
    fastify.decorate('savedReplies', fastify.database.savedReplies(fastify.clock))
    fastify.decorate('rules', fastify.database.rules(fastify.clock, fastify.secretBox, fastify.events))
    fastify.decorate('schedules', fastify.database.schedules(fastify.clock))
    fastify.decorate('slaPolicies', fastify.database.slaPolicies(fastify.clock))
    fastify.decorate('reports', fastify.database.reports(fastify.clock, (permalink) => fastify.urls.siteWeb(permalink)))
    fastify.decorate('senders', fastify.database.senders(fastify.clock))
    fastify.decorate('discussionSearch', fastify.database.search())
    fastify.decorate('changes', fastify.database.changes())
    fastify.decorate('idempotencyKeys', fastify.database.idempotency(fastify.clock, fastify.secretBox))
    fastify.decorate('files', fastify.database.files(fastify.clock))
    fastify.decorate('mailboxes', fastify.database.mail(fastify.clock, fastify.secretBox))
    fastify.decorate('outbox', fastify.database.outbox(fastify.clock))
    fastify.decorate('customerLinks', fastify.database.customerLinks(fastify.clock, fastify.secretBox, fastify.events))
    fastify.decorate('invitations', fastify.database.invitations(fastify.clock, fastify.secretBox))
    fastify.decorate('customerData', fastify.database.customerData(fastify.clock))
    fastify.decorate('erasure', fastify.database.erasure(fastify.clock, fastify.secretBox, fastify.events))
  },
  { ...STORE, name: 'discussion-stores', dependencies: [...STORE.dependencies, 'server-key', 'webhook-store'] },
)

/** oidc-provider's records (sessions, grants, codes, tokens, clients), which the OAuth adapter keeps here. */
export const oauthStore = fp(
  async (fastify) => {
    fastify.decorate('oauthRecords', fastify.database.oauth(fastify.clock))
  },
  { ...STORE, name: 'oauth-store' },
)

/** Second factors and recovery codes; the server key's box seals the secrets and digests the codes. */
export const secondFactorStore = fp(
  async (fastify) => {
    fastify.decorate('secondFactors', fastify.database.secondFactors(fastify.clock, fastify.secretBox))
  },
  { ...STORE, name: 'second-factor-store', dependencies: [...STORE.dependencies, 'server-key'] },
)

/** The identity providers of the staff's sign-in; the server key's box seals their client secrets. */
export const signInProviderStore = fp(
  async (fastify) => {
    fastify.decorate('signInProviders', fastify.database.signInProviders(fastify.clock, fastify.secretBox))
  },
  { ...STORE, name: 'sign-in-provider-store', dependencies: [...STORE.dependencies, 'server-key'] },
)

/** The security log of the accounts (issue 18), and the credentials inventory of the sites' administrators. */
export const securityLogStore = fp(
  async (fastify) => {
    fastify.decorate('securityLog', fastify.database.securityLog(fastify.clock))
    fastify.decorate('inventory', fastify.database.inventory(fastify.clock))
  },
  { ...STORE, name: 'security-log-store' },
)
