import { and, asc, desc, eq, gt, gte, inArray, isNull, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import { normalAddress } from '../../lib/mail.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import type { CommentVia, DiscussionState } from '../values.ts'
import { recordChange, type Actor } from './audit.ts'
import { createAuthors } from './discussion-authors.ts'
import { changeDiscussionIn, countNewIn, getIn, holdsExpected, insertDiscussionIn, replyDiscussionIn, type CommentRow, type DiscussionRow, type Expected, type WriteContext } from './discussions.ts'
import { discussionViews } from './discussion-listing.ts'
import { siteChanged } from './changes.ts'
import { lockSite } from './sites.ts'
import { StoreError } from './errors.ts'
import { MAX_PARTICIPANTS } from './mail.ts'
import { indexDiscussion } from './search.ts'
import { noEvents, type EventSink } from './webhooks.ts'

// Merging a discussion into another of its site, and undoing it (issue 71; docs/decisions.md,
// "Merge and split"). A merge moves the comments of the one merged (and so their files) to the end
// of the other, in the order they were written, each marked with where it came from; the one
// merged keeps its number as a pointer (state `merged`, `merged_into`), which the API and the pages
// answer with a redirect and the mail pipeline follows. Its customer and participants join the
// other's participants. The numbers of the target's own comments never change: they are
// addresses the API's clients keep. The last merge into a discussion may be undone for a day,
// from what its row in discussion_merges kept. Each is one transaction that locks both discussions
// in the order of their numbers, as every merge does, then writes each as a change of it
// (changeDiscussionIn): version, counts, SLA, reports, the change feed and the webhooks.

/** How long the last merge into a discussion may be undone. */
export const UNDO_MS = DAY_MS

/** A comment moved by a merge, as its row in discussion_merges keeps it: [id, its number before, its mark before]. */
type Moved = [id: number, number: number, movedFrom: number | null, movedFromNumber: number | null]

/** A merge into a discussion, as its page shows it. */
export interface MergeRow {
  id: number
  fromNumber: number
  fromTitle: string
  comments: number
  createdAt: Date
  /** Whether it may still be undone (the target's last, less than a day ago). */
  undoable: boolean
}

const refusedStates: readonly DiscussionState[] = ['merged', 'deleted', 'spam']

/** Where a comment taken from discussion `from` was written: there, or where its own mark says when it came from a third one. */
const markOf = (c: { number: number; movedFrom: number | null; movedFromNumber: number | null }, from: number) =>
  c.movedFrom === null ? { movedFrom: from, movedFromNumber: c.number } : { movedFrom: c.movedFrom, movedFromNumber: c.movedFromNumber }

/** Refuses a discussion that cannot take part in a merge (or a split: `done`), naming the request's `field`. */
function refuseToMerge(d: DiscussionRow, field: string, done = 'merged'): void {
  if (!refusedStates.includes(d.state)) return
  const why = d.state === 'merged' ? `was merged into discussion ${d.mergedInto}` : `is ${d.state === 'spam' ? 'marked spam' : 'deleted'}`
  throw new StoreError(`discussion ${d.number} ${why}: it cannot be ${done}`, 'conflict', field)
}

/** What a split takes: a comment, and those after it with `following`; the new discussion's title (the discussion's own by default). */
export interface SplitAsked {
  comment: number
  following: boolean
  title?: string
}

export function createMergeStore(port: StorePort, clock: Clock, box: SecretBox, events: EventSink = noEvents) {
  const { attachments, comments, discussionMerges, discussions, mailMessages, participants, users } = port.tables
  const write: WriteContext = { clock, events, authorOf: createAuthors(clock, box) }

  /** Discussion `number` under its row lock; one that is not there is refused naming `field`. */
  async function locked(tx: StorePort, siteId: number, number: number, field: string): Promise<DiscussionRow> {
    try {
      return await getIn(tx, siteId, number, true)
    } catch (error) {
      if (field !== 'number' && error instanceof StoreError && error.code === 'not_found') throw new StoreError(`is ${number}, which is not a discussion of this site`, 'invalid', field)
      throw error
    }
  }

  /** Both discussions under their row locks, taken in the order of their numbers (two merges at once wait, never deadlock). */
  async function lockBoth(tx: StorePort, siteId: number, number: number, into: number): Promise<[DiscussionRow, DiscussionRow]> {
    const first = Math.min(number, into)
    const a = await locked(tx, siteId, first, first === number ? 'number' : 'into')
    const b = await locked(tx, siteId, first === number ? into : number, first === number ? 'into' : 'number')
    return first === number ? [a, b] : [b, a]
  }

  /** Whether the team owes the discussion an answer: its newest public comment, by when it was written, is its customer's. */
  async function owed(tx: StorePort, discussionId: number): Promise<boolean> {
    const [newest] = await tx.db
      .select({ bySupporter: comments.bySupporter })
      .from(comments)
      .where(and(eq(comments.discussionId, discussionId), eq(comments.internal, false)))
      .orderBy(desc(comments.createdAt), desc(comments.number))
      .limit(1)
    return newest !== undefined && !newest.bySupporter
  }

  /** The state that follows an answer now owed: a resolved discussion the team owes an answer is open again. */
  const stateOwing = (d: DiscussionRow, owing: boolean): DiscussionState => (owing && d.state === 'resolved' ? 'open' : d.state)

  /** Shifts the comments of a discussion numbered above `above` down by `by` (the unique index holds at every row: through negative numbers). */
  async function closeGap(tx: StorePort, discussionId: number, above: number, by: number): Promise<void> {
    const mine = and(eq(comments.discussionId, discussionId), gt(comments.number, above))
    await tx.db.update(comments).set({ number: sql`-${comments.number}` }).where(mine)
    await tx.db.update(comments).set({ number: sql`-${comments.number} - ${by}` }).where(and(eq(comments.discussionId, discussionId), sql`${comments.number} < 0`))
  }

  /** The merge into `intoId` that may be undone now: its last, not undone, less than UNDO_MS ago. */
  async function undoable(tx: StorePort, intoId: number) {
    const [last] = await tx.db.select().from(discussionMerges).where(and(eq(discussionMerges.intoId, intoId), isNull(discussionMerges.undoneAt))).orderBy(desc(discussionMerges.id)).limit(1)
    return last && clock() - last.createdAt.getTime() < UNDO_MS ? last : undefined
  }

  return {
    /**
     * Merges discussion `number` into discussion `into` of the same site; the discussion merged
     * into, as it is after. `expected` is the merged one's If-Match. Refused: the discussion
     * itself, one that is not the site's (invalid `into`), and a merged, deleted or spam one (conflict).
     */
    merge(siteId: number, number: number, into: number, by: Actor, expected?: Expected): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        if (into === number) throw new StoreError('is the discussion itself: name another one', 'invalid', 'into')
        const [from, target] = await lockBoth(tx, siteId, number, into)
        holdsExpected(from, expected)
        refuseToMerge(from, 'number')
        refuseToMerge(target, 'into')
        const taken = await tx.db
          .select({ id: comments.id, number: comments.number, movedFrom: comments.movedFrom, movedFromNumber: comments.movedFromNumber, bySupporter: comments.bySupporter })
          .from(comments)
          .where(eq(comments.discussionId, from.id))
          .orderBy(asc(comments.createdAt), asc(comments.number))
        const moved: Moved[] = []
        for (const [i, c] of taken.entries()) {
          await tx.db.update(comments).set({ discussionId: target.id, number: target.commentsCount + 1 + i, ...markOf(c, from.number) }).where(eq(comments.id, c.id))
          moved.push([c.id, c.number, c.movedFrom, c.movedFromNumber])
        }
        // Its customer (unless the staff started it for nobody) and its participants join the target's.
        const theirs = await tx.db.select({ email: participants.email, name: participants.name }).from(participants).where(eq(participants.discussionId, from.id)).orderBy(asc(participants.id))
        const opening = taken.find((c) => c.number === 1)
        const people = [...(opening && !opening.bySupporter ? [{ email: from.authorEmail, name: from.authorName }] : []), ...theirs]
        const there = new Set((await tx.db.select({ email: participants.email }).from(participants).where(eq(participants.discussionId, target.id))).map((p) => p.email))
        const joined: string[] = []
        const now = new Date(clock())
        for (const person of people) {
          const email = normalAddress(person.email)
          if (there.has(email) || email === normalAddress(target.authorEmail) || there.size >= MAX_PARTICIPANTS) continue
          await tx.db.insert(participants).values({ siteId, discussionId: target.id, email, name: person.name, addedBy: 'team', createdAt: now })
          there.add(email)
          joined.push(email)
        }
        await tx.db.insert(discussionMerges).values({ siteId, fromId: from.id, intoId: target.id, stateBefore: from.state, comments: JSON.stringify(moved), participants: JSON.stringify(joined), byId: by.id, createdAt: now })
        await changeDiscussionIn(tx, write, siteId, from.number, async () => ({ state: 'merged', mergedInto: target.number, commentsCount: 0, awaitingTeam: false }), undefined, () => 'discussion.merged')
        const owing = await owed(tx, target.id)
        const lastUpdatedAt = new Date(Math.max(target.lastUpdatedAt.getTime(), from.lastUpdatedAt.getTime()))
        const after = await changeDiscussionIn(tx, write, siteId, target.number, async (_, d) => ({ commentsCount: d.commentsCount + moved.length, awaitingTeam: owing, lastUpdatedAt, state: stateOwing(d, owing) }))
        await indexDiscussion(tx, after)
        await recordChange(tx, clock, by, siteId, 'discussion.merged', `#${from.number} ${from.title}`, { into: `#${target.number} ${target.title}`, comments: moved.length })
        return after
      })
    },

    /**
     * Undoes the merge of discussion `number`: its comments go back to it with their numbers (the
     * target's later comments take theirs back in turn), the participants it brought leave the
     * target, and it is as it was before; the discussion back, as it is after. Refused (conflict)
     * when it is not merged, when the target was merged since or took another merge after it, and a
     * day after it was made.
     */
    unmerge(siteId: number, number: number, by: Actor): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        const seen = await getIn(tx, siteId, number)
        if (seen.state !== 'merged') throw new StoreError(`discussion ${number} is not merged into another`, 'conflict', 'number')
        const [from, target] = await lockBoth(tx, siteId, number, seen.mergedInto!)
        const merge = await undoable(tx, target.id)
        if (from.state !== 'merged' || !merge || merge.fromId !== from.id) {
          throw new StoreError(`only the last merge into discussion ${target.number}, for a day after it, can be undone`, 'conflict', 'number')
        }
        refuseToMerge(target, 'number')
        const moved = JSON.parse(merge.comments) as Moved[]
        // The moved comments leave the target's end, or its middle once others came after them: those
        // take the numbers left free (they sat after the moved ones, which were numbered in a row).
        const placed = await tx.db.select({ number: comments.number }).from(comments).where(and(eq(comments.discussionId, target.id), inArray(comments.id, moved.map(([id]) => id))))
        for (const [id, n, movedFrom, movedFromNumber] of moved) await tx.db.update(comments).set({ discussionId: from.id, number: n, movedFrom, movedFromNumber }).where(and(eq(comments.id, id), eq(comments.discussionId, target.id)))
        await closeGap(tx, target.id, Math.max(...placed.map((c) => c.number)), placed.length)
        for (const email of JSON.parse(merge.participants) as string[]) await tx.db.delete(participants).where(and(eq(participants.discussionId, target.id), eq(participants.email, email)))
        await tx.db.update(discussionMerges).set({ undoneAt: new Date(clock()) }).where(eq(discussionMerges.id, merge.id))
        const owingThere = await owed(tx, target.id)
        await changeDiscussionIn(tx, write, siteId, target.number, async (_, d) => ({ commentsCount: d.commentsCount - placed.length, awaitingTeam: owingThere }))
        await indexDiscussion(tx, target)
        const owingHere = await owed(tx, from.id)
        const back = await changeDiscussionIn(tx, write, siteId, from.number, async () => ({ state: merge.stateBefore, mergedInto: null, commentsCount: moved.length, awaitingTeam: owingHere }), undefined, () => 'discussion.restored')
        await indexDiscussion(tx, back)
        await recordChange(tx, clock, by, siteId, 'discussion.unmerged', `#${from.number} ${from.title}`, { from: `#${target.number} ${target.title}`, comments: moved.length })
        return back
      })
    },

    /**
     * Splits discussion `number`: comment `asked.comment` (and those after it, with `following`)
     * become a new discussion of the same category, visibility and owner, whose customer is the
     * comment's author (the discussion's own when the staff wrote it). The comments keep their files
     * and their mail thread, each marked where it was written; after one taken alone, the later
     * comments take the number left free. The new discussion names the one it came from
     * (split_from), and a note of `supporterId` in that one names the new one: the link both ways.
     * The opening post stays (invalid), and so does an internal note (a discussion opens with what
     * its customer sees); a merged, deleted or spam discussion is not split (conflict).
     */
    split(siteId: number, number: number, asked: SplitAsked, supporterId: number, via: CommentVia, by: Actor, expected?: Expected): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        const from = await getIn(tx, siteId, number, true)
        holdsExpected(from, expected)
        refuseToMerge(from, 'number', 'split')
        if (asked.comment === 1) throw new StoreError('is the opening post, which stays: split from a later comment', 'invalid', 'comment')
        const view = discussionViews(tx).comment
        const taken = await tx.db
          .select(view)
          .from(comments)
          .innerJoin(users, eq(users.id, comments.authorId))
          .where(and(eq(comments.discussionId, from.id), asked.following ? gte(comments.number, tx.wide(asked.comment)) : eq(comments.number, tx.wide(asked.comment))))
          .orderBy(asc(comments.number))
        const first = taken[0]
        if (!first) throw new StoreError(`discussion ${number} has no comment ${asked.comment}`, 'not_found', 'comment')
        if (first.internal) throw new StoreError('is an internal note: a discussion starts with what its customer sees', 'invalid', 'comment')
        // The site's row before any count's or report's row, as in every write (db/stores/discussions.ts).
        await lockSite(tx, siteId)
        const now = new Date(clock())
        const customer = first.bySupporter ? { id: from.authorId, email: from.authorEmail } : { id: first.authorId, email: first.authorEmail }
        const answered = taken.some((c) => c.bySupporter && !c.internal)
        const newestPublic = taken.filter((c) => !c.internal).at(-1)!
        const { discussion, schedule } = await insertDiscussionIn(tx, {
          siteId,
          categoryId: from.categoryId,
          title: (asked.title ?? from.title).trim(),
          state: answered ? 'open' : 'new',
          stateBefore: null,
          public: from.public,
          authorId: customer.id,
          customerEmail: customer.email,
          awaitingTeam: !newestPublic.bySupporter,
          startedOnTheWeb: false,
          assigneeId: from.assigneeId,
          channel: from.channel,
          splitFrom: from.number,
          // The same customer, the same order or plan: its fields' values go with it.
          fields: from.fields,
          commentsCount: taken.length,
          at: now,
        })
        for (const [i, c] of taken.entries()) {
          await tx.db.update(comments).set({ discussionId: discussion.id, number: i + 1, ...markOf(c, from.number) }).where(eq(comments.id, c.id))
        }
        const ids = taken.map((c) => c.id)
        // A customer's answer to a message taken along joins the new discussion.
        await tx.db.update(mailMessages).set({ discussionId: discussion.id }).where(inArray(mailMessages.commentId, ids))
        if (!asked.following) await closeGap(tx, from.id, asked.comment, 1)
        await changeDiscussionIn(tx, write, siteId, from.number, async (tx, d) => ({ commentsCount: d.commentsCount - taken.length, awaitingTeam: await owed(tx, from.id) }))
        await replyDiscussionIn(tx, write, { siteId, number: from.number, body: `Split into discussion #${discussion.number}: ${discussion.title}`, internal: true, via, supporterId })
        await countNewIn(tx, discussion, schedule)
        await indexDiscussion(tx, discussion)
        await siteChanged(tx, { siteId, kind: 'discussion.created', discussionId: discussion.id, commentId: first.id, at: now })
        const [file] = await tx.db.select({ id: attachments.id }).from(attachments).where(eq(attachments.commentId, first.id)).limit(1)
        const opening: CommentRow = { ...first, discussionId: discussion.id, number: 1, ...markOf(first, from.number) }
        await events(tx, { type: 'discussion.created', siteId, discussion, comment: opening, files: file !== undefined })
        await recordChange(tx, clock, by, siteId, 'discussion.split', `#${from.number} ${from.title}`, { into: `#${discussion.number} ${discussion.title}`, comments: taken.length })
        return getIn(tx, siteId, discussion.number)
      })
    },

    /** The merges into a discussion, newest first, each saying whether it may be undone now. */
    async mergesInto(discussionId: number): Promise<MergeRow[]> {
      const rows = await port.db
        .select({ id: discussionMerges.id, fromNumber: discussions.number, fromTitle: discussions.title, comments: discussionMerges.comments, createdAt: discussionMerges.createdAt, undoneAt: discussionMerges.undoneAt })
        .from(discussionMerges)
        .innerJoin(discussions, eq(discussions.id, discussionMerges.fromId))
        .where(eq(discussionMerges.intoId, port.wide(discussionId)))
        .orderBy(desc(discussionMerges.id))
      const open = rows.filter((r) => r.undoneAt === null)
      return open.map((r, i) => ({ id: r.id, fromNumber: r.fromNumber, fromTitle: r.fromTitle, comments: (JSON.parse(r.comments) as Moved[]).length, createdAt: r.createdAt, undoable: i === 0 && clock() - r.createdAt.getTime() < UNDO_MS }))
    },
  }
}

export type MergeStore = ReturnType<typeof createMergeStore>
