import type { FastifyInstance } from 'fastify'
import type { CredentialCheck } from '../types.ts'

/**
 * `X-Service-Auth: <key>` or `auth=<key>` (decisions.md, "Legacy account token"): the account's
 * token, valid on every site where the account is staff, read and write. Checked in the order of
 * the personal token: known, owner disabled, expired (the JSON answer of spec table 7), staff.
 */
export function legacyTokenCheck({ users, clock }: FastifyInstance): CredentialCheck<{ key: string; inQuery: boolean }> {
  return ({ key, inQuery }, site) => {
    if (!site) return { kind: 'invalid_token' }
    const owner = users.legacyTokens.lookup(key, site.id)
    if (!owner || owner.disabled) return { kind: 'invalid_token' }
    // The three legacy token columns are always written together, so a known token has an expiry.
    if (owner.expiresAt!.getTime() <= clock()) return { kind: 'legacy_token_expired' }
    if (!owner.staff) return { kind: 'staff_only' }
    return {
      method: 'legacy_token',
      site,
      user: { id: owner.id, email: owner.email, name: owner.name },
      access: 'write',
      viaQuery: inQuery,
    }
  }
}
