import { sql } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { NEVER, slaChannels } from '../../lib/sla.ts'
import { dimensions, ratings } from '../../lib/reports.ts'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from '../drizzle.ts'
import { accessLevels, changeKinds, erasureModes, commentVias, discussionStates, factorKinds, linkPurposes, outboxKinds, outboxStates, participantSources, roles, senderVerdicts, securityKinds, writeTokenRules } from '../values.ts'
import { fieldAudiences, fieldKinds, fieldSubjects } from '../../lib/fields.ts'

// Every moment is stored as integer milliseconds since the epoch (UTC), read back as a Date.
const moment = (name: string) => integer(name, { mode: 'timestamp_ms' })

export const sites = sqliteTable('sites', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  // The <site> of the API paths and of the site URL.
  permalink: text('permalink').notNull().unique(),
  name: text('name').notNull(),
  // The secret that signs multipass SSO tokens for this site (docs/decisions.md, "Multipass").
  multipassKey: text('multipass_key').notNull(),
  createdAt: moment('created_at').notNull(),
  // Moves on with every change to what the API shows of the site: its discussions, their comments,
  // its categories (docs/decisions.md, "Conditional requests"). The validator of its listings.
  version: integer('version').notNull().default(0),
  // The token policy its administrators set (docs/decisions.md, "Site administrators"): the longest
  // lifetime of a new personal token, who may make read-and-write ones, and which of the older
  // credentials the API still takes. Read with the site on every request, so it costs no query.
  tokenMaxDays: integer('token_max_days').notNull().default(365),
  writeTokens: text('write_tokens', { enum: writeTokenRules }).notNull().default('everyone'),
  legacyTokenOn: integer('legacy_token_on', { mode: 'boolean' }).notNull().default(true),
  multipassOn: integer('multipass_on', { mode: 'boolean' }).notNull().default(true),
  passwordOn: integer('password_on', { mode: 'boolean' }).notNull().default(true),
  // Whether its support staff must have a second factor: until they add one, their sign-in leads
  // only to adding one (docs/decisions.md, "Second factors").
  staffSecondFactor: integer('staff_second_factor', { mode: 'boolean' }).notNull().default(false),
  // The customer's side (docs/decisions.md, "The customer's side"): whether a visitor who is not
  // signed in may start a discussion (posted once the link mailed to them is followed), and whether
  // customers see the site's public discussions beside their own.
  visitorDiscussions: integer('visitor_discussions', { mode: 'boolean' }).notNull().default(true),
  publicDiscussions: integer('public_discussions', { mode: 'boolean' }).notNull().default(true),
  // Whether a supporter who has not chosen hears of every new discussion by mail (issue 65: a team
  // leaving a shared inbox hears of new mail at once). On for a new site; sites made before it, off.
  newDiscussionsToTeam: integer('new_discussions_to_team', { mode: 'boolean' }).notNull().default(true),
  // Whether its customers are asked to rate a resolved discussion (issue 69; docs/decisions.md,
  // "Satisfaction"), and the last week (its Monday) whose digest was mailed to its administrators.
  satisfactionOn: integer('satisfaction_on', { mode: 'boolean' }).notNull().default(true),
  digestWeek: text('digest_week').notNull().default(''),
  // Moves on with every change to its rules (issue 70; db/stores/rules.ts), its SLA policies and
  // the hours they count in (db/stores/sites.ts, bumpRulesVersion): a process keeps the rules it
  // parsed and the policies it read for as long as this is the number it read.
  rulesVersion: integer('rules_version').notNull().default(0),
  // Whether its support staff sign in with the company's account only (issue 73; docs/decisions.md,
  // "Staff sign-in with the company's account"): no password on its pages, Basic and the legacy
  // token refused on its API.
  companySignInOnly: integer('company_sign_in_only', { mode: 'boolean' }).notNull().default(false),
  // A customer's data on request (issue 74; docs/decisions.md, "A customer's data on request"): what
  // erasing a customer does to the discussions they started (kept, anonymised; or deleted), and
  // after how many months its resolved discussions are deleted (null: kept).
  erasureMode: text('erasure_mode', { enum: erasureModes }).notNull().default('anonymise'),
  retentionMonths: integer('retention_months'),
  // The number of its change feed's last change (db/stores/changes.ts): moved with its version by
  // the write that takes the site's row, which numbers its changes from it.
  changesSeq: integer('changes_seq').notNull().default(0),
})

/** The site a row belongs to; the row goes with it. */
const siteReference = () =>
  integer('site_id')
    .notNull()
    .references(() => sites.id, { onDelete: 'cascade' })

export const users = sqliteTable(
  'users',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    // The address as the user typed it, for display.
    email: text('email').notNull(),
    // The same address folded to lower case: what makes an account unique and how it is found.
    emailKey: text('email_key').notNull(),
    name: text('name').notNull(),
    // argon2id PHC string; null for accounts that cannot sign in with a password.
    passwordHash: text('password_hash'),
    disabled: integer('disabled', { mode: 'boolean' }).notNull().default(false),
    // Changes whenever the password does, so anything remembered about the old one is dropped.
    passwordChangedAt: moment('password_changed_at'),
    // The legacy account token: a SHA-256 fingerprint for look-up, an AES-256-GCM copy under the
    // server key so the profile page can show it, and its expiry (one year after issue).
    legacyTokenFingerprint: text('legacy_token_fingerprint'),
    legacyTokenEncrypted: text('legacy_token_encrypted'),
    legacyTokenExpiresAt: moment('legacy_token_expires_at'),
    createdAt: moment('created_at').notNull(),
    // Wrong authenticator codes and recovery codes in a row, since the last right one or a passkey:
    // at MAX_SECOND_STEP_FAILURES the codes stop (db/stores/second-factors.ts, NIST SP 800-63B 5.2.2).
    secondStepFailures: integer('second_step_failures').notNull().default(0),
  },
  (t) => [
    uniqueIndex('users_email_key_unique').on(t.emailKey),
    uniqueIndex('users_legacy_token_unique').on(t.legacyTokenFingerprint),
  ],
)

/** The user a row belongs to; the row goes with the account. */
const userReference = () =>
  integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' })

