import type { Clock } from '../../../lib/clock.ts'
import type { TokenStore } from '../../../db/stores/tokens.ts'
import { isWellFormedPersonalToken } from '../../../lib/token-format.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

// Spec 5.1 item 5: GET and HEAD read; everything else (POST, PUT, PATCH, DELETE) writes.
export const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD'])

export interface PersonalTokenDeps {
  lookupOnSite: TokenStore['lookupOnSite']
  recordUse: TokenStore['recordUse']
  clock: Clock
}

/**
 * `Authorization: Bearer service_pat_...`, in the check order of docs/decisions.md: format and
 * checksum (no database read for a typo), known, revoked, made for this site, owner disabled,
 * expired, owner is staff, method allowed by the access. It reads the site with the token, in one
 * read (TokenStore.lookupOnSite), so it is given the permalink rather than the site.
 */
export function personalTokenCheck({ lookupOnSite, recordUse, clock }: PersonalTokenDeps): CredentialCheck<{ token: string }, string> {
  // Requests in a row mostly carry one token: its header is formatted again only when the expiry
  // differs from the last one's (on PostgreSQL each read gives a new object, so the expiry is the key).
  let last = { at: Number.NaN, headers: { 'service-token-expiration': '' } }
  const expirationHeader = (expiresAt: Date) => {
    const at = expiresAt.getTime()
    if (at !== last.at) last = { at, headers: { 'service-token-expiration': expiresAt.toUTCString() } }
    return last.headers
  }
  return async ({ token: value }, permalink, { method, ip }) => {
    if (!isWellFormedPersonalToken(value)) return refuse('invalid_token')
    const { site, token } = await lookupOnSite(permalink, value)
    // A token of another site is not found with this one.
    if (!site || !token || token.revokedAt || token.disabled) return refuse('invalid_token')
    if (token.expiresAt.getTime() <= clock()) return refuse('token_expired')

    // From here the token is genuine: every answer tells when it dies, and the use is recorded.
    const headers = expirationHeader(token.expiresAt)
    await recordUse(token, ip)
    if (!token.staff) return { refused: { kind: 'staff_only' }, headers }
    if (token.access === 'read' && !READ_METHODS.has(method)) return { refused: { kind: 'insufficient_scope' }, headers }
    const user = { id: token.userId, email: token.email, name: token.name }
    return accept({ method: 'personal_token', site, user, access: token.access, notesOnly: token.collaborator === true, tokenId: token.id }, headers)
  }
}
