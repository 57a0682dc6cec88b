import { and, count, countDistinct, desc, eq, gt, inArray, isNull, notInArray, sql } from '../drizzle.ts'
import { onFirstUse, unguarded, type StorePort } from '../port.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { fingerprint, generatePersonalToken } from '../../lib/token-format.ts'
import { holdsNul } from '../../lib/nul.ts'
import { eventRow } from './security-log.ts'
import { noEvents, type EventSink, type EventToken } from './webhooks.ts'
import { checkTokenPolicy, policyOf } from './site-policy.ts'
import { membershipOn, staffColumn } from './staff.ts'
import { keptSites } from './sites.ts'
import {
  ADDRESSES_KEPT,
  addressesByToken,
  checkActiveTokens,
  checkTokenOwner,
  newAddressEvent,
  newTokenRow,
  noSuchToken,
  noticeColumn,
  noticeDue,
  tokenAlreadyRevoked,
  useIsNews,
  useKey,
  UseQueue,
  validateNewToken,
  type ExpiryNotice,
  type LastUse,
  type ListedToken,
  type NewToken,
  type NoticeKind,
  type PersonalToken,
  type QueuedUse,
  type TokenAddress,
} from './token-rules.ts'

// Personal tokens (docs/decisions.md, "Personal API tokens"), one store for both engines
// (db/port.ts); their rules are db/stores/token-rules.ts.

/** A use waits this long in the queue, so a burst of requests costs one write. */
const FLUSH_AFTER_MS = 1_000

/** A token the policy shortened: as it is now, when it was to expire, and its owner. */
export interface ShortenedToken {
  token: PersonalToken
  expiredAt: Date
  owner: { id: number; email: string; name: string }
}

/** A token as its events tell of it (db/stores/webhooks.ts), with its owner read in the transaction `tx`. */
async function eventToken(tx: StorePort, token: PersonalToken): Promise<EventToken> {
  const { users } = tx.tables
  const [owner] = await tx.db.select({ email: users.email, name: users.name }).from(users).where(eq(users.id, token.userId))
  return { id: token.id, name: token.name, access: token.access, createdAt: token.createdAt, lastUsedAt: token.lastUsedAt, expiresAt: token.expiresAt, revokedAt: token.revokedAt, owner: owner! }
}

/** The authentication read's answer for a permalink that names no site. */
const NO_SITE = { site: undefined, token: undefined } as const