export const memberships = sqliteTable(
  'memberships',
  {
    siteId: siteReference(),
    userId: userReference(),
    role: text('role', { enum: roles }).notNull(),
    createdAt: moment('created_at').notNull(),
    // A supporter who administers the site: its credentials inventory and its token policy.
    administrator: integer('administrator', { mode: 'boolean' }).notNull().default(false),
    // What a supporter of the site is mailed about (docs/decisions.md, "The team's queue"): every
    // new discussion of the site (null: as the site's `new_discussions_to_team` says, until they
    // choose), and what others write on the discussions they own.
    notifyNew: integer('notify_new', { mode: 'boolean' }),
    notifyOwned: integer('notify_owned', { mode: 'boolean' }).notNull().default(true),
    // A collaborator of the site (docs/decisions.md, "Collaborators"): of its staff, reads the queue
    // and the discussions, and writes internal notes only. Never also its administrator.
    collaborator: integer('collaborator', { mode: 'boolean' }).notNull().default(false),
    // An administrator who asked for the weekly digest of the reports (issue 69).
    notifyDigest: integer('notify_digest', { mode: 'boolean' }).notNull().default(false),
    // A supporter's columns of the queue (issue 72): the keys of the site's fields they show, JSON.
    queueFields: text('queue_fields').notNull().default('[]'),
    // A customer's values of the site's customer fields (issue 72; db/stores/fields.ts), JSON by key.
    fields: text('fields').notNull().default('{}'),
  },
  (t) => [
    primaryKey({ columns: [t.siteId, t.userId] }),
    index('memberships_user_idx').on(t.userId),
    // A site's staff among its members (thousands of customers each): who is told of a new
    // discussion, whose turn it is, who may own one.
    index('memberships_site_role_idx').on(t.siteId, t.role, t.userId),
  ],
)

export const personalTokens = sqliteTable(
  'personal_tokens',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    userId: userReference(),
    name: text('name').notNull(),
    access: text('access', { enum: accessLevels }).notNull(),
    // SHA-256 of the whole token value, hex. The value itself is never stored.
    fingerprint: text('fingerprint').notNull(),
    lastFour: text('last_four').notNull(),
    createdAt: moment('created_at').notNull(),
    lastUsedAt: moment('last_used_at'),
    lastUsedFrom: text('last_used_from'),
    expiresAt: moment('expires_at').notNull(),
    revokedAt: moment('revoked_at'),
    // When the expiry notices went out by mail (plugins/expiry-notices.ts): 7 days before, and on the day.
    weekNoticeAt: moment('week_notice_at'),
    dayNoticeAt: moment('day_notice_at'),
  },
  (t) => [
    uniqueIndex('personal_tokens_fingerprint_unique').on(t.fingerprint),
    // Counting a user's active tokens (the limit of 20) and listing them read only this index.
    index('personal_tokens_owner_idx')
      .on(t.userId, t.expiresAt)
      .where(sql`${t.revokedAt} IS NULL`),
    // The hourly look for tokens whose expiry notice is due.
    index('personal_tokens_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.revokedAt} IS NULL`),
  ],
)

