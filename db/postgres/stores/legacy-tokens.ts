import { eq } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import type { SecretBox } from '../../../lib/secret-box.ts'
import { fingerprint } from '../../../lib/token-format.ts'
import { issueLegacyToken, noSuchAccount, openLegacyToken, type LegacyToken, type LegacyTokenStore } from '../../stores/legacy-tokens.ts'
import type { PgDb } from '../client.ts'
import { memberships, users } from '../schema.ts'
import { pgMembershipOn, pgStaffColumn, type PgExecutor } from './executor.ts'

// The legacy account token on PostgreSQL (db/stores/legacy-tokens.ts): the same columns of the
// users row, the same look-up through the unique fingerprint index. Every look-up reads (no cache):
// a reset by any process is refused by every process from its next request on.

/** Replaces the account's token (on `q`, which may be a caller's transaction). */
export async function resetLegacyToken(q: PgExecutor, clock: Clock, box: SecretBox, userId: number): Promise<LegacyToken> {
  const { token, columns } = issueLegacyToken(clock, box)
  const changed = await q.update(users).set(columns).where(eq(users.id, userId)).returning({ id: users.id })
  if (changed.length === 0) throw noSuchAccount()
  return token
}

export function createLegacyTokenStore(db: PgDb, clock: Clock, box: SecretBox): LegacyTokenStore {
  // The one read of the authentication path: the owner of the token, through the unique index,
  // and the owner's role on the site asked for, through the memberships primary key.
  const byFingerprint = (hash: string, siteId: number) =>
    db
      .select({
        id: users.id,
        email: users.email,
        name: users.name,
        disabled: users.disabled,
        expiresAt: users.legacyTokenExpiresAt,
        staff: pgStaffColumn(),
      })
      .from(users)
      .leftJoin(memberships, pgMembershipOn(siteId, users.id))
      .where(eq(users.legacyTokenFingerprint, hash))

  return {
    async issue() {
      return issueLegacyToken(clock, box)
    },

    reset(userId: number) {
      return resetLegacyToken(db, clock, box, userId)
    },

    async lookup(value: string, siteId: number) {
      const [owner] = await byFingerprint(fingerprint(value), siteId)
      return owner
    },

    async current(userId: number) {
      const [stored] = await db
        .select({ fingerprint: users.legacyTokenFingerprint, sealed: users.legacyTokenEncrypted, expiresAt: users.legacyTokenExpiresAt })
        .from(users)
        .where(eq(users.id, userId))
      if (!stored) throw noSuchAccount()
      if (!stored.fingerprint || !stored.sealed || !stored.expiresAt) return resetLegacyToken(db, clock, box, userId)
      const value = openLegacyToken(box, { fingerprint: stored.fingerprint, sealed: stored.sealed })
      return { value, expiresAt: stored.expiresAt }
    },
  }
}
