import type { Clock } from '../../lib/clock.ts'

// Slows down guessing: after `max` failures for one key (an account, a client address) within
// `windowMs`, that key is refused until its window ends. Kept in memory: one process serves a
// site, and a restart forgetting a few minutes of failures costs an attacker nothing useful.

export interface AttemptLimiterOptions {
  max: number
  windowMs: number
  clock: Clock
  /** How many keys are remembered at most; the oldest are forgotten first. */
  maxKeys?: number
}

export interface AttemptVerdict {
  allowed: boolean
  /** Whole seconds until the key may try again (0 when allowed). */
  retryAfter: number
}

/** One attempt taken from a key's budget before a slow check: kept as a failure, or given back. */
export type Reservation = { allowed: true; release(): void } | { allowed: false; retryAfter: number }

export function createAttemptLimiter({ max, windowMs, clock, maxKeys = 100_000 }: AttemptLimiterOptions) {
  // Map keeps insertion order, so the first entries are the oldest windows.
  const windows = new Map<string, { failures: number; resetAt: number }>()

  const secondsLeft = (window: { resetAt: number }, now: number) => Math.ceil((window.resetAt - now) / 1000)

  /** Counts one failure against the key, opening its window if it has none. */
  function count(key: string, now: number) {
    let window = current(key, now)
    if (window) window.failures++
    else windows.set(key, (window = { failures: 1, resetAt: now + windowMs }))
    while (windows.size > maxKeys) windows.delete(windows.keys().next().value!)
    return window
  }

  function current(key: string, now: number) {
    const window = windows.get(key)
    if (window && window.resetAt <= now) {
      windows.delete(key)
      return undefined
    }
    return window
  }

  return {
    /** Whether every one of the keys may try now; when not, the longest wait among them. */
    check(keys: string[]): AttemptVerdict {
      const now = clock()
      let retryAfter = 0
      for (const key of keys) {
        const window = current(key, now)
        if (window && window.failures >= max) retryAfter = Math.max(retryAfter, secondsLeft(window, now))
      }
      return { allowed: retryAfter === 0, retryAfter }
    },

    fail(keys: string[]): void {
      const now = clock()
      for (const key of keys) count(key, now)
    },

    /**
     * Takes one attempt from the key's budget now, before the check it guards, so that N attempts
     * at once cannot all pass a check-then-count: at most the budget is handed out. The attempt
     * counts as a failure until it is released (the check succeeded, or said nothing of the
     * credential), and stays one if it is not.
     */
    reserve(key: string): Reservation {
      const now = clock()
      const existing = current(key, now)
      if (existing && existing.failures >= max) return { allowed: false, retryAfter: secondsLeft(existing, now) }
      const window = count(key, now)
      let released = false
      return {
        allowed: true,
        release() {
          if (released) return
          released = true
          // A window that ended (or was cleared by a success) in the meantime has nothing to give back.
          if (windows.get(key) === window) window.failures--
        },
      }
    },

    /** The key's budget: the limit, the failures left, and whole seconds until its window ends. */
    status(key: string): { limit: number; remaining: number; resetSeconds: number } {
      const now = clock()
      const window = current(key, now)
      const resetAt = window ? window.resetAt : now + windowMs
      return { limit: max, remaining: Math.max(0, max - (window?.failures ?? 0)), resetSeconds: secondsLeft({ resetAt }, now) }
    },

    /** A success clears the keys' failures. */
    succeed(keys: string[]): void {
      for (const key of keys) windows.delete(key)
    },
  }
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>
