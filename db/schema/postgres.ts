import { sql } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { NEVER, slaChannels } from '../../lib/sla.ts'
import { dimensions, ratings } from '../../lib/reports.ts'
import { pgBigint, pgBoolean, pgCustomType, pgIndex, pgInteger, pgPrimaryKey, pgTable, pgText, pgTimestamp, pgUniqueIndex } from '../drizzle-postgres.ts'
import { accessLevels, changeKinds, erasureModes, commentVias, discussionStates, factorKinds, linkPurposes, outboxKinds, outboxStates, participantSources, roles, senderVerdicts, securityKinds, writeTokenRules } from '../values.ts'
import { fieldAudiences, fieldKinds, fieldSubjects } from '../../lib/fields.ts'

// The PostgreSQL schema: the SQLite one (db/schema/sqlite.ts) table for table, column for column, with the
// same names, constraints and indexes, so the stores read the same rows from either engine and
// `service-desk copy` moves a database across unchanged. Where the engines differ, the natural type
// of each is used: moments are timestamptz (read back as a Date, to the millisecond), flags are
// boolean, ids are identity columns (given explicitly only by the copy, which then moves each
// sequence past the highest id). test/db/postgres/schema.test.ts compares the two schemas.

const moment = (name: string) => pgTimestamp(name, { withTimezone: true, precision: 3, mode: 'date' })
const id = () => pgInteger('id').primaryKey().generatedByDefaultAsIdentity()

export const sites = pgTable('sites', {
  id: id(),
  permalink: pgText('permalink').notNull().unique(),
  name: pgText('name').notNull(),
  multipassKey: pgText('multipass_key').notNull(),
  createdAt: moment('created_at').notNull(),
  version: pgInteger('version').notNull().default(0),
  tokenMaxDays: pgInteger('token_max_days').notNull().default(365),
  writeTokens: pgText('write_tokens', { enum: writeTokenRules }).notNull().default('everyone'),
  legacyTokenOn: pgBoolean('legacy_token_on').notNull().default(true),
  multipassOn: pgBoolean('multipass_on').notNull().default(true),
  passwordOn: pgBoolean('password_on').notNull().default(true),
  staffSecondFactor: pgBoolean('staff_second_factor').notNull().default(false),
  // The customer's side (docs/decisions.md, "The customer's side"): whether a visitor who is not
  // signed in may start a discussion (posted once the link mailed to them is followed), and whether
  // customers see the site's public discussions beside their own.
  visitorDiscussions: pgBoolean('visitor_discussions').notNull().default(true),
  publicDiscussions: pgBoolean('public_discussions').notNull().default(true),
  newDiscussionsToTeam: pgBoolean('new_discussions_to_team').notNull().default(true),
  // Whether its customers are asked to rate a resolved discussion (issue 69; docs/decisions.md,
  // "Satisfaction"), and the last week (its Monday) whose digest was mailed to its administrators.
  satisfactionOn: pgBoolean('satisfaction_on').notNull().default(true),
  digestWeek: pgText('digest_week').notNull().default(''),
  // Moves on with every change to its rules (issue 70; db/stores/rules.ts), its SLA policies and
  // the hours they count in (db/stores/sites.ts, bumpRulesVersion): a process keeps the rules it
  // parsed and the policies it read for as long as this is the number it read.
  rulesVersion: pgInteger('rules_version').notNull().default(0),
  companySignInOnly: pgBoolean('company_sign_in_only').notNull().default(false),
  erasureMode: pgText('erasure_mode', { enum: erasureModes }).notNull().default('anonymise'),
  retentionMonths: pgInteger('retention_months'),
  // The number of its change feed's last change (db/stores/changes.ts): moved with its version by
  // the write that takes the site's row, which numbers its changes from it.
  changesSeq: pgInteger('changes_seq').notNull().default(0),
})

const siteReference = () =>
  pgInteger('site_id')
    .notNull()
    .references(() => sites.id, { onDelete: 'cascade' })

export const users = pgTable(
  'users',
  {
    id: id(),
    email: pgText('email').notNull(),
    emailKey: pgText('email_key').notNull(),
    name: pgText('name').notNull(),
    passwordHash: pgText('password_hash'),
    disabled: pgBoolean('disabled').notNull().default(false),
    passwordChangedAt: moment('password_changed_at'),
    legacyTokenFingerprint: pgText('legacy_token_fingerprint'),
    legacyTokenEncrypted: pgText('legacy_token_encrypted'),
    legacyTokenExpiresAt: moment('legacy_token_expires_at'),
    createdAt: moment('created_at').notNull(),
    // Wrong authenticator codes and recovery codes in a row, since the last right one or a passkey:
    // at MAX_SECOND_STEP_FAILURES the codes stop (db/stores/second-factors.ts, NIST SP 800-63B 5.2.2).
    secondStepFailures: pgInteger('second_step_failures').notNull().default(0),
  },
  (t) => [
    pgUniqueIndex('users_email_key_unique').on(t.emailKey),
    pgUniqueIndex('users_legacy_token_unique').on(t.legacyTokenFingerprint),
  ],
)

const userReference = () =>
  pgInteger('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' })

