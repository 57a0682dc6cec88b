import { and, asc, eq, gt, inArray, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { ChangeKind } from '../values.ts'
import { discussionViews, type CommentRow, type DiscussionRow } from './discussion-listing.ts'
import { bumpSiteVersion } from './sites.ts'

// The change feed (docs/decisions.md, "Safe retries, cursors and the change feed"): every create,
// change, comment, delete and restore of a site's discussions, one row each, numbered per site in
// the order the changes committed. The number is the highest so far plus one, read and written in
// the change's transaction while it holds the site's row lock (taken by the version's bump just
// before, `siteChanged`), so a transaction that would number after another waits for that one to
// commit or roll back: a reader that has seen number n never later finds a row under n appear.

/** A change as the feed keeps it. */
export interface Change {
  seq: number
  kind: ChangeKind
  discussionId: number
  commentId: number | null
  at: Date
}

/** What a change to a discussion records, beside the site's version. */
export interface ChangeOf {
  siteId: number
  kind: ChangeKind
  discussionId: number
  commentId?: number
  at: Date
}

/**
 * The site's version moves on (sites.ts) and the feed records the change, in the transaction of
 * `port`: every change to a discussion calls this once, so neither happens without the other.
 */
export async function siteChanged(port: StorePort, change: ChangeOf): Promise<void> {
  await bumpSiteVersion(port, change.siteId)
  await recordChanges(port, change.siteId, [change])
}

/**
 * Records changes of one site, numbered in order after its last; the caller holds the site's row
 * lock (its version moved in this transaction), which makes the numbers the commit order.
 */
export async function recordChanges(port: StorePort, siteId: number, changes: Array<Omit<ChangeOf, 'siteId'>>): Promise<void> {
  const { discussionChanges } = port.tables
  const p = sql.placeholder
  const next = port.prepared('changes_insert', (db) =>
    db
      .insert(discussionChanges)
      .values({
        siteId: p('siteId'),
        seq: sql`(select coalesce(max(${discussionChanges.seq}), 0) + 1 from ${discussionChanges} where ${discussionChanges.siteId} = ${p('siteId')})`,
        kind: p('kind'),
        discussionId: p('discussionId'),
        commentId: p('commentId'),
        at: p('at'),
      })
      .prepare('changes_insert'),
  )
  for (const change of changes) {
    await next.execute({ siteId, kind: change.kind, discussionId: change.discussionId, commentId: change.commentId ?? null, at: change.at })
  }
}

/** The feed's reads: a page of a site's changes after a number, and the rows they are about. */
export function createChangeStore(port: StorePort) {
  const { db, tables: { comments, discussionChanges, discussions, users } } = port
  const view = discussionViews(port)
  const p = sql.placeholder
  const after = db
    .select({ seq: discussionChanges.seq, kind: discussionChanges.kind, discussionId: discussionChanges.discussionId, commentId: discussionChanges.commentId, at: discussionChanges.at })
    .from(discussionChanges)
    .where(and(eq(discussionChanges.siteId, p('siteId')), gt(discussionChanges.seq, port.wide(p('after')))))
    .orderBy(asc(discussionChanges.seq))
    .limit(p('limit'))
    .prepare('changes_after')

  return {
    /** At most `limit` changes of the site numbered above `after`, in order. */
    after(siteId: number, seq: number, limit: number): Promise<Change[]> {
      return after.execute({ siteId, after: seq, limit })
    },

    /** The discussions and comments a page of changes is about, as they are now, by id. */
    async about(changes: Change[]): Promise<{ discussions: Map<number, DiscussionRow>; comments: Map<number, CommentRow> }> {
      const discussionIds = [...new Set(changes.map((c) => c.discussionId))]
      const commentIds = [...new Set(changes.flatMap((c) => (c.commentId === null ? [] : [c.commentId])))]
      const [discussionRows, commentRows] = await Promise.all([
        discussionIds.length === 0
          ? []
          : db.select(view.discussion).from(discussions).innerJoin(users, eq(users.id, discussions.authorId)).where(inArray(discussions.id, discussionIds)),
        commentIds.length === 0 ? [] : db.select(view.comment).from(comments).innerJoin(users, eq(users.id, comments.authorId)).where(inArray(comments.id, commentIds)),
      ])
      return { discussions: new Map(discussionRows.map((d) => [d.id, d])), comments: new Map(commentRows.map((c) => [c.id, c])) }
    },
  }
}

export type ChangeStore = ReturnType<typeof createChangeStore>

/**
 * The seed's batch of discussions as changes (db/sqlite/seed.ts, db/postgres/seed.ts): each
 * discussion of the site numbered `first` or higher, created, in number order after the site's
 * last change; run in the batch's transaction, which holds the site's lock.
 */
export function seededChanges(tables: Pick<StorePort['tables'], 'discussionChanges' | 'discussions'>, siteId: number, first: number) {
  const { discussionChanges, discussions } = tables
  return sql`insert into ${discussionChanges} (site_id, seq, kind, discussion_id, comment_id, at)
    select ${discussions.siteId}, (select coalesce(max(${discussionChanges.seq}), 0) from ${discussionChanges} where ${discussionChanges.siteId} = ${siteId})
      + row_number() over (order by ${discussions.number}), 'discussion.created', ${discussions.id}, null, ${discussions.createdAt}
    from ${discussions} where ${discussions.siteId} = ${siteId} and ${discussions.number} >= ${first}`
}
