import type { Clock } from '../../../lib/clock.ts'
import type { TokenStore } from '../../../db/stores/tokens.ts'
import { isWellFormedPersonalToken } from '../../../lib/token-format.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

// Spec 5.1 item 5: GET and HEAD read; everything else (POST, PUT, PATCH, DELETE) writes.
export const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD'])

export interface PersonalTokenDeps {
  lookup: TokenStore['lookup']
  recordUse: TokenStore['recordUse']
  clock: Clock
}

/**
 * `Authorization: Bearer service_pat_...`, in the check order of docs/decisions.md: format and
 * checksum (no database read for a typo), known, revoked, made for this site, owner disabled,
 * expired, owner is staff, method allowed by the access.
 */
export function personalTokenCheck({ lookup, recordUse, clock }: PersonalTokenDeps): CredentialCheck<{ token: string }> {
  // A token as the look-up remembers it (db/sqlite/read-cache.ts) is one object until the
  // database changes: its header is formatted once, not at every request.
  const expirationHeaders = new WeakMap<object, { 'service-token-expiration': string }>()
  const expirationHeader = (token: { expiresAt: Date }) => {
    let headers = expirationHeaders.get(token)
    if (!headers) expirationHeaders.set(token, (headers = { 'service-token-expiration': token.expiresAt.toUTCString() }))
    return headers
  }
  return async ({ token: value }, site, { method, ip }) => {
    if (!site || !isWellFormedPersonalToken(value)) return refuse('invalid_token')
    const token = await lookup(value)
    if (!token || token.revokedAt || token.siteId !== site.id || token.disabled) return refuse('invalid_token')
    if (token.expiresAt.getTime() <= clock()) return refuse('token_expired')

    // From here the token is genuine: every answer tells when it dies, and the use is recorded.
    const headers = expirationHeader(token)
    await recordUse(token, ip)
    if (!token.staff) return { refused: { kind: 'staff_only' }, headers }
    if (token.access === 'read' && !READ_METHODS.has(method)) return { refused: { kind: 'insufficient_scope' }, headers }
    const user = { id: token.userId, email: token.email, name: token.name }
    return accept({ method: 'personal_token', site, user, access: token.access, tokenId: token.id }, headers)
  }
}