// The last addresses a personal token was used from (at most five per token, most recent kept),
// written in the last-used batch (db/stores/tokens.ts).
export const personalTokenAddresses = sqliteTable(
  'personal_token_addresses',
  {
    tokenId: integer('token_id')
      .notNull()
      .references(() => personalTokens.id, { onDelete: 'cascade' }),
    address: text('address').notNull(),
    lastUsedAt: moment('last_used_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tokenId, t.address] })],
)

// Supporter web sessions. The cookie carries the session id; only its SHA-256 is stored.
// Invitations to a site's staff (db/stores/invitations.ts; docs/decisions.md, "Invitations"): an
// administrator invites an address with a role; the mailed link (kept as a keyed digest, like the
// customer links) is taken once within its time, or withdrawn.
export const invitations = sqliteTable(
  'invitations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    email: text('email').notNull(),
    administrator: integer('administrator', { mode: 'boolean' }).notNull().default(false),
    digest: text('digest').notNull(),
    invitedBy: integer('invited_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at').notNull(),
    acceptedAt: moment('accepted_at'),
    withdrawnAt: moment('withdrawn_at'),
    // Invited as a collaborator (administrator and collaborator: never both).
    collaborator: integer('collaborator', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [uniqueIndex('invitations_digest_unique').on(t.digest), index('invitations_site_idx').on(t.siteId, t.email)],
)

export const webSessions = sqliteTable(
  'web_sessions',
  {
    fingerprint: text('fingerprint').primaryKey(),
    siteId: siteReference(),
    userId: userReference(),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at').notNull(),
    // When the person last proved it was them in this session (sudo mode, docs/decisions.md,
    // "Confirming it is you"); null: at sign-in, created_at.
    confirmedAt: moment('confirmed_at'),
    // A session made by signing in at the company's identity provider (issue 73): which of the
    // site's providers, the provider's session id (`sid`, what its back-channel logout names), and
    // whether the provider said it asked a second factor that the site trusts.
    providerId: integer('provider_id').references(() => signInProviders.id, { onDelete: 'set null' }),
    providerSid: text('provider_sid'),
    providerMfa: integer('provider_mfa', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('web_sessions_user_idx').on(t.userId), index('web_sessions_expiry_idx').on(t.expiresAt), index('web_sessions_provider_idx').on(t.providerId)],
)

// The identity providers a site's staff sign in at (issue 73; db/stores/sign-in-providers.ts): an
// OpenID Connect application registered at the company's Google, Microsoft Entra ID, Okta,
// Keycloak... Its client secret sealed; the email domains whose new people join the staff (JSON
// array) and as what; whether the provider's own second factor (amr/acr) stands for ours.
export const signInProviders = sqliteTable(
  'sign_in_providers',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    name: text('name').notNull(),
    kind: text('kind').notNull(),
    issuer: text('issuer').notNull(),
    clientId: text('client_id').notNull(),
    secret: text('secret').notNull(),
    domains: text('domains').notNull().default('[]'),
    domainRole: text('domain_role'),
    trustMfa: integer('trust_mfa', { mode: 'boolean' }).notNull().default(false),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [uniqueIndex('sign_in_providers_site_name_unique').on(t.siteId, t.name)],
)

// Who a provider's subject (`sub`) is here: linked at a person's first sign-in with it, checked at
// every one after (an address the company gives to someone else later does not open the account).
export const signInLinks = sqliteTable(
  'sign_in_links',
  {
    providerId: integer('provider_id')
      .notNull()
      .references(() => signInProviders.id, { onDelete: 'cascade' }),
    subject: text('subject').notNull(),
    userId: userReference(),
    createdAt: moment('created_at').notNull(),
    lastSignInAt: moment('last_sign_in_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.providerId, t.subject] }), uniqueIndex('sign_in_links_user_unique').on(t.providerId, t.userId), index('sign_in_links_user_idx').on(t.userId)],
)

// Discussions (docs/decisions.md, "Discussions (v1 shape)"). Everything below belongs to one site; every
// query names the site, so nothing of another site is ever reached.

export const categories = sqliteTable(
  'categories',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    name: text('name').notNull(),
    // Made from the name, unique within the site.
    permalink: text('permalink').notNull(),
    // New discussions in a public category are public unless the request says otherwise.
    public: integer('public', { mode: 'boolean' }).notNull().default(false),
    createdAt: moment('created_at').notNull(),
    // New discussions of the category are given to the site's supporters in turn; the last one given
    // one is remembered (a user id, not a reference: the turn goes on past an account removed).
    roundRobin: integer('round_robin', { mode: 'boolean' }).notNull().default(false),
    lastAssigneeId: integer('last_assignee_id'),
  },
  (t) => [uniqueIndex('categories_site_permalink_unique').on(t.siteId, t.permalink)],
)

export const discussions = sqliteTable(
  'discussions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    // The discussion's number within its site: what the API paths use. Never reused.
    number: integer('number').notNull(),
    title: text('title').notNull(),
    permalink: text('permalink').notNull(),
    state: text('state', { enum: discussionStates }).notNull(),
    // The state DELETE moved it from, which restore brings back.
    stateBeforeDelete: text('state_before_delete', { enum: discussionStates }),
    public: integer('public', { mode: 'boolean' }).notNull(),
    authorId: integer('author_id')
      .notNull()
      .references(() => users.id),
    categoryId: integer('category_id')
      .notNull()
      .references(() => categories.id),
    createdAt: moment('created_at').notNull(),
    // Any change: a comment, a state, the title, the category or the visibility.
    updatedAt: moment('updated_at').notNull(),
    // Last activity: the newest comment (the opening post counts). The default listing order.
    lastUpdatedAt: moment('last_updated_at').notNull(),
    commentsCount: integer('comments_count').notNull(),
    // Moves on with every change to the discussion or its comments: the validator of the discussion
    // and of its comments, and what If-Match compares.
    version: integer('version').notNull().default(0),
    // Whether its newest public comment is the customer's: the team owes an answer (the queue's
    // mark). Moved with every comment in its transaction; an internal note moves nothing.
    awaitingTeam: integer('awaiting_team', { mode: 'boolean' }).notNull().default(false),
    // Started by a customer on the customer's pages (routes/web/customers.ts): the queue marks it,
    // and the staff's public replies are mailed to its customer. Set once, when it is created.
    startedOnTheWeb: integer('started_on_the_web', { mode: 'boolean' }).notNull().default(false),
    // The supporter of the site who owns it, if any (db/stores/assignment.ts).
    assigneeId: integer('assignee_id').references(() => users.id, { onDelete: 'set null' }),
    // Its tags, sorted and separated by spaces (a tag has none), as the API shows them; found
    // through discussion_tags.
    tags: text('tags').notNull().default(''),
    // How it came (lib/sla.ts channelOf): mail, web (the support site) or api (MCP too). Set once.
    channel: text('channel', { enum: slaChannels }).notNull().default('api'),
    // Its SLA clocks (issue 68; lib/sla.ts SlaClock; docs/decisions.md, "SLA policies"), moved in
    // the transaction of every write: the policy that chose it, since when a reply is owed, when
    // the first reply's clock stopped, since when (and for how many business minutes before) the
    // resolution's clock runs, the due times, the earliest of them (NEVER when none runs: the
    // queue's order by due), the kinds breached, what was told, and when the alerts' loop looks next.
    slaPolicyId: integer('sla_policy_id'),
    slaReplySince: moment('sla_reply_since'),
    slaFirstRepliedAt: moment('sla_first_replied_at'),
    slaResolutionSince: moment('sla_resolution_since'),
    slaResolutionSpent: integer('sla_resolution_spent').notNull().default(0),
    firstReplyDueAt: moment('first_reply_due_at'),
    nextReplyDueAt: moment('next_reply_due_at'),
    resolutionDueAt: moment('resolution_due_at'),
    dueAt: moment('due_at').notNull().default(sql.raw(String(NEVER.getTime()))),
    slaBreached: text('sla_breached').notNull().default(''),
    slaTold: text('sla_told').notNull().default(''),
    slaAlertAt: moment('sla_alert_at'),
    // What the reports keep of it (issue 69; lib/reports.ts ReportFacts; docs/decisions.md,
    // "Reports"), moved in the transaction of the write that moves them: the team's first public
    // reply and the minutes to it, its last resolution, its owner then and the minutes to it (business
    // minutes in its SLA policy's hours, or around the clock), how often it was reopened, the team's
    // public replies, and its customer's rating.
    firstReplyAt: moment('first_reply_at'),
    firstReplyMinutes: integer('first_reply_minutes'),
    firstReplyBusiness: integer('first_reply_business'),
    resolvedAt: moment('resolved_at'),
    resolvedById: integer('resolved_by_id'),
    resolutionMinutes: integer('resolution_minutes'),
    resolutionBusiness: integer('resolution_business'),
    reopens: integer('reopens').notNull().default(0),
    teamReplies: integer('team_replies').notNull().default(0),
    rating: text('rating', { enum: ratings }),
    ratingComment: text('rating_comment').notNull().default(''),
    ratedAt: moment('rated_at'),
    // Merged into another discussion of its site (issue 71; docs/decisions.md, "Merge and split"):
    // that one's number. Its comments went there, its address answers with a redirect to it.
    mergedInto: integer('merged_into'),
    // Made by a split (issue 71): the number of the discussion its first comments were taken from.
    splitFrom: integer('split_from'),
    // Its custom fields' values (issue 72; db/stores/fields.ts), JSON by key, as the API shows them;
    // found through field_values.
    fields: text('fields').notNull().default('{}'),
    // When it was deleted for good (issue 74: its customer erased, or the site's retention): what
    // is left is its number, dates and facts for the reports, in the deleted state; no comment, no
    // title, never restored.
    erasedAt: moment('erased_at'),
  },
  (t) => [
    uniqueIndex('discussions_site_number_unique').on(t.siteId, t.number),
    // One index per listing order, for the live discussions of a site (every state but deleted and
    // spam: the plain listing; db/live.ts), for one state of it, and for the live ones of a category, so a page is
    // read in index order without sorting and a deep page skips index entries, not rows. The rowid
    // (id) at the end of each index is the tie-break of every order.
    index('discussions_site_activity_idx')
      .on(t.siteId, t.lastUpdatedAt)
      .where(isLive(t.state)),
    index('discussions_site_created_idx')
      .on(t.siteId, t.createdAt)
      .where(isLive(t.state)),
    index('discussions_site_updated_idx')
      .on(t.siteId, t.updatedAt)
      .where(isLive(t.state)),
    index('discussions_state_activity_idx').on(t.siteId, t.state, t.lastUpdatedAt),
    index('discussions_state_created_idx').on(t.siteId, t.state, t.createdAt),
    index('discussions_state_updated_idx').on(t.siteId, t.state, t.updatedAt),
    index('discussions_category_activity_idx')
      .on(t.siteId, t.categoryId, t.lastUpdatedAt)
      .where(isLive(t.state)),
    index('discussions_author_activity_idx').on(t.siteId, t.authorId, t.lastUpdatedAt),
    // The queue's default tab (new and open: what needs an answer) and its owners' tabs.
    index('discussions_todo_activity_idx')
      .on(t.siteId, t.lastUpdatedAt)
      .where(sql`${t.state} in ('new', 'open')`),
    index('discussions_assignee_activity_idx')
      .on(t.siteId, t.assigneeId, t.lastUpdatedAt)
      .where(isLive(t.state)),
    // The queue by due time (the soonest first), and what the SLA alerts' loop looks for.
    index('discussions_todo_due_idx')
      .on(t.siteId, t.dueAt)
      .where(sql`${t.state} in ('new', 'open')`),
    index('discussions_breached_activity_idx')
      .on(t.siteId, t.lastUpdatedAt)
      .where(sql`${t.slaBreached} <> ''`),
    index('discussions_sla_alert_idx')
      .on(t.slaAlertAt)
      .where(sql`${t.slaAlertAt} is not null`),
  ],
)

// One row per tag of a discussion: what `?tag=` finds discussions by.
export const discussionTags = sqliteTable(
  'discussion_tags',
  {
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    siteId: siteReference(),
    tag: text('tag').notNull(),
  },
  (t) => [primaryKey({ columns: [t.discussionId, t.tag] }), index('discussion_tags_site_tag_idx').on(t.siteId, t.tag, t.discussionId)],
)

// A site's saved replies: written by its administrators, chosen by every supporter in the reply
// form, the API and MCP, with the customer's name filled in (db/stores/saved-replies.ts).
export const savedReplies = sqliteTable(
  'saved_replies',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
    // A macro's actions (issue 70; lib/rules.ts MacroAction), JSON: applied with the reply in one click.
    actions: text('actions').notNull().default('[]'),
  },
  (t) => [uniqueIndex('saved_replies_site_title_unique').on(t.siteId, t.title)],
)

export const comments = sqliteTable(
  'comments',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    // Position within the discussion; 1 is the opening post.
    number: integer('number').notNull(),
    authorId: integer('author_id')
      .notNull()
      .references(() => users.id),
    // Whether the author was support staff of the site when writing: kept, so a supporter who later
    // leaves the staff does not turn their old replies into customer replies.
    bySupporter: integer('by_supporter', { mode: 'boolean' }).notNull(),
    body: text('body').notNull(),
    // A note among the staff, not a reply the customer sees.
    internal: integer('internal', { mode: 'boolean' }).notNull().default(false),
    via: text('via', { enum: commentVias }).notNull(),
    createdAt: moment('created_at').notNull(),
    // Moved here from another discussion of the site by a merge: that one's number, and its own
    // number there (docs/decisions.md, "Merge and split").
    movedFrom: integer('moved_from'),
    movedFromNumber: integer('moved_from_number'),
  },
  // A person's comments (their export and erasure, issue 74).
  (t) => [uniqueIndex('comments_discussion_number_unique').on(t.discussionId, t.number), index('comments_author_idx').on(t.authorId)],
)

// How many discussions a site has per category, state and visibility, kept in the same transaction
// as every write that changes one of those. A listing's `total` is a sum of a few of these rows
// instead of a count over up to a million discussions (about 50 ms each time, measured).
export const discussionCounts = sqliteTable(
  'discussion_counts',
  {
    siteId: siteReference(),
    categoryId: integer('category_id')
      .notNull()
      .references(() => categories.id, { onDelete: 'cascade' }),
    state: text('state', { enum: discussionStates }).notNull(),
    public: integer('public', { mode: 'boolean' }).notNull(),
    count: integer('count').notNull(),
    // The owner's user id; 0 for the discussions nobody owns (a key column cannot be null).
    assigneeId: integer('assignee_id').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.categoryId, t.state, t.public, t.assigneeId] })],
)

