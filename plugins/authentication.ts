import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { findCredential, type Credential } from '../lib/credentials.ts'
import type { Site } from '../store/sites.ts'
import { legacyTokenCheck } from './auth/legacy-token.ts'
import { deprecationLink, multipassCheck } from './auth/multipass.ts'
import { passwordCheck } from './auth/password.ts'
import { personalTokenCheck } from './auth/personal-token.ts'
import type { Authenticated, CheckResult } from './auth/types.ts'

export type { Authenticated } from './auth/types.ts'

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
    const { sites } = fastify
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
      const result = await check(credential, sites.find(permalink), request, reply)
      if ('kind' in result) return reply.refuse(permalink, result)
      request.auth = result
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
  { name: 'authentication', fastify: '5.x', dependencies: ['challenge', 'database', 'token-store', 'config', 'password-checks'] },
)
