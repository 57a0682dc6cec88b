import { and, count, desc, eq, gt, inArray, isNull, lte, sql, type Column, type SQL, type Table } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { memberships, personalTokenAddresses, personalTokens, securityEvents, sites, users } from '../sqlite/schema.ts'
import type { Access, Role } from '../values.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { fingerprint, generatePersonalToken, lastFour } from '../../lib/token-format.ts'
import { StoreError } from './errors.ts'
import { readCache } from './read-cache.ts'
import { eventRow } from './security-log.ts'
import { isStaffRole, membershipOn, staffColumn } from './staff.ts'
import type { Async } from './async.ts'

export const EXPIRY_DAYS = [7, 30, 90, 365] as const
export const DEFAULT_EXPIRY_DAYS = 90
export const MAX_ACTIVE_TOKENS = 20
export const MAX_TOKEN_NAME = 100
// last used is written at most this often per token (docs/decisions.md).
export const LAST_USED_EVERY_MS = 60_000
const FLUSH_AFTER_MS = 1_000
// The addresses a token was last used from, kept per token (docs/decisions.md, "Token lifecycle").
export const ADDRESSES_KEPT = 5

export type PersonalToken = typeof personalTokens.$inferSelect

/** What the look-up knows of a token's last use: enough to tell whether this use is news. */
export interface LastUse {
  id: number
  lastUsedAt: Date | null
  lastUsedFrom: string | null
}

/** A use from an address, and when it was last used from there. */
export interface TokenAddress {
  address: string
  lastUsedAt: Date
}

/**
 * Whether a use must be written: the first, the first for a minute (LAST_USED_EVERY_MS), or one
 * from another address than the last; anything else is written by nobody, so a busy token costs
 * one write a minute, and an address that changes is never missed for long.
 */
export function useIsNews(token: LastUse, from: string, now: number): boolean {
  return !token.lastUsedAt || now - token.lastUsedAt.getTime() >= LAST_USED_EVERY_MS || token.lastUsedFrom !== from
}

/** One use waiting for the batch: the token, the address it came from, and when (the latest from there). */
export interface QueuedUse {
  id: number
  from: string
  at: number
}

/** A use's place in a queue: one per token and address. */
export const useKey = (id: number, from: string): string => `${id} ${from}`

/**
 * The uses waiting for the next batch, per token and address: a token used from two addresses
 * before the batch is written has both written (and both logged when new), not only the first.
 */
export class UseQueue {
  readonly #uses = new Map<string, QueuedUse>()

  get size(): number {
    return this.#uses.size
  }

  /** Notes a use; a later use of the same token from the same address only moves its time. */
  add(id: number, from: string, at: number): void {
    this.#uses.set(useKey(id, from), { id, from, at })
  }