export const memberships = pgTable(
  'memberships',
  {
    siteId: siteReference(),
    userId: userReference(),
    role: pgText('role', { enum: roles }).notNull(),
    createdAt: moment('created_at').notNull(),
    administrator: pgBoolean('administrator').notNull().default(false),
    notifyNew: pgBoolean('notify_new'),
    notifyOwned: pgBoolean('notify_owned').notNull().default(true),
    collaborator: pgBoolean('collaborator').notNull().default(false),
    // An administrator who asked for the weekly digest of the reports (issue 69).
    notifyDigest: pgBoolean('notify_digest').notNull().default(false),
    queueFields: pgText('queue_fields').notNull().default('[]'),
    fields: pgText('fields').notNull().default('{}'),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.userId] }), pgIndex('memberships_user_idx').on(t.userId), pgIndex('memberships_site_role_idx').on(t.siteId, t.role, t.userId)],
)

export const personalTokens = pgTable(
  'personal_tokens',
  {
    id: id(),
    siteId: siteReference(),
    userId: userReference(),
    name: pgText('name').notNull(),
    access: pgText('access', { enum: accessLevels }).notNull(),
    fingerprint: pgText('fingerprint').notNull(),
    lastFour: pgText('last_four').notNull(),
    createdAt: moment('created_at').notNull(),
    lastUsedAt: moment('last_used_at'),
    lastUsedFrom: pgText('last_used_from'),
    expiresAt: moment('expires_at').notNull(),
    revokedAt: moment('revoked_at'),
    weekNoticeAt: moment('week_notice_at'),
    dayNoticeAt: moment('day_notice_at'),
  },
  (t) => [
    pgUniqueIndex('personal_tokens_fingerprint_unique').on(t.fingerprint),
    pgIndex('personal_tokens_owner_idx')
      .on(t.userId, t.expiresAt)
      .where(sql`${t.revokedAt} IS NULL`),
    // The hourly look for tokens whose expiry notice is due.
    pgIndex('personal_tokens_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.revokedAt} IS NULL`),
  ],
)

export const personalTokenAddresses = pgTable(
  'personal_token_addresses',
  {
    tokenId: pgInteger('token_id')
      .notNull()
      .references(() => personalTokens.id, { onDelete: 'cascade' }),
    address: pgText('address').notNull(),
    lastUsedAt: moment('last_used_at').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.tokenId, t.address] })],
)

export const invitations = pgTable(
  'invitations',
  {
    id: id(),
    siteId: siteReference(),
    email: pgText('email').notNull(),
    administrator: pgBoolean('administrator').notNull().default(false),
    digest: pgText('digest').notNull(),
    invitedBy: pgInteger('invited_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at').notNull(),
    acceptedAt: moment('accepted_at'),
    withdrawnAt: moment('withdrawn_at'),
    collaborator: pgBoolean('collaborator').notNull().default(false),
  },
  (t) => [pgUniqueIndex('invitations_digest_unique').on(t.digest), pgIndex('invitations_site_idx').on(t.siteId, t.email)],
)

export const webSessions = pgTable(
  'web_sessions',
  {
    fingerprint: pgText('fingerprint').primaryKey(),
    siteId: siteReference(),
    userId: userReference(),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at').notNull(),
    confirmedAt: moment('confirmed_at'),
    providerId: pgInteger('provider_id').references(() => signInProviders.id, { onDelete: 'set null' }),
    providerSid: pgText('provider_sid'),
    providerMfa: pgBoolean('provider_mfa').notNull().default(false),
  },
  (t) => [pgIndex('web_sessions_user_idx').on(t.userId), pgIndex('web_sessions_expiry_idx').on(t.expiresAt), pgIndex('web_sessions_provider_idx').on(t.providerId)],
)

export const signInProviders = pgTable(
  'sign_in_providers',
  {
    id: id(),
    siteId: siteReference(),
    name: pgText('name').notNull(),
    kind: pgText('kind').notNull(),
    issuer: pgText('issuer').notNull(),
    clientId: pgText('client_id').notNull(),
    secret: pgText('secret').notNull(),
    domains: pgText('domains').notNull().default('[]'),
    domainRole: pgText('domain_role'),
    trustMfa: pgBoolean('trust_mfa').notNull().default(false),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [pgUniqueIndex('sign_in_providers_site_name_unique').on(t.siteId, t.name)],
)

export const signInLinks = pgTable(
  'sign_in_links',
  {
    providerId: pgInteger('provider_id')
      .notNull()
      .references(() => signInProviders.id, { onDelete: 'cascade' }),
    subject: pgText('subject').notNull(),
    userId: userReference(),
    createdAt: moment('created_at').notNull(),
    lastSignInAt: moment('last_sign_in_at').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.providerId, t.subject] }), pgUniqueIndex('sign_in_links_user_unique').on(t.providerId, t.userId), pgIndex('sign_in_links_user_idx').on(t.userId)],
)

export const categories = pgTable(
  'categories',
  {
    id: id(),
    siteId: siteReference(),
    name: pgText('name').notNull(),
    permalink: pgText('permalink').notNull(),
    public: pgBoolean('public').notNull().default(false),
    createdAt: moment('created_at').notNull(),
    roundRobin: pgBoolean('round_robin').notNull().default(false),
    lastAssigneeId: pgInteger('last_assignee_id'),
  },
  (t) => [pgUniqueIndex('categories_site_permalink_unique').on(t.siteId, t.permalink)],
)

