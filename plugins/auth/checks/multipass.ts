import type { Clock } from '../../../lib/clock.ts'
import type { UserStore } from '../../../db/stores/users.ts'
import { decodeMultipass } from '../multipass-token.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

/** The README section that answers the Deprecation header. */
export const MIGRATION_ANCHOR = 'migrating-from-multipass-to-personal-tokens'

/** `Link: <...>; rel="deprecation"` for answers to multipass requests. */
export function deprecationLink(baseUrl: string): string {
  return `<${baseUrl}/README.md#${MIGRATION_ANCHOR}>; rel="deprecation"`
}

export interface MultipassDeps {
  findUser: UserStore['find']
  staffRole: UserStore['staffRole']
  clock: Clock
}

/**
 * `X-Multipass: <token>` or `sso=<token>` (deprecated; docs/decisions.md, "Multipass"): a token
 * made with this site's multipass key, not expired, naming an account that exists, is enabled and
 * is staff of the site. Read and write, like the account's other credentials.
 */
export function multipassCheck({ findUser, staffRole, clock }: MultipassDeps): CredentialCheck<{ token: string; inQuery: boolean }> {
  return async ({ token, inQuery }, site) => {
    if (!site) return refuse('invalid_token')
    const claims = decodeMultipass(token, site.multipassKey, site.permalink, { fromQuery: inQuery })
    if (!claims) return refuse('invalid_token')
    if (claims.expiresAt <= clock()) return refuse('multipass_expired')
    const user = await findUser(claims.email)
    if (!user || user.disabled) return refuse('invalid_token')
    const role = await staffRole(site.id, user.id)
    if (!role) return refuse('staff_only')
    return accept({ method: 'multipass', site, user: { id: user.id, email: user.email, name: user.name }, access: 'write', notesOnly: role === 'collaborator' })
  }
}
