import type { AuthLimits } from './limits.ts'
import type { Clock } from '../../lib/clock.ts'
import { hashPassword } from '../../lib/password.ts'
import type { PasswordChecks } from './password-checks.ts'
import { createRememberedPasswords } from './remembered-passwords.ts'

// Every email-and-password check of the process, from the API (Basic) and from the sign-in page,
// goes through here, so a guesser gets one budget, not one per door.

// How long a verified email and password are taken without argon2.
export const REMEMBER_MS = 5 * 60_000

interface Account {
  id: number
  email: string
  name: string
  passwordHash: string | null
  disabled: boolean
}

export type PasswordVerdict<U extends Account> =
  | { kind: 'verified'; user: U }
  | { kind: 'invalid_password' }
  | { kind: 'too_many_attempts'; retryAfter: number }
  | { kind: 'busy'; retryAfter: number }

export interface PasswordVerifierOptions<U extends Account> {
  findUser(email: string): U | undefined
  emailKey(email: string): string
  checks: PasswordChecks
  clock: Clock
  /** The process's failure budgets, shared with the token checks (one budget per address). */
  limits: AuthLimits
}

export function createPasswordVerifier<U extends Account>({ findUser, emailKey, checks, clock, limits }: PasswordVerifierOptions<U>) {
  const { accounts, addresses } = limits
  const remembered = createRememberedPasswords({ clock, ttlMs: REMEMBER_MS })
  // An unknown email, or an account without a password, is checked against this hash, so every
  // failure takes the same time and none tells which accounts exist.
  let decoy: Promise<string> | undefined
  const decoyHash = () => (decoy ??= hashPassword('a password that matches no account'))

  return {
    /**
     * Whether the password is the account's. Argon2 runs on libuv's pool through the bounded
     * queue; a success is remembered for a few minutes under a keyed hash. The account's row is
     * read on every call, so a changed password or a disabled account is refused at once.
     */
    async verify(email: string, password: string, address: string): Promise<PasswordVerdict<U>> {
      const user = findUser(email)
      const account = [emailKey(email)]
      const from = [address]
      const hash = user && !user.disabled ? user.passwordHash : null
      if (hash && remembered.has(account[0], password, hash)) return { kind: 'verified', user: user! }
      const retryAfter = Math.max(accounts.check(account).retryAfter, addresses.check(from).retryAfter)
      if (retryAfter > 0) return { kind: 'too_many_attempts', retryAfter }
      const matches = await checks.check(hash ?? (await decoyHash()), password)
      if (matches === 'busy') return { kind: 'busy', retryAfter: 1 }
      if (!matches || !hash) {
        accounts.fail(account)
        addresses.fail(from)
        return { kind: 'invalid_password' }
      }
      // Only the account's failures are cleared: one good password must not reset the count of an
      // address guessing at other accounts.
      accounts.succeed(account)
      remembered.remember(account[0], password, hash)
      return { kind: 'verified', user: user! }
    },
  }
}

export type PasswordVerifier<U extends Account> = ReturnType<typeof createPasswordVerifier<U>>
