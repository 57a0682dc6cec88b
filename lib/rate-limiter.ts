import type { Clock } from './clock.ts'

// Fair use (docs/decisions.md, "Fair use"): each key (a credential, or a client address) may make
// `limit` requests of a policy per window of time. Windows are fixed and aligned to the clock
// (an hour starting on the hour, by default), so every process agrees on when one starts and ends
// without asking anyone.
//
// The count is shared by every process on the database, and survives a restart, through one row
// per key and window (db/stores/rate-limits.ts). A request does not write it: a process takes a
// lease of several requests at once with one atomic upsert and spends it from memory, so the hot
// path costs a map look-up. The upsert answers the window's total, so the process knows exactly
// what was taken before its own lease and is granted only what was left: the processes together
// never pass the limit. A lease is a 64th of the limit while plenty is left, and shrinks to a
// quarter of what is left near the end, down to one, so one process cannot sit on what another
// could use for long. What a process still holds when it closes is given back.

export interface RatePolicy {
  /** Named as in RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers): reads, writes, anonymous. */
  name: string
  /** Requests per window. */
  limit: number
}

export interface RateWindowStore {
  /** Adds `count` to the key's window; answers the window's total, `count` included. */
  take(key: string, windowStart: Date, count: number): Promise<number>
  /** Forgets the windows that started before `before`. */
  prune(before: Date): Promise<void>
}

/** A key's standing against a policy, as the headers tell it. */
export interface Standing {
  readonly policy: RatePolicy
  readonly windowSeconds: number
  /** Requests left in the window, as far as this process knows (exactly, for a process alone). */
  readonly remaining: number
  /** Seconds until the window ends: whole, at least 1. */
  readonly resetSeconds: number
  /** When the window ends, in milliseconds since the epoch. */
  readonly resetAt: number
}

/** One request's standing against its policy. */
export interface RateVerdict extends Standing {
  readonly allowed: boolean
  /** The request did not use its share after all (a 304): gives it back; answers the verdict after that. */
  giveBack(): RateVerdict
}

interface KeyState {
  key: string
  /** The start of the window this state counts, in milliseconds. */
  windowStart: number
  /** Requests leased and not spent yet. */
  inHand: number
  /** The window's total in the database, as the last lease of this process read it. */
  taken: number
  leasing?: Promise<void>
}

export interface RateLimiterOptions {
  store: RateWindowStore
  clock: Clock
  windowSeconds: number
  /** Hears a failure to forget old windows (the next window tries again). */
  onPruneError: (error: unknown) => void
  /** Hears the first of a run of leases the store could not take (meanwhile the process counts alone). */
  onLeaseError: (error: unknown) => void
  /** How many keys are kept in memory at most; the oldest are forgotten first. */
  maxKeys?: number
}

/** How much one lease asks for: a 64th of the limit, or a quarter of what is left when that is less; at least one. */
export function leaseSize(limit: number, taken: number): number {
  return Math.max(1, Math.min(Math.ceil(limit / 64), Math.floor((limit - taken) / 4)))
}

/** What a lease of `count` that brought the window's total to `total` was granted: whatever was left of the limit before it, up to `count`. */
export function granted(limit: number, total: number, count: number): number {
  return Math.max(0, Math.min(count, limit - (total - count)))
}

