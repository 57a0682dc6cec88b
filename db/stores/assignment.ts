import { and, asc, eq, gt, sql } from '../drizzle.ts'
import { recordChanges } from './changes.ts'
import type { StorePort } from '../port.ts'
import { moveCounts, NO_ASSIGNEE } from './discussion-counts.ts'
import { StoreError } from './errors.ts'
import { answeringStaff, enabledUser } from './staff.ts'

// Who owns a discussion (docs/decisions.md, "The team's queue"): at most one supporter of its site,
// one who can still sign in. Someone who leaves the staff (or whose account is switched off) owns
// nothing any more: their discussions are unassigned in the same transaction. The owner's
// membership and account are read under a row lock (on PostgreSQL), so a supporter being taken off
// the staff meanwhile either waits for the assignment to commit (and then lets go of it too) or
// commits first (and the assignment, reading them again, is refused).

/** The owner named by a change (in the request's `field`), checked in its transaction: a supporter of the site whose account is on. */
export async function checkAssignee(port: StorePort, siteId: number, userId: number, field: string): Promise<{ id: number; name: string }> {
  const member = await staffMemberOf(port, siteId, userId)
  if (!member) throw new StoreError(`is ${userId}, who is not support staff of this site`, 'invalid', field)
  return member
}

/** The supporter of the site who can own discussions (signs in, answers), read under a lock; undefined for anyone else. */
export async function staffMemberOf(port: StorePort, siteId: number, userId: number): Promise<{ id: number; name: string } | undefined> {
  const { memberships, users } = port.tables
  const p = sql.placeholder
  const read = port.prepared('assignment_staff_member', (db) =>
    port
      .locked(
        db
          .select({ id: users.id, name: users.name })
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          .where(and(eq(memberships.siteId, p('siteId')), eq(memberships.userId, port.wide(p('userId'))), answeringStaff(memberships), enabledUser(users))),
      )
      .prepare('assignment_staff_member'),
  )
  return (await read.execute({ siteId, userId }))[0]
}

/**
 * The supporter whose turn it is to own a new discussion of a round-robin category: the next in
 * the order of their ids after the last one given one, from the first again at the end; the
 * category remembers them. Undefined when the site has no supporter who can sign in. Called under
 * the site's lock (a create's), so two creates never take the same turn.
 */
export async function nextInTurn(port: StorePort, siteId: number, category: { id: number; lastAssigneeId: number | null }): Promise<number | undefined> {
  const { categories, memberships, users } = port.tables
  const p = sql.placeholder
  const read = port.prepared('assignment_next_in_turn', (db) =>
    port
      .locked(
        db
          .select({ id: users.id })
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          // By the membership's user id: the staff index (site, role, user) reads them in order.
          .where(and(eq(memberships.siteId, p('siteId')), answeringStaff(memberships), enabledUser(users), gt(memberships.userId, p('after'))))
          .orderBy(asc(memberships.userId))
          .limit(1),
      )
      .prepare('assignment_next_in_turn'),
  )
  let [next] = await read.execute({ siteId, after: category.lastAssigneeId ?? 0 })
  if (!next && category.lastAssigneeId !== null) [next] = await read.execute({ siteId, after: 0 })
  if (!next) return undefined
  await port.db.update(categories).set({ lastAssigneeId: next.id }).where(eq(categories.id, category.id))
  return next.id
}

/**
 * The discussions `userId` owns on `siteId` (on every site without one) no longer owned, moving
 * their counts, in the transaction of `port`; each one's version moves, so its kept views go, and
 * each is a change of the feed (db/stores/changes.ts) at `at`.
 */
export async function unassignEverything(port: StorePort, at: Date, userId: number, siteId?: number): Promise<number> {
  const { discussions } = port.tables
  const theirs = and(eq(discussions.assigneeId, userId), siteId === undefined ? undefined : eq(discussions.siteId, siteId))
  const changed = await port.db
    .update(discussions)
    .set({ assigneeId: null, version: sql`${discussions.version} + 1` })
    .where(theirs)
    .returning({ id: discussions.id, siteId: discussions.siteId, categoryId: discussions.categoryId, state: discussions.state, public: discussions.public })
  if (changed.length === 0) return 0
  // The sites' rows before the counts' rows, as in every write (db/stores/discussions.ts), in the
  // order of their ids; each change numbered in its site's feed by the statement that takes its row.
  const touched = [...new Set(changed.map((d) => d.siteId))].sort((a, b) => a - b)
  for (const siteId of touched) {
    await recordChanges(port, siteId, changed.filter((d) => d.siteId === siteId).map((d) => ({ kind: 'discussion.updated' as const, discussionId: d.id, at })))
  }
  // The counts of exactly the rows this statement changed (a discussion given to them meanwhile
  // committed before it, or waits on their membership's lock and is then refused).
  await moveCounts(port, changed.map((d) => ({ before: { ...d, assigneeId: userId }, after: { ...d, assigneeId: NO_ASSIGNEE } })))
  return changed.length
}