export const discussions = pgTable(
  'discussions',
  {
    id: id(),
    siteId: siteReference(),
    number: pgInteger('number').notNull(),
    title: pgText('title').notNull(),
    permalink: pgText('permalink').notNull(),
    state: pgText('state', { enum: discussionStates }).notNull(),
    stateBeforeDelete: pgText('state_before_delete', { enum: discussionStates }),
    public: pgBoolean('public').notNull(),
    authorId: pgInteger('author_id')
      .notNull()
      .references(() => users.id),
    categoryId: pgInteger('category_id')
      .notNull()
      .references(() => categories.id),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
    lastUpdatedAt: moment('last_updated_at').notNull(),
    commentsCount: pgInteger('comments_count').notNull(),
    version: pgInteger('version').notNull().default(0),
    awaitingTeam: pgBoolean('awaiting_team').notNull().default(false),
    startedOnTheWeb: pgBoolean('started_on_the_web').notNull().default(false),
    assigneeId: pgInteger('assignee_id').references(() => users.id, { onDelete: 'set null' }),
    tags: pgText('tags').notNull().default(''),
    // How it came (lib/sla.ts channelOf): mail, web (the support site) or api (MCP too). Set once.
    channel: pgText('channel', { enum: slaChannels }).notNull().default('api'),
    // Its SLA clocks (issue 68; lib/sla.ts SlaClock; docs/decisions.md, "SLA policies"), moved in
    // the transaction of every write: the policy that chose it, since when a reply is owed, when
    // the first reply's clock stopped, since when (and for how many business minutes before) the
    // resolution's clock runs, the due times, the earliest of them (NEVER when none runs: the
    // queue's order by due), the kinds breached, what was told, and when the alerts' loop looks next.
    slaPolicyId: pgInteger('sla_policy_id'),
    slaReplySince: moment('sla_reply_since'),
    slaFirstRepliedAt: moment('sla_first_replied_at'),
    slaResolutionSince: moment('sla_resolution_since'),
    slaResolutionSpent: pgInteger('sla_resolution_spent').notNull().default(0),
    firstReplyDueAt: moment('first_reply_due_at'),
    nextReplyDueAt: moment('next_reply_due_at'),
    resolutionDueAt: moment('resolution_due_at'),
    dueAt: moment('due_at').notNull().default(NEVER),
    slaBreached: pgText('sla_breached').notNull().default(''),
    slaTold: pgText('sla_told').notNull().default(''),
    slaAlertAt: moment('sla_alert_at'),
    // What the reports keep of it (issue 69; lib/reports.ts ReportFacts; docs/decisions.md,
    // "Reports"), moved in the transaction of the write that moves them: the team's first public
    // reply and the minutes to it, its last resolution, its owner then and the minutes to it (business
    // minutes in its SLA policy's hours, or around the clock), how often it was reopened, the team's
    // public replies, and its customer's rating.
    firstReplyAt: moment('first_reply_at'),
    firstReplyMinutes: pgInteger('first_reply_minutes'),
    firstReplyBusiness: pgInteger('first_reply_business'),
    resolvedAt: moment('resolved_at'),
    resolvedById: pgInteger('resolved_by_id'),
    resolutionMinutes: pgInteger('resolution_minutes'),
    resolutionBusiness: pgInteger('resolution_business'),
    reopens: pgInteger('reopens').notNull().default(0),
    teamReplies: pgInteger('team_replies').notNull().default(0),
    rating: pgText('rating', { enum: ratings }),
    ratingComment: pgText('rating_comment').notNull().default(''),
    ratedAt: moment('rated_at'),
    // Merged into another discussion of its site (issue 71; docs/decisions.md, "Merge and split"):
    // that one's number. Its comments went there, its address answers with a redirect to it.
    mergedInto: pgInteger('merged_into'),
    // Made by a split (issue 71): the number of the discussion its first comments were taken from.
    splitFrom: pgInteger('split_from'),
    // Its custom fields' values (issue 72; db/stores/fields.ts), JSON by key, as the API shows them;
    // found through field_values.
    fields: pgText('fields').notNull().default('{}'),
    erasedAt: moment('erased_at'),
  },
  (t) => [
    pgUniqueIndex('discussions_site_number_unique').on(t.siteId, t.number),
    // The listing orders' indexes, as on SQLite; the id ends each one, the tie-break of every
    // order (SQLite's rowid is in every index by itself).
    pgIndex('discussions_site_activity_idx')
      .on(t.siteId, t.lastUpdatedAt, t.id)
      .where(isLive(t.state)),
    pgIndex('discussions_site_created_idx')
      .on(t.siteId, t.createdAt, t.id)
      .where(isLive(t.state)),
    pgIndex('discussions_site_updated_idx')
      .on(t.siteId, t.updatedAt, t.id)
      .where(isLive(t.state)),
    pgIndex('discussions_state_activity_idx').on(t.siteId, t.state, t.lastUpdatedAt, t.id),
    pgIndex('discussions_state_created_idx').on(t.siteId, t.state, t.createdAt, t.id),
    pgIndex('discussions_state_updated_idx').on(t.siteId, t.state, t.updatedAt, t.id),
    pgIndex('discussions_category_activity_idx')
      .on(t.siteId, t.categoryId, t.lastUpdatedAt, t.id)
      .where(isLive(t.state)),
    pgIndex('discussions_author_activity_idx').on(t.siteId, t.authorId, t.lastUpdatedAt, t.id),
    pgIndex('discussions_todo_activity_idx')
      .on(t.siteId, t.lastUpdatedAt, t.id)
      .where(sql`${t.state} in ('new', 'open')`),
    pgIndex('discussions_assignee_activity_idx')
      .on(t.siteId, t.assigneeId, t.lastUpdatedAt, t.id)
      .where(isLive(t.state)),
    pgIndex('discussions_todo_due_idx')
      .on(t.siteId, t.dueAt, t.id)
      .where(sql`${t.state} in ('new', 'open')`),
    pgIndex('discussions_breached_activity_idx')
      .on(t.siteId, t.lastUpdatedAt, t.id)
      .where(sql`${t.slaBreached} <> ''`),
    pgIndex('discussions_sla_alert_idx')
      .on(t.slaAlertAt)
      .where(sql`${t.slaAlertAt} is not null`),
  ],
)

