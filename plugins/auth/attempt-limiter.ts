import type { Clock } from '../../lib/clock.ts'

// Slows down guessing: after `max` failures for one key (an account, a client address) within
// `windowMs`, that key is refused until its window ends. Kept in the memory of each process (a
// restart forgetting a few minutes of failures costs an attacker nothing useful); the processes on
// one database tell each other their failures (limits.ts), and each counts them in its own windows.

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

/**
 * One attempt taken from a key's budget before a slow check: counted as a failure, given back, or
 * given back as a success that clears the failures counted before it was taken.
 */
export type Reservation =
  | { allowed: true; release(): void; fail(): void; succeed(): boolean }
  | { allowed: false; retryAfter: number }

export function createAttemptLimiter({ max, windowMs, clock, maxKeys = 100_000 }: AttemptLimiterOptions) {
  // Map keeps insertion order, so the first entries are the oldest windows.
  const windows = new Map<string, { failures: number; resetAt: number }>()
  // Attempts reserved and not yet settled, per key: as many as run at once, so bounded by them.
  const inFlight = new Map<string, number>()

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
     * at once cannot all pass a check-then-count: failures and attempts in flight together never
     * pass the budget. A spent budget waits for its window; one full of attempts still in flight
     * only until they settle, so it says to come back in a second.
     */
    reserve(key: string): Reservation {
      const now = clock()
      const failures = current(key, now)
      const pending = inFlight.get(key) ?? 0
      if (failures && failures.failures >= max) return { allowed: false, retryAfter: secondsLeft(failures, now) }
      if ((failures?.failures ?? 0) + pending >= max) return { allowed: false, retryAfter: 1 }
      inFlight.set(key, pending + 1)
      // What a success may clear: the failures of this window counted before this attempt began.
      // Those of attempts that were in flight beside it end after it began, so they stay counted:
      // a right password does not wipe out guesses compared after it was checked.
      const before = failures ? { window: failures, count: failures.failures } : undefined
      let settled = false
      const settle = () => {
        if (settled) return false
        settled = true
        const left = inFlight.get(key)! - 1
        if (left === 0) inFlight.delete(key)
        else inFlight.set(key, left)
        return true
      }
      return {
        allowed: true,
        release: () => void settle(),
        fail: () => {
          if (settle()) count(key, clock())
        },
        succeed: () => {
          if (!settle() || !before || current(key, clock()) !== before.window) return false
          before.window.failures -= before.count
          if (before.window.failures <= 0) windows.delete(key)
          return true
        },
      }
    },

    /** The key's budget: the limit, the failures left, and when its window ends (in milliseconds, and whole seconds from now). */
    status(key: string): { limit: number; remaining: number; resetAt: number; resetSeconds: number } {
      const now = clock()
      const window = current(key, now)
      const resetAt = window ? window.resetAt : now + windowMs
      const used = (window?.failures ?? 0) + (inFlight.get(key) ?? 0)
      return { limit: max, remaining: Math.max(0, max - used), resetAt, resetSeconds: secondsLeft({ resetAt }, now) }
    },

    /** A success told by another process clears the keys' failures; says whether any key had some. */
    succeed(keys: string[]): boolean {
      let cleared = false
      for (const key of keys) cleared = windows.delete(key) || cleared
      return cleared
    },
  }
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>
