import { and, count, desc, eq, gt, isNull, sql } from '../drizzle.ts'
import type { Db } from '../client.ts'
import { memberships, personalTokens, users, type Access, type Role } from '../schema.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { fingerprint, generatePersonalToken, lastFour } from '../../lib/token-format.ts'
import { StoreError } from './errors.ts'
import { readCache } from './read-cache.ts'
import { isStaffRole, membershipOn, staffColumn } from './staff.ts'
import type { Async } from './async.ts'

export const EXPIRY_DAYS = [7, 30, 90, 365] as const
export const DEFAULT_EXPIRY_DAYS = 90
export const MAX_ACTIVE_TOKENS = 20
export const MAX_TOKEN_NAME = 100
// last used is written at most this often per token (docs/decisions.md).
export const LAST_USED_EVERY_MS = 60_000
const FLUSH_AFTER_MS = 1_000

export type PersonalToken = typeof personalTokens.$inferSelect

export interface NewToken {
  siteId: number
  userId: number
  name: string
  access: Access
  expiresInDays: number
}

/** A token as the list shows it, with what makes it unusable while it is still active. */
export type ListedToken = PersonalToken & { email: string; disabled: boolean; staff: boolean }

export function tokenState(token: ListedToken, now: number): 'active' | 'unusable' | 'expired' | 'revoked' {
  if (token.revokedAt) return 'revoked'
  if (token.expiresAt.getTime() <= now) return 'expired'
  if (token.disabled || !token.staff) return 'unusable'
  return 'active'
}

/** The input with its name trimmed, or a StoreError. */
export function validateNewToken(input: NewToken): NewToken {
  const name = input.name.trim()
  if (name === '') throw new StoreError('a token needs a name that says what it is for', 'invalid', 'name')
  if (name.length > MAX_TOKEN_NAME) {
    throw new StoreError(`a token name must be at most ${MAX_TOKEN_NAME} characters`, 'invalid', 'name')
  }
  if (holdsNul(name)) throw new StoreError('a token name must not contain the character U+0000', 'invalid', 'name')
  if (input.access !== 'read' && input.access !== 'write') {
    throw new StoreError('access must be read (Read only) or write (Read and write)', 'invalid', 'access')
  }
  if (!(EXPIRY_DAYS as readonly number[]).includes(input.expiresInDays)) {
    throw new StoreError(`expiry must be ${EXPIRY_DAYS.join(', ')} days`, 'invalid', 'expires')
  }
  return { ...input, name }
}

/** A StoreError unless the owner (undefined: no such user) may create a token on the site. */
export function checkTokenOwner(owner: { role: Role | null; disabled: boolean } | undefined): void {
  if (!owner) throw new StoreError('there is no such user', 'not_found', 'email')
  if (!isStaffRole(owner.role)) throw new StoreError('only support staff of this site can create tokens', 'forbidden')
  if (owner.disabled) throw new StoreError('a disabled account cannot create tokens', 'forbidden')
}

/** A StoreError when the owner's active tokens leave no room for another. */
export function checkActiveTokens(active: number): void {
  if (active >= MAX_ACTIVE_TOKENS) {
    throw new StoreError(
      `you already have ${MAX_ACTIVE_TOKENS} active tokens, the most allowed; revoke one you no longer use first`,
      'limit',
    )
  }
}

/** The row of a new token with this value; nothing is written. */
export function newTokenRow(input: NewToken, value: string, now: number) {
  return {
    siteId: input.siteId,
    userId: input.userId,
    name: input.name,
    access: input.access,
    fingerprint: fingerprint(value),
    lastFour: lastFour(value),
    createdAt: new Date(now),
    expiresAt: new Date(now + input.expiresInDays * DAY_MS),
  }
}

export function noSuchToken(id: number): StoreError {
  return new StoreError(`there is no token ${id} on this site`, 'not_found', 'id')
}

export function tokenAlreadyRevoked(id: number): StoreError {
  return new StoreError(`token ${id} is already revoked`, 'conflict', 'id')
}