export const discussionTags = pgTable(
  'discussion_tags',
  {
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    siteId: siteReference(),
    tag: pgText('tag').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.discussionId, t.tag] }), pgIndex('discussion_tags_site_tag_idx').on(t.siteId, t.tag, t.discussionId)],
)

export const savedReplies = pgTable(
  'saved_replies',
  {
    id: id(),
    siteId: siteReference(),
    title: pgText('title').notNull(),
    body: pgText('body').notNull(),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
    // A macro's actions (issue 70; lib/rules.ts MacroAction), JSON: applied with the reply in one click.
    actions: pgText('actions').notNull().default('[]'),
  },
  (t) => [pgUniqueIndex('saved_replies_site_title_unique').on(t.siteId, t.title)],
)

export const comments = pgTable(
  'comments',
  {
    id: id(),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    number: pgInteger('number').notNull(),
    authorId: pgInteger('author_id')
      .notNull()
      .references(() => users.id),
    bySupporter: pgBoolean('by_supporter').notNull(),
    body: pgText('body').notNull(),
    internal: pgBoolean('internal').notNull().default(false),
    via: pgText('via', { enum: commentVias }).notNull(),
    createdAt: moment('created_at').notNull(),
    // Moved here from another discussion of the site by a merge: that one's number, and its own
    // number there (docs/decisions.md, "Merge and split").
    movedFrom: pgInteger('moved_from'),
    movedFromNumber: pgInteger('moved_from_number'),
  },
  (t) => [pgUniqueIndex('comments_discussion_number_unique').on(t.discussionId, t.number), pgIndex('comments_author_idx').on(t.authorId)],
)

export const discussionCounts = pgTable(
  'discussion_counts',
  {
    siteId: siteReference(),
    categoryId: pgInteger('category_id')
      .notNull()
      .references(() => categories.id, { onDelete: 'cascade' }),
    state: pgText('state', { enum: discussionStates }).notNull(),
    public: pgBoolean('public').notNull(),
    count: pgInteger('count').notNull(),
    assigneeId: pgInteger('assignee_id').notNull().default(0),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.categoryId, t.state, t.public, t.assigneeId] })],
)

