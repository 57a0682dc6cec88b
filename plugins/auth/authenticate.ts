import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { rateLimitHeaders } from './limits.ts'
import { findCredential, type Credential } from './credentials.ts'
import type { Refusal } from './refusals.ts'
import type { Site } from '../../db/stores/sites.ts'
import { legacyTokenCheck } from './checks/legacy-token.ts'
import { deprecationLink, multipassCheck } from './checks/multipass.ts'
import { passwordCheck } from './checks/password.ts'
import { personalTokenCheck } from './checks/personal-token.ts'
import type { Authenticated, CheckResult } from './types.ts'

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
  }
  interface FastifyRequest {
    auth: Authenticated | null
  }
}

/**
 * Authentication of the API routes of the scope it is registered in (decisions.md, "Credentials").
 * It runs in onRequest, so the body of a refused request is never read. Exactly one credential is
 * accepted; each kind is checked by its own module under ./auth.
 */
export default fp(
  async (fastify) => {
    const { sites, authLimits } = fastify
    const personalToken = personalTokenCheck(fastify)
    const legacyToken = legacyTokenCheck(fastify)
    const multipass = multipassCheck(fastify)
    const password = passwordCheck(fastify)
    const deprecation = deprecationLink(fastify.config.baseUrl)

    function check(credential: Exclude<Credential, { kind: 'none' | 'invalid_request' }>, site: Site | undefined, request: FastifyRequest, reply: FastifyReply) {
      switch (credential.kind) {
        case 'bearer':
          return personalToken(credential, site, request, reply)
        case 'legacy':
          return legacyToken(credential, site, request, reply)
        case 'multipass':
          return multipass(credential, site, request, reply)
        case 'basic':
          return password(credential, site, request, reply)
        case 'malformed':
          return { kind: 'invalid_token' } satisfies CheckResult
      }
    }

    fastify.decorateRequest('auth', null)

    fastify.decorate('authenticate', async function (request: FastifyRequest, reply: FastifyReply) {
      // Every route of the API scope has the :site parameter.
      const permalink = (request.params as { site: string }).site
      const credential = findCredential({
        method: request.method,
        rawHeaders: request.raw.rawHeaders,
        query: request.query as Record<string, unknown>,
      })
      if (credential.kind === 'invalid_request') return reply.refuse(permalink, credential)
      if (credential.kind === 'none') return reply.refuse(permalink, { kind: 'no_credential' })
      // An address past its budget of failures is refused before any check (plugins/auth/limits.ts).
      const address = request.ip
      const limited = authLimits.addresses.check([address])
      if (!limited.allowed) {
        reply.headers(rateLimitHeaders(authLimits, address))
        return reply.refuse(permalink, { kind: 'too_many_attempts', retryAfter: limited.retryAfter })
      }
      const result = await check(credential, sites.find(permalink), request, reply)
      if (!('kind' in result)) {
        request.auth = result
        return
      }
      const failed = FAILED.has(result.kind)
      // Password failures are counted by fastify.passwords itself, which the sign-in page shares.
      if (failed && credential.kind !== 'basic') authLimits.addresses.fail([address])
      if (failed || result.kind === 'too_many_attempts') reply.headers(rateLimitHeaders(authLimits, address))
      return reply.refuse(permalink, result)
    })

    // Set at the end, so no route's own headers can replace them.
    fastify.addHook('onSend', async (request, reply, payload) => {
      const auth = request.auth
      if (!auth) return payload
      // A credential in the URL makes the URL a secret: no cache may keep what it fetched.
      if (auth.viaQuery) reply.header('cache-control', 'no-store')
      if (auth.method === 'multipass') {
        const link = reply.getHeader('link')
        reply.header('deprecation', 'true')
        reply.header('link', link ? `${String(link)}, ${deprecation}` : deprecation)
      }
      return payload
    })
  },
  { name: 'authentication', fastify: '5.x', dependencies: ['challenge', 'database', 'token-store', 'config', 'password-checks', 'auth-limits'] },
)