export function createRateLimiter({ store, clock, windowSeconds, onPruneError, onLeaseError, maxKeys = 100_000 }: RateLimiterOptions) {
  const windowMs = windowSeconds * 1000
  // Map keeps insertion order: the first keys are the least recently used.
  const states = new Map<string, KeyState>()
  let prunedBefore = 0
  let failing = false

  function stateOf(key: string, windowStart: number): KeyState {
    let state = states.get(key)
    if (state?.windowStart === windowStart) return state
    // A new window: the old one's lease is worth nothing now.
    states.delete(key)
    states.set(key, (state = { key, windowStart, inHand: 0, taken: 0 }))
    if (states.size > maxKeys) states.delete(states.keys().next().value!)
    if (windowStart > prunedBefore) {
      prunedBefore = windowStart
      store.prune(new Date(windowStart)).catch(onPruneError)
    }
    return state
  }

  function verdict(state: KeyState, policy: RatePolicy, allowed: boolean, now: number): RateVerdict {
    const resetAt = state.windowStart + windowMs
    const remaining = Math.max(0, policy.limit - Math.min(state.taken, policy.limit) + state.inHand)
    return {
      policy,
      windowSeconds,
      allowed,
      remaining,
      resetAt,
      resetSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
      giveBack() {
        // Only into the same window: a request that straddled two gives nothing to the new one.
        const at = clock()
        if (!allowed || states.get(state.key) !== state || at >= resetAt) return this
        state.inHand++
        return verdict(state, policy, true, at)
      },
    }
  }

  async function lease(key: string, state: KeyState, policy: RatePolicy): Promise<void> {
    state.leasing ??= (async () => {
      const count = leaseSize(policy.limit, state.taken)
      try {
        const total = await store.take(key, new Date(state.windowStart), count)
        state.taken = Math.max(state.taken, total)
        state.inHand += granted(policy.limit, total, count)
        failing = false
      } catch (error) {
        // The database cannot be written now (another process holds SQLite's write lock past the
        // busy wait, or PostgreSQL is away): fair use does not refuse a request for that. The lease
        // is granted from this process's own count, so the process still keeps the limit alone,
        // as a single process would, until the database answers again.
        if (!failing) onLeaseError(error)
        failing = true
        state.taken += count
        state.inHand += count
      } finally {
        state.leasing = undefined
      }
    })()
    await state.leasing
  }

  /** Spends one request from what is in hand, or says the window is spent; undefined when a lease must be taken first. */
  function spend(state: KeyState, policy: RatePolicy): RateVerdict | undefined {
    const now = clock()
    if (state.inHand > 0) {
      state.inHand--
      return verdict(state, policy, true, now)
    }
    if (state.taken >= policy.limit) return verdict(state, policy, false, now)
    return undefined
  }

  return {
    /**
     * One request of `key` under `policy`: answered from memory while the process holds a lease
     * (synchronously), else after taking one from the database.
     */
    take(key: string, policy: RatePolicy): RateVerdict | Promise<RateVerdict> {
      const now = clock()
      const state = stateOf(key, now - (now % windowMs))
      return spend(state, policy) ?? leaseAndSpend(key, state, policy)
    },

    /** Gives back to the database what this process still holds of each window (when it closes). */
    async release(): Promise<void> {
      const held = [...states].filter(([, state]) => state.inHand > 0)
      states.clear()
      await Promise.all(held.map(([key, state]) => store.take(key, new Date(state.windowStart), -state.inHand)))
    },
  }

  async function leaseAndSpend(key: string, state: KeyState, policy: RatePolicy): Promise<RateVerdict> {
    // Requests waiting on one lease may need more than it brought: each takes another until it
    // gets its share or the window is spent.
    for (;;) {
      await lease(key, state, policy)
      const spent = spend(state, policy)
      if (spent) return spent
    }
  }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>

/** The parts of a policy's headers that do not change from one request to the next, made once per policy. */
const fixedParts = new WeakMap<RatePolicy, { windowSeconds: number; policyField: string; item: string; limit: string }>()

function partsOf({ policy, windowSeconds }: Standing) {
  let parts = fixedParts.get(policy)
  if (parts?.windowSeconds !== windowSeconds) {
    const item = `"${policy.name}"`
    fixedParts.set(policy, (parts = { windowSeconds, policyField: `${item};q=${policy.limit};w=${windowSeconds}`, item, limit: String(policy.limit) }))
  }
  return parts
}

/**
 * The headers of a request's standing: RateLimit-Policy and RateLimit of the IETF draft
 * (draft-ietf-httpapi-ratelimit-headers-11: `"reads";q=5000;w=3600` and `"reads";r=4999;t=1234`),
 * one item per policy, and GitHub's x-ratelimit-* names for the first (the one the request counted
 * against), for the clients that already read those. They go with every answer of the API, so
 * what does not change is made once per policy.
 */
export function rateLimitHeaders(standings: readonly Standing[]): Record<string, string> {
  const [first] = standings
  const parts = partsOf(first)
  const item = (s: Standing) => `${partsOf(s).item};r=${s.remaining};t=${s.resetSeconds}`
  return {
    'ratelimit-policy': standings.length === 1 ? parts.policyField : standings.map((s) => partsOf(s).policyField).join(', '),
    ratelimit: standings.length === 1 ? item(first) : standings.map(item).join(', '),
    'x-ratelimit-limit': parts.limit,
    'x-ratelimit-remaining': String(first.remaining),
    'x-ratelimit-used': String(first.policy.limit - first.remaining),
    'x-ratelimit-reset': String(Math.ceil(first.resetAt / 1000)),
    'x-ratelimit-resource': first.policy.name,
  }
}