  /** Empties the queue into a batch, oldest use first, so a token's last write is its latest use. */
  take(): QueuedUse[] {
    const batch = [...this.#uses.values()].sort((a, b) => a.at - b.at)
    this.#uses.clear()
    return batch
  }
}

/** Deletes a token's addresses past the ADDRESSES_KEPT most recent (either engine's table). */
export function trimAddresses(t: Table & Record<'tokenId' | 'address' | 'lastUsedAt', Column>, tokenId: number): SQL {
  return sql`DELETE FROM ${t} WHERE ${t.tokenId} = ${tokenId} AND ${t.address} NOT IN (
    SELECT ${t.address} FROM ${t} WHERE ${t.tokenId} = ${tokenId} ORDER BY ${t.lastUsedAt} DESC, ${t.address} LIMIT ${ADDRESSES_KEPT})`
}

/** What the security log says of a first use from an address (not among the token's last five). */
export function newAddressEvent(token: { id: number; userId: number; siteId: number; name: string }, address: string) {
  return { userId: token.userId, siteId: token.siteId, kind: 'token_new_address' as const, address, actor: 'api', detail: { token_id: token.id, name: token.name } }
}

/**
 * The expiry notices (docs/decisions.md, "Token lifecycle"): one mail 7 days before a token dies,
 * and one on its last day. A notice is claimed (its column set) by one statement before its mail
 * goes, so of several processes exactly one sends it; a failed mail gives the claim back.
 */
export const NOTICE_DAYS = { week: 7, day: 1 } as const
export type NoticeKind = keyof typeof NOTICE_DAYS

/** A claimed notice: the token (never its value), its owner and its site. */
export interface ExpiryNotice {
  tokenId: number
  name: string
  access: Access
  createdAt: Date
  expiresAt: Date
  email: string
  userName: string
  disabled: boolean
  staff: boolean
  permalink: string
  siteName: string
}

type NoticeColumns = Record<'revokedAt' | 'expiresAt' | 'weekNoticeAt' | 'dayNoticeAt', Column>

/**
 * The tokens whose `kind` notice is due at `now`: live, not yet noticed, dying within the window;
 * the week's notice only while more than a day is left (then the day's is due instead).
 */
export function noticeDue(tokens: NoticeColumns, kind: NoticeKind, now: number): SQL | undefined {
  return and(
    isNull(tokens.revokedAt),
    isNull(kind === 'week' ? tokens.weekNoticeAt : tokens.dayNoticeAt),
    gt(tokens.expiresAt, new Date(now)),
    lte(tokens.expiresAt, new Date(now + NOTICE_DAYS[kind] * DAY_MS)),
    kind === 'week' ? gt(tokens.expiresAt, new Date(now + NOTICE_DAYS.day * DAY_MS)) : undefined,
  )
}

/** What a claimed notice reads (ExpiryNotice), from either engine's tables; `staff` is the engine's staff column. */
export function noticeSelection<
  T extends Record<'id' | 'name' | 'access' | 'createdAt' | 'expiresAt', Column>,
  U extends Record<'email' | 'name' | 'disabled', Column>,
  S extends Record<'permalink' | 'name', Column>,
>(tokens: T, owners: U, site: S, staff: SQL<boolean>): {
  tokenId: T['id']
  name: T['name']
  access: T['access']
  createdAt: T['createdAt']
  expiresAt: T['expiresAt']
  email: U['email']
  userName: U['name']
  disabled: U['disabled']
  staff: SQL<boolean>
  permalink: S['permalink']
  siteName: S['name']
} {
  return {
    tokenId: tokens.id,
    name: tokens.name,
    access: tokens.access,
    createdAt: tokens.createdAt,
    expiresAt: tokens.expiresAt,
    email: owners.email,
    userName: owners.name,
    disabled: owners.disabled,
    staff,
    permalink: site.permalink,
    siteName: site.name,
  }
}

/** The column a notice sets when claimed. */
export const noticeColumn = (kind: NoticeKind) => (kind === 'week' ? 'weekNoticeAt' : 'dayNoticeAt')

/**
 * Whether a claimed notice is worth a mail: not to a disabled account or one off the staff (the
 * token is unusable anyway), and no week's notice for a token made to last 7 days or less (its
 * owner chose that moment a few minutes ago; the day's notice still comes).
 */
export function noticeWorthSending(notice: ExpiryNotice, kind: NoticeKind): boolean {
  if (notice.disabled || !notice.staff) return false
  return kind === 'day' || notice.expiresAt.getTime() - notice.createdAt.getTime() > NOTICE_DAYS.week * DAY_MS
}

/** Addresses grouped by token, most recent first. */
export function addressesByToken(rows: Array<TokenAddress & { tokenId: number }>): Map<number, TokenAddress[]> {
  const byToken = new Map<number, TokenAddress[]>()
  for (const { tokenId, address, lastUsedAt } of rows) {
    const list = byToken.get(tokenId) ?? []
    list.push({ address, lastUsedAt })
    byToken.set(tokenId, list)
  }
  return byToken
}

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
      lastUsedFrom: personalTokens.lastUsedFrom,
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