// oidc-provider's records (db/stores/oauth.ts): sessions, grants, codes, tokens, registered clients
// and the rest of the authorization server's models, one row each, the library's own JSON in
// `payload`. The adapter above the store computes every other column from the payload, so the
// look-ups it needs are columns with indexes; `id` is already a SHA-256 fingerprint of the
// library's id. No foreign keys: accounts are the library's text ids, and a user's deletion is
// handled by the adapter.
export const oauthRecords = sqliteTable(
  'oauth_records',
  {
    // The library's model name: Session, AccessToken, Grant, Client...
    model: text('model').notNull(),
    id: text('id').notNull(),
    payload: text('payload').notNull(),
    grantId: text('grant_id'),
    uid: text('uid'),
    userCode: text('user_code'),
    accountId: text('account_id'),
    clientId: text('client_id'),
    resource: text('resource'),
    // Null: lives until destroyed.
    expiresAt: moment('expires_at'),
    consumedAt: moment('consumed_at'),
    // Written at most once a minute per row (db/stores/oauth.ts, recordUse).
    lastUsedAt: moment('last_used_at'),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.id] }),
    // Revoking a grant deletes every record issued under it.
    index('oauth_records_grant_idx')
      .on(t.grantId)
      .where(sql`${t.grantId} IS NOT NULL`),
    index('oauth_records_uid_idx')
      .on(t.model, t.uid)
      .where(sql`${t.uid} IS NOT NULL`),
    index('oauth_records_user_code_idx')
      .on(t.model, t.userCode)
      .where(sql`${t.userCode} IS NOT NULL`),
    // A supporter's grants on a site, listed.
    index('oauth_records_account_idx')
      .on(t.accountId, t.model)
      .where(sql`${t.accountId} IS NOT NULL`),
    // The sweep of expired records.
    index('oauth_records_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.expiresAt} IS NOT NULL`),
  ],
)

