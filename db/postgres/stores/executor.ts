import { and, eq, sql, type SQLWrapper } from '../../drizzle.ts'
import type { NodePgQueryResultHKT, PgDatabase } from '../drizzle.ts'
import { STAFF_ROLE } from '../../stores/staff.ts'
import { memberships } from '../schema.ts'
import type * as schema from '../schema.ts'

// What the PostgreSQL stores run their statements on: the pool (PgDb) or a transaction of it. Both
// are a PgDatabase of the node-postgres driver over the same schema, so a function taking a
// PgExecutor composes inside a caller's transaction (`q.transaction()` there opens a savepoint).

export type PgExecutor = PgDatabase<NodePgQueryResultHKT, typeof schema>

/** Whether `error` (as drizzle throws it: the driver's error as its cause) is a PostgreSQL unique violation, on `constraint` if given. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e = error as { code?: unknown; constraint?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code === '23505') return constraint === undefined || e.constraint === constraint
  }
  return false
}

// Who is staff of a site (db/stores/staff.ts), over the PostgreSQL tables.

/** In a query that left-joins the membership (pgMembershipOn): whether it is staff, false when there is none. */
export function pgStaffColumn() {
  return sql<boolean>`coalesce(${memberships.role} = ${sql.raw(`'${STAFF_ROLE}'`)}, false)`.mapWith(Boolean)
}

/** The join condition of one user's membership on one site (columns or values). */
export function pgMembershipOn(siteId: SQLWrapper | number, userId: SQLWrapper | number) {
  return and(eq(memberships.siteId, siteId), eq(memberships.userId, userId))
}