  const tokenOf = db
    .select({ id: personalTokens.id, userId: personalTokens.userId, siteId: personalTokens.siteId, name: personalTokens.name })
    .from(personalTokens)
    .where(eq(personalTokens.id, sql.placeholder('id')))
    .prepare()
  const knownAddress = db
    .select({ at: personalTokenAddresses.lastUsedAt })
    .from(personalTokenAddresses)
    .where(and(eq(personalTokenAddresses.tokenId, sql.placeholder('id')), eq(personalTokenAddresses.address, sql.placeholder('from'))))
    .prepare()
  const noteAddress = db
    .insert(personalTokenAddresses)
    .values({ tokenId: sql.placeholder('id'), address: sql.placeholder('from'), lastUsedAt: sql`${sql.placeholder('at')}` })
    .onConflictDoUpdate({ target: [personalTokenAddresses.tokenId, personalTokenAddresses.address], set: { lastUsedAt: sql`excluded.last_used_at` } })
    .prepare()

  /** One queued use: last used, the address among the last five, and the event of a new address. */
  function write({ id, from, at }: QueuedUse): void {
    const token = tokenOf.get({ id })
    if (!token) return
    touch.run({ id, at, from })
    const known = knownAddress.get({ id, from })
    noteAddress.run({ id, from, at })
    db.run(trimAddresses(personalTokenAddresses, id))
    if (!known) db.insert(securityEvents).values(eventRow(newAddressEvent(token, from), at)).run()
  }

  // Last-used updates wait here and are written in one transaction shortly after, off the request.
  const pending = new UseQueue()
  let flushTimer: NodeJS.Timeout | undefined

  function flush(): void {
    clearTimeout(flushTimer)
    flushTimer = undefined
    if (pending.size === 0) return
    const batch = pending.take()
    db.transaction(() => {
      for (const use of batch) write(use)
    })
  }

  /** The last addresses of these tokens, most recent first. */
  function addresses(tokenIds: number[]): Map<number, TokenAddress[]> {
    if (tokenIds.length === 0) return new Map()
    const rows = db
      .select()
      .from(personalTokenAddresses)
      .where(inArray(personalTokenAddresses.tokenId, tokenIds))
      .orderBy(desc(personalTokenAddresses.lastUsedAt), personalTokenAddresses.address)
      .all()
    return addressesByToken(rows)
  }

  function noticeQuery() {
    return db
      .select(noticeSelection(personalTokens, users, sites, staffColumn()))
      .from(personalTokens)
      .innerJoin(users, eq(users.id, personalTokens.userId))
      .innerJoin(sites, eq(sites.id, personalTokens.siteId))
      .leftJoin(memberships, membershipOn(personalTokens.siteId, personalTokens.userId))
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

    /** A token of a site by id, with the addresses it was last used from; undefined if none. */
    find(siteId: number, id: number): (PersonalToken & { addresses: TokenAddress[] }) | undefined {
      const token = db
        .select()
        .from(personalTokens)
        .where(and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId)))
        .get()
      return token && { ...token, addresses: addresses([id]).get(id) ?? [] }
    },

    addresses,


    /** Claims the `kind` notices due now (noticeDue) and answers them, with their owners and sites. */
    claimExpiryNotices(kind: NoticeKind): ExpiryNotice[] {
      const now = clock()
      const claimed = db
        .update(personalTokens)
        .set({ [noticeColumn(kind)]: new Date(now) })
        .where(noticeDue(personalTokens, kind, now))
        .returning({ id: personalTokens.id })
        .all()
      if (claimed.length === 0) return []
      return noticeQuery()
        .where(inArray(personalTokens.id, claimed.map((token) => token.id)))
        .orderBy(personalTokens.id)
        .all()
    },

    /** Gives a claimed notice back (its mail failed): the next round tries again. */
    releaseExpiryNotice(kind: NoticeKind, tokenId: number): void {
      db.update(personalTokens).set({ [noticeColumn(kind)]: null }).where(eq(personalTokens.id, tokenId)).run()
    },

    /**
     * Notes a use of the token. Written when it is news (useIsNews: at most once a minute per
     * token, or from another address), and never during the request: the write is queued (per
     * token and address) and flushed in a batch a moment later (or at close).
     */
    recordUse(token: LastUse, from: string): void {
      const now = clock()
      if (!useIsNews(token, from, now)) return
      pending.add(token.id, from, now)
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
