import { and, asc, eq, getTableColumns, sql } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import type { SecretBox } from '../../../lib/secret-box.ts'
import { slugify } from '../../stores/categories.ts'
import type { CountedRow } from '../../stores/discussion-counts.ts'
import { initialState, stateAfterAction, stateAfterComment, type Action } from '../../stores/discussion-states.ts'
import type {
  CommentRow,
  Discussion,
  DiscussionChanges,
  DiscussionRow,
  DiscussionStore,
  NewComment,
  NewDiscussion,
} from '../../stores/discussions.ts'
import { StoreError } from '../../stores/errors.ts'
import type { DiscussionState } from '../../values.ts'
import type { PgDb } from '../client.ts'
import { categories, comments, discussions, users } from '../schema.ts'
import { big, lockSite } from './categories.ts'
import { createPgAuthors, type PgAuthors } from './discussion-authors.ts'
import { bumpCount, createPgDiscussionCounts, moveCount } from './discussion-counts.ts'
import { createPgDiscussionListing, pgDiscussionView } from './discussion-listing.ts'
import type { PgExecutor } from './executor.ts'

// The discussions on PostgreSQL, behaving as db/stores/discussions.ts does. Every write is one
// transaction (READ COMMITTED) that first locks what it decides on: a create the site's row, so
// two creates on one site take turns and the next number is read after the previous one
// committed; a reply or a change the discussion's row (FOR NO KEY UPDATE, the lock PostgreSQL's
// own UPDATE takes). The counts move in the same transaction, so they commit with the rows.
// Numbers and ids a request names are compared as bigint: one past PostgreSQL's integer is then
// simply not found, as on SQLite, instead of an out-of-range error.

const commentView = { ...getTableColumns(comments), authorEmail: users.email, authorName: users.name }

const counted = (d: { siteId: number; categoryId: number; state: DiscussionState; public: boolean }): CountedRow => ({
  siteId: d.siteId,
  categoryId: d.categoryId,
  state: d.state,
  public: d.public,
})

function byNumber(q: PgExecutor, siteId: number, number: number) {
  return q
    .select(pgDiscussionView)
    .from(discussions)
    .innerJoin(users, eq(users.id, discussions.authorId))
    .where(and(eq(discussions.siteId, siteId), eq(discussions.number, big(number))))
}

function notFound(number: number): StoreError {
  return new StoreError(`there is no discussion ${number} on this site`, 'not_found', 'number')
}

/** The discussion, read in the caller's transaction; `lock` holds its row until that ends. */
async function getIn(q: PgExecutor, siteId: number, number: number, lock = false): Promise<DiscussionRow> {
  const query = byNumber(q, siteId, number)
  const [discussion] = lock ? await query.for('no key update', { of: discussions }) : await query
  if (!discussion) throw notFound(number)
  return discussion
}

async function commentIn(q: PgExecutor, discussionId: number, number: number): Promise<CommentRow | undefined> {
  const [comment] = await q
    .select(commentView)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(and(eq(comments.discussionId, big(discussionId)), eq(comments.number, big(number))))
  return comment
}

async function categoryOfSite(q: PgExecutor, siteId: number, id: number) {
  const [category] = await q
    .select({ id: categories.id, public: categories.public })
    .from(categories)
    .where(and(eq(categories.id, big(id)), eq(categories.siteId, siteId)))
  return category
}

/** The category a discussion is moved to; another site's or an unknown one is an invalid `field`. */
async function checkCategory(q: PgExecutor, siteId: number, id: number, field: string) {
  const category = await categoryOfSite(q, siteId, id)
  if (!category) throw new StoreError(`is ${id}, which is not a category of this site`, 'invalid', field)
  return category
}

function refuseDeleted(discussion: DiscussionRow): void {
  if (discussion.state === 'deleted') {
    throw new StoreError(`discussion ${discussion.number} is deleted; restore it before changing it`, 'conflict', 'number')
  }
}