export const oauthRecords = pgTable(
  'oauth_records',
  {
    model: pgText('model').notNull(),
    id: pgText('id').notNull(),
    payload: pgText('payload').notNull(),
    grantId: pgText('grant_id'),
    uid: pgText('uid'),
    userCode: pgText('user_code'),
    accountId: pgText('account_id'),
    clientId: pgText('client_id'),
    resource: pgText('resource'),
    expiresAt: moment('expires_at'),
    consumedAt: moment('consumed_at'),
    lastUsedAt: moment('last_used_at'),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [
    pgPrimaryKey({ columns: [t.model, t.id] }),
    pgIndex('oauth_records_grant_idx')
      .on(t.grantId)
      .where(sql`${t.grantId} IS NOT NULL`),
    pgIndex('oauth_records_uid_idx')
      .on(t.model, t.uid)
      .where(sql`${t.uid} IS NOT NULL`),
    pgIndex('oauth_records_user_code_idx')
      .on(t.model, t.userCode)
      .where(sql`${t.userCode} IS NOT NULL`),
    pgIndex('oauth_records_account_idx')
      .on(t.accountId, t.model)
      .where(sql`${t.accountId} IS NOT NULL`),
    pgIndex('oauth_records_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.expiresAt} IS NOT NULL`),
  ],
)

// The security log: db/schema/sqlite.ts.
export const securityEvents = pgTable(
  'security_events',
  {
    id: id(),
    userId: pgInteger('user_id').references(() => users.id, { onDelete: 'cascade' }),
    siteId: pgInteger('site_id').references(() => sites.id, { onDelete: 'cascade' }),
    kind: pgText('kind', { enum: securityKinds }).notNull(),
    createdAt: moment('created_at').notNull(),
    address: pgText('address'),
    actor: pgText('actor'),
    detail: pgText('detail').notNull(),
  },
  (t) => [
    pgIndex('security_events_user_idx').on(t.userId, t.createdAt, t.id),
    pgIndex('security_events_user_kind_idx').on(t.userId, t.kind, t.createdAt, t.id),
    pgIndex('security_events_site_idx').on(t.siteId, t.createdAt, t.id),
    pgIndex('security_events_created_idx').on(t.createdAt),
  ],
)

// The site's record of changes: db/schema/sqlite.ts.
export const auditEvents = pgTable(
  'audit_events',
  {
    id: id(),
    siteId: siteReference(),
    actorId: pgInteger('actor_id').references(() => users.id, { onDelete: 'set null' }),
    actor: pgText('actor').notNull(),
    via: pgText('via').notNull(),
    address: pgText('address'),
    action: pgText('action').notNull(),
    target: pgText('target').notNull(),
    detail: pgText('detail').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [pgIndex('audit_events_site_idx').on(t.siteId, t.id), pgIndex('audit_events_created_idx').on(t.createdAt)],
)

// A site's business hours: db/schema/sqlite.ts.
export const schedules = pgTable(
  'schedules',
  {
    id: id(),
    siteId: siteReference(),
    name: pgText('name').notNull(),
    timeZone: pgText('time_zone').notNull(),
    week: pgText('week').notNull(),
    days: pgText('days').notNull(),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [pgUniqueIndex('schedules_site_name_unique').on(t.siteId, t.name)],
)

export const slaPolicies = pgTable(
  'sla_policies',
  {
    id: id(),
    siteId: siteReference(),
    position: pgInteger('position').notNull(),
    name: pgText('name').notNull(),
    categories: pgText('categories').notNull().default(''),
    tags: pgText('tags').notNull().default(''),
    domains: pgText('domains').notNull().default(''),
    channels: pgText('channels').notNull().default(''),
    scheduleId: pgInteger('schedule_id').references(() => schedules.id),
    firstReplyMinutes: pgInteger('first_reply_minutes'),
    nextReplyMinutes: pgInteger('next_reply_minutes'),
    resolutionMinutes: pgInteger('resolution_minutes'),
    warnMinutes: pgInteger('warn_minutes').notNull().default(30),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [pgUniqueIndex('sla_policies_site_name_unique').on(t.siteId, t.name)],
)

export const secondFactors = pgTable(
  'second_factors',
  {
    id: id(),
    userId: userReference(),
    kind: pgText('kind', { enum: factorKinds }).notNull(),
    name: pgText('name').notNull(),
    secret: pgText('secret').notNull(),
    lastTimeStep: pgInteger('last_time_step'),
    confirmedAt: moment('confirmed_at'),
    createdAt: moment('created_at').notNull(),
    lastUsedAt: moment('last_used_at'),
    credentialId: pgText('credential_id'),
    signCount: pgInteger('sign_count'),
    transports: pgText('transports'),
  },
  (t) => [pgIndex('second_factors_user_idx').on(t.userId), pgUniqueIndex('second_factors_credential_idx').on(t.credentialId)],
)

export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    userId: userReference(),
    digest: pgText('digest').notNull(),
    usedAt: moment('used_at'),
  },
  (t) => [pgPrimaryKey({ columns: [t.userId, t.digest] })],
)

export const usedChallenges = pgTable('used_challenges', {
  challenge: pgText('challenge').primaryKey(),
  expiresAt: moment('expires_at').notNull(),
})

export const rateLimitWindows = pgTable(
  'rate_limit_windows',
  {
    key: pgText('key').notNull(),
    windowStart: moment('window_start').notNull(),
    taken: pgInteger('taken').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.key, t.windowStart] })],
)

// PostgreSQL's binary type, which drizzle names only as a custom one: a Buffer both ways.
const pgBytes = pgCustomType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' })

export const files = pgTable(
  'files',
  {
    id: id(),
    siteId: siteReference(),
    sha256: pgText('sha256').notNull(),
    size: pgInteger('size').notNull(),
    contentType: pgText('content_type').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [pgUniqueIndex('files_site_sha256_unique').on(t.siteId, t.sha256)],
)

// The bytes a site's files take, as db/schema/sqlite.ts says: kept by a trigger on files.
export const siteFileUsage = pgTable(
  'site_file_usage',
  {
    siteId: siteReference(),
    bytes: pgBigint('bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId] })],
)

export const filePieces = pgTable(
  'file_pieces',
  {
    fileId: pgInteger('file_id')
      .notNull()
      .references(() => files.id, { onDelete: 'cascade' }),
    seq: pgInteger('seq').notNull(),
    bytes: pgBytes('bytes').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.fileId, t.seq] })],
)

