import { and, eq, lt, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'

// Idempotency-Key (plugins/http/idempotency.ts; docs/decisions.md, "Safe retries, cursors and the
// change feed"): one row per key a credential sent to a site, claimed by the first request with it
// before its handler runs, its answer written there once it succeeded. Every process on the
// database shares the rows, and each step is one statement: the insert that claims (the primary
// key lets one claim win), the update that takes over a key older than KEY_LIFETIME_MS, the read.

/** How long a key keeps its answer: a retry within a day gets the first answer. */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000

/** Whose key it is: the site, and the credential that sent it (its kind and id, never its value). */
export interface KeyOwner {
  siteId: number
  credential: string
}

/** The first answer, as kept: what a repeat is sent. */
export interface KeptAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

export type Claim =
  | { claimed: true; at: Date }
  | { claimed: false; mismatch: true }
  | { claimed: false; mismatch: false; answer: KeptAnswer | undefined }

export function createIdempotencyStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { idempotencyKeys: keys } = port.tables
  const p = sql.placeholder
  const ofKey = and(eq(keys.siteId, p('siteId')), eq(keys.credential, p('credential')), eq(keys.key, p('key')))
  const insert = onFirstUse(() => port.db
    .insert(keys)
    .values({ siteId: p('siteId'), credential: p('credential'), key: p('key'), fingerprint: p('fingerprint'), createdAt: p('at') })
    .onConflictDoNothing()
    .returning({ key: keys.key })
    .prepare('idempotency_claim'))
  const takeOver = onFirstUse(() => port.db
    .update(keys)
    .set({ fingerprint: sql`${p('fingerprint')}`, createdAt: sql`${p('at')}`, status: null, answer: null })
    .where(and(ofKey, lt(keys.createdAt, sql`${p('before')}`)))
    .returning({ key: keys.key })
    .prepare('idempotency_take_over'))
  const read = onFirstUse(() => port.db.select({ fingerprint: keys.fingerprint, status: keys.status, answer: keys.answer }).from(keys).where(ofKey).prepare('idempotency_read'))

  /** The key's row as the claim at `claimedAt` made it (not a claim made since, once it expired). */
  const heldSince = (owner: KeyOwner, key: string, claimedAt: Date) =>
    and(eq(keys.siteId, owner.siteId), eq(keys.credential, owner.credential), eq(keys.key, key), eq(keys.createdAt, claimedAt))
  const sealed = (answer: KeptAnswer) => box.seal(JSON.stringify(answer))
  // An answer the server key can no longer open (a new SERVICE_SECRET) is as good as none: the key
  // answers as though its first request were still in flight, until it expires.
  const opened = (text: string) => {
    const plain = box.open(text)
    return plain === null ? undefined : (JSON.parse(plain) as KeptAnswer)
  }

  /**
   * Claims the key for a request whose method, address and body digest to `fingerprint`; when
   * it is taken: whether it was for another request (mismatch), else its answer (none while the
   * first request is in flight).
   */
  async function claim(owner: KeyOwner, key: string, fingerprint: string): Promise<Claim> {
    const now = new Date(clock())
    const values = { ...owner, key, fingerprint }
    if ((await insert.execute({ ...values, at: now })).length > 0) return { claimed: true, at: now }
    // A key older than a day is free again: the first request to see that takes it over.
    const before = new Date(now.getTime() - KEY_LIFETIME_MS)
    if ((await takeOver.execute({ ...values, at: port.moment(now), before: port.moment(before) })).length > 0) return { claimed: true, at: now }
    return look(owner, key, fingerprint)
  }

  /** What the key holds now for a request with `fingerprint` (claim's answer when it is taken). */
  async function look(owner: KeyOwner, key: string, fingerprint: string): Promise<Claim> {
    const [row] = await read.execute({ ...owner, key })
    // Gone since (a refused first request let it go): claimed again.
    if (!row) return claim(owner, key, fingerprint)
    if (row.fingerprint !== fingerprint) return { claimed: false, mismatch: true }
    return { claimed: false, mismatch: false, answer: row.status === null || row.answer === null ? undefined : opened(row.answer) }
  }

  return {
    claim,
    look,

    /** The claimed request succeeded: its answer, sealed with the server key (it may carry a secret), is kept for the repeats. */
    async answered(owner: KeyOwner, key: string, claimedAt: Date, answer: KeptAnswer): Promise<void> {
      await port.db
        .update(keys)
        .set({ status: answer.status, answer: sealed(answer) })
        .where(heldSince(owner, key, claimedAt))
    },

    /** The claimed request was refused, which wrote nothing: the key is free for a repeat to try again. */
    async release(owner: KeyOwner, key: string, claimedAt: Date): Promise<void> {
      await port.db
        .delete(keys)
        .where(heldSince(owner, key, claimedAt))
    },

    /** Removes the keys older than a day; how many. */
    async prune(): Promise<number> {
      const removed = await port.db
        .delete(keys)
        .where(lt(keys.createdAt, new Date(clock() - KEY_LIFETIME_MS)))
        .returning({ key: keys.key })
      return removed.length
    },
  }
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>
