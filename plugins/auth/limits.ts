import { createAttemptLimiter, type AttemptLimiter } from './attempt-limiter.ts'
import type { Clock } from '../../lib/clock.ts'

// How failed authentication is slowed down. Every failed credential of any kind (a wrong, expired
// or revoked token, a wrong password, a bad multipass) counts against the client address; failed
// passwords also count against the account. Past the limit the address (or account) gets 429 with
// Retry-After until its window ends, whatever it sends, as the large API platforms do. Successful
// requests cost nothing here: they never count and never wait.

export interface AuthLimitSettings {
  /** Failed authentications of any kind from one client address per window, then 429. */
  perAddress: number
  /** Failed email-and-password checks of one account per window, then 429. */
  perAccount: number
  windowSeconds: number
}

export const DEFAULT_LIMITS: AuthLimitSettings = { perAddress: 20, perAccount: 5, windowSeconds: 300 }

export interface AuthLimits {
  settings: AuthLimitSettings
  addresses: AttemptLimiter
  accounts: AttemptLimiter
}

export function createAuthLimits(settings: AuthLimitSettings, clock: Clock): AuthLimits {
  const windowMs = settings.windowSeconds * 1000
  return {
    settings,
    addresses: createAttemptLimiter({ max: settings.perAddress, windowMs, clock }),
    accounts: createAttemptLimiter({ max: settings.perAccount, windowMs, clock }),
  }
}

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