export const attachments = pgTable(
  'attachments',
  {
    id: id(),
    siteId: siteReference(),
    fileId: pgInteger('file_id')
      .notNull()
      .references(() => files.id),
    commentId: pgInteger('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    name: pgText('name').notNull(),
    uploaderId: pgInteger('uploader_id')
      .notNull()
      .references(() => users.id),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at'),
    originalMessage: pgBoolean('original_message').notNull().default(false),
  },
  (t) => [pgIndex('attachments_comment_idx').on(t.commentId), pgIndex('attachments_file_idx').on(t.fileId), pgIndex('attachments_expires_idx').on(t.expiresAt)],
)

export const mailboxes = pgTable(
  'mailboxes',
  {
    id: id(),
    siteId: siteReference(),
    address: pgText('address').notNull(),
    categoryId: pgInteger('category_id'),
    createdAt: moment('created_at').notNull(),
    imap: pgText('imap'),
    smtp: pgText('smtp'),
    imapPosition: pgText('imap_position'),
    leaseOwner: pgText('lease_owner'),
    leaseUntil: moment('lease_until'),
    lastFetchAt: moment('last_fetch_at'),
    lastError: pgText('last_error'),
    acknowledge: pgBoolean('acknowledge').notNull().default(false),
    imapDeferred: pgText('imap_deferred'),
    passedOver: pgText('passed_over'),
    oauthProvider: pgText('oauth_provider'),
    oauthTokens: pgText('oauth_tokens'),
    oauthProblem: pgText('oauth_problem'),
    oauthRenewUntil: moment('oauth_renew_until'),
  },
  (t) => [pgUniqueIndex('mailboxes_address_unique').on(t.address), pgIndex('mailboxes_site_idx').on(t.siteId)],
)

export const mailMessages = pgTable(
  'mail_messages',
  {
    id: id(),
    siteId: siteReference(),
    messageId: pgText('message_id').notNull(),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    commentId: pgInteger('comment_id')
      .notNull()
      .references(() => comments.id, { onDelete: 'cascade' }),
    sender: pgText('sender').notNull(),
    automatic: pgBoolean('automatic').notNull().default(false),
    createdAt: moment('created_at').notNull(),
    mailboxId: pgInteger('mailbox_id').references(() => mailboxes.id, { onDelete: 'set null' }),
    outbound: pgBoolean('outbound').notNull().default(false),
    senderVerified: pgBoolean('sender_verified'),
    spamReason: pgText('spam_reason'),
  },
  (t) => [
    pgUniqueIndex('mail_messages_site_message_unique').on(t.siteId, t.messageId),
    pgIndex('mail_messages_discussion_idx').on(t.discussionId),
    pgIndex('mail_messages_comment_idx').on(t.commentId),
    pgIndex('mail_messages_sender_idx').on(t.siteId, t.sender, t.createdAt),
  ],
)

export const senderRules = pgTable(
  'sender_rules',
  {
    id: id(),
    siteId: siteReference(),
    pattern: pgText('pattern').notNull(),
    verdict: pgText('verdict', { enum: senderVerdicts }).notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [pgUniqueIndex('sender_rules_site_pattern_unique').on(t.siteId, t.pattern)],
)

export const mailProviders = pgTable(
  'mail_providers',
  {
    id: id(),
    name: pgText('name').notNull(),
    label: pgText('label').notNull(),
    issuer: pgText('issuer').notNull(),
    settings: pgText('settings').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [pgUniqueIndex('mail_providers_name_unique').on(t.name)],
)

export const mailHome = pgTable('mail_home', {
  id: id(),
  place: pgText('place').notNull(),
  held: pgText('held'),
  changedAt: moment('changed_at').notNull(),
})

// A site's custom fields (issue 72; db/stores/fields.ts; docs/decisions.md, "Custom fields"): what
// its discussions may carry besides their own columns. A removed field stays, marked: its key is
// never another's, and the values given stay on their discussions.
export const fields = pgTable(
  'fields',
  {
    id: id(),
    siteId: siteReference(),
    key: pgText('key').notNull(),
    name: pgText('name').notNull(),
    kind: pgText('kind', { enum: fieldKinds }).notNull(),
    audience: pgText('audience', { enum: fieldAudiences }).notNull(),
    required: pgBoolean('required').notNull().default(false),
    // JSON: what choice and choices may be.
    choices: pgText('choices').notNull().default('[]'),
    position: pgInteger('position').notNull(),
    createdAt: moment('created_at').notNull(),
    removedAt: moment('removed_at'),
    // What its values are kept on: each discussion (the default), or each customer of the site.
    of: pgText('of', { enum: fieldSubjects }).notNull().default('discussion'),
  },
  (t) => [pgUniqueIndex('fields_site_key_unique').on(t.siteId, t.key)],
)

// Each value of a discussion's fields as a filter finds it (db/stores/fields.ts): a canonical text
// (lib/fields.ts), one row per choice of several, written with the discussion's row.
export const fieldValues = pgTable(
  'field_values',
  {
    siteId: siteReference(),
    fieldId: pgInteger('field_id')
      .notNull()
      .references(() => fields.id, { onDelete: 'cascade' }),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    value: pgText('value').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.discussionId, t.fieldId, t.value] }), pgIndex('field_values_site_field_value_idx').on(t.siteId, t.fieldId, t.value, t.discussionId)],
)

