import { createHmac, randomBytes } from 'node:crypto'
import type { Clock } from '../../lib/clock.ts'

// Scripts that use email and password send them on every call; argon2 on each would cost them
// 90 ms and the server a thread. A success is remembered for a few minutes, under an HMAC of the
// email and password with a key of this process (so the memory holds nothing a password could be
// read back from), together with the password hash it matched. The caller passes the account's
// current hash from the database on every request: a changed password no longer matches, and a
// disabled account is refused by the caller before this is asked.

export interface RememberedPasswordsOptions {
  clock: Clock
  ttlMs: number
  /** How many successes are kept at most; the oldest are forgotten first. */
  max?: number
}

export function createRememberedPasswords({ clock, ttlMs, max = 10_000 }: RememberedPasswordsOptions) {
  const key = randomBytes(32)
  // Map keeps insertion order, so the first entries are the oldest.
  const entries = new Map<string, { passwordHash: string; until: number }>()
  const id = (email: string, password: string) => createHmac('sha256', key).update(JSON.stringify([email, password])).digest('base64url')

  return {
    /** The keyed hash this email and password are known by: the same pair, the same text, and nothing to read a password back from. */
    id,

    /** Whether the email and password known by `entryId` (`id`) matched this very hash a short while ago. */
    has(entryId: string, passwordHash: string): boolean {
      const entry = entries.get(entryId)
      if (!entry) return false
      if (entry.until > clock() && entry.passwordHash === passwordHash) return true
      entries.delete(entryId)
      return false
    },

    remember(entryId: string, passwordHash: string): void {
      entries.delete(entryId)
      entries.set(entryId, { passwordHash, until: clock() + ttlMs })
      while (entries.size > max) entries.delete(entries.keys().next().value!)
    },

    get size() {
      return entries.size
    },
  }
}