export const securityEvents = sqliteTable(
  'security_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    // Whose account it concerns; null for what concerns the site alone (its policy changed by the
    // operator at the command line).
    userId: integer('user_id').references(() => users.id, { onDelete: 'cascade' }),
    // The site it happened on; null for what concerns the account everywhere (disabled, say).
    siteId: integer('site_id').references(() => sites.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: securityKinds }).notNull(),
    createdAt: moment('created_at').notNull(),
    // The client address, when a request did it.
    address: text('address'),
    // Who did it: page, cli, api, leak_report, administrator.
    actor: text('actor'),
    // A JSON object of names, ids, addresses: what the line says, never a secret.
    detail: text('detail').notNull(),
  },
  (t) => [
    index('security_events_user_idx').on(t.userId, t.createdAt, t.id),
    index('security_events_user_kind_idx').on(t.userId, t.kind, t.createdAt, t.id),
    index('security_events_site_idx').on(t.siteId, t.createdAt, t.id),
    index('security_events_created_idx').on(t.createdAt),
  ],
)

// The site's record of changes (issue 67; db/stores/audit.ts; docs/decisions.md, "The record of
// changes"): what its administrators and its operator changed, with who, when, from where, and the
// values before and after (never a secret), appended and never changed, pruned with the security log.
export const auditEvents = sqliteTable(
  'audit_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    // Who: the account (null for the operator at the command line, or an account since removed),
    // and their name and address as they were, so the line stays readable.
    actorId: integer('actor_id').references(() => users.id, { onDelete: 'set null' }),
    actor: text('actor').notNull(),
    // How: page, api, cli.
    via: text('via').notNull(),
    // The client address, when a request did it.
    address: text('address'),
    // What: `team.invited`, `category.changed`, ...; and what it was done to, as shown.
    action: text('action').notNull(),
    target: text('target').notNull(),
    // A JSON object: {before, after} of the fields that changed, or what was made or removed.
    detail: text('detail').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [index('audit_events_site_idx').on(t.siteId, t.id), index('audit_events_created_idx').on(t.createdAt)],
)

// A site's business hours (issue 68; db/stores/schedules.ts; docs/decisions.md, "Business hours"):
// the hours of each weekday in an IANA time zone, and the dates whose hours differ (holidays,
// one-offs), as lib/business-time.ts reads them. `week` is a JSON array of seven arrays of
// [start, end] minutes (Monday first); `days` a JSON object of date -> {name, hours}.
export const schedules = sqliteTable(
  'schedules',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    name: text('name').notNull(),
    timeZone: text('time_zone').notNull(),
    week: text('week').notNull(),
    days: text('days').notNull(),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [uniqueIndex('schedules_site_name_unique').on(t.siteId, t.name)],
)

// A site's SLA policies (issue 68; db/stores/sla-policies.ts; docs/decisions.md, "SLA policies"),
// in order (`position`): the first whose conditions hold chooses a discussion. Each condition is a
// list separated by spaces (empty: any): category ids, tags, customers' domains, channels. Targets
// in minutes of the schedule (null: around the clock); null target: no promise of that kind.
export const slaPolicies = sqliteTable(
  'sla_policies',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    position: integer('position').notNull(),
    name: text('name').notNull(),
    categories: text('categories').notNull().default(''),
    tags: text('tags').notNull().default(''),
    domains: text('domains').notNull().default(''),
    channels: text('channels').notNull().default(''),
    scheduleId: integer('schedule_id').references(() => schedules.id),
    firstReplyMinutes: integer('first_reply_minutes'),
    nextReplyMinutes: integer('next_reply_minutes'),
    resolutionMinutes: integer('resolution_minutes'),
    warnMinutes: integer('warn_minutes').notNull().default(30),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [uniqueIndex('sla_policies_site_name_unique').on(t.siteId, t.name)],
)

// Second factors of an account (docs/decisions.md, "Second factors"): authenticator apps (TOTP,
// RFC 6238) and passkeys (WebAuthn). `secret` is the key that checks the factor's proofs, sealed
// under the server key: an app's shared secret, or a passkey's public key.
export const secondFactors = sqliteTable(
  'second_factors',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: userReference(),
    kind: text('kind', { enum: factorKinds }).notNull(),
    name: text('name').notNull(),
    secret: text('secret').notNull(),
    // The last time step a code was accepted for: a code is accepted once.
    lastTimeStep: integer('last_time_step'),
    // Null until a first code confirms the enrollment: until then it proves nothing.
    confirmedAt: moment('confirmed_at'),
    createdAt: moment('created_at').notNull(),
    lastUsedAt: moment('last_used_at'),
    // A passkey's credential id (base64url), the signature counter its authenticator last
    // reported, and how the browser may reach it (WebAuthn transports, comma-separated).
    credentialId: text('credential_id'),
    signCount: integer('sign_count'),
    transports: text('transports'),
  },
  (t) => [index('second_factors_user_idx').on(t.userId), uniqueIndex('second_factors_credential_idx').on(t.credentialId)],
)

// Single-use recovery codes, kept only as keyed digests (lib/secret-box.ts).
export const recoveryCodes = sqliteTable(
  'recovery_codes',
  {
    userId: userReference(),
    digest: text('digest').notNull(),
    usedAt: moment('used_at'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.digest] })],
)

// The WebAuthn challenges already answered: a challenge is made without a row (signed, with its
// expiry, lib/passkey-challenges.ts) and answered once; the row lives until it would have expired.
export const usedChallenges = sqliteTable('used_challenges', {
  challenge: text('challenge').primaryKey(),
  expiresAt: moment('expires_at').notNull(),
})

// Fair use (plugins/rate-limits.ts): how many requests were taken from each key's budget in each
// window of time, by every process on the database. A process takes a few at once and spends them
// from memory; the row is what they share, and what a restart finds.
export const rateLimitWindows = sqliteTable(
  'rate_limit_windows',
  {
    key: text('key').notNull(),
    windowStart: moment('window_start').notNull(),
    taken: integer('taken').notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.windowStart] })],
)

// Attachments (docs/decisions.md, "Attachments"). A file is a content of a site, kept once however
// many attachments name it: its SHA-256 (hex) is unique per site, and reads `pending:<random>`
// while its pieces are being written, so a half-written file is never found by its content. Its
// type is the one detected from its bytes (lib/files.ts), never the one declared.
export const files = sqliteTable(
  'files',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    sha256: text('sha256').notNull(),
    size: integer('size').notNull(),
    contentType: text('content_type').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [uniqueIndex('files_site_sha256_unique').on(t.siteId, t.sha256)],
)

// The bytes a site's files take (each content once, half-written ones not yet), which its space
// (SERVICE_SITE_FILES_MB) is held against: kept by triggers on files (the migration
// site_file_usage), whoever adds, names or removes one, so a file kept reads one row rather than
// summing every file of the site (docs/decisions.md, "Attachments").
export const siteFileUsage = sqliteTable(
  'site_file_usage',
  {
    siteId: siteReference(),
    bytes: integer('bytes').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.siteId] })],
)

