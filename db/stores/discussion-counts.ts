import { and, eq, ne, sql, type SQL } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { discussionCounts } from '../sqlite/schema.ts'
import type { DiscussionState } from '../values.ts'

// How many discussions a site has per category, state and visibility (db/sqlite/schema.ts). Every write
// that creates a discussion or changes one of those three calls bump() inside its own transaction,
// so the counts are exactly as current as the rows they count.

/** `live` is every state but deleted: what the plain listing shows. */
export type StateScope = DiscussionState | 'live'

export interface CountScope {
  siteId: number
  state: StateScope
  categoryId?: number
  public?: boolean
}

export interface CountedRow {
  siteId: number
  categoryId: number
  state: DiscussionState
  public: boolean
}

export type StateCounts = Record<DiscussionState, number>

export function emptyStateCounts(): StateCounts {
  return { new: 0, open: 0, resolved: 0, deleted: 0 }
}

export function createDiscussionCounts(db: Db) {
  const bumpStatement = db
    .insert(discussionCounts)
    .values({
      siteId: sql.placeholder('siteId'),
      categoryId: sql.placeholder('categoryId'),
      state: sql.placeholder('state'),
      public: sql.placeholder('public'),
      count: sql.placeholder('delta'),
    })
    .onConflictDoUpdate({
      target: [discussionCounts.siteId, discussionCounts.categoryId, discussionCounts.state, discussionCounts.public],
      set: { count: sql`${discussionCounts.count} + excluded.count` },
    })
    .prepare()

  // One prepared sum per shape of scope (state or live, with or without category and visibility),
  // built the first time it is asked for. The sum reads at most (categories x 4 x 2) rows.
  const sums = new Map<string, { get(values: Record<string, unknown>): { n: number } | undefined }>()
  function sumFor(scope: CountScope) {
    const key = `${scope.state === 'live' ? 'live' : 'state'}|${scope.categoryId !== undefined}|${scope.public !== undefined}`
    let statement = sums.get(key)
    if (!statement) {
      const where: SQL[] = [eq(discussionCounts.siteId, sql.placeholder('siteId'))]
      where.push(
        scope.state === 'live'
          ? ne(discussionCounts.state, 'deleted')
          : eq(discussionCounts.state, sql.placeholder('state')),
      )
      if (scope.categoryId !== undefined) where.push(eq(discussionCounts.categoryId, sql.placeholder('categoryId')))
      if (scope.public !== undefined) where.push(eq(discussionCounts.public, sql.placeholder('public')))
      statement = db
        .select({ n: sql<number>`coalesce(sum(${discussionCounts.count}), 0)` })
        .from(discussionCounts)
        .where(and(...where))
        .prepare()
      sums.set(key, statement)
    }
    return statement
  }

  const byCategory = db
    .select({ categoryId: discussionCounts.categoryId, state: discussionCounts.state, n: sql<number>`sum(${discussionCounts.count})` })
    .from(discussionCounts)
    .where(eq(discussionCounts.siteId, sql.placeholder('siteId')))
    .groupBy(discussionCounts.categoryId, discussionCounts.state)
    .prepare()

  /** Adds delta to the count of discussions like `row`. Call inside the write's transaction. */
  function bump(row: CountedRow, delta: number): void {
    bumpStatement.run({ ...row, public: row.public ? 1 : 0, delta })
  }

  return {
    bump,

    /** Moves one discussion from the count of `before` to that of `after`, when they differ. */
    move(before: CountedRow, after: CountedRow): void {
      if (before.categoryId === after.categoryId && before.state === after.state && before.public === after.public) return
      bump(before, -1)
      bump(after, 1)
    },

    total(scope: CountScope): number {
      return sumFor(scope).get({
        siteId: scope.siteId,
        state: scope.state,
        categoryId: scope.categoryId,
        public: scope.public === undefined ? undefined : scope.public ? 1 : 0,
      })!.n
    },

    /** For each category of the site that has discussions, how many it has in each state. */
    byCategory(siteId: number): Map<number, StateCounts> {
      const counts = new Map<number, StateCounts>()
      for (const row of byCategory.all({ siteId })) {
        const entry = counts.get(row.categoryId) ?? emptyStateCounts()
        entry[row.state] = row.n
        counts.set(row.categoryId, entry)
      }
      return counts
    },
  }
}

export type DiscussionCounts = ReturnType<typeof createDiscussionCounts>
