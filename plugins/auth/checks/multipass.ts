import type { FastifyInstance } from 'fastify'
import { decodeMultipass } from '../multipass-token.ts'
import type { CredentialCheck } from '../types.ts'

/** The README section that answers the Deprecation header. */
export const MIGRATION_ANCHOR = 'migrating-from-multipass-to-personal-tokens'

/** `Link: <...>; rel="deprecation"` for answers to multipass requests. */
export function deprecationLink(baseUrl: string): string {
  return `<${baseUrl}/README.md#${MIGRATION_ANCHOR}>; rel="deprecation"`
}

/**
 * `X-Multipass: <token>` or `sso=<token>` (deprecated; decisions.md, "Multipass"): a token made
 * with this site's multipass key, not expired, naming an account that exists, is enabled and is
 * staff of the site. Read and write, like the account's other credentials.
 */
export function multipassCheck({ users, clock }: FastifyInstance): CredentialCheck<{ token: string; inQuery: boolean }> {
  return ({ token, inQuery }, site) => {
    if (!site) return { kind: 'invalid_token' }
    const claims = decodeMultipass(token, site.multipassKey, site.permalink, { fromQuery: inQuery })
    if (!claims) return { kind: 'invalid_token' }
    if (claims.expiresAt <= clock()) return { kind: 'multipass_expired' }
    const user = users.find(claims.email)
    if (!user || user.disabled) return { kind: 'invalid_token' }
    if (users.role(site.id, user.id) !== 'supporter') return { kind: 'staff_only' }
    return { method: 'multipass', site, user: { id: user.id, email: user.email, name: user.name }, access: 'write', viaQuery: inQuery }
  }
}
