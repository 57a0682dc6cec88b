import { and, eq, inArray, sql, type SQL } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { lastly, onFirstUse, type StorePort } from '../port.ts'
import type { DiscussionState } from '../values.ts'

// How many discussions a site has per category, state, visibility and owner. Every write that creates a
// discussion or changes one of those three moves the counts inside its own transaction, with one
// atomic upsert per count row, so the counts are exactly as current as the rows they count whatever
// other processes do meanwhile.

/** `live` is every state but deleted and spam (db/live.ts): what the plain listing shows; `todo` is new and open, what needs an answer (the queue's first tab). */
export type StateScope = DiscussionState | 'live' | 'todo'

/** The states of a scope that is not one state. */
export const SCOPE_STATES = { live: ['new', 'open', 'resolved'], todo: ['new', 'open'] } as const satisfies Record<string, DiscussionState[]>

/** How the counts name a discussion nobody owns. */
export const NO_ASSIGNEE = 0

/** Whether a discussion in `state` is in the scope. */
export function inStateScope(scope: StateScope, state: DiscussionState): boolean {
  return scope === 'live' || scope === 'todo' ? (SCOPE_STATES[scope] as readonly DiscussionState[]).includes(state) : state === scope
}

/** How many discussions a site has in one state with one owner (NO_ASSIGNEE: nobody). */
export interface OwnedCount {
  state: DiscussionState
  assigneeId: number
  n: number
}

export interface CountScope {
  siteId: number
  state: StateScope
  categoryId?: number
  public?: boolean
  /** The owner's user id, or NO_ASSIGNEE for the discussions nobody owns. */
  assignee?: number
  /**
   * The site's version as the caller read it (a request's, with its authentication): a total is
   * kept by it, since the counts only move in a transaction that moves the version too.
   */
  siteVersion?: number
}

export interface CountedRow {
  siteId: number
  categoryId: number
  state: DiscussionState
  public: boolean
  /** NO_ASSIGNEE when nobody owns it. */
  assigneeId: number
}

/** The counts' row a discussion is counted in. */
export const counted = (d: { siteId: number; categoryId: number; state: DiscussionState; public: boolean; assigneeId: number | null }): CountedRow => ({
  siteId: d.siteId,
  categoryId: d.categoryId,
  state: d.state,
  public: d.public,
  assigneeId: d.assigneeId ?? NO_ASSIGNEE,
})

export type StateCounts = Record<DiscussionState, number>

export function emptyStateCounts(): StateCounts {
  return { new: 0, open: 0, resolved: 0, deleted: 0, spam: 0, merged: 0 }
}

/** Where a count row sorts: a transaction takes its count rows' locks in this order, so two never wait on each other. */
function rowKey(row: CountedRow): string {
  return `${row.siteId}|${row.categoryId}|${row.state}|${row.public ? 1 : 0}|${row.assigneeId}`
}

/** The rows in their lock order (rowKey). */
function inLockOrder<T>(rows: T[], row: (item: T) => CountedRow): T[] {
  return rows.sort((a, b) => (rowKey(row(a)) < rowKey(row(b)) ? -1 : 1))
}

/** Adds delta to the count of discussions like `row`, in one atomic upsert. Call inside the write's transaction. */
export async function bumpCount(port: StorePort, row: CountedRow, delta: number): Promise<void> {
  const { discussionCounts } = port.tables
  const p = sql.placeholder
  const bump = port.prepared('discussion_counts_bump', (db) =>
    db
      .insert(discussionCounts)
      .values({ siteId: p('siteId'), categoryId: p('categoryId'), state: p('state'), public: p('public'), assigneeId: p('assigneeId'), count: p('delta') })
      .onConflictDoUpdate({
        target: [discussionCounts.siteId, discussionCounts.categoryId, discussionCounts.state, discussionCounts.public, discussionCounts.assigneeId],
        set: { count: sql`${discussionCounts.count} + excluded.count` },
      })
      .prepare('discussion_counts_bump'),
  )
  // One of the transaction's last statements, after the site's row, in the counts' lock order.
  await lastly(port, `c|${rowKey(row)}`, () => bump.execute({ ...row, delta }))
}

/** Moves one discussion from the count of `before` to that of `after`, when they differ. Call inside the write's transaction. */
export async function moveCount(port: StorePort, before: CountedRow, after: CountedRow): Promise<void> {
  if (rowKey(before) === rowKey(after)) return
  const moves: Array<[CountedRow, number]> = [
    [before, -1],
    [after, 1],
  ]
  for (const [row, delta] of inLockOrder(moves, ([row]) => row)) await bumpCount(port, row, delta)
}

/**
 * Discussions that were `before` and are now `after` (the same site and state, another owner),
 * counted again in the transaction that changed them: each kind of them moved once, by how many
 * there are, every count row bumped in the lock order (rowKey) the other writes take.
 */
export async function moveCounts(port: StorePort, moved: Array<{ before: CountedRow; after: CountedRow }>): Promise<void> {
  const deltas = new Map<string, { row: CountedRow; delta: number }>()
  const add = (row: CountedRow, delta: number) => {
    const key = rowKey(row)
    deltas.set(key, { row, delta: (deltas.get(key)?.delta ?? 0) + delta })
  }
  for (const { before, after } of moved) {
    add(before, -1)
    add(after, 1)
  }
  for (const { row, delta } of inLockOrder([...deltas.values()], (d) => d.row)) await bumpCount(port, row, delta)
}