export function createTokenStore(db: Db, clock: Clock, onFlushError?: (error: unknown) => void) {
  const ownerSelection = {
    email: users.email,
    disabled: users.disabled,
    staff: staffColumn(),
  }

  // The one read of the authentication path: the token, its owner and the owner's role on the
  // token's site, through the unique fingerprint index.
  const byFingerprint = db
    .select({
      id: personalTokens.id,
      siteId: personalTokens.siteId,
      userId: personalTokens.userId,
      access: personalTokens.access,
      expiresAt: personalTokens.expiresAt,
      revokedAt: personalTokens.revokedAt,
      lastUsedAt: personalTokens.lastUsedAt,
      name: users.name,
      ...ownerSelection,
    })
    .from(personalTokens)
    .innerJoin(users, eq(users.id, personalTokens.userId))
    .leftJoin(memberships, membershipOn(personalTokens.siteId, personalTokens.userId))
    .where(eq(personalTokens.fingerprint, sql.placeholder('fingerprint')))
    .prepare()

  const lookupByFingerprint = readCache(db).memo((key) => byFingerprint.get({ fingerprint: key }))

  const activeCount = db
    .select({ n: count() })
    .from(personalTokens)
    .where(
      and(
        eq(personalTokens.userId, sql.placeholder('userId')),
        isNull(personalTokens.revokedAt),
        gt(personalTokens.expiresAt, sql.placeholder('now')),
      ),
    )
    .prepare()

  const ownerRole = db
    .select({ role: memberships.role, disabled: users.disabled })
    .from(users)
    .leftJoin(memberships, membershipOn(sql.placeholder('siteId'), users.id))
    .where(eq(users.id, sql.placeholder('userId')))
    .prepare()

  const touch = db
    .update(personalTokens)
    .set({
      lastUsedAt: sql`${sql.placeholder('at')}`,
      lastUsedFrom: sql`${sql.placeholder('from')}`,
    })
    .where(eq(personalTokens.id, sql.placeholder('id')))
    .prepare()

  // Last-used updates wait here and are written in one transaction shortly after, off the request.
  const pending = new Map<number, { at: number; from: string }>()
  let flushTimer: NodeJS.Timeout | undefined

  function flush(): void {
    clearTimeout(flushTimer)
    flushTimer = undefined
    if (pending.size === 0) return
    const batch = [...pending]
    pending.clear()
    db.transaction(() => {
      for (const [id, use] of batch) touch.run({ id, at: use.at, from: use.from })
    })
  }

  function listQuery() {
    return db
      .select({ token: personalTokens, ...ownerSelection })
      .from(personalTokens)
      .innerJoin(users, eq(users.id, personalTokens.userId))
      .leftJoin(memberships, membershipOn(personalTokens.siteId, personalTokens.userId))
  }

  return {
    /**
     * Makes a token and returns its value, which exists nowhere else afterwards. The count and the
     * insert run in one IMMEDIATE transaction, so the limit holds across concurrent requests and
     * processes sharing the file.
     */
    create(input: NewToken): { value: string; token: PersonalToken } {
      const checked = validateNewToken(input)
      const { siteId, userId } = checked
      const value = generatePersonalToken()
      return db.transaction(
        (tx) => {
          checkTokenOwner(ownerRole.get({ siteId, userId }))
          const now = clock()
          checkActiveTokens(activeCount.get({ userId, now })!.n)
          const token = tx
            .insert(personalTokens)
            .values(newTokenRow(checked, value, now))
            .returning()
            .get()
          return { value, token }
        },
        { behavior: 'immediate' },
      )
    },

    activeCount(userId: number): number {
      return activeCount.get({ userId, now: clock() })!.n
    },

    /**
     * The token, its owner and the owner's role on its site; undefined for an unknown value.
     * Remembered until the database changes (read-cache.ts): a revocation, a disabled owner or a
     * change of staff, by this process or another, is seen on the very next request.
     */
    lookup(value: string) {
      return lookupByFingerprint(fingerprint(value))
    },

    /** Every token of a site (or of one user on it), newest first, revoked and expired included. */
    listForSite(siteId: number, userId?: number): ListedToken[] {
      const where = userId === undefined
        ? eq(personalTokens.siteId, siteId)
        : and(eq(personalTokens.siteId, siteId), eq(personalTokens.userId, userId))
      return listQuery()
        .where(where)
        .orderBy(desc(personalTokens.createdAt), desc(personalTokens.id))
        .all()
        .map(({ token, ...owner }) => ({ ...token, ...owner }))
    },

    /** Marks the token revoked; it is refused from the next request on. */
    revoke(siteId: number, id: number, userId?: number): PersonalToken {
      const where = and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId))
      const token = db
        .select()
        .from(personalTokens)
        .where(userId === undefined ? where : and(where, eq(personalTokens.userId, userId)))
        .get()
      if (!token) throw noSuchToken(id)
      if (token.revokedAt) throw tokenAlreadyRevoked(id)
      const revokedAt = new Date(clock())
      db.update(personalTokens).set({ revokedAt }).where(eq(personalTokens.id, id)).run()
      return { ...token, revokedAt }
    },

    /**
     * Notes a use of the token. Written at most once a minute per token, and never during the
     * request: the write is queued and flushed in a batch a moment later (or at close).
     */
    recordUse(id: number, lastUsedAt: Date | null, from: string): void {
      const now = clock()
      if (lastUsedAt && now - lastUsedAt.getTime() < LAST_USED_EVERY_MS) return
      if (pending.has(id)) return
      pending.set(id, { at: now, from })
      // Last used is best-effort: a failed write (the file busy for too long) is reported, not thrown.
      flushTimer ??= setTimeout(() => {
        try {
          flush()
        } catch (error) {
          onFlushError?.(error)
        }
      }, FLUSH_AFTER_MS).unref()
    },

    flush,
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncTokenStore = ReturnType<typeof createTokenStore>
export type TokenStore = Async<SyncTokenStore>
