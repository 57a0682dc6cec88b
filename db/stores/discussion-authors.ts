import { and, eq, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { memberships } from '../sqlite/schema.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SyncUserStore } from './users.ts'
import { isStaffRole } from './staff.ts'

/** Who a post is by: another user named by email (created as a customer when unknown), or else the supporter. */
export interface PostedBy {
  supporterId: number
  onBehalfOf?: { email: string; name?: string }
}

/**
 * Resolves the author of a post and whether they write as support staff of the site. A supporter
 * posting on behalf of someone names them by address: an unknown address becomes a user without a
 * password, and anyone not yet on the site becomes its customer. Call inside the write's transaction.
 */
export function createAuthors(db: Db, clock: Clock, users: SyncUserStore) {
  const p = (name: string) => sql.placeholder(name)
  const roleOn = db
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.siteId, p('siteId')), eq(memberships.userId, p('userId'))))
    .prepare()

  const addCustomer = db
    .insert(memberships)
    .values({ siteId: p('siteId'), userId: p('userId'), role: 'customer', createdAt: p('now') })
    .onConflictDoNothing()
    .prepare()

  return function authorOf(siteId: number, posted: PostedBy): { id: number; bySupporter: boolean } {
    if (!posted.onBehalfOf) return { id: posted.supporterId, bySupporter: true }
    const { email, name } = posted.onBehalfOf
    const user = users.find(email) ?? users.insert({ email, name }, null)
    const role = roleOn.get({ siteId, userId: user.id })?.role
    if (!role) addCustomer.run({ siteId, userId: user.id, now: new Date(clock()) })
    return { id: user.id, bySupporter: isStaffRole(role) }
  }
}
