import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Refusal } from './challenge.ts'
import { legacyTokenCheck } from './checks/legacy-token.ts'
import { deprecationLink, multipassCheck } from './checks/multipass.ts'
import { passwordCheck } from './checks/password.ts'
import { oauthTokenCheck } from './checks/oauth-token.ts'
import { personalTokenCheck } from './checks/personal-token.ts'
import { accessTokenAccess } from '../oauth/adapter.ts'
import { OAUTH_ACCESS_TOKEN_PREFIX } from '../../lib/token-format.ts'
import { redactUrl } from '../../lib/redact.ts'
import { findCredential, type Credential } from './credentials.ts'
import { rateLimitHeaders, type RateVerdict } from '../../lib/rate-limiter.ts'
import { failureStanding } from './limits.ts'
import { siteRules } from './site-rules.ts'
import { refuse, type Authenticated, type CheckResult, type RequestFacts } from './types.ts'

export type { Authenticated } from './types.ts'

// Refusals that mean the credential itself was wrong: these count against the client address.
// (A read-only token used to write, or a valid user not on the staff, is a right credential.)
const FAILED: ReadonlySet<Refusal['kind']> = new Set([
  'invalid_token',
  'token_expired',
  'legacy_token_expired',
  'multipass_expired',
  'invalid_password',
])

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook of the API: resolves the one credential and sets request.auth, or refuses. */
    authenticate(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
    /** Whether an authenticated request's credential still holds: the refusal to answer with, or null. */
    reauthenticate(request: FastifyRequest): Promise<Refusal | null>
  }
  interface FastifyRequest {
    auth: Authenticated | null
  }
  interface FastifyContextConfig {
    /** An API route that checks write access itself: its method does not tell (the MCP endpoint). */
    checksWriteAccess?: boolean
  }
}

type Presented = Exclude<Credential, { kind: 'none' | 'invalid_request' }>

/** The one credential a request carries (plugins/auth/credentials.ts). */
const credentialOf = (request: FastifyRequest) => findCredential({ method: request.method, rawHeaders: request.raw.rawHeaders, query: request.query as Record<string, unknown> })

/**
 * Every answer of the API is private, to any credential or to none: no shared cache may keep it
 * (no-store, not `private`: a browser's own cache has no business keeping a token's listing
 * either), and a cache that still does must key it on every header that carries a credential.
 */
export const PRIVATE_ANSWER = {
  'cache-control': 'no-store',
  vary: 'Authorization, X-Service-Auth, X-Multipass',
} as const

/**
 * Authentication of the API routes of the scope it is registered in (docs/decisions.md,
 * "Credentials"). It runs in onRequest, so the body of a refused request is never read. Exactly
 * one credential is accepted; each kind is checked by its own module under ./checks, which gets
 * only the store functions it needs and returns a value. This plugin alone writes what
 * authentication puts into a reply.
 */
