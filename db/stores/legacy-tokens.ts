import { randomBytes } from 'node:crypto'
import { eq, sql } from '../drizzle.ts'
import { onFirstUse, unguarded, type StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { StoreError } from './errors.ts'
import { membershipOn, staffColumn } from './staff.ts'

// The legacy account token (docs/decisions.md, "Legacy account token"): one per account, kept in the
// users row as a SHA-256 fingerprint (the look-up, through a unique index), an AES-256-GCM copy
// under the server key (so the profile page and the CLI can show it) and its expiry.

// 160 bits as 40 hex digits: the shape of the account API keys existing clients were written for.
const TOKEN_BYTES = 20

export interface LegacyToken {
  value: string
  expiresAt: Date
}

/** One year after issue, by the calendar (UTC). */
export function legacyTokenExpiry(issuedAt: number): Date {
  const expiry = new Date(issuedAt)
  expiry.setUTCFullYear(expiry.getUTCFullYear() + 1)
  return expiry
}

/** A new token for an account and the users columns that store it; nothing is written. */
export function issueLegacyToken(clock: Clock, box: SecretBox) {
  const value = randomBytes(TOKEN_BYTES).toString('hex')
  const expiresAt = legacyTokenExpiry(clock())
  return {
    token: { value, expiresAt } satisfies LegacyToken,
    columns: { legacyTokenFingerprint: fingerprint(value), legacyTokenEncrypted: box.seal(value), legacyTokenExpiresAt: expiresAt },
  }
}

export function noSuchAccount(): StoreError {
  return new StoreError('there is no such user', 'not_found', 'email')
}

/**
 * The token value a users row keeps, from its sealed copy: a StoreError when the copy cannot be
 * opened with this server key or is not the one the fingerprint names.
 */
export function openLegacyToken(box: SecretBox, stored: { fingerprint: string; sealed: string }): string {
  const value = box.open(stored.sealed)
  // A copy sealed under another server key (SERVICE_SECRET changed, key file replaced) cannot
  // be shown; the fingerprint check also refuses a copy moved over from another account.
  if (value === null || fingerprint(value) !== stored.fingerprint) {
    throw new StoreError(
      'the legacy API token cannot be shown: it was stored under another server key; reset it to make a new one',
      'conflict',
    )
  }
  return value
}

/** Replaces the account's token in the transaction of `port` (or alone): the old value is refused from the next request on. */
export async function resetLegacyToken(port: StorePort, clock: Clock, box: SecretBox, userId: number): Promise<LegacyToken> {
  const { db, tables: { users } } = port
  const { token, columns } = issueLegacyToken(clock, box)
  const changed = await db.update(users).set(columns).where(eq(users.id, userId)).returning({ id: users.id })
  if (changed.length === 0) throw noSuchAccount()
  return token
}

export function createLegacyTokenStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { memberships, users } } = port
  // The one read of the authentication path: the owner of the token, through the unique index,
  // and the owner's role on the site asked for, through the memberships primary key.
  const byFingerprint = onFirstUse(() => db
    .select({
      id: users.id,
      email: users.email,
      name: users.name,
      disabled: users.disabled,
      expiresAt: users.legacyTokenExpiresAt,
      staff: staffColumn(memberships),
      collaborator: memberships.collaborator,
    })
    .from(users)
    .leftJoin(memberships, membershipOn(memberships, sql.placeholder('siteId'), users.id))
    .where(eq(users.legacyTokenFingerprint, sql.placeholder('fingerprint')))
    .prepare('legacy_tokens_by_fingerprint'))

  // Remembered until the database changes (port.remember), like the personal tokens' look-up.
  const lookupOnSite = port.remember(async (key) => {
    const [siteId, hash] = key.split(' ')
    return (await byFingerprint.execute({ fingerprint: hash, siteId: Number(siteId) }))[0]
  })

  return {
    reset: (userId: number) => resetLegacyToken(port, clock, box, userId),

    /** The token's owner, its expiry and whether the owner is staff of the site; undefined for a value nobody holds. */
    lookup: unguarded((value: string, siteId: number) => lookupOnSite(`${siteId} ${fingerprint(value)}`)),

    /**
     * The account's token as the profile page shows it. An account made before legacy tokens
     * existed gets its first one here.
     */
    async current(userId: number): Promise<LegacyToken> {
      const [stored] = await db
        .select({ fingerprint: users.legacyTokenFingerprint, sealed: users.legacyTokenEncrypted, expiresAt: users.legacyTokenExpiresAt })
        .from(users)
        .where(eq(users.id, userId))
      if (!stored) throw noSuchAccount()
      if (!stored.fingerprint || !stored.sealed || !stored.expiresAt) return resetLegacyToken(port, clock, box, userId)
      const value = openLegacyToken(box, { fingerprint: stored.fingerprint, sealed: stored.sealed })
      return { value, expiresAt: stored.expiresAt }
    },
  }
}

export type LegacyTokenStore = ReturnType<typeof createLegacyTokenStore>
