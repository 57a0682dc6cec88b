import type { FastifyInstance } from 'fastify'
import { isWellFormedPersonalToken } from '../../../lib/token-format.ts'
import type { CredentialCheck } from '../types.ts'

// Spec 5.1 item 5: GET and HEAD read; everything else (POST, PUT, PATCH, DELETE) writes.
const READ_METHODS = new Set(['GET', 'HEAD'])

/**
 * `Authorization: Bearer service_pat_...`, in the check order of decisions.md: format and checksum
 * (no database read for a typo), known, revoked, made for this site, owner disabled, expired,
 * owner is staff, method allowed by the access.
 */
export function personalTokenCheck({ tokens, clock }: FastifyInstance): CredentialCheck<{ token: string }> {
  return ({ token: value }, site, request, reply) => {
    if (!site || !isWellFormedPersonalToken(value)) return { kind: 'invalid_token' }
    const token = tokens.lookup(value)
    if (!token || token.revokedAt || token.siteId !== site.id || token.disabled) return { kind: 'invalid_token' }
    if (token.expiresAt.getTime() <= clock()) return { kind: 'token_expired' }

    // From here the token is genuine: every answer tells when it dies, and the use is recorded.
    reply.header('service-token-expiration', token.expiresAt.toUTCString())
    tokens.recordUse(token.id, token.lastUsedAt, request.ip)
    if (!token.staff) return { kind: 'staff_only' }
    if (token.access === 'read' && !READ_METHODS.has(request.method)) return { kind: 'insufficient_scope' }
    return {
      method: 'personal_token',
      site,
      user: { id: token.userId, email: token.email, name: token.name },
      access: token.access,
      viaQuery: false,
    }
  }
}