// Each merge of a discussion into another (issue 71; db/stores/merges.ts; docs/decisions.md, "Merge
// and split"): what undo puts back. The comments moved, JSON [id, number there, its mark before]
// (a comment may have come from a third one), the participants the target gained, the state and
// the wait of the one merged, who merged and when; undone_at once undone (the last merge into a
// discussion may be undone for a day).
export const discussionMerges = pgTable(
  'discussion_merges',
  {
    id: id(),
    siteId: siteReference(),
    fromId: pgInteger('from_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    intoId: pgInteger('into_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    stateBefore: pgText('state_before', { enum: discussionStates }).notNull(),
    comments: pgText('comments').notNull(),
    participants: pgText('participants').notNull(),
    byId: pgInteger('by_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    undoneAt: moment('undone_at'),
  },
  (t) => [pgIndex('discussion_merges_into_idx').on(t.intoId), pgIndex('discussion_merges_from_idx').on(t.fromId)],
)

export const participants = pgTable(
  'participants',
  {
    id: id(),
    siteId: siteReference(),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    email: pgText('email').notNull(),
    name: pgText('name'),
    addedBy: pgText('added_by', { enum: participantSources }).notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [pgUniqueIndex('participants_discussion_email_unique').on(t.discussionId, t.email), pgIndex('participants_site_email_idx').on(t.siteId, t.email)],
)

// A site's webhook endpoint (db/stores/webhooks.ts; docs/decisions.md, "Webhooks"): where its events
// are posted, which ones, and the secret that signs them, sealed under the server key. After a
// rotation the secret it replaced signs beside the new one until `previous_until`.
export const webhooks = pgTable(
  'webhooks',
  {
    id: id(),
    siteId: siteReference(),
    url: pgText('url').notNull(),
    description: pgText('description').notNull().default(''),
    // The events it asks for: names of db/values.ts's webhookEvents, separated by spaces.
    events: pgText('events').notNull(),
    // Whether comment.created tells it of internal notes too.
    internalComments: pgBoolean('internal_comments').notNull().default(false),
    enabled: pgBoolean('enabled').notNull().default(true),
    secret: pgText('secret').notNull(),
    previousSecret: pgText('previous_secret'),
    previousUntil: moment('previous_until'),
    // Since when every delivery to it has failed; null after one succeeds. Switched off when it has
    // failed for days, with the reason here.
    failingSince: moment('failing_since'),
    disabledReason: pgText('disabled_reason'),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [pgIndex('webhooks_site_idx').on(t.siteId)],
)

export const outbox = pgTable(
  'outbox',
  {
    id: id(),
    siteId: siteReference(),
    // The comment it tells of; none for a customer's link (sign_in_link, confirmation).
    commentId: pgInteger('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    kind: pgText('kind', { enum: outboxKinds }).notNull(),
    payload: pgText('payload').notNull(),
    state: pgText('state', { enum: outboxStates }).notNull().default('queued'),
    attempts: pgInteger('attempts').notNull().default(0),
    nextAttemptAt: moment('next_attempt_at').notNull(),
    leaseUntil: moment('lease_until'),
    lastError: pgText('last_error'),
    sentAt: moment('sent_at'),
    createdAt: moment('created_at').notNull(),
    // The endpoint a webhook row is posted to, and its event's id (the webhook-id of every try).
    webhookId: pgInteger('webhook_id').references(() => webhooks.id, { onDelete: 'cascade' }),
    eventId: pgText('event_id'),
  },
  (t) => [pgIndex('outbox_due_idx').on(t.state, t.nextAttemptAt), pgIndex('outbox_comment_idx').on(t.commentId), pgIndex('outbox_webhook_idx').on(t.webhookId)],
)

// Each try to post an event to a webhook endpoint, kept three days (db/stores/webhooks.ts): its
// answer's status (null when none came), how long it took, and the first bytes of what it said.
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: id(),
    webhookId: pgInteger('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    outboxId: pgInteger('outbox_id').references(() => outbox.id, { onDelete: 'set null' }),
    eventId: pgText('event_id').notNull(),
    eventType: pgText('event_type').notNull(),
    attemptedAt: moment('attempted_at').notNull(),
    status: pgInteger('status'),
    durationMs: pgInteger('duration_ms').notNull(),
    answer: pgText('answer').notNull().default(''),
    error: pgText('error'),
  },
  (t) => [pgIndex('webhook_deliveries_webhook_idx').on(t.webhookId, t.attemptedAt)],
)

// A link mailed to a customer (db/stores/customer-links.ts): to sign in, or to post the discussion a
// visitor wrote, which waits here sealed (payload) until the link is followed. Kept as its keyed
// digest, once: `used_at` is set by the first follow, and `discussion_id` names what it posted, so
// following it again finds the same discussion. `address` and `email` bound how many are asked.
export const customerLinks = pgTable(
  'customer_links',
  {
    id: id(),
    siteId: siteReference(),
    purpose: pgText('purpose', { enum: linkPurposes }).notNull(),
    email: pgText('email').notNull(),
    digest: pgText('digest').notNull(),
    payload: pgText('payload'),
    address: pgText('address').notNull(),
    expiresAt: moment('expires_at').notNull(),
    usedAt: moment('used_at'),
    discussionId: pgInteger('discussion_id').references(() => discussions.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [
    pgUniqueIndex('customer_links_digest_unique').on(t.digest),
    pgIndex('customer_links_email_idx').on(t.siteId, t.email, t.createdAt),
    pgIndex('customer_links_address_idx').on(t.address, t.createdAt),
  ],
)

// Full-text search (db/stores/search.ts, docs/decisions.md "Search"): the index itself is the table
// `discussion_search` (discussion_id, document tsvector, under a GIN index), made by migration 0018
// by hand, as SQLite's FTS5 table is. This row says how far the index of the discussions that were
// there before it is built: every discussion whose id is `below` or higher is in it.
export const searchBackfill = pgTable('search_backfill', {
  // The one row's key: 1.
  key: pgInteger('key').primaryKey(),
  below: pgInteger('below').notNull(),
})

// The change feed, as on SQLite (db/schema/sqlite.ts).
export const discussionChanges = pgTable(
  'discussion_changes',
  {
    siteId: siteReference(),
    seq: pgInteger('seq').notNull(),
    kind: pgText('kind', { enum: changeKinds }).notNull(),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    commentId: pgInteger('comment_id').references(() => comments.id, { onDelete: 'cascade' }),
    at: moment('at').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.seq] }), pgIndex('discussion_changes_discussion_idx').on(t.discussionId), pgIndex('discussion_changes_comment_idx').on(t.commentId)],
)

// Idempotency-Key, as on SQLite (db/schema/sqlite.ts).
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    siteId: siteReference(),
    credential: pgText('credential').notNull(),
    key: pgText('key').notNull(),
    fingerprint: pgText('fingerprint').notNull(),
    createdAt: moment('created_at').notNull(),
    status: pgInteger('status'),
    answer: pgText('answer'),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.credential, t.key] }), pgIndex('idempotency_keys_created_idx').on(t.createdAt)],
)

