import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { StoreError } from './errors.ts'
import { isStaffRole } from './staff.ts'
import { findUserByEmail, insertUser, joinAsCustomer, roleOn, validateNewUser } from './users.ts'

/** Who a post is by: another user named by email (created as a customer when unknown), or else the supporter. */
export interface PostedBy {
  supporterId: number
  onBehalfOf?: { email: string; name?: string }
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
  async function userFor(port: StorePort, email: string, name: string | undefined) {
    const found = await findUserByEmail(port, email)
    if (found) return found
    const checked = validateNewUser({ email, name })
    try {
      return await insertUser(port, clock, box, checked, null)
    } catch (error) {
      // Taken meanwhile: insertUser wrote nothing and left the transaction usable.
      if (!(error instanceof StoreError && error.code === 'conflict')) throw error
      const taken = await findUserByEmail(port, email)
      /* c8 ignore next: an account removed between the insert that found it taken and the read after */
      if (!taken) throw error
      return taken
    }
  }

  return async function authorOf(port, siteId, posted) {
    if (!posted.onBehalfOf) return { id: posted.supporterId, bySupporter: true }
    const { email, name } = posted.onBehalfOf
    const user = await userFor(port, email, name)
    const role = await roleOn(port, siteId, user.id)
    if (!role) await joinAsCustomer(port, clock, siteId, user.id)
    return { id: user.id, bySupporter: isStaffRole(role) }
  }
}