// A file's bytes in order, in pieces of at most FILE_PIECE_BYTES (db/stores/files.ts): a row
// small enough to write and read without holding a whole file in memory, on either engine.
export const filePieces = sqliteTable(
  'file_pieces',
  {
    fileId: integer('file_id')
      .notNull()
      .references(() => files.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    bytes: blob('bytes', { mode: 'buffer' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.fileId, t.seq] })],
)

// A file as someone sent it: its name (cleaned, lib/files.ts) and who uploaded it. An upload is
// on no comment yet and expires; a comment's attachment does not (expires_at null).
export const attachments = sqliteTable(
  'attachments',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    fileId: integer('file_id')
      .notNull()
      .references(() => files.id),
    commentId: integer('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    uploaderId: integer('uploader_id')
      .notNull()
      .references(() => users.id),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at'),
    // The message a mail came as, kept beside its comment (plugins/mail/pipeline.ts): its headers
    // and addresses are for the staff and the comment's own author only, whatever the discussion's
    // visibility (docs/decisions.md, "Mail").
    originalMessage: integer('original_message', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('attachments_comment_idx').on(t.commentId), index('attachments_file_idx').on(t.fileId), index('attachments_expires_idx').on(t.expiresAt)],
)

// Mail (docs/decisions.md, "Mail"): the addresses a site takes mail at. An address belongs to one
// site; mail to it opens discussions in `category_id` (the site's first category when none is set).
export const mailboxes = sqliteTable(
  'mailboxes',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    address: text('address').notNull(),
    categoryId: integer('category_id'),
    createdAt: moment('created_at').notNull(),
    // How mail arrives and leaves, sealed under the server key (lib/secret-box.ts): an IMAP mailbox
    // to fetch (JSON: host, port, secure, user, password, folder; none: the built-in receiver
    // takes it), and an SMTP URL for its replies (none: the service-wide SERVICE_SMTP_URL).
    imap: text('imap'),
    smtp: text('smtp'),
    // The IMAP fetch's place, "<UIDVALIDITY>:<last UID taken>", moved in the transaction of each
    // message taken; the lease of the one process that fetches the mailbox; the last fetch and error.
    imapPosition: text('imap_position'),
    leaseOwner: text('lease_owner'),
    leaseUntil: moment('lease_until'),
    lastFetchAt: moment('last_fetch_at'),
    lastError: text('last_error'),
    // Whether a new discussion by mail to this address is acknowledged by a mail to its sender.
    acknowledge: integer('acknowledge', { mode: 'boolean' }).notNull().default(false),
    // IMAP messages put off for later (a sender past its limit), JSON [[uid, sender], ...] under the
    // UIDVALIDITY of imap_position: looked at again by each fetch until taken, never passed over.
    imapDeferred: text('imap_deferred'),
    // The last message passed over and left unread (it cannot be parsed, has no sender, is too
    // large), and why, for the mailbox's page.
    passedOver: text('passed_over'),
    // A mailbox connected with OAuth (docs/decisions.md, "Mailboxes connected with OAuth"): the
    // provider it signs in at (mail_providers.name), its tokens sealed as JSON (refresh token, the
    // access token and when it ends), why the provider refused to renew them (words for the page;
    // null: signing in works), and until when one process renews them (one renewal at a time).
    oauthProvider: text('oauth_provider'),
    oauthTokens: text('oauth_tokens'),
    oauthProblem: text('oauth_problem'),
    oauthRenewUntil: moment('oauth_renew_until'),
  },
  (t) => [uniqueIndex('mailboxes_address_unique').on(t.address), index('mailboxes_site_idx').on(t.siteId)],
)

// Every message taken in, by its Message-ID, written in the same transaction as the comment it
// became: a message is taken once per site however often it arrives, and a reply naming it in
// In-Reply-To or References finds its discussion.
export const mailMessages = sqliteTable(
  'mail_messages',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    messageId: text('message_id').notNull(),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    commentId: integer('comment_id')
      .notNull()
      .references(() => comments.id, { onDelete: 'cascade' }),
    sender: text('sender').notNull(),
    // An automatic message (an out-of-office, a list): kept as a note, never answered, never reopening.
    automatic: integer('automatic', { mode: 'boolean' }).notNull().default(false),
    createdAt: moment('created_at').notNull(),
    // The mailbox it came to (or left from), and whether it is a reply the service sent.
    mailboxId: integer('mailbox_id').references(() => mailboxes.id, { onDelete: 'set null' }),
    outbound: integer('outbound', { mode: 'boolean' }).notNull().default(false),
    // Whether the sender passed DMARC (mailauth, on the built-in receiver): false marks it "sender
    // not verified"; null when nothing could say (no DMARC policy, or not checked).
    senderVerified: integer('sender_verified', { mode: 'boolean' }),
    // Why it was taken for spam (plugins/mail/spam.ts); null when it was not.
    spamReason: text('spam_reason'),
  },
  // By comment too: a comment deleted (an erasure, the retention) finds its kept mails by it, as the foreign key's cascade does.
  // By sender and time: each message taken in counts its sender's of the last minute (plugins/mail/pipeline.ts,
  // MAX_PER_SENDER_PER_MINUTE), which read every message of the site before (issue 75).
  (t) => [
    uniqueIndex('mail_messages_site_message_unique').on(t.siteId, t.messageId),
    index('mail_messages_discussion_idx').on(t.discussionId),
    index('mail_messages_comment_idx').on(t.commentId),
    index('mail_messages_sender_idx').on(t.siteId, t.sender, t.createdAt),
  ],
)

// What a site says of a sender (db/stores/senders.ts; docs/decisions.md, "Spam"): an address or a
// domain (its subdomains too) whose mail is never spam (allow) or always is (block).
export const senderRules = sqliteTable(
  'sender_rules',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    // An address or a domain, in lower case.
    pattern: text('pattern').notNull(),
    verdict: text('verdict', { enum: senderVerdicts }).notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [uniqueIndex('sender_rules_site_pattern_unique').on(t.siteId, t.pattern)],
)

