import { and, eq, ne, sql, type SQL } from '../../drizzle.ts'
import type { Async } from '../../stores/async.ts'
import {
  emptyStateCounts,
  type CountedRow,
  type CountScope,
  type DiscussionCounts,
  type StateCounts,
} from '../../stores/discussion-counts.ts'
import type { PgDb } from '../client.ts'
import { discussionCounts } from '../schema.ts'
import { big } from './categories.ts'
import type { PgExecutor } from './executor.ts'

// How many discussions a site has per category, state and visibility, on PostgreSQL
// (db/stores/discussion-counts.ts). Every write that creates a discussion or changes one of those
// three moves the counts inside its own transaction, with one atomic upsert per count row, so the
// counts are exactly as current as the rows they count whatever other processes do meanwhile.

/** Where a count row sorts: a transaction takes its count rows' locks in this order, so two never wait on each other. */
function rowKey(row: CountedRow): string {
  return `${row.categoryId}|${row.state}|${row.public ? 1 : 0}`
}

/** Adds delta to the count of discussions like `row`, in one atomic upsert. Call inside the write's transaction. */
export async function bumpCount(q: PgExecutor, row: CountedRow, delta: number): Promise<void> {
  await q
    .insert(discussionCounts)
    .values({ siteId: row.siteId, categoryId: row.categoryId, state: row.state, public: row.public, count: delta })
    .onConflictDoUpdate({
      target: [discussionCounts.siteId, discussionCounts.categoryId, discussionCounts.state, discussionCounts.public],
      set: { count: sql`${discussionCounts.count} + excluded.count` },
    })
}

/** Moves one discussion from the count of `before` to that of `after`, when they differ. Call inside the write's transaction. */
export async function moveCount(q: PgExecutor, before: CountedRow, after: CountedRow): Promise<void> {
  if (before.categoryId === after.categoryId && before.state === after.state && before.public === after.public) return
  const moves: Array<[CountedRow, number]> = [
    [before, -1],
    [after, 1],
  ]
  moves.sort(([a], [b]) => (rowKey(a) < rowKey(b) ? -1 : 1))
  for (const [row, delta] of moves) await bumpCount(q, row, delta)
}

export function createPgDiscussionCounts(db: PgDb) {
  // One prepared sum per shape of scope (state or live, with or without category and visibility),
  // built the first time it is asked for. The sum reads at most (categories x 4 x 2) rows.
  type Sum = { execute(values: Record<string, unknown>): Promise<Array<{ n: number }>> }
  const sums = new Map<string, Sum>()
  function sumFor(scope: CountScope): Sum {
    const key = `${scope.state === 'live' ? 'live' : 'state'}${scope.categoryId !== undefined ? 1 : 0}${scope.public !== undefined ? 1 : 0}`
    let statement = sums.get(key)
    if (!statement) {
      const where: SQL[] = [eq(discussionCounts.siteId, sql.placeholder('siteId'))]
      where.push(
        scope.state === 'live' ? ne(discussionCounts.state, 'deleted') : eq(discussionCounts.state, sql.placeholder('state')),
      )
      if (scope.categoryId !== undefined) where.push(eq(discussionCounts.categoryId, big(sql.placeholder('categoryId'))))
      if (scope.public !== undefined) where.push(eq(discussionCounts.public, sql.placeholder('public')))
      statement = db
        .select({ n: sql<number>`coalesce(sum(${discussionCounts.count}), 0)::integer` })
        .from(discussionCounts)
        .where(and(...where))
        .prepare(`sd_discussion_counts_sum_${key}`)
      sums.set(key, statement)
    }
    return statement
  }

  const byCategoryStatement = db
    .select({
      categoryId: discussionCounts.categoryId,
      state: discussionCounts.state,
      n: sql<number>`sum(${discussionCounts.count})::integer`,
    })
    .from(discussionCounts)
    .where(eq(discussionCounts.siteId, sql.placeholder('siteId')))
    .groupBy(discussionCounts.categoryId, discussionCounts.state)
    .prepare('sd_discussion_counts_by_category')

  async function total(scope: CountScope): Promise<number> {
    const [row] = await sumFor(scope).execute({
      siteId: scope.siteId,
      state: scope.state,
      categoryId: scope.categoryId,
      public: scope.public,
    })
    return row.n
  }

  async function byCategory(siteId: number): Promise<Map<number, StateCounts>> {
    const counts = new Map<number, StateCounts>()
    for (const row of await byCategoryStatement.execute({ siteId })) {
      const entry = counts.get(row.categoryId) ?? emptyStateCounts()
      entry[row.state] = row.n
      counts.set(row.categoryId, entry)
    }
    return counts
  }

  /** The counts as the store's interface shows them (each write there a transaction of its own). */
  const face: Async<DiscussionCounts> = {
    bump: (row, delta) => bumpCount(db, row, delta),
    move: (before, after) => db.transaction((tx) => moveCount(tx, before, after)),
    total,
    byCategory,
  }

  return { total, byCategory, face }
}

export type PgDiscussionCounts = ReturnType<typeof createPgDiscussionCounts>