/** The sums of the counts, one store for both engines (db/port.ts). */
export function createDiscussionCounts(port: StorePort) {
  const { db, tables: { discussionCounts } } = port
  const p = sql.placeholder
  // One prepared sum per shape of scope (state or live, with or without category and visibility),
  // built the first time it is asked for. The sum reads at most (categories x 4 x 2) rows.
  type Sum = { execute(values: Record<string, unknown>): Promise<Array<{ n: number }>> }
  const sums = new Map<string, Sum>()
  function sumFor(scope: CountScope): Sum {
    const states = scope.state === 'live' || scope.state === 'todo' ? scope.state : 'state'
    const key = `${states}${scope.categoryId !== undefined ? 1 : 0}${scope.public !== undefined ? 1 : 0}${scope.assignee !== undefined ? 1 : 0}`
    let statement = sums.get(key)
    if (!statement) {
      const where: SQL[] = [eq(discussionCounts.siteId, p('siteId'))]
      where.push(states === 'live' ? isLive(discussionCounts.state) : states === 'todo' ? inArray(discussionCounts.state, [...SCOPE_STATES.todo]) : eq(discussionCounts.state, p('state')))
      if (scope.categoryId !== undefined) where.push(eq(discussionCounts.categoryId, port.wide(p('categoryId'))))
      if (scope.public !== undefined) where.push(eq(discussionCounts.public, p('public')))
      if (scope.assignee !== undefined) where.push(eq(discussionCounts.assigneeId, port.wide(p('assignee'))))
      statement = db
        .select({ n: sql<number>`CAST(coalesce(sum(${discussionCounts.count}), 0) AS integer)` })
        .from(discussionCounts)
        .where(and(...where))
        .prepare(`discussion_counts_sum_${key}`)
      sums.set(key, statement)
    }
    return statement
  }

  // The queue's tabs: every state and owner of the site (or of one category), in one read of a few
  // rows (4 states x the owners), summed in memory for each tab.
  const byOwner = (category: boolean) =>
    db
      .select({ state: discussionCounts.state, assigneeId: discussionCounts.assigneeId, n: sql<number>`CAST(sum(${discussionCounts.count}) AS integer)` })
      .from(discussionCounts)
      .where(and(eq(discussionCounts.siteId, p('siteId')), category ? eq(discussionCounts.categoryId, port.wide(p('categoryId'))) : undefined))
      .groupBy(discussionCounts.state, discussionCounts.assigneeId)
      .prepare(`discussion_counts_by_owner_${category ? 1 : 0}`)
  const byOwnerStatements = [byOwner(false), byOwner(true)]

  const byCategoryStatement = onFirstUse(() => db
    .select({ categoryId: discussionCounts.categoryId, state: discussionCounts.state, n: sql<number>`CAST(sum(${discussionCounts.count}) AS integer)` })
    .from(discussionCounts)
    .where(eq(discussionCounts.siteId, p('siteId')))
    .groupBy(discussionCounts.categoryId, discussionCounts.state)
    .prepare('discussion_counts_by_category'))

  // The totals asked for with a site's version, by scope, for the last version of each site asked
  // for: another version lets them all go (docs/decisions.md, "One round trip to authenticate").
  const totals = new Map<number, { version: number; byScope: Map<string, number> }>()
  function keptTotals(siteId: number, version: number): Map<string, number> {
    let site = totals.get(siteId)
    if (site?.version !== version) totals.set(siteId, (site = { version, byScope: new Map() }))
    return site.byScope
  }

  return {
    /** Adds delta to the count of discussions like `row`. */
    bump: (row: CountedRow, delta: number) => bumpCount(port, row, delta),

    /** Moves one discussion from the count of `before` to that of `after`, in one transaction. */
    move: (before: CountedRow, after: CountedRow) => port.atomic((tx) => moveCount(tx, before, after)),

    async total(scope: CountScope): Promise<number> {
      const kept = scope.siteVersion === undefined ? undefined : keptTotals(scope.siteId, scope.siteVersion)
      const key = `${scope.state} ${scope.categoryId} ${scope.public} ${scope.assignee}`
      const known = kept?.get(key)
      if (known !== undefined) return known
      // A placeholder is bound as it is given: the flag as 1 or 0, which both engines read as a boolean.
      const [row] = await sumFor(scope).execute({
        siteId: scope.siteId,
        state: scope.state,
        categoryId: scope.categoryId,
        public: scope.public === undefined ? undefined : scope.public ? 1 : 0,
        assignee: scope.assignee,
      })
      // Kept by the version read before it (a later version's total under an earlier version is
      // only ever newer than asked).
      kept?.set(key, row.n)
      return row.n
    },

    /** How many discussions the site (or one category of it) has in each state, by owner. */
    byStateAndOwner(siteId: number, categoryId?: number): Promise<OwnedCount[]> {
      return byOwnerStatements[categoryId === undefined ? 0 : 1]!.execute({ siteId, categoryId })
    },

    /** For each category of the site that has discussions, how many it has in each state. */
    async byCategory(siteId: number): Promise<Map<number, StateCounts>> {
      const counts = new Map<number, StateCounts>()
      for (const row of await byCategoryStatement.execute({ siteId })) {
        const entry = counts.get(row.categoryId) ?? emptyStateCounts()
        entry[row.state] = row.n
        counts.set(row.categoryId, entry)
      }
      return counts
    },
  }
}

export type DiscussionCounts = ReturnType<typeof createDiscussionCounts>
