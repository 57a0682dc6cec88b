import { and, eq, sql, type Column, type SQLWrapper } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Role } from '../values.ts'

// Who is support staff of a site, written once: spec section 1, "only support staff can use the
// API". A user is staff of a site while their membership there has this role.

export const STAFF_ROLE = 'supporter' satisfies Role

/** The memberships table of either engine, as these conditions read it. */
type Memberships = Record<'siteId' | 'userId' | 'role', Column>

export function isStaffRole(role: Role | null | undefined): boolean {
  return role === STAFF_ROLE
}

/** In a query that left-joins the membership (membershipOn): whether it is staff, false when there is none. */
export function staffColumn(memberships: Memberships) {
  return sql<boolean>`coalesce(${memberships.role} = ${sql.raw(`'${STAFF_ROLE}'`)}, false)`.mapWith(Boolean)
}

/** The join condition of one user's membership on one site (columns, placeholders or values). */
export function membershipOn(memberships: Memberships, siteId: SQLWrapper | number, userId: SQLWrapper | number) {
  return and(eq(memberships.siteId, siteId), eq(memberships.userId, userId))
}

/** The addresses of a site's administrators whose accounts are on: whom the site's troubles are mailed to (a webhook switched off, a mailbox that cannot sign in). */
export function siteAdministrators(port: StorePort, siteId: number): Promise<Array<{ email: string }>> {
  const { memberships, users } = port.tables
  return port.db
    .select({ email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE), eq(memberships.administrator, true), eq(users.disabled, false)))
}
