import { and, asc, eq, gt, inArray, sql } from '../drizzle.ts'
import { lastly, namedStatement, onFirstUse, siteOrder, type StorePort } from '../port.ts'
import { siteMovedBy } from './sites.ts'
import type { ChangeKind } from '../values.ts'
import { discussionViews, type CommentRow, type DiscussionRow } from './discussion-listing.ts'

// The change feed (docs/decisions.md, "Safe retries, cursors and the change feed"): every create,
// change, comment, delete and restore of a site's discussions, one row each, numbered per site in
// the order the changes committed. The numbers are the site's (its row's changes_seq), taken in the
// change's transaction by the statement that moves the site's version and so takes the site's row
// lock (`takeSite`, `siteChanged`), so a transaction that would number after another waits for
// that one to commit or roll back: a reader that has seen number n never later finds a row under n
// appear. A number taken by a transaction that rolls back is taken back with it.

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
 * Takes the site's row in the transaction of `port`, until it ends, by moving the site's version on
 * (every change to what the API shows of the site does: docs/decisions.md, "Conditional requests"),
 * and with it the next `changes` numbers of its feed: the last number taken (`last`), and the site's
 * rules' version as it is under the row's lock (db/stores/sites.ts, bumpRulesVersion). The first lock of
 * every write of a site's discussions: the counts' rows and the reports' day rows are taken after it.
 */
export async function takeSite(port: StorePort, siteId: number, changes: number): Promise<{ last: number; rulesVersion: number }> {
  const { sites } = port.tables
  const p = sql.placeholder
  const take = port.prepared('changes_take_site', (db) =>
    db
      .update(sites)
      .set({ version: sql`${sites.version} + 1`, changesSeq: sql`${sites.changesSeq} + ${p('changes')}` })
      .where(eq(sites.id, p('siteId')))
      .returning({ last: sites.changesSeq, version: sites.version, rulesVersion: sites.rulesVersion })
      .prepare('changes_take_site'),
  )
  const [{ last, version, rulesVersion }] = await take.execute({ siteId, changes })
  port.onCommitted?.(() => siteMovedBy(port, siteId, { version, changesSeq: last }))
  return { last, rulesVersion }
}

/** Records changes of one site numbered up to `last`, the last of the numbers takeSite took for them. */
export async function recordChangesTo(port: StorePort, siteId: number, last: number, changes: Array<Omit<ChangeOf, 'siteId'>>): Promise<void> {
  const { discussionChanges } = port.tables
  const p = sql.placeholder
  const insert = port.prepared('changes_insert', (db) =>
    db
      .insert(discussionChanges)
      .values({ siteId: p('siteId'), seq: p('seq'), kind: p('kind'), discussionId: p('discussionId'), commentId: p('commentId'), at: p('at') })
      .prepare('changes_insert'),
  )
  let seq = last - changes.length
  for (const change of changes) {
    const row = { siteId, seq: ++seq, kind: change.kind, discussionId: change.discussionId, commentId: change.commentId ?? null, at: change.at }
    // Numbered already: one of the transaction's last statements, behind the site's row it holds.
    await lastly(port, 'b', () => insert.execute(row))
  }
}

/** Takes the site's row (takeSite) and records its changes, numbered in order after its last. */
export async function recordChanges(port: StorePort, siteId: number, changes: Array<Omit<ChangeOf, 'siteId'>>): Promise<void> {
  await recordChangesTo(port, siteId, (await takeSite(port, siteId, changes.length)).last, changes)
}

/**
 * The site's version moves on and the feed records the change, in the transaction of `port`: every
 * change to a discussion calls this once, so neither happens without the other. On PostgreSQL one
 * statement, one of the transaction's last (`lastly`), so that the site's row is taken just before
 * the COMMIT that gives it back: what follows it is what the site's other writes wait for
 * (docs/decisions.md, "Writes as light as reads").
 */
export async function siteChanged(port: StorePort, change: ChangeOf): Promise<void> {
  if (port.kind === 'sqlite') return recordChanges(port, change.siteId, [change])
  const { discussionChanges, sites } = port.tables
  const p = sql.placeholder
  const changed = port.prepared('changes_site_changed', (db) =>
    namedStatement(db, 'changes_site_changed', sql`
      with taken as (update ${sites} set version = version + 1, changes_seq = changes_seq + 1 where id = ${p('siteId')} returning changes_seq, version)
      insert into ${discussionChanges} (site_id, seq, kind, discussion_id, comment_id, at)
      select ${p('siteId')}, taken.changes_seq, ${p('kind')}, ${p('discussionId')}, ${p('commentId')}, ${p('at')} from taken
      returning seq, (select version from taken) as version`),
  )
  const values = { siteId: change.siteId, kind: change.kind, discussionId: change.discussionId, commentId: change.commentId ?? null, at: change.at }
  await lastly(port, siteOrder(change.siteId), async () => {
    const { rows: [moved] } = await changed.execute(values)
    if (moved) port.onCommitted?.(() => siteMovedBy(port, change.siteId, { version: Number(moved.version), changesSeq: Number(moved.seq) }))
  })
}

/** The feed's reads: a page of a site's changes after a number, and the rows they are about. */
export function createChangeStore(port: StorePort) {
  const { db, tables: { comments, discussionChanges, discussions, users } } = port
  const view = discussionViews(port)
  const p = sql.placeholder
  const after = onFirstUse(() => db
    .select({ seq: discussionChanges.seq, kind: discussionChanges.kind, discussionId: discussionChanges.discussionId, commentId: discussionChanges.commentId, at: discussionChanges.at })
    .from(discussionChanges)
    .where(and(eq(discussionChanges.siteId, p('siteId')), gt(discussionChanges.seq, port.wide(p('after')))))
    .orderBy(asc(discussionChanges.seq))
    .limit(p('limit'))
    .prepare('changes_after'))

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
 * last change; run in the batch's transaction, which holds the site's lock, and followed by
 * seededChangesTaken.
 */
export function seededChanges(tables: Pick<StorePort['tables'], 'discussionChanges' | 'discussions'>, siteId: number, first: number) {
  const { discussionChanges, discussions } = tables
  return sql`insert into ${discussionChanges} (site_id, seq, kind, discussion_id, comment_id, at)
    select ${discussions.siteId}, (select coalesce(max(${discussionChanges.seq}), 0) from ${discussionChanges} where ${discussionChanges.siteId} = ${siteId})
      + row_number() over (order by ${discussions.number}), 'discussion.created', ${discussions.id}, null, ${discussions.createdAt}
    from ${discussions} where ${discussions.siteId} = ${siteId} and ${discussions.number} >= ${first}`
}

/** After seededChanges: the site's feed numbers on from the last change the seed recorded (takeSite). */
export function seededChangesTaken(tables: Pick<StorePort['tables'], 'discussionChanges' | 'sites'>, siteId: number) {
  const { discussionChanges, sites } = tables
  return sql`update ${sites} set changes_seq = (select coalesce(max(${discussionChanges.seq}), 0) from ${discussionChanges} where ${discussionChanges.siteId} = ${siteId}) where ${sites.id} = ${siteId}`
}