// A site's custom fields (issue 72; db/stores/fields.ts; docs/decisions.md, "Custom fields"): what
// its discussions may carry besides their own columns. A removed field stays, marked: its key is
// never another's, and the values given stay on their discussions.
export const fields = sqliteTable(
  'fields',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    key: text('key').notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: fieldKinds }).notNull(),
    audience: text('audience', { enum: fieldAudiences }).notNull(),
    required: integer('required', { mode: 'boolean' }).notNull().default(false),
    // JSON: what choice and choices may be.
    choices: text('choices').notNull().default('[]'),
    position: integer('position').notNull(),
    createdAt: moment('created_at').notNull(),
    removedAt: moment('removed_at'),
    // What its values are kept on: each discussion (the default), or each customer of the site.
    of: text('of', { enum: fieldSubjects }).notNull().default('discussion'),
  },
  (t) => [uniqueIndex('fields_site_key_unique').on(t.siteId, t.key)],
)

// Each value of a discussion's fields as a filter finds it (db/stores/fields.ts): a canonical text
// (lib/fields.ts), one row per choice of several, written with the discussion's row.
export const fieldValues = sqliteTable(
  'field_values',
  {
    siteId: siteReference(),
    fieldId: integer('field_id')
      .notNull()
      .references(() => fields.id, { onDelete: 'cascade' }),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    value: text('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.discussionId, t.fieldId, t.value] }), index('field_values_site_field_value_idx').on(t.siteId, t.fieldId, t.value, t.discussionId)],
)

// Each merge of a discussion into another (issue 71; db/stores/merges.ts; docs/decisions.md, "Merge
// and split"): what undo puts back. The comments moved, JSON [id, number there, its mark before]
// (a comment may have come from a third one), the participants the target gained, the state and
// the wait of the one merged, who merged and when; undone_at once undone (the last merge into a
// discussion may be undone for a day).
export const discussionMerges = sqliteTable(
  'discussion_merges',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    fromId: integer('from_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    intoId: integer('into_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    stateBefore: text('state_before', { enum: discussionStates }).notNull(),
    comments: text('comments').notNull(),
    participants: text('participants').notNull(),
    byId: integer('by_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    undoneAt: moment('undone_at'),
  },
  (t) => [index('discussion_merges_into_idx').on(t.intoId), index('discussion_merges_from_idx').on(t.fromId)],
)

// Who else a discussion's mail goes to (docs/decisions.md, "Mail a team can rely on"): the people a
// customer's mail copied (its Cc, and its To besides the mailbox), and those the team added. Each
// public reply's mail copies them; a participant's answer by mail joins the discussion.
export const participants = sqliteTable(
  'participants',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    name: text('name'),
    // How they joined: copied on a customer's mail, or added by the team.
    addedBy: text('added_by', { enum: participantSources }).notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [uniqueIndex('participants_discussion_email_unique').on(t.discussionId, t.email), index('participants_site_email_idx').on(t.siteId, t.email)],
)

// Where the database's mail and webhooks are at home (docs/decisions.md, "Mail a team can rely on"):
// one row, the place (Engine.place) of the database that fetches and sends them; a copy of it
// elsewhere (a restored backup, `service-desk copy`) holds them, saying why in `held`, until an
// operator resumes them there (`service-desk mail resume`). `held` is also set on purpose (`mail hold`).
// The applications the operator registered at mail providers (docs/decisions.md, "Mailboxes
// connected with OAuth"): a site's administrators connect mailboxes through them. `settings` is
// sealed JSON (lib/mail-oauth.ts, ProviderSettings): the issuer, the client id and secret, the
// scopes, and the IMAP and SMTP servers.
export const mailProviders = sqliteTable(
  'mail_providers',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    label: text('label').notNull(),
    issuer: text('issuer').notNull(),
    settings: text('settings').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [uniqueIndex('mail_providers_name_unique').on(t.name)],
)

export const mailHome = sqliteTable('mail_home', {
  id: integer('id').primaryKey(),
  place: text('place').notNull(),
  held: text('held'),
  changedAt: moment('changed_at').notNull(),
})

// What leaves the process (docs/decisions.md, "Mail"): written in the transaction of its cause (a
// public reply to a discussion that came by mail), sent by the sender under a lease, retried with
// backoff, each try's outcome kept. `payload` is the message as JSON (addresses, headers, text).
// A site's webhook endpoint (db/stores/webhooks.ts; docs/decisions.md, "Webhooks"): where its events
// are posted, which ones, and the secret that signs them, sealed under the server key. After a
// rotation the secret it replaced signs beside the new one until `previous_until`.
export const webhooks = sqliteTable(
  'webhooks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    // The events it asks for: names of db/values.ts's webhookEvents, separated by spaces.
    events: text('events').notNull(),
    // Whether comment.created tells it of internal notes too.
    internalComments: integer('internal_comments', { mode: 'boolean' }).notNull().default(false),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousUntil: moment('previous_until'),
    // Since when every delivery to it has failed; null after one succeeds. Switched off when it has
    // failed for days, with the reason here.
    failingSince: moment('failing_since'),
    disabledReason: text('disabled_reason'),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [index('webhooks_site_idx').on(t.siteId)],
)

export const outbox = sqliteTable(
  'outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    // The comment it tells of; none for a customer's link (sign_in_link, confirmation).
    commentId: integer('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: outboxKinds }).notNull(),
    payload: text('payload').notNull(),
    state: text('state', { enum: outboxStates }).notNull().default('queued'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: moment('next_attempt_at').notNull(),
    leaseUntil: moment('lease_until'),
    lastError: text('last_error'),
    sentAt: moment('sent_at'),
    createdAt: moment('created_at').notNull(),
    // The endpoint a webhook row is posted to, and its event's id (the webhook-id of every try).
    webhookId: integer('webhook_id').references(() => webhooks.id, { onDelete: 'cascade' }),
    eventId: text('event_id'),
  },
  (t) => [index('outbox_due_idx').on(t.state, t.nextAttemptAt), index('outbox_comment_idx').on(t.commentId), index('outbox_webhook_idx').on(t.webhookId)],
)

// Each try to post an event to a webhook endpoint, kept three days (db/stores/webhooks.ts): its
// answer's status (null when none came), how long it took, and the first bytes of what it said.
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    webhookId: integer('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    outboxId: integer('outbox_id').references(() => outbox.id, { onDelete: 'set null' }),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    attemptedAt: moment('attempted_at').notNull(),
    status: integer('status'),
    durationMs: integer('duration_ms').notNull(),
    answer: text('answer').notNull().default(''),
    error: text('error'),
  },
  (t) => [index('webhook_deliveries_webhook_idx').on(t.webhookId, t.attemptedAt)],
)

// A link mailed to a customer (db/stores/customer-links.ts): to sign in, or to post the discussion a
// visitor wrote, which waits here sealed (payload) until the link is followed. Kept as its keyed
// digest, once: `used_at` is set by the first follow, and `discussion_id` names what it posted, so
// following it again finds the same discussion. `address` and `email` bound how many are asked.
export const customerLinks = sqliteTable(
  'customer_links',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    purpose: text('purpose', { enum: linkPurposes }).notNull(),
    email: text('email').notNull(),
    digest: text('digest').notNull(),
    payload: text('payload'),
    address: text('address').notNull(),
    expiresAt: moment('expires_at').notNull(),
    usedAt: moment('used_at'),
    discussionId: integer('discussion_id').references(() => discussions.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('customer_links_digest_unique').on(t.digest),
    index('customer_links_email_idx').on(t.siteId, t.email, t.createdAt),
    index('customer_links_address_idx').on(t.address, t.createdAt),
  ],
)

// Full-text search (db/stores/search.ts, docs/decisions.md "Search"): the index itself is the FTS5
// table `discussion_search` (rowid: the discussion's id; columns title, text, notes), made by
// migration 0019 by hand, since drizzle has no virtual tables. This row says how far the index of
// the discussions that were there before it is built: every discussion whose id is `below` or
// higher is in it; the ones under it are added newest first, in batches (db/stores/search.ts).
export const searchBackfill = sqliteTable('search_backfill', {
  // The one row's key: 1.
  key: integer('key').primaryKey(),
  below: integer('below').notNull(),
})

// The change feed (db/stores/changes.ts, docs/decisions.md "Safe retries, cursors and the change
// feed"): one row per change to a discussion, numbered per site in commit order (`seq`, written
// under the site's row lock in the change's transaction). The migration gave every discussion
// already there a `discussion.created` row, so a feed read from the start finds them all.
export const discussionChanges = sqliteTable(
  'discussion_changes',
  {
    siteId: siteReference(),
    seq: integer('seq').notNull(),
    kind: text('kind', { enum: changeKinds }).notNull(),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    commentId: integer('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    at: moment('at').notNull(),
  },
  // By comment too: a comment deleted (an erasure, the retention) takes its changes with it through the foreign key's cascade, which looks them up by it.
  (t) => [primaryKey({ columns: [t.siteId, t.seq] }), index('discussion_changes_discussion_idx').on(t.discussionId), index('discussion_changes_comment_idx').on(t.commentId)],
)

// Idempotency-Key (plugins/http/idempotency.ts): a key a credential sent with a POST, the digest of
// what was sent with it, and once it succeeded its answer (sealed with the server key), kept 24 hours.
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    siteId: siteReference(),
    credential: text('credential').notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    createdAt: moment('created_at').notNull(),
    // Null while the first request is in flight.
    status: integer('status'),
    answer: text('answer'),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.credential, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
)

// The reports' day rows (issue 69; db/stores/reports.ts; docs/decisions.md, "Reports"): for each
// UTC day, what the site's discussions did, as a whole (dimension `all`) and under each supporter,
// category, channel and tag; the times as histograms (lib/reports.ts bucketOf), JSON objects of
// bucket to count, with those added since in report_times. Written in the transaction of the write
// that moved the facts.
export const reportDays = sqliteTable(
  'report_days',
  {
    siteId: siteReference(),
    dimension: text('dimension', { enum: dimensions }).notNull(),
    day: text('day').notNull(),
    key: text('key').notNull(),
    created: integer('created').notNull().default(0),
    resolved: integer('resolved').notNull().default(0),
    reopened: integer('reopened').notNull().default(0),
    replies: integer('replies').notNull().default(0),
    firstReplies: integer('first_replies').notNull().default(0),
    slaKept: integer('sla_kept').notNull().default(0),
    slaBreached: integer('sla_breached').notNull().default(0),
    ratedGood: integer('rated_good').notNull().default(0),
    ratedBad: integer('rated_bad').notNull().default(0),
    firstReply: text('first_reply').notNull().default('{}'),
    firstReplyBusiness: text('first_reply_business').notNull().default('{}'),
    resolution: text('resolution').notNull().default('{}'),
    resolutionBusiness: text('resolution_business').notNull().default('{}'),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.dimension, t.day, t.key] })],
)

