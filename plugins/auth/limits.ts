import fp from 'fastify-plugin'
import type { Clock } from '../../lib/clock.ts'
import { createAttemptLimiter, type Reservation } from './attempt-limiter.ts'

// How failed authentication is slowed down. Every failed credential of any kind (a wrong, expired
// or revoked token, a wrong password, a bad multipass) counts against the client address; failed
// passwords also count against the account. Past the limit the address (or account) gets 429 with
// Retry-After until its window ends, whatever it sends, as the large API platforms do. Successful
// requests cost nothing here: they never count and never wait. Every check of the process, on the
// API and on the sign-in pages, goes through `attempt` below: the one place failures are counted.

export interface AuthLimitSettings {
  /** Failed authentications of any kind from one client address per window, then 429. */
  perAddress: number
  /** Failed email-and-password checks of one account per window, then 429. */
  perAccount: number
  windowSeconds: number
}

export const DEFAULT_LIMITS: AuthLimitSettings = { perAddress: 20, perAccount: 5, windowSeconds: 300 }

/** What a spent budget answers, whatever the credential: the refusal of that name. */
export interface TooManyAttempts {
  kind: 'too_many_attempts'
  retryAfter: number
}

/** How a check ended for the budgets: a failure keeps its reservation, anything else gives it back. */
export type AttemptOutcome = 'failed' | 'succeeded' | 'neutral'

export interface AttemptKeys {
  /** The client address (request.ip). */
  address: string
  /** The account a password is tried for (its email key), for password checks only. */
  account?: string
}

export function createAuthLimits(settings: AuthLimitSettings, clock: Clock) {
  const windowMs = settings.windowSeconds * 1000
  const addresses = createAttemptLimiter({ max: settings.perAddress, windowMs, clock })
  const accounts = createAttemptLimiter({ max: settings.perAccount, windowMs, clock })

  return {
    settings,
    addresses,
    accounts,

    /**
     * Runs one credential check within the budgets of its keys. A spent budget answers 429 before
     * the check runs, whatever the credential (so a locked account never tells a right password
     * from a wrong one). Otherwise one attempt is reserved from each budget before the check, so
     * concurrent attempts cannot overrun it; a failed check keeps the reservation as a failure,
     * any other outcome gives it back, and a success also clears the account's failures (not the
     * address's: one good password must not reset an address guessing at other accounts).
     */
    async attempt<R>(keys: AttemptKeys, check: () => R | Promise<R>, outcome: (result: R) => AttemptOutcome): Promise<R | TooManyAttempts> {
      const held: Reservation[] = [addresses.reserve(keys.address)]
      if (keys.account !== undefined) held.push(accounts.reserve(keys.account))
      const release = () => {
        for (const reservation of held) if (reservation.allowed) reservation.release()
      }
      // A refused reservation waits at least a second (attempt-limiter.ts rounds up).
      let retryAfter = 0
      for (const reservation of held) if (!reservation.allowed) retryAfter = Math.max(retryAfter, reservation.retryAfter)
      if (retryAfter > 0) {
        release()
        return { kind: 'too_many_attempts', retryAfter }
      }
      let result: R
      try {
        result = await check()
      } catch (error) {
        release()
        throw error
      }
      const ended = outcome(result)
      for (const reservation of held) if (reservation.allowed) ended === 'failed' ? reservation.fail() : reservation.release()
      if (ended === 'succeeded' && keys.account !== undefined) accounts.succeed([keys.account])
      return result
    },
  }
}

export type AuthLimits = ReturnType<typeof createAuthLimits>

/**
 * The client address's failure budget as RateLimit headers (draft-ietf-httpapi-ratelimit-headers):
 * the limit, what is left of it, and the seconds until the window ends, with the policy.
 */
export function rateLimitHeaders({ settings, addresses }: AuthLimits, address: string): Record<string, string> {
  const { limit, remaining, resetSeconds } = addresses.status(address)
  return {
    'ratelimit-limit': String(limit),
    'ratelimit-remaining': String(remaining),
    'ratelimit-reset': String(resetSeconds),
    'ratelimit-policy': `${limit};w=${settings.windowSeconds}`,
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The failed-authentication budgets of the process, per client address and per account. */
    authLimits: AuthLimits
  }
}

/** One set of budgets for the whole process: the API's credentials and the sign-in page share it. */
export default fp<{ settings: AuthLimitSettings }>(
  async (fastify, { settings }) => {
    fastify.decorate('authLimits', createAuthLimits(settings, fastify.clock))
  },
  { name: 'auth-limits', fastify: '5.x', dependencies: ['config'] },
)
