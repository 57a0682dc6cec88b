import { addressBlock } from '../../lib/address-block.ts'
import type { Clock } from '../../lib/clock.ts'
import { createAttemptLimiter } from '../auth/attempt-limiter.ts'

// Dynamic registration (RFC 7591) and the authorization endpoint answer anyone: without bounds, a
// script fills the records with clients and waiting authorizations (OWASP ASVS V11.1.4,
// anti-automation). So each client address may register and start authorizations at a bounded
// pace, a registration's metadata is small, and a self-registered application that never completed
// an authorization is forgotten after a day (docs/decisions.md, "OAuth for applications").

/** Per client address (its block, lib/address-block.ts) and process, like the failure budgets. */
export const OAUTH_PACE = {
  registrations: { max: 20, windowMs: 60 * 60 * 1000 },
  authorizations: { max: 60, windowMs: 10 * 60 * 1000 },
} as const

/** How long a self-registered application lives until an authorization of it completes. */
export const UNUSED_CLIENT_TTL_S = 24 * 60 * 60

/** Bounds of registration metadata: the same name limit as `service-desk oauth-client add`. */
export const METADATA_LIMITS = { name: 100, redirectUris: 10, uri: 2000, total: 8 * 1024 } as const

export type PaceKind = keyof typeof OAUTH_PACE

/** The pace of each kind of request; `take` counts one and answers the seconds to wait when over. */
export function oauthPace(clock: Clock) {
  const limiters = {
    registrations: createAttemptLimiter({ ...OAUTH_PACE.registrations, clock }),
    authorizations: createAttemptLimiter({ ...OAUTH_PACE.authorizations, clock }),
  }
  return {
    take(kind: PaceKind, address: string): number | undefined {
      const reservation = limiters[kind].reserve(addressBlock(address))
      if (!reservation.allowed) return reservation.retryAfter
      reservation.fail()
      return undefined
    },
  }
}
