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

export function createAttemptLimiter({ max, windowMs, clock, maxKeys = 100_000 }: AttemptLimiterOptions) {
  // Map keeps insertion order, so the first entries are the oldest windows.
  const windows = new Map<string, { failures: number; resetAt: number }>()

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
        if (window && window.failures >= max) retryAfter = Math.max(retryAfter, Math.ceil((window.resetAt - now) / 1000))
      }
      return { allowed: retryAfter === 0, retryAfter }
    },

    fail(keys: string[]): void {
      const now = clock()
      for (const key of keys) {
        const window = current(key, now)
        if (window) window.failures++
        else windows.set(key, { failures: 1, resetAt: now + windowMs })
      }
      while (windows.size > maxKeys) windows.delete(windows.keys().next().value!)
    },

    /** The key's budget: the limit, the failures left, and whole seconds until its window ends. */
    status(key: string): { limit: number; remaining: number; resetSeconds: number } {
      const now = clock()
      const window = current(key, now)
      const resetAt = window ? window.resetAt : now + windowMs
      return { limit: max, remaining: Math.max(0, max - (window?.failures ?? 0)), resetSeconds: Math.ceil((resetAt - now) / 1000) }
    },

    /** A success clears the keys' failures. */
    succeed(keys: string[]): void {
      for (const key of keys) windows.delete(key)
    },
  }
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>