// The reports' day rows (issue 69; db/stores/reports.ts; docs/decisions.md, "Reports"): for each
// UTC day, what the site's discussions did, as a whole (dimension `all`) and under each supporter,
// category, channel and tag; the times as histograms (lib/reports.ts bucketOf), JSON objects of
// bucket to count, with those added since in report_times. Written in the transaction of the write
// that moved the facts.
export const reportDays = pgTable(
  'report_days',
  {
    siteId: siteReference(),
    dimension: pgText('dimension', { enum: dimensions }).notNull(),
    day: pgText('day').notNull(),
    key: pgText('key').notNull(),
    created: pgInteger('created').notNull().default(0),
    resolved: pgInteger('resolved').notNull().default(0),
    reopened: pgInteger('reopened').notNull().default(0),
    replies: pgInteger('replies').notNull().default(0),
    firstReplies: pgInteger('first_replies').notNull().default(0),
    slaKept: pgInteger('sla_kept').notNull().default(0),
    slaBreached: pgInteger('sla_breached').notNull().default(0),
    ratedGood: pgInteger('rated_good').notNull().default(0),
    ratedBad: pgInteger('rated_bad').notNull().default(0),
    firstReply: pgText('first_reply').notNull().default('{}'),
    firstReplyBusiness: pgText('first_reply_business').notNull().default('{}'),
    resolution: pgText('resolution').notNull().default('{}'),
    resolutionBusiness: pgText('resolution_business').notNull().default('{}'),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.dimension, t.day, t.key] })],
)

// The times added to the reports' day rows since their histograms were last folded in
// (db/stores/reports.ts foldTimes): for each day row (its site, dimension, day and key) and timing
// (by its column's name), how many fell in each bucket, one row a bucket. A write that measures a
// time adds one to its bucket's row, a row of a few bytes, where it rewrote its day rows' whole
// histograms (up to 900 buckets each); they are folded into them every few minutes, many writes'
// at once (docs/decisions.md, "A report's times added apart, folded in later").
export const reportTimes = pgTable(
  'report_times',
  {
    siteId: siteReference(),
    dimension: pgText('dimension', { enum: dimensions }).notNull(),
    day: pgText('day').notNull(),
    key: pgText('key').notNull(),
    timing: pgText('timing').notNull(),
    bucket: pgInteger('bucket').notNull(),
    count: pgInteger('count').notNull().default(0),
  },
  (t) => [pgPrimaryKey({ columns: [t.siteId, t.dimension, t.day, t.key, t.timing, t.bucket] })],
)

// A site's rules (issue 70; lib/rules.ts; db/stores/rules.ts; docs/decisions.md, "Rules and macros"):
// in `position` order, each on or off; on events (`events`, space-separated triggers) or on time
// (`after_minutes` since `since`, in business minutes when `business`); `conditions` and `actions`
// are JSON. `author_id`: the administrator who last saved it, who signs what it writes.
export const rules = pgTable(
  'rules',
  {
    id: id(),
    siteId: siteReference(),
    position: pgInteger('position').notNull(),
    name: pgText('name').notNull(),
    enabled: pgBoolean('enabled').notNull().default(true),
    events: pgText('events').notNull().default(''),
    afterMinutes: pgInteger('after_minutes'),
    business: pgBoolean('business').notNull().default(false),
    since: pgText('since').notNull().default('updated'),
    conditions: pgText('conditions').notNull().default('{}'),
    actions: pgText('actions').notNull().default('[]'),
    authorId: pgInteger('author_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (t) => [pgUniqueIndex('rules_site_name_unique').on(t.siteId, t.name)],
)

// Each time a rule fired on a discussion: its history (the discussion's page and the API), and what
// makes a rule on time fire once for each moment it counts from (`anchor_at`, unique with the rule
// and the discussion; null for a rule on events, which fires each time its event comes).
export const ruleFirings = pgTable(
  'rule_firings',
  {
    id: id(),
    siteId: siteReference(),
    ruleId: pgInteger('rule_id').references(() => rules.id, { onDelete: 'set null' }),
    ruleName: pgText('rule_name').notNull(),
    discussionId: pgInteger('discussion_id')
      .notNull()
      .references(() => discussions.id, { onDelete: 'cascade' }),
    trigger: pgText('trigger').notNull(),
    anchorAt: moment('anchor_at'),
    done: pgText('done').notNull(),
    at: moment('at').notNull(),
  },
  (t) => [pgUniqueIndex('rule_firings_once').on(t.ruleId, t.discussionId, t.anchorAt), pgIndex('rule_firings_discussion').on(t.discussionId, t.id)],
)