// The times added to the reports' day rows since their histograms were last folded in
// (db/stores/reports.ts foldTimes): for each day row (its site, dimension, day and key) and timing
// (by its column's name), how many fell in each bucket, one row a bucket. A write that measures a
// time adds one to its bucket's row, a row of a few bytes, where it rewrote its day rows' whole
// histograms (up to 900 buckets each); they are folded into them every few minutes, many writes'
// at once (docs/decisions.md, "A report's times added apart, folded in later").
export const reportTimes = sqliteTable(
  'report_times',
  {
    siteId: siteReference(),
    dimension: text('dimension', { enum: dimensions }).notNull(),
    day: text('day').notNull(),
    key: text('key').notNull(),
    timing: text('timing').notNull(),
    bucket: integer('bucket').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.dimension, t.day, t.key, t.timing, t.bucket] })],
)

// A site's rules (issue 70; lib/rules.ts; db/stores/rules.ts; docs/decisions.md, "Rules and macros"):
// in `position` order, each on or off; on events (`events`, space-separated triggers) or on time
// (`after_minutes` since `since`, in business minutes when `business`); `conditions` and `actions`
// are JSON. `author_id`: the administrator who last saved it, who signs what it writes.
export const rules = sqliteTable(
  'rules',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    position: integer('position').notNull(),
    name: text('name').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    events: text('events').notNull().default(''),
    afterMinutes: integer('after_minutes'),
    business: integer('business', { mode: 'boolean' }).notNull().default(false),
    since: text('since').notNull().default('updated'),
    conditions: text('conditions').notNull().default('{}'),
    actions: text('actions').notNull().default('[]'),
    authorId: integer('author_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [uniqueIndex('rules_site_name_unique').on(t.siteId, t.name)],
)

// Each time a rule fired on a discussion: its history (the discussion's page and the API), and what
// makes a rule on time fire once for each moment it counts from (`anchor_at`, unique with the rule
// and the discussion; null for a rule on events, which fires each time its event comes).
export const ruleFirings = sqliteTable(
  'rule_firings',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: siteReference(),
    ruleId: integer('rule_id').references(() => rules.id, { onDelete: 'set null' }),
    ruleName: text('rule_name').notNull(),
    discussionId: integer('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    trigger: text('trigger').notNull(),
    anchorAt: moment('anchor_at'),
    done: text('done').notNull(),
    at: moment('at').notNull(),
  },
  (t) => [uniqueIndex('rule_firings_once').on(t.ruleId, t.discussionId, t.anchorAt), index('rule_firings_discussion').on(t.discussionId, t.id)],
)
