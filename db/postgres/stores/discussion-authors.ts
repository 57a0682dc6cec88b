import type { Clock } from '../../../lib/clock.ts'
import type { SecretBox } from '../../../lib/secret-box.ts'
import type { PostedBy } from '../../stores/discussion-authors.ts'
import { StoreError } from '../../stores/errors.ts'
import { isStaffRole } from '../../stores/staff.ts'
import { validateNewUser } from '../../stores/users.ts'
import { memberships } from '../schema.ts'
import type { PgExecutor } from './executor.ts'
import { findUserByEmail, insertUser, roleOn } from './users.ts'

/** Resolves the author of a post and whether they write as support staff of the site (db/stores/discussion-authors.ts). */
export type PgAuthors = (q: PgExecutor, siteId: number, posted: PostedBy) => Promise<{ id: number; bySupporter: boolean }>

/**
 * A supporter posting on behalf of someone names them by address: an unknown address becomes a
 * user without a password, and anyone not yet on the site becomes its customer, all in the
 * caller's transaction. Of two posts naming one new address at once (any processes), one inserts
 * the user and the other, waiting on the unique index, finds the account the first committed.
 */
export function createPgAuthors(clock: Clock, box: SecretBox): PgAuthors {
  async function userFor(q: PgExecutor, email: string, name: string | undefined) {
    const found = await findUserByEmail(q, email)
    if (found) return found
    const checked = validateNewUser({ email, name })
    try {
      return await insertUser(q, clock, box, checked, null)
    } catch (error) {
      // Taken meanwhile: insertUser wrote nothing and left the transaction usable.
      if (!(error instanceof StoreError && error.code === 'conflict')) throw error
      const taken = await findUserByEmail(q, email)
      if (!taken) throw error
      return taken
    }
  }

  return async function authorOf(q, siteId, posted) {
    if (!posted.onBehalfOf) return { id: posted.supporterId, bySupporter: true }
    const { email, name } = posted.onBehalfOf
    const user = await userFor(q, email, name)
    const role = await roleOn(q, siteId, user.id)
    if (!role) {
      await q.insert(memberships).values({ siteId, userId: user.id, role: 'customer', createdAt: new Date(clock()) }).onConflictDoNothing()
    }
    return { id: user.id, bySupporter: isStaffRole(role) }
  }
}