/**
 * Creates a discussion with its opening post (comment 1) inside the caller's transaction and
 * returns both, as written. A category that is not the site's is a StoreError (not_found).
 */
export async function createDiscussionIn(
  q: PgExecutor,
  clock: Clock,
  authorOf: PgAuthors,
  input: NewDiscussion,
): Promise<{ discussion: DiscussionRow; comment: CommentRow }> {
  // Held until commit: the next create on this site reads the highest number after this one's.
  await lockSite(q, input.siteId)
  const category = await categoryOfSite(q, input.siteId, input.categoryId)
  if (!category) throw new StoreError(`there is no category ${input.categoryId} on this site`, 'not_found', 'category')
  const author = await authorOf(q, input.siteId, input)
  const [{ n }] = await q
    .select({ n: sql<number | null>`max(${discussions.number})` })
    .from(discussions)
    .where(eq(discussions.siteId, input.siteId))
  const number = (n ?? 0) + 1
  const title = input.title.trim()
  const now = new Date(clock())
  await q.insert(discussions).values({
    siteId: input.siteId,
    number,
    title,
    permalink: slugify(title, 'discussion'),
    state: initialState(author.bySupporter),
    public: input.public ?? category.public,
    authorId: author.id,
    categoryId: input.categoryId,
    createdAt: now,
    updatedAt: now,
    lastUpdatedAt: now,
    commentsCount: 1,
  })
  const discussion = await getIn(q, input.siteId, number)
  const opening = {
    discussionId: discussion.id,
    number: 1,
    authorId: author.id,
    bySupporter: author.bySupporter,
    body: input.body,
    internal: false,
    via: input.via,
  }
  const [{ id }] = await q
    .insert(comments)
    .values({ ...opening, createdAt: now })
    .returning({ id: comments.id })
  await bumpCount(q, counted(discussion), 1)
  // The opening post's author is the discussion's: the row just read names them.
  const comment: CommentRow = { id, ...opening, createdAt: now, authorEmail: discussion.authorEmail, authorName: discussion.authorName }
  return { discussion, comment }
}

