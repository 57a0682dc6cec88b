import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { isStaffRole } from './staff.ts'
import { findOrMakeUser, joinAsCustomer, roleOn, validateNewUser } from './users.ts'

/** Who a post is by: another user named by email (created as a customer when unknown), or else the supporter. */
export interface PostedBy {
  supporterId: number
  /**
   * `unproven`: the address is only claimed (a mail's From), so the post is never the staff's even
   * when the address is a supporter's (docs/decisions.md, "Mail never speaks for the team").
   */
  onBehalfOf?: { email: string; name?: string; unproven?: boolean }
}

/** Resolves the author of a post and whether they write as support staff of the site, in the transaction of `port`. */
export type Authors = (port: StorePort, siteId: number, posted: PostedBy) => Promise<{ id: number; bySupporter: boolean }>

/**
 * A supporter posting on behalf of someone names them by address: an unknown address becomes a
 * user without a password, and anyone not yet on the site becomes its customer, all in the
 * caller's transaction. Of two posts naming one new address at once (any processes), one inserts
 * the user and the other, waiting on the unique index, finds the account the first committed.
 */
export function createAuthors(clock: Clock, box: SecretBox): Authors {
  return async function authorOf(port, siteId, posted) {
    if (!posted.onBehalfOf) return { id: posted.supporterId, bySupporter: true }
    const { email, name, unproven = false } = posted.onBehalfOf
    const user = await findOrMakeUser(port, clock, box, email, () => validateNewUser({ email, name }))
    const role = await roleOn(port, siteId, user.id)
    if (!role) await joinAsCustomer(port, clock, siteId, user.id)
    return { id: user.id, bySupporter: isStaffRole(role) && !unproven }
  }
}
