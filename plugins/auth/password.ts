import type { FastifyInstance } from 'fastify'
import { createAttemptLimiter } from '../../lib/attempt-limiter.ts'
import { hashPassword } from '../../lib/password.ts'
import { createRememberedPasswords } from '../../lib/remembered-passwords.ts'
import { emailKey } from '../../store/users.ts'
import type { CredentialCheck } from './types.ts'

// Failed checks slow an account, and a client address, down (429 with Retry-After until the
// window ends). The same numbers as the web sign-in form.
export const ACCOUNT_LIMIT = { max: 5, windowMs: 5 * 60_000 }
export const ADDRESS_LIMIT = { max: 20, windowMs: 5 * 60_000 }
// How long a verified email and password are taken without argon2.
export const REMEMBER_MS = 5 * 60_000

/**
 * `Authorization: Basic` with email and password: the account, read and write, on a site where it
 * is staff. Argon2 runs on libuv's pool through the process's bounded queue (503 when it is full);
 * a success is remembered for a few minutes, and the account's row is read on every request, so a
 * changed password or a disabled account is refused at once.
 */
export function passwordCheck({ users, clock, passwordChecks }: FastifyInstance): CredentialCheck<{ email: string; password: string }> {
  const accounts = createAttemptLimiter({ ...ACCOUNT_LIMIT, clock })
  const addresses = createAttemptLimiter({ ...ADDRESS_LIMIT, clock })
  const remembered = createRememberedPasswords({ clock, ttlMs: REMEMBER_MS })
  // An unknown email, or an account without a password, is checked against this hash, so every
  // failure takes the same time and none tells which accounts exist.
  let decoy: Promise<string> | undefined
  const decoyHash = () => (decoy ??= hashPassword('a password that matches no account'))

  return async ({ email, password }, site, request) => {
    const user = users.find(email)
    const account = [emailKey(email)]
    const address = [request.ip]
    const hash = user && !user.disabled ? user.passwordHash : null
    if (!hash || !remembered.has(account[0], password, hash)) {
      const retryAfter = Math.max(accounts.check(account).retryAfter, addresses.check(address).retryAfter)
      if (retryAfter > 0) return { kind: 'too_many_attempts', retryAfter }
      const matches = await passwordChecks.check(hash ?? (await decoyHash()), password)
      if (matches === 'busy') return { kind: 'busy', retryAfter: 1 }
      if (!matches || !hash) {
        accounts.fail(account)
        addresses.fail(address)
        return { kind: 'invalid_password' }
      }
      // Only the account's failures are cleared: one good password must not reset the address's
      // count for an address guessing at other accounts.
      accounts.succeed(account)
      remembered.remember(account[0], password, hash)
    }
    if (!site) return { kind: 'invalid_password' }
    if (users.role(site.id, user!.id) !== 'supporter') return { kind: 'staff_only' }
    return { method: 'password', site, user: { id: user!.id, email: user!.email, name: user!.name }, access: 'write', viaQuery: false }
  }
}
