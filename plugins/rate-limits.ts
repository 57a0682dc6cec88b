import fp from 'fastify-plugin'
import { addressBlock } from '../lib/address-block.ts'
import { createRateLimiter, type RatePolicy, type RateVerdict } from '../lib/rate-limiter.ts'
import type { Authenticated } from './auth/types.ts'

// Fair use of the API (issue 33; docs/decisions.md, "Fair use"): how many requests a credential,
// or a client address without one, may make per window. The counting is lib/rate-limiter.ts,
// shared by the processes through the database; plugins/auth/authenticate.ts asks here once it
// knows who a request is, and answers 429 past the limit before any route runs.

export interface RateLimitSettings {
  /** The length of a window, in seconds (an hour by default). */
  windowSeconds: number
  /** Reads (GET, HEAD, and the MCP endpoint's messages) per credential per window. */
  reads: number
  /** Writes (POST, PUT, PATCH, DELETE) per credential per window. */
  writes: number
  /** Requests without a credential the API accepted, per client address per window. */
  anonymous: number
  /** Per site (by permalink): its own reads and writes per credential. */
  sites: Record<string, Partial<Pick<RateLimitSettings, 'reads' | 'writes'>>>
}

/** Limits a small team does not meet in normal use: a script polling every second spends a third of its reads. */
export const DEFAULT_RATE_LIMITS: RateLimitSettings = { windowSeconds: 3600, reads: 10_000, writes: 1_000, anonymous: 1_000, sites: {} }

/** The highest limit the settings take (the counts are 32-bit integers in the database). */
export const MAX_RATE_LIMIT = 100_000_000

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits
  }
  interface FastifyRequest {
    /** The request's share of its credential's policy, given back when the answer is a 304. */
    rateLimit: RateVerdict | null
  }
}

export interface RateLimits {
  /** One request of an accepted credential: a write or a read. */
  credential(auth: Authenticated, write: boolean): RateVerdict | Promise<RateVerdict>
  /** One request of the API that no credential was accepted for, from `address`. */
  address(address: string): RateVerdict | Promise<RateVerdict>
}

/**
 * What a credential's requests of a policy are counted under, within its site: a personal token by its id, an
 * OAuth access token by its grant (the tokens an application refreshes share one budget), a
 * legacy token, a multipass or a password by the account. Never the secret itself.
 */
export function credentialKey(auth: Authenticated, policy: RatePolicy): string {
  const site = auth.site.id
  if (auth.method === 'personal_token') return `${site}:token:${auth.tokenId}:${policy.name}`
  if (auth.method === 'oauth_token') return `${site}:grant:${auth.grant}:${policy.name}`
  if (auth.method === 'legacy_token') return `${site}:legacy:${auth.user.id}:${policy.name}`
  return `${site}:account:${auth.user.id}:${policy.name}`
}

/** An address as its fair-use budget is kept: its block (lib/address-block.ts). */
export const addressKey = (address: string): string => `address:${addressBlock(address)}`

export default fp<{ settings: RateLimitSettings }>(
  async (fastify, { settings }) => {
    const limiter = createRateLimiter({
      store: fastify.database.rateLimits(),
      clock: fastify.clock,
      windowSeconds: settings.windowSeconds,
      onPruneError: (error) => fastify.log.warn({ err: error }, 'could not forget the rate limit windows that ended; the next window tries again'),
      onLeaseError: (error) => fastify.log.warn({ err: error }, 'could not count requests in the database; each process counts its own until it can'),
    })
    const policy = (name: 'reads' | 'writes', limit: number): RatePolicy => ({ name, limit })
    const policies = { reads: policy('reads', settings.reads), writes: policy('writes', settings.writes) }
    const perSite = new Map(
      Object.entries(settings.sites).map(([permalink, own]) => [
        permalink,
        { reads: policy('reads', own.reads ?? settings.reads), writes: policy('writes', own.writes ?? settings.writes) },
      ]),
    )
    const anonymous: RatePolicy = { name: 'anonymous', limit: settings.anonymous }

    fastify.decorateRequest('rateLimit', null)
    fastify.decorate('rateLimits', {
      credential(auth, write) {
        const { reads, writes } = perSite.get(auth.site.permalink) ?? policies
        const policy = write ? writes : reads
        return limiter.take(credentialKey(auth, policy), policy)
      },
      address: (address) => limiter.take(addressKey(address), anonymous),
    } satisfies RateLimits)

    // Before the database closes (onClose hooks run in the reverse order of registration).
    fastify.addHook('onClose', async () => {
      await limiter.release().catch((error: unknown) => {
        fastify.log.warn({ err: error }, 'could not give back the rate limit leases this process held')
      })
    })
  },
  { name: 'rate-limits', fastify: '5.x', dependencies: ['config', 'database'] },
)
