import { and, count, desc, eq, gt, inArray, isNull, sql } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { fingerprint, generatePersonalToken } from '../../../lib/token-format.ts'
import { eventRow } from '../../stores/security-log.ts'
import {
  addressesByToken,
  checkActiveTokens,
  checkTokenOwner,
  newAddressEvent,
  noticeColumn,
  noticeDue,
  noticeSelection,
  newTokenRow,
  noSuchToken,
  tokenAlreadyRevoked,
  trimAddresses,
  useIsNews,
  useKey,
  UseQueue,
  validateNewToken,
  type ListedToken,
  type NewToken,
  type PersonalToken,
  type QueuedUse,
  type TokenAddress,
  type TokenStore,
} from '../../stores/tokens.ts'
import type { PgDb } from '../client.ts'
import { memberships, personalTokenAddresses, personalTokens, securityEvents, sites, users } from '../schema.ts'
import { pgMembershipOn, pgStaffColumn, type PgExecutor } from './executor.ts'

// Personal tokens on PostgreSQL: the behaviour of db/stores/tokens.ts. Every look-up reads (no
// cache), so a token revoked by any process is refused by every process on its next request.

const FLUSH_AFTER_MS = 1_000

function activeTokens(q: PgExecutor, userId: number, now: number) {
  return q
    .select({ n: count() })
    .from(personalTokens)
    .where(and(eq(personalTokens.userId, userId), isNull(personalTokens.revokedAt), gt(personalTokens.expiresAt, new Date(now))))
    .then((rows) => rows[0].n)
}

/**
 * Makes a token and returns its value, which exists nowhere else afterwards. On `q`, the pool or a
 * caller's transaction (then inside a savepoint). The owner's users row is locked (FOR UPDATE)
 * before the active tokens are counted, so concurrent creations for one owner, in any process,
 * take turns and the limit of 20 holds under READ COMMITTED.
 */
export async function createToken(q: PgExecutor, clock: Clock, input: NewToken): Promise<{ value: string; token: PersonalToken }> {
  const checked = validateNewToken(input)
  const { siteId, userId } = checked
  const value = generatePersonalToken()
  return q.transaction(async (tx) => {
    const [owner] = await tx
      .select({ role: memberships.role, disabled: users.disabled })
      .from(users)
      .leftJoin(memberships, pgMembershipOn(siteId, users.id))
      .where(eq(users.id, userId))
      .for('update', { of: users })
    checkTokenOwner(owner)
    const now = clock()
    checkActiveTokens(await activeTokens(tx, userId, now))
    const [token] = await tx.insert(personalTokens).values(newTokenRow(checked, value, now)).returning()
    return { value, token }
  })
}