export default fp(
  async (fastify) => {
    const { sites, users, tokens, passwords, authLimits, rateLimits, clock, oauthRecords, urls, secondFactors } = fastify
    // Each check gets the few store functions it needs, called through the store at each request.
    const staffRole = (siteId: number, userId: number) => users.staffRole(siteId, userId)
    const personalToken = personalTokenCheck({
      lookupOnSite: (permalink, value) => tokens.lookupOnSite(permalink, value),
      recordUse: (token, from) => tokens.recordUse(token, from),
      clock,
    })
    const oauthToken = oauthTokenCheck({
      ...accessTokenAccess(oauthRecords, clock),
      account: (id) => users.byId(id),
      staffRole,
      resourceOf: (permalink) => urls.site(permalink),
      clock,
    })
    const legacyToken = legacyTokenCheck({ lookup: (key, siteId) => users.legacyTokens.lookup(key, siteId), clock })
    const multipass = multipassCheck({ findUser: (email) => users.find(email), staffRole, clock })
    const password = passwordCheck({
      verify: (email, secret, address) => passwords.verify(email, secret, address),
      staffRole,
      hasSecondFactor: (userId) => secondFactors.has(userId),
    })
    // For a request that holds on (the change feed's wait): its token read afresh, with nothing
    // shared with a read that began before, and no use recorded again.
    const personalTokenAgain = personalTokenCheck({
      lookupOnSite: async (permalink, value) => {
        const [site, token] = await Promise.all([sites.find(permalink), tokens.lookup(value)])
        return { site, token: site && token?.siteId === site.id ? token : undefined }
      },
      recordUse: async () => {},
      clock,
    })
    const deprecation = deprecationLink(fastify.config.baseUrl)
    const rules = siteRules({ hasSecondFactor: (userId) => secondFactors.has(userId), isAdministrator: (siteId, userId) => users.isAdministrator(siteId, userId) })

    /** The check of the credential's kind, given the site of the permalink: read here, or with the credential by the check itself. */
    async function check(credential: Presented, permalink: string, request: RequestFacts, personal = personalToken): Promise<CheckResult> {
      if (credential.kind === 'malformed') return refuse('invalid_token')
      if (credential.kind === 'bearer' && !credential.token.startsWith(OAUTH_ACCESS_TOKEN_PREFIX)) return personal(credential, permalink, request)
      const site = await sites.find(permalink)
      switch (credential.kind) {
        case 'bearer':
          return oauthToken(credential, site, request)
        case 'legacy':
          return legacyToken(credential, site, request)
        case 'multipass':
          return multipass(credential, site, request)
        case 'basic':
          return password(credential, site, request)
      }
    }

    const outcome = (r: CheckResult): 'failed' | 'neutral' => ('refused' in r && FAILED.has(r.refused.kind) ? 'failed' : 'neutral')

    /**
     * Within the address's failure budget (plugins/auth/limits.ts); a password check keeps its own,
     * which also has the account's. Every other credential cannot be guessed (a bearer token: 256
     * random bits and a checksum; a legacy token: 160 random bits; a multipass: sealed under the
     * site's key), so a spent address does not refuse a valid one: it is checked first, and only a
     * failed one is counted, and answered 429 once the address is spent. Everyone behind one NAT or
     * proxy keeps working when one script there sends broken credentials.
     */
    async function checkWithinBudget(credential: Presented, permalink: string, request: RequestFacts): Promise<CheckResult> {
      const checked = await check(credential, permalink, request)
      if (credential.kind === 'basic' || outcome(checked) === 'neutral') return checked
      const counted = await authLimits.attempt({ address: request.ip }, () => checked, outcome)
      return 'kind' in counted ? refuse(counted) : counted
    }

    /**
     * Fair use (plugins/rate-limits.ts): past its policy a request gets 429, in the API's JSON
     * shape, before any route runs. Its standing goes with every answer either way.
     */
    function tooManyRequests(request: FastifyRequest, reply: FastifyReply, verdict: RateVerdict, whose: string) {
      const { policy, resetSeconds } = verdict
      fastify.refusals.record('rate_limited', { address: request.ip, status: 429, method: request.method, url: redactUrl(request.url), policy: policy.name })
      const what = policy.name === 'anonymous' ? 'requests without a credential' : policy.name
      return reply
        .code(429)
        .header('retry-after', String(resetSeconds))
        .send({ error: 'rate_limited', message: `Too many requests: ${whose} has used all ${policy.limit} ${what} of this window. Try again in ${resetSeconds} seconds.` })
    }

    /**
     * A refusal, counted against the client address (no credential was accepted). A credential that
     * failed also shows the address's failure budget, first: it is the one that ends sooner.
     */
    async function refuseWith(request: FastifyRequest, reply: FastifyReply, permalink: string, refusal: Refusal, headers?: Record<string, string>) {
      const standing = await rateLimits.address(request.ip)
      const failed = FAILED.has(refusal.kind) || refusal.kind === 'too_many_attempts'
      reply.headers(rateLimitHeaders(failed ? [failureStanding(authLimits, request.ip), standing] : [standing]))
      if (!standing.allowed) return tooManyRequests(request, reply, standing, 'this address')
      const { status, headers: challenge, body } = fastify.refusal(refusal, permalink)
      if (headers) reply.headers(headers)
      return reply.code(status).headers(challenge).send(body)
    }

    fastify.decorateRequest('auth', null)

    // First of the scope's hooks (app.ts registers this plugin first), so even a 406 is private.
    // Hooks with a callback, not async: no promise per request for a few headers.
    fastify.addHook('onRequest', (_request, reply, done) => {
      reply.headers(PRIVATE_ANSWER)
      done()
    })

    fastify.decorate('authenticate', async function (request: FastifyRequest, reply: FastifyReply) {
      // Every route of the API scope has the :site parameter.
      const permalink = (request.params as { site: string }).site
      const credential = credentialOf(request)
      if (credential.kind === 'invalid_request') return refuseWith(request, reply, permalink, credential)
      if (credential.kind === 'none') return refuseWith(request, reply, permalink, { kind: 'no_credential' })
      // A route that decides per message what needs write access (the MCP endpoint: a POST carries
      // a read or a write) is authenticated as a read, and checks writes itself.
      const method = request.routeOptions.config.checksWriteAccess ? 'GET' : request.method
      const result = await checkWithinBudget(credential, permalink, { method, ip: request.ip })
      if ('accepted' in result) {
        // What the site's policy asks of a right credential is told so (not counted: no guess).
        const answer = rules(result.accepted, method)
        const ruled = answer instanceof Promise ? await answer : answer
        if ('kind' in ruled) return refuseWith(request, reply, permalink, ruled, result.headers)
        request.auth = ruled
        if (result.headers) reply.headers(result.headers)
        // Answered from memory while the process holds a lease: awaited only when it takes one.
        const counted = rateLimits.credential(ruled, method !== 'GET' && method !== 'HEAD')
        const verdict = counted instanceof Promise ? await counted : counted
        reply.headers(rateLimitHeaders([verdict]))
        if (!verdict.allowed) return tooManyRequests(request, reply, verdict, 'this credential')
        request.rateLimit = verdict
        return
      }
      return refuseWith(request, reply, permalink, result.refused, result.headers)
    })

    /**
     * Asks again whether the request's credential holds, as its authentication did (revoked,
     * expired, its owner disabled or taken off the staff, the site's rules), without counting it
     * against any budget: for a request that held on while others wrote (the change feed's wait),
     * before it answers with what they wrote. The refusal to answer with, or null while it holds.
     */
    fastify.decorate('reauthenticate', async function (request: FastifyRequest): Promise<Refusal | null> {
      const permalink = (request.params as { site: string }).site
      // It was accepted once, so it is one presented.
      const credential = credentialOf(request) as Presented
      const result = await check(credential, permalink, { method: request.method, ip: request.ip }, personalTokenAgain)
      if ('refused' in result) return result.refused
      const answer = rules(result.accepted, request.method)
      const ruled = answer instanceof Promise ? await answer : answer
      return 'kind' in ruled ? ruled : null
    })

    // Set at the end, so no route's own Link header can replace it.
    fastify.addHook('onSend', (request, reply, payload, done) => {
      // A 304 costs nothing against the policy: its share is given back, and the headers say so.
      if (request.rateLimit !== null && reply.statusCode === 304) reply.headers(rateLimitHeaders([request.rateLimit.giveBack()]))
      if (request.auth?.method === 'multipass') {
        const link = reply.getHeader('link')
        reply.header('deprecation', 'true')
        reply.header('link', link ? `${String(link)}, ${deprecation}` : deprecation)
      }
      done(null, payload)
    })
  },
  {
    name: 'authentication',
    fastify: '5.x',
    dependencies: ['challenge', 'config', 'site-store', 'user-store', 'token-store', 'oauth-store', 'second-factor-store', 'password-verifier', 'auth-limits', 'rate-limits'],
  },
)
