import fp from 'fastify-plugin'
import type { Clock } from '../../lib/clock.ts'
import { hashPassword } from '../../lib/password.ts'
import { emailKey, type User } from '../../db/stores/users.ts'
import type { AuthLimits, TooManyAttempts } from './limits.ts'
import { createPasswordChecks, type PasswordChecks } from './password-checks.ts'
import { createRememberedPasswords } from './remembered-passwords.ts'

// Every email-and-password check of the process, from the API (Basic) and from the sign-in page,
// goes through here, so a guesser gets one budget, not one per door.

// How long a verified email and password are taken without argon2.
export const REMEMBER_MS = 5 * 60_000

// Two verifications at once use two cores for about 90 ms each and leave half of libuv's default
// pool free; 32 waiting is under two seconds of work. Beyond that a request gets 503 at once.
export const PASSWORD_CHECK_CONCURRENCY = 2
export const PASSWORD_CHECK_QUEUE = 32

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
  | TooManyAttempts
  | { kind: 'busy'; retryAfter: number }

export interface PasswordVerifierOptions<U extends Account> {
  findUser(email: string): Promise<U | undefined>
  emailKey(email: string): string
  checks: PasswordChecks
  clock: Clock
  /** The process's failure budgets, shared with the token checks (one budget per address). */
  limits: AuthLimits
}

const outcome = (verdict: PasswordVerdict<Account>) =>
  verdict.kind === 'verified' ? 'succeeded' : verdict.kind === 'invalid_password' ? 'failed' : 'neutral'

export function createPasswordVerifier<U extends Account>({ findUser, emailKey, checks, clock, limits }: PasswordVerifierOptions<U>) {
  const remembered = createRememberedPasswords({ clock, ttlMs: REMEMBER_MS })
  // An unknown email, or an account without a password, is checked against this hash, so every
  // failure takes the same time and none tells which accounts exist.
  let decoy: Promise<string> | undefined
  const decoyHash = () => (decoy ??= hashPassword('a password that matches no account'))
  const checking = new Map<string, Promise<PasswordVerdict<U>>>()

  return {
    /**
     * Whether the password is the account's, within the address's and the account's failure
     * budgets (a spent budget answers too_many_attempts before anything is compared). Argon2 runs
     * on libuv's pool through the bounded queue; a success is remembered for a few minutes under
     * a keyed hash, which spares the hash but never the budgets. The account's row is read on
     * every call, so a changed password or a disabled account is refused at once.
     */
    async verify(email: string, password: string, address: string): Promise<PasswordVerdict<U>> {
      const user = await findUser(email)
      const account = emailKey(email)
      const hash = user && !user.disabled ? user.passwordHash : null
      // The same email and password from the same address, against the same row, while they are
      // being checked (a script's parallel calls once the remembered success has expired) wait for
      // that check: one comparison, one reservation of the budgets, one verdict for them all.
      // Several reservations would refuse a right password once more of them were open than the
      // account's budget allows. A request that read a changed password or a disabled account has
      // another key, and its own check.
      const pair = remembered.id(account, password)
      const key = `${address}\n${hash}\n${pair}`
      const running = checking.get(key)
      if (running !== undefined) return running
      const verdict = check(user, hash, account, pair, password, address).finally(() => checking.delete(key))
      checking.set(key, verdict)
      return verdict
    },
  }

  /** The check itself; `pair` is the email and password's keyed hash, under which a success is remembered. */
  function check(user: U | undefined, hash: string | null, account: string, pair: string, password: string, address: string): Promise<PasswordVerdict<U>> {
    return limits.attempt<PasswordVerdict<U>>(
      { address, account },
      async () => {
        if (hash && remembered.has(pair, hash)) return { kind: 'verified', user: user! }
        const matches = await checks.check(hash ?? (await decoyHash()), password)
        if (matches === 'busy') return { kind: 'busy', retryAfter: 1 }
        if (!matches || !hash) return { kind: 'invalid_password' }
        remembered.remember(pair, hash)
        return { kind: 'verified', user: user! }
      },
      outcome,
    )
  }
}

export type PasswordVerifier<U extends Account> = ReturnType<typeof createPasswordVerifier<U>>

declare module 'fastify' {
  interface FastifyInstance {
    /** The bounded queue every password verification of the process goes through. */
    passwordChecks: PasswordChecks
    /** Email-and-password checks with their slow-down, shared by the API and the sign-in page. */
    passwords: PasswordVerifier<User>
  }
}

/** One verifier for the whole process, registered at the root so the API and the web pages share it. */
export default fp(
  async (fastify) => {
    const checks = createPasswordChecks({ concurrency: PASSWORD_CHECK_CONCURRENCY, queue: PASSWORD_CHECK_QUEUE })
    fastify.decorate('passwordChecks', checks)
    const { users, clock, authLimits: limits } = fastify
    fastify.decorate('passwords', createPasswordVerifier({ findUser: users.find, emailKey, checks, clock, limits }))
  },
  { name: 'password-verifier', fastify: '5.x', dependencies: ['user-store', 'config', 'auth-limits'] },
)
