import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

// Every moment is stored as integer milliseconds since the epoch (UTC), read back as a Date.
const moment = (name: string) => integer(name, { mode: 'timestamp_ms' })

export const sites = sqliteTable('sites', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  // The <site> of the API paths and of the site URL.
  permalink: text('permalink').notNull().unique(),
  name: text('name').notNull(),
  // The secret that signs multipass SSO tokens for this site (decisions.md, "Multipass").
  multipassKey: text('multipass_key').notNull(),
  createdAt: moment('created_at').notNull(),
})

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
  },
  (t) => [
    uniqueIndex('users_email_key_unique').on(t.emailKey),
    uniqueIndex('users_legacy_token_unique').on(t.legacyTokenFingerprint),
  ],
)

export const roles = ['supporter', 'customer'] as const
export type Role = (typeof roles)[number]

export const memberships = sqliteTable(
  'memberships',
  {
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: roles }).notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.userId] }), index('memberships_user_idx').on(t.userId)],
)

export const accessLevels = ['read', 'write'] as const
export type Access = (typeof accessLevels)[number]

export const personalTokens = sqliteTable(
  'personal_tokens',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
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
  },
  (t) => [
    uniqueIndex('personal_tokens_fingerprint_unique').on(t.fingerprint),
    // Counting a user's active tokens (the limit of 20) and listing them read only this index.
    index('personal_tokens_owner_idx')
      .on(t.userId, t.expiresAt)
      .where(sql`${t.revokedAt} IS NULL`),
  ],
)

// Supporter web sessions. The cookie carries the session id; only its SHA-256 is stored.
export const webSessions = sqliteTable(
  'web_sessions',
  {
    fingerprint: text('fingerprint').primaryKey(),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: moment('created_at').notNull(),
    expiresAt: moment('expires_at').notNull(),
  },
  (t) => [index('web_sessions_user_idx').on(t.userId), index('web_sessions_expiry_idx').on(t.expiresAt)],
)