export function createTokenStore(port: StorePort, clock: Clock, onFlushError?: (error: unknown) => void, events: EventSink = noEvents) {
  const { db, tables: { memberships, personalTokenAddresses, personalTokens, securityEvents, sites, users } } = port
  const ownerSelection = { email: users.email, disabled: users.disabled, staff: staffColumn(memberships), collaborator: memberships.collaborator }
  const ownerMembership = membershipOn(memberships, personalTokens.siteId, personalTokens.userId)

  /** A token as the authentication path reads it: with its owner's name, address, state and role on the token's site. */
  const tokenSelection = {
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
  }

  // The token, its owner and the owner's role on the token's site, through the unique fingerprint
  // index (a leaked token's report); remembered until the database changes (port.remember), as the
  // authentication path's read below, so a revocation, a disabled owner or a change of staff, by
  // this process or another, is seen on the very next request.
  const byFingerprint = onFirstUse(() => db
    .select(tokenSelection)
    .from(personalTokens)
    .innerJoin(users, eq(users.id, personalTokens.userId))
    .leftJoin(memberships, ownerMembership)
    .where(eq(personalTokens.fingerprint, sql.placeholder('fingerprint')))
    .prepare('tokens_by_fingerprint'))
  const lookupByFingerprint = port.remember(async (key) => (await byFingerprint.execute({ fingerprint: key }))[0])
  type AuthToken = NonNullable<Awaited<ReturnType<typeof lookupByFingerprint>>>

  // The authentication path's one read (docs/decisions.md, "One round trip to authenticate"): a
  // site's id and version by its permalink and, made for it, the tokens by their fingerprints with
  // their owners and the owners' roles there, for several requests at once. One statement for each
  // site of the requests admitted together on PostgreSQL (one site, nearly always), where nothing is
  // remembered between requests (port.onArrival); one request's, remembered, on SQLite. The rest of
  // a site's row is kept by its version (keptSites). The permalink is one value, not a list:
  // PostgreSQL planned the statement again at every call when it was ("Plans that are made once").
  const onSiteByFingerprints = onFirstUse(() => db
    .select({ site: sites.id, siteVersion: sites.version, fingerprint: personalTokens.fingerprint, ...tokenSelection })
    .from(sites)
    .leftJoin(personalTokens, and(port.anyOf(personalTokens.fingerprint, 'fingerprints'), eq(personalTokens.siteId, sites.id)))
    .leftJoin(users, eq(users.id, personalTokens.userId))
    .leftJoin(memberships, ownerMembership)
    .where(eq(sites.permalink, sql.placeholder('permalink')))
    .prepare('tokens_on_site_by_fingerprints'))
  const siteAt = keptSites(port)
  // A key is the token's fingerprint, a space, and the permalink.
  const lookupOnSite = port.onArrival(async (keys) => {
    const asked = keys.map((key) => {
      const space = key.indexOf(' ')
      return [key.slice(0, space), key.slice(space + 1)] as const
    })
    const fingerprintsOf = new Map<string, Set<string>>()
    for (const [fingerprint, permalink] of asked) fingerprintsOf.set(permalink, (fingerprintsOf.get(permalink) ?? new Set()).add(fingerprint))
    const rowsOf = new Map(await Promise.all([...fingerprintsOf].map(async ([permalink, fingerprints]) => [permalink, await onSiteByFingerprints.execute({ permalink, fingerprints: port.list([...fingerprints]) })] as const)))
    return Promise.all(
      asked.map(async ([fingerprint, permalink]) => {
        const ofSite = rowsOf.get(permalink)!
        if (ofSite.length === 0) return NO_SITE
        const site = await siteAt(ofSite[0]!.site, ofSite[0]!.siteVersion)
        // No token of the site among those asked for: one row whose token columns are null. A
        // token's are all there (its owner and role are read through it).
        const token = ofSite.find((row) => row.fingerprint === fingerprint)
        return { site, token: token as AuthToken | undefined }
      }),
    )
  })

  /** The live tokens of the site that end more than `days` from now. */
  const overLimit = (siteId: number, days: number) =>
    and(
      eq(personalTokens.siteId, siteId),
      isNull(personalTokens.revokedAt),
      gt(personalTokens.expiresAt, new Date(clock() + days * DAY_MS)),
    )

  async function activeCount(q: StorePort, userId: number): Promise<number> {
    const p = sql.placeholder
    const active = q.prepared('tokens_active_count', (db) =>
      db
        .select({ n: count() })
        .from(personalTokens)
        .where(and(eq(personalTokens.userId, p('userId')), isNull(personalTokens.revokedAt), gt(personalTokens.expiresAt, sql`${p('now')}`)))
        .prepare('tokens_active_count'),
    )
    return (await active.execute({ userId, now: q.moment(new Date(clock())) }))[0].n
  }

  /**
   * One batch of uses, in one transaction: each token's last use (its latest in the batch), each
   * address among the token's last ADDRESSES_KEPT, and one security event per address that was not
   * among them. The insert that finds its row already there writes nothing and tells so, so of two
   * processes noting the same new address, one logs it.
   */
  async function write(batch: QueuedUse[]): Promise<void> {
    // The batch is oldest first, so the last use of a token seen is its latest; the tokens are
    // written in the order of their ids, so two processes' batches take their rows' locks in one order.
    const latest = new Map([...new Map(batch.map((use) => [use.id, use]))].sort(([a], [b]) => a - b))
    await port.atomic(async ({ db }) => {
      const tokens = new Map<number, { id: number; userId: number; siteId: number; name: string }>()
      for (const { id, at, from } of latest.values()) {
        const [token] = await db
          .update(personalTokens)
          .set({ lastUsedAt: new Date(at), lastUsedFrom: from })
          .where(eq(personalTokens.id, id))
          .returning({ id: personalTokens.id, userId: personalTokens.userId, siteId: personalTokens.siteId, name: personalTokens.name })
        if (token) tokens.set(id, token)
      }
      for (const { id, from, at } of batch) {
        const token = tokens.get(id)
        if (!token) continue // gone since the request: nothing to note
        const added = await db
          .insert(personalTokenAddresses)
          .values({ tokenId: id, address: from, lastUsedAt: new Date(at) })
          .onConflictDoNothing()
          .returning({ tokenId: personalTokenAddresses.tokenId })
        if (added.length > 0) {
          await db.insert(securityEvents).values(eventRow(newAddressEvent(token, from), at))
        } else {
          await db
            .update(personalTokenAddresses)
            .set({ lastUsedAt: new Date(at) })
            .where(and(eq(personalTokenAddresses.tokenId, id), eq(personalTokenAddresses.address, from)))
        }
        const kept = db
          .select({ address: personalTokenAddresses.address })
          .from(personalTokenAddresses)
          .where(eq(personalTokenAddresses.tokenId, id))
          .orderBy(desc(personalTokenAddresses.lastUsedAt), personalTokenAddresses.address)
          .limit(ADDRESSES_KEPT)
        await db.delete(personalTokenAddresses).where(and(eq(personalTokenAddresses.tokenId, id), notInArray(personalTokenAddresses.address, kept)))
      }
    })
  }

  // Last-used updates wait here and are written in one transaction shortly after, off the request.
  const pending = new UseQueue()
  // The uses (token and address) being written: a request that read the old time meanwhile queues nothing.
  const writing = new Set<string>()
  let flushTimer: NodeJS.Timeout | undefined
  let lastFlush: Promise<void> = Promise.resolve()

  /** Writes the queued uses in one batch; resolves when it and every earlier batch are written. */
  function flush(): Promise<void> {
    clearTimeout(flushTimer)
    flushTimer = undefined
    const batch = pending.take()
    const keys = batch.map((use) => useKey(use.id, use.from))
    for (const key of keys) writing.add(key)
    const earlier = lastFlush
    const done = (async () => {
      try {
        await earlier.catch(() => {})
        if (batch.length > 0) await write(batch)
      } finally {
        for (const key of keys) writing.delete(key)
      }
    })()
    lastFlush = done
    return done
  }

  /** The last addresses of these tokens, most recent first. */
  async function addresses(tokenIds: number[]): Promise<Map<number, TokenAddress[]>> {
    if (tokenIds.length === 0) return new Map()
    const rows = await db
      .select()
      .from(personalTokenAddresses)
      .where(inArray(personalTokenAddresses.tokenId, tokenIds))
      .orderBy(desc(personalTokenAddresses.lastUsedAt), personalTokenAddresses.address)
    return addressesByToken(rows)
  }

  return {
    /**
     * Makes a token and returns its value, which exists nowhere else afterwards. The owner's row
     * is locked before the active tokens are counted, so concurrent creations for one owner, in
     * any process, take turns and the limit of MAX_ACTIVE_TOKENS holds.
     */
    async create(input: NewToken): Promise<{ value: string; token: PersonalToken }> {
      const checked = validateNewToken(input)
      const { siteId, userId } = checked
      const value = generatePersonalToken()
      return port.atomic(async (tx) => {
        const p = sql.placeholder
        const owner = tx.prepared('tokens_owner_locked', (db) =>
          tx
            .locked(
              db
                .select({ role: memberships.role, administrator: memberships.administrator, disabled: users.disabled })
                .from(users)
                .leftJoin(memberships, membershipOn(memberships, p('siteId'), users.id))
                .where(eq(users.id, p('userId'))),
              users,
            )
            .prepare('tokens_owner_locked'),
        )
        const found = (await owner.execute({ siteId, userId }))[0]
        checkTokenOwner(found)
        // The policy as it is now, under the owner's lock: a policy changed meanwhile applies.
        const policy = tx.prepared('tokens_site_policy', (db) =>
          db.select().from(sites).where(eq(sites.id, p('siteId'))).prepare('tokens_site_policy'),
        )
        checkTokenPolicy(policyOf((await policy.execute({ siteId }))[0]), checked, found.administrator === true)
        checkActiveTokens(await activeCount(tx, userId))
        const [token] = await tx.db.insert(personalTokens).values(newTokenRow(checked, value, clock())).returning()
        await events(tx, { type: 'token.created', siteId, token: await eventToken(tx, token!) })
        return { value, token }
      })
    },

    activeCount: (userId: number) => activeCount(port, userId),

    /** The token, its owner and the owner's role on its site; undefined for an unknown value. */
    lookup: unguarded((value: string) => lookupByFingerprint(fingerprint(value))),

    /**
     * The site of the permalink, and the token of that value when it was made for that site (with
     * its owner and the owner's role there): one read. A permalink holding U+0000 names no site
     * (lib/nul.ts), found without a query.
     */
    lookupOnSite: unguarded(async (permalink: string, value: string) => (holdsNul(permalink) ? NO_SITE : lookupOnSite(`${fingerprint(value)} ${permalink}`))),

    /** Every token of a site (or of one user on it), newest first, revoked and expired included. */
    async listForSite(siteId: number, userId?: number): Promise<ListedToken[]> {
      const where = userId === undefined ? eq(personalTokens.siteId, siteId) : and(eq(personalTokens.siteId, siteId), eq(personalTokens.userId, userId))
      const rows = await db
        .select({ token: personalTokens, ...ownerSelection })
        .from(personalTokens)
        .innerJoin(users, eq(users.id, personalTokens.userId))
        .leftJoin(memberships, ownerMembership)
        .where(where)
        .orderBy(desc(personalTokens.createdAt), desc(personalTokens.id))
      return rows.map(({ token, ...owner }) => ({ ...token, ...owner }))
    },

    /**
     * The live tokens of a site that last longer than `days` from now: how many, and of how many
     * people. What a shorter longest lifetime would shorten (the policy's dry run).
     */
    async overLimit(siteId: number, days: number): Promise<{ tokens: number; people: number }> {
      const [found] = await db
        .select({ tokens: count(), people: countDistinct(personalTokens.userId) })
        .from(personalTokens)
        .where(overLimit(siteId, days))
      return found
    },

    /**
     * Shortens the live tokens of a site that last longer than `days` from now to end then, in one
     * statement; each one as it was before, with its owner and new expiry. Their expiry notices
     * are due again for the new date.
     */
    async shorten(siteId: number, days: number): Promise<ShortenedToken[]> {
      return port.atomic(async (tx) => {
        const before = await tx.locked(
          tx.db.select({ id: personalTokens.id, expiresAt: personalTokens.expiresAt }).from(personalTokens).where(overLimit(siteId, days)),
        )
        if (before.length === 0) return []
        const until = new Date(clock() + days * DAY_MS)
        const changed = await tx.db
          .update(personalTokens)
          .set({ expiresAt: until, weekNoticeAt: null, dayNoticeAt: null })
          .where(inArray(personalTokens.id, before.map((token) => token.id)))
          .returning()
        const was = new Map(before.map((token) => [token.id, token.expiresAt]))
        const owners = await tx.db
          .select({ id: users.id, email: users.email, name: users.name })
          .from(users)
          .where(inArray(users.id, [...new Set(changed.map((token) => token.userId))]))
        const byId = new Map(owners.map((owner) => [owner.id, owner]))
        return changed
          .sort((a, b) => a.id - b.id)
          .map((token) => ({ token, expiredAt: was.get(token.id)!, owner: byId.get(token.userId)! }))
      })
    },

    /** Marks the token revoked; it is refused from the next request on. `leaked`: because it was found in public (told as token.leaked too). */
    async revoke(siteId: number, id: number, userId?: number, leaked = false): Promise<PersonalToken> {
      const which = and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId))
      const where = userId === undefined ? which : and(which, eq(personalTokens.userId, userId))
      return port.atomic(async (tx) => {
        // One statement, so of two concurrent revocations exactly one succeeds.
        const [revoked] = await tx.db
          .update(personalTokens)
          .set({ revokedAt: new Date(clock()) })
          .where(and(where, isNull(personalTokens.revokedAt)))
          .returning()
        if (revoked) {
          const token = await eventToken(tx, revoked)
          await events(tx, { type: 'token.revoked', siteId, token })
          if (leaked) await events(tx, { type: 'token.leaked', siteId, token })
          return revoked
        }
        const [token] = await tx.db.select({ id: personalTokens.id }).from(personalTokens).where(where)
        if (!token) throw noSuchToken(id)
        throw tokenAlreadyRevoked(id)
      })
    },

    /** A token of a site by id, with the addresses it was last used from; undefined if none. */
    async find(siteId: number, id: number): Promise<(PersonalToken & { addresses: TokenAddress[] }) | undefined> {
      const [token] = await db
        .select()
        .from(personalTokens)
        .where(and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId)))
      return token && { ...token, addresses: (await addresses([id])).get(id) ?? [] }
    },

    addresses,

    /** Claims the `kind` notices due now (noticeDue) and answers them, with their owners and sites. */
    async claimExpiryNotices(kind: NoticeKind): Promise<ExpiryNotice[]> {
      const now = clock()
      // One statement: of two processes claiming at once, the second finds the column set and skips the row.
      const claimed = await db
        .update(personalTokens)
        .set({ [noticeColumn(kind)]: new Date(now) })
        .where(noticeDue(personalTokens, kind, now))
        .returning({ id: personalTokens.id })
      if (claimed.length === 0) return []
      return db
        .select({
          tokenId: personalTokens.id,
          name: personalTokens.name,
          access: personalTokens.access,
          createdAt: personalTokens.createdAt,
          expiresAt: personalTokens.expiresAt,
          email: users.email,
          userName: users.name,
          disabled: users.disabled,
          staff: staffColumn(memberships),
          permalink: sites.permalink,
          siteName: sites.name,
        })
        .from(personalTokens)
        .innerJoin(users, eq(users.id, personalTokens.userId))
        .innerJoin(sites, eq(sites.id, personalTokens.siteId))
        .leftJoin(memberships, ownerMembership)
        .where(inArray(personalTokens.id, claimed.map((token) => token.id)))
        .orderBy(personalTokens.id)
    },

    /** Gives a claimed notice back (its mail failed): the next round tries again. */
    async releaseExpiryNotice(kind: NoticeKind, tokenId: number): Promise<void> {
      await db.update(personalTokens).set({ [noticeColumn(kind)]: null }).where(eq(personalTokens.id, tokenId))
    },

    /**
     * Notes a use of the token. Written when it is news (useIsNews: at most once a minute per
     * token, or from another address), and never during the request: the write is queued (per
     * token and address) and flushed in a batch a moment later (or at close): the call itself
     * does not touch the connection.
     */
    recordUse: unguarded(async (token: LastUse, from: string): Promise<void> => {
      const now = clock()
      if (!useIsNews(token, from, now) || writing.has(useKey(token.id, from))) return
      pending.add(token.id, from, now)
      // Last used is best-effort: a failed write (the database away or busy) is reported, not thrown.
      flushTimer ??= setTimeout(() => {
        flush().catch((error: unknown) => onFlushError?.(error))
      }, FLUSH_AFTER_MS).unref()
    }),

    flush: unguarded(flush),
  }
}

export type TokenStore = ReturnType<typeof createTokenStore>