export function createDiscussionStore(db: PgDb, clock: Clock, box: SecretBox): DiscussionStore {
  const counts = createPgDiscussionCounts(db)
  const listing = createPgDiscussionListing(db, counts)
  const authorOf = createPgAuthors(clock, box)
  const p = sql.placeholder

  // The reads outside a write, prepared once (names unique app-wide: sd_ and the store's).
  const byNumberStatement = db
    .select(pgDiscussionView)
    .from(discussions)
    .innerJoin(users, eq(users.id, discussions.authorId))
    .where(and(eq(discussions.siteId, p('siteId')), eq(discussions.number, big(p('number')))))
    .prepare('sd_discussion_by_number')

  const commentsOf = db
    .select(commentView)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(eq(comments.discussionId, big(p('discussionId'))))
    .orderBy(asc(comments.number))
    .limit(p('limit'))
    .offset(p('offset'))
    .prepare('sd_discussion_comments')

  const commentAt = db
    .select(commentView)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(and(eq(comments.discussionId, big(p('discussionId'))), eq(comments.number, big(p('number')))))
    .prepare('sd_discussion_comment')

  /** Reads the discussion under its row lock, asks `decide` what changes, writes that and moves the counts. */
  function change(
    siteId: number,
    number: number,
    decide: (q: PgExecutor, d: DiscussionRow) => Promise<Partial<Discussion> | null>,
  ): Promise<DiscussionRow> {
    return db.transaction(async (tx) => {
      const before = await getIn(tx, siteId, number, true)
      const changes = await decide(tx, before)
      if (!changes) return before
      const after: DiscussionRow = { ...before, ...changes, updatedAt: new Date(clock()) }
      await tx
        .update(discussions)
        .set({
          title: after.title,
          permalink: after.permalink,
          state: after.state,
          stateBeforeDelete: after.stateBeforeDelete,
          public: after.public,
          categoryId: after.categoryId,
          updatedAt: after.updatedAt,
        })
        .where(eq(discussions.id, before.id))
      await moveCount(tx, counted(before), counted(after))
      return after
    })
  }

  return {
    list: listing.list,
    explain: listing.explain,
    counts: counts.face,

    /** The discussion with this number on this site; a StoreError (not_found) otherwise. */
    async get(siteId: number, number: number): Promise<DiscussionRow> {
      const [discussion] = await byNumberStatement.execute({ siteId, number })
      if (!discussion) throw notFound(number)
      return discussion
    },

    /** The comments of a discussion in the order they were written; all of them unless a page is asked for. */
    comments(discussionId: number, offset = 0, limit = -1): Promise<CommentRow[]> {
      // SQLite reads a negative limit as none and a negative offset as 0; PostgreSQL refuses both.
      return commentsOf.execute({ discussionId, offset: Math.max(0, offset), limit: limit < 0 ? null : limit })
    },

    /** Comment `number` (1 is the opening post) of the discussion, or undefined. */
    async comment(discussionId: number, number: number): Promise<CommentRow | undefined> {
      return (await commentAt.execute({ discussionId, number }))[0]
    },

    create(input: NewDiscussion): Promise<{ discussion: DiscussionRow; comment: CommentRow }> {
      return db.transaction((tx) => createDiscussionIn(tx, clock, authorOf, input))
    },

    /** Adds a comment and moves the discussion's state as a reply does. */
    reply(input: NewComment): Promise<{ discussion: DiscussionRow; comment: CommentRow }> {
      return db.transaction(async (tx) => {
        const before = await getIn(tx, input.siteId, input.number, true)
        refuseDeleted(before)
        const author = await authorOf(tx, input.siteId, input)
        const now = new Date(clock())
        const number = before.commentsCount + 1
        const state = stateAfterComment(before.state, author.bySupporter, input.internal)
        await tx.insert(comments).values({
          discussionId: before.id,
          number,
          authorId: author.id,
          bySupporter: author.bySupporter,
          body: input.body,
          internal: input.internal,
          via: input.via,
          createdAt: now,
        })
        await tx
          .update(discussions)
          .set({ state, commentsCount: number, updatedAt: now, lastUpdatedAt: now })
          .where(eq(discussions.id, before.id))
        await moveCount(tx, counted(before), counted({ ...before, state }))
        const discussion = await getIn(tx, input.siteId, input.number)
        return { discussion, comment: (await commentIn(tx, before.id, number))! }
      })
    },

    /** Title, visibility and category; a deleted discussion must be restored first. */
    update(siteId: number, number: number, changes: DiscussionChanges, categoryField = 'category'): Promise<DiscussionRow> {
      return change(siteId, number, async (q, d) => {
        refuseDeleted(d)
        if (changes.categoryId !== undefined) await checkCategory(q, siteId, changes.categoryId, categoryField)
        const title = changes.title?.trim()
        const next: Partial<Discussion> = {}
        if (title !== undefined && title !== d.title) Object.assign(next, { title, permalink: slugify(title, 'discussion') })
        if (changes.public !== undefined && changes.public !== d.public) next.public = changes.public
        if (changes.categoryId !== undefined && changes.categoryId !== d.categoryId) next.categoryId = changes.categoryId
        return Object.keys(next).length === 0 ? null : next
      })
    },

    /** resolve, unresolve, toggle, delete or restore. Repeating one changes nothing. */
    act(siteId: number, number: number, action: Action): Promise<DiscussionRow> {
      return change(siteId, number, async (_q, d) => {
        if (action !== 'restore' && action !== 'delete') refuseDeleted(d)
        const state = stateAfterAction(d.state, action, d.stateBeforeDelete)
        if (state === d.state) return null
        return { state, stateBeforeDelete: state === 'deleted' ? d.state : null }
      })
    },
  }
}
