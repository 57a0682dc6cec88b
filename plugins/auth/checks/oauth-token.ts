import type { Clock } from '../../../lib/clock.ts'
import type { StaffRole } from '../../../db/values.ts'
import { fingerprint, isWellFormedToken, OAUTH_ACCESS_TOKEN_PREFIX } from '../../../lib/token-format.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'
import { READ_METHODS } from './personal-token.ts'

/** What the check needs to know of an access token the authorization server issued. */
export interface IssuedAccessToken {
  accountId: number
  grantId: string
  /** The API it is for: {base_url}/<site>. */
  audience: string
  scopes: ReadonlySet<string>
  expiresAt: Date
}

export interface OAuthTokenDeps {
  /** The token's record, undefined when unknown or when its grant was revoked. */
  lookup(value: string): Promise<IssuedAccessToken | undefined>
  account(id: number): Promise<{ id: number; email: string; name: string; disabled: boolean } | undefined>
  staffRole(siteId: number, userId: number): Promise<StaffRole | undefined>
  recordUse(grantId: string): Promise<void>
  /** {base_url}/<site> of a site. */
  resourceOf(permalink: string): string
  clock: Clock
}

/**
 * `Authorization: Bearer service_oat_...`, an OAuth access token (plugins/oauth), checked in the order
 * of the personal token: format and checksum, known with its grant alive, issued for this site's
 * API (RFC 8707), expired, owner disabled, owner is staff, method allowed by the scopes. It gets
 * the same answers as a personal token; `write` includes read.
 */
export function oauthTokenCheck(deps: OAuthTokenDeps): CredentialCheck<{ token: string }> {
  return async ({ token: value }, site, { method }) => {
    if (!site || !isWellFormedToken(value, OAUTH_ACCESS_TOKEN_PREFIX)) return refuse('invalid_token')
    const token = await deps.lookup(value)
    if (!token || token.audience !== deps.resourceOf(site.permalink)) return refuse('invalid_token')
    if (token.expiresAt.getTime() <= deps.clock()) return refuse('token_expired')
    const owner = await deps.account(token.accountId)
    if (!owner || owner.disabled) return refuse('invalid_token')
    const headers = { 'service-token-expiration': token.expiresAt.toUTCString() }
    await deps.recordUse(token.grantId)
    const role = await deps.staffRole(site.id, owner.id)
    if (!role) return { refused: { kind: 'staff_only' }, headers }
    const access = token.scopes.has('write') ? 'write' : token.scopes.has('read') ? 'read' : undefined
    if (!access || (access === 'read' && !READ_METHODS.has(method))) return { refused: { kind: 'insufficient_scope' }, headers }
    const user = { id: owner.id, email: owner.email, name: owner.name }
    return accept({ method: 'oauth_token', site, user, access, notesOnly: role === 'collaborator', grant: fingerprint(token.grantId) }, headers)
  }
}
