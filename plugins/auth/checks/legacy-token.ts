import type { Clock } from '../../../lib/clock.ts'
import type { UserStore } from '../../../db/stores/users.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

export interface LegacyTokenDeps {
  lookup: UserStore['legacyTokens']['lookup']
  clock: Clock
}

/**
 * `X-Service-Auth: <key>` or `auth=<key>` (docs/decisions.md, "Legacy account token"): the
 * account's token, valid on every site where the account is staff, read and write. Checked in the
 * order of the personal token: known, owner disabled, expired (the JSON answer of spec table 7), staff.
 */
export function legacyTokenCheck({ lookup, clock }: LegacyTokenDeps): CredentialCheck<{ key: string }> {
  return async ({ key }, site) => {
    if (!site) return refuse('invalid_token')
    const owner = await lookup(key, site.id)
    if (!owner || owner.disabled) return refuse('invalid_token')
    // The three legacy token columns are always written together, so a known token has an expiry.
    if (owner.expiresAt!.getTime() <= clock()) return refuse('legacy_token_expired')
    if (!owner.staff) return refuse('staff_only')
    const user = { id: owner.id, email: owner.email, name: owner.name }
    return accept({ method: 'legacy_token', site, user, access: 'write', notesOnly: owner.collaborator === true })
  }
}
