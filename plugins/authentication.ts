import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Access } from '../db/schema.ts'
import { findCredential } from '../lib/credentials.ts'
import { isWellFormedPersonalToken } from '../lib/token-format.ts'
import type { Site } from '../store/sites.ts'

export interface Authenticated {
  method: 'personal_token'
  site: Site
  user: { id: number; email: string; name: string }
  access: Access
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook of the API: resolves the one credential and sets request.auth, or refuses. */
    authenticate(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  }
  interface FastifyRequest {
    auth: Authenticated | null
  }
}

// Spec 5.1 item 5: GET and HEAD read; everything else (POST, PUT, PATCH, DELETE) writes.
const READ_METHODS = new Set(['GET', 'HEAD'])

/**
 * Authentication of the API routes of the scope it is registered in. It runs in onRequest, so the
 * body of a refused request is never read. The check order is the one of decisions.md.
 */
export default fp(
  async (fastify) => {
    const { sites, tokens, clock } = fastify
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
      // Past this point an unknown site and a wrong credential get the same answer, so no answer
      // reveals whether a site exists.
      const site = sites.find(permalink)
      if (!site || credential.kind !== 'bearer' || !isWellFormedPersonalToken(credential.token)) {
        return reply.refuse(permalink, { kind: 'invalid_token' })
      }

      const token = tokens.lookup(credential.token)
      if (!token || token.revokedAt || token.siteId !== site.id || token.disabled) {
        return reply.refuse(permalink, { kind: 'invalid_token' })
      }
      if (token.expiresAt.getTime() <= clock()) return reply.refuse(permalink, { kind: 'token_expired' })

      // From here the token is genuine: every answer tells when it dies, and the use is recorded.
      reply.header('service-token-expiration', token.expiresAt.toUTCString())
      tokens.recordUse(token.id, token.lastUsedAt, request.ip)
      if (!token.staff) return reply.refuse(permalink, { kind: 'staff_only' })
      if (token.access === 'read' && !READ_METHODS.has(request.method)) {
        return reply.refuse(permalink, { kind: 'insufficient_scope' })
      }
      request.auth = {
        method: 'personal_token',
        site,
        user: { id: token.userId, email: token.email, name: token.name },
        access: token.access,
      }
    })
  },
  { name: 'authentication', fastify: '5.x', dependencies: ['challenge', 'database', 'token-store', 'config'] },
)