export function createTokenStore(db: PgDb, clock: Clock, onFlushError?: (error: unknown) => void): TokenStore {
  const ownerSelection = {
    email: users.email,
    disabled: users.disabled,
    staff: pgStaffColumn(),
  }

  // The one read of the authentication path: the token, its owner and the owner's role on the
  // token's site, through the unique fingerprint index. Prepared once per connection.
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
    .leftJoin(memberships, pgMembershipOn(personalTokens.siteId, personalTokens.userId))
    .where(eq(personalTokens.fingerprint, sql.placeholder('fingerprint')))
    .prepare('tokens_by_fingerprint')

  // Last-used updates wait here and are written in one transaction shortly after, off the request.
  const pending = new UseQueue()
  // The uses (token and address) being written: a request that read the old time meanwhile queues nothing.
  const writing = new Set<string>()
  let flushTimer: NodeJS.Timeout | undefined
  let lastFlush: Promise<void> = Promise.resolve()

  /**
   * One transaction: each token's last use (its latest in the batch), each address among the
   * token's last five, and one security event per address that was not among them. The insert
   * tells a new address from a known one (xmax is 0 on a row the statement inserted), so of two
   * processes noting the same new address, one logs it.
   */
  async function write(batch: QueuedUse[]): Promise<void> {
    // The batch is oldest first, so the last use of a token seen is its latest.
    const latest = new Map(batch.map((use) => [use.id, use]))
    const rows = sql.join(
      [...latest.values()].map((use) => sql`(${use.id}::integer, ${new Date(use.at)}::timestamptz, ${use.from}::text)`),
      sql`, `,
    )
    await db.transaction(async (tx) => {
      const used = await tx.execute<{ id: number; user_id: number; site_id: number; name: string }>(sql`
        UPDATE ${personalTokens} SET last_used_at = used.at, last_used_from = used.source
        FROM (VALUES ${rows}) AS used (id, at, source)
        WHERE ${personalTokens.id} = used.id
        RETURNING ${personalTokens.id}, ${personalTokens.userId}, ${personalTokens.siteId}, ${personalTokens.name}`)
      const tokens = new Map(used.rows.map((token) => [token.id, token]))
      for (const { id, from, at } of batch) {
        const token = tokens.get(id)
        if (!token) continue // gone since the request: nothing to note
        const [noted] = await tx
          .insert(personalTokenAddresses)
          .values({ tokenId: id, address: from, lastUsedAt: new Date(at) })
          .onConflictDoUpdate({ target: [personalTokenAddresses.tokenId, personalTokenAddresses.address], set: { lastUsedAt: new Date(at) } })
          .returning({ inserted: sql<boolean>`xmax = 0` })
        await tx.execute(trimAddresses(personalTokenAddresses, id))
        const event = newAddressEvent({ id, userId: token.user_id, siteId: token.site_id, name: token.name }, from)
        if (noted.inserted) await tx.insert(securityEvents).values(eventRow(event, at))
      }
    })
  }

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

  function listQuery() {
    return db
      .select({ token: personalTokens, ...ownerSelection })
      .from(personalTokens)
      .innerJoin(users, eq(users.id, personalTokens.userId))
      .leftJoin(memberships, pgMembershipOn(personalTokens.siteId, personalTokens.userId))
  }

  return {
    create: (input) => createToken(db, clock, input),

    activeCount: (userId) => activeTokens(db, userId, clock()),

    async lookup(value) {
      const [token] = await byFingerprint.execute({ fingerprint: fingerprint(value) })
      return token
    },

    async listForSite(siteId, userId): Promise<ListedToken[]> {
      const where =
        userId === undefined ? eq(personalTokens.siteId, siteId) : and(eq(personalTokens.siteId, siteId), eq(personalTokens.userId, userId))
      const rows = await listQuery().where(where).orderBy(desc(personalTokens.createdAt), desc(personalTokens.id))
      return rows.map(({ token, ...owner }) => ({ ...token, ...owner }))
    },

    async revoke(siteId, id, userId) {
      const which = and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId))
      const where = userId === undefined ? which : and(which, eq(personalTokens.userId, userId))
      const revokedAt = new Date(clock())
      // One statement, so of two concurrent revocations exactly one succeeds.
      const [revoked] = await db
        .update(personalTokens)
        .set({ revokedAt })
        .where(and(where, isNull(personalTokens.revokedAt)))
        .returning()
      if (revoked) return revoked
      const [token] = await db.select({ id: personalTokens.id }).from(personalTokens).where(where)
      if (!token) throw noSuchToken(id)
      throw tokenAlreadyRevoked(id)
    },

    async find(siteId, id) {
      const [token] = await db
        .select()
        .from(personalTokens)
        .where(and(eq(personalTokens.id, id), eq(personalTokens.siteId, siteId)))
      return token && { ...token, addresses: (await addresses([id])).get(id) ?? [] }
    },

    addresses,

    async claimExpiryNotices(kind) {
      const now = clock()
      // One statement: of two processes claiming at once, the second finds the column set and skips the row.
      const claimed = await db
        .update(personalTokens)
        .set({ [noticeColumn(kind)]: new Date(now) })
        .where(noticeDue(personalTokens, kind, now))
        .returning({ id: personalTokens.id })
      if (claimed.length === 0) return []
      return db
        .select(noticeSelection(personalTokens, users, sites, pgStaffColumn()))
        .from(personalTokens)
        .innerJoin(users, eq(users.id, personalTokens.userId))
        .innerJoin(sites, eq(sites.id, personalTokens.siteId))
        .leftJoin(memberships, pgMembershipOn(personalTokens.siteId, personalTokens.userId))
        .where(inArray(personalTokens.id, claimed.map((token) => token.id)))
        .orderBy(personalTokens.id)
    },

    async releaseExpiryNotice(kind, tokenId) {
      await db.update(personalTokens).set({ [noticeColumn(kind)]: null }).where(eq(personalTokens.id, tokenId))
    },

    async recordUse(token, from) {
      const now = clock()
      if (!useIsNews(token, from, now)) return
      if (writing.has(useKey(token.id, from))) return
      pending.add(token.id, from, now)
      // Last used is best-effort: a failed write (the database away) is reported, not thrown.
      flushTimer ??= setTimeout(() => {
        flush().catch((error: unknown) => onFlushError?.(error))
      }, FLUSH_AFTER_MS).unref()
    },

    flush,
  }
}
