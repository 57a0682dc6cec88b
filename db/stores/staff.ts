import { and, eq, sql, type SQLWrapper } from '../drizzle.ts'
import { memberships } from '../sqlite/schema.ts'
import type { Role } from '../values.ts'

// Who is support staff of a site, written once: spec section 1, "only support staff can use the
// API". A user is staff of a site while their membership there has this role.

export const STAFF_ROLE = 'supporter' satisfies Role

export function isStaffRole(role: Role | null | undefined): boolean {
  return role === STAFF_ROLE
}

/** In a query that left-joins the membership (membershipOn): whether it is staff, false when there is none. */
export function staffColumn() {
  return sql<boolean>`coalesce(${memberships.role} = ${sql.raw(`'${STAFF_ROLE}'`)}, 0)`.mapWith(Boolean)
}

/** The join condition of one user's membership on one site (columns or placeholders). */
export function membershipOn(siteId: SQLWrapper | number, userId: SQLWrapper | number) {
  return and(eq(memberships.siteId, siteId), eq(memberships.userId, userId))
}
