import { and, eq, sql, type Column, type SQLWrapper } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Role, StaffRole } from '../values.ts'

// Who is support staff of a site, written once: spec section 1, "only support staff can use the
// API". A user is staff of a site while their membership there has this role.

export const STAFF_ROLE = 'supporter' satisfies Role

/** The memberships table of either engine, as these conditions read it. */
type Memberships = Record<'siteId' | 'userId' | 'role' | 'collaborator', Column>

/** A staff membership's role, from its flags. */
export function staffRoleOf(flags: { administrator: boolean; collaborator: boolean }): StaffRole {
  return flags.administrator ? 'administrator' : flags.collaborator ? 'collaborator' : 'supporter'
}

/** The flags a staff membership (or an invitation) keeps for a role. */
export function roleFlags(role: StaffRole): { administrator: boolean; collaborator: boolean } {
  return { administrator: role === 'administrator', collaborator: role === 'collaborator' }
}

/**
 * Of a site's staff, those who answer its discussions: supporters and administrators, not its
 * collaborators. Who may own a discussion, whose turn the round robin gives, who is mailed about
 * new ones (docs/decisions.md, "Collaborators").
 */
export function answeringStaff(memberships: Memberships) {
  // Its constants written into the statement, not bound (enabledUser below).
  return sql`(${memberships.role} = ${sql.raw(`'${STAFF_ROLE}'`)} and ${memberships.collaborator} = false)`
}

/**
 * A user who may sign in (not disabled). Like answeringStaff, written into the statement's text
 * rather than bound: PostgreSQL keeps one plan of a prepared statement only when it looks as cheap
 * as one made for the values given, and a bound constant whose share of the rows its statistics
 * know (a role that few members have, a flag that most users have) makes one made for it look
 * cheaper, so the statement was planned again at every call (docs/decisions.md, "Plans that are
 * made once").
 */
export function enabledUser(users: { disabled: Column }) {
  return sql`${users.disabled} = false`
}

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
    .where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE), eq(memberships.administrator, true), enabledUser(users)))
}
