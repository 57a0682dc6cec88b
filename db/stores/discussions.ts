import { and, asc, eq, getTableColumns, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { categories, comments, discussions, users } from '../sqlite/schema.ts'
import type { CommentVia, DiscussionState } from '../values.ts'
import type { Clock } from '../../lib/clock.ts'
import { slugify } from './categories.ts'
import { createAuthors, type PostedBy } from './discussion-authors.ts'
import { createDiscussionCounts, type CountedRow } from './discussion-counts.ts'
import { createDiscussionListing, discussionView, type DiscussionRow } from './discussion-listing.ts'
import { initialState, stateAfterAction, stateAfterComment, type Action } from './discussion-states.ts'
import { StoreError } from './errors.ts'
import type { SyncUserStore } from './users.ts'
import type { Async } from './async.ts'

export type { DiscussionRow } from './discussion-listing.ts'
export type { Action } from './discussion-states.ts'
export type Discussion = typeof discussions.$inferSelect
export type CommentRow = typeof comments.$inferSelect & { authorEmail: string; authorName: string }

export interface NewDiscussion extends PostedBy {
  siteId: number
  categoryId: number
  title: string
  body: string
  /** Defaults to the category's visibility. */
  public?: boolean
  via: CommentVia
}

export interface NewComment extends PostedBy {
  siteId: number
  number: number
  body: string
  internal: boolean
  via: CommentVia
}

export interface DiscussionChanges {
  title?: string
  public?: boolean
  categoryId?: number
}

/** The prepared insert of one comment; `now` is its moment. Shared with the seed. */
export function prepareCommentInsert(db: Db) {
  const p = (name: string) => sql.placeholder(name)
  return db
    .insert(comments)
    .values({
      discussionId: p('discussionId'),
      number: p('number'),
      authorId: p('authorId'),
      bySupporter: p('bySupporter'),
      body: p('body'),
      internal: p('internal'),
      via: p('via'),
      createdAt: p('now'),
    })
    .prepare()
}

const counted = (d: { siteId: number; categoryId: number; state: DiscussionState; public: boolean }): CountedRow => ({
  siteId: d.siteId,
  categoryId: d.categoryId,
  state: d.state,
  public: d.public,
})

export function createDiscussionStore(db: Db, clock: Clock, userStore: SyncUserStore) {
  const counts = createDiscussionCounts(db)
  const listing = createDiscussionListing(db, counts)
  const authorOf = createAuthors(db, clock, userStore)
  const p = (name: string) => sql.placeholder(name)

  const byNumber = db
    .select(discussionView)
    .from(discussions)
    .innerJoin(users, eq(users.id, discussions.authorId))
    .where(and(eq(discussions.siteId, p('siteId')), eq(discussions.number, p('number'))))
    .prepare()

  const commentView = { ...getTableColumns(comments), authorEmail: users.email, authorName: users.name }
  const commentsOf = db
    .select(commentView)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(eq(comments.discussionId, p('discussionId')))
    .orderBy(asc(comments.number))
    .limit(p('limit'))
    .offset(p('offset'))
    .prepare()

  const commentAt = db
    .select(commentView)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(and(eq(comments.discussionId, p('discussionId')), eq(comments.number, p('number'))))
    .prepare()

  const lastNumber = db
    .select({ n: sql<number | null>`max(${discussions.number})` })
    .from(discussions)
    .where(eq(discussions.siteId, p('siteId')))
    .prepare()

  const categoryOfSite = db
    .select({ id: categories.id, public: categories.public })
    .from(categories)
    .where(and(eq(categories.id, p('id')), eq(categories.siteId, p('siteId'))))
    .prepare()

  const insertDiscussion = db
    .insert(discussions)
    .values({
      siteId: p('siteId'),
      number: p('number'),
      title: p('title'),
      permalink: p('permalink'),
      state: p('state'),
      public: p('public'),
      authorId: p('authorId'),
      categoryId: p('categoryId'),
      createdAt: p('now'),
      updatedAt: p('now'),
      lastUpdatedAt: p('now'),
      commentsCount: 1,
    })
    .prepare()

  const insertComment = prepareCommentInsert(db)

  // Placeholders in set() are not mapped through the columns: moments go in as milliseconds and
  // booleans as 0 or 1.
  const value = (name: string) => sql`${p(name)}`
  const afterComment = db
    .update(discussions)
    .set({ state: value('state'), commentsCount: value('count'), updatedAt: value('at'), lastUpdatedAt: value('at') })
    .where(eq(discussions.id, p('id')))
    .prepare()

  // Everything title, visibility, category and state changes write, in one statement.
  const saveChanges = db
    .update(discussions)
    .set({
      title: value('title'),
      permalink: value('permalink'),
      state: value('state'),
      stateBeforeDelete: value('stateBeforeDelete'),
      public: value('public'),
      categoryId: value('categoryId'),
      updatedAt: value('at'),
    })
    .where(eq(discussions.id, p('id')))
    .prepare()

  function get(siteId: number, number: number): DiscussionRow {
    const discussion = byNumber.get({ siteId, number })
    if (!discussion) throw new StoreError(`there is no discussion ${number} on this site`, 'not_found', 'number')
    return discussion
  }

  function refuseDeleted(discussion: DiscussionRow): void {
    if (discussion.state === 'deleted') {
      throw new StoreError(`discussion ${discussion.number} is deleted; restore it before changing it`, 'conflict', 'number')
    }
  }

  /** The category a discussion is moved to; another site's or an unknown one is an invalid `field`. */
  function checkCategory(siteId: number, id: number, field: string) {
    const category = categoryOfSite.get({ siteId, id })
    if (!category) throw new StoreError(`is ${id}, which is not a category of this site`, 'invalid', field)
    return category
  }

  /** The category a discussion is created in: what it is created in must exist on the site (not_found). */
  function findCategory(siteId: number, id: number) {
    const category = categoryOfSite.get({ siteId, id })
    if (!category) throw new StoreError(`there is no category ${id} on this site`, 'not_found', 'category')
    return category
  }

  // Every write runs in one IMMEDIATE transaction: the read it decides on, the rows it writes and
  // the counts it moves commit together or not at all.
  const write = <T>(fn: () => T): T => db.transaction(fn, { behavior: 'immediate' })

  /** Reads the discussion, asks `decide` what changes, writes that and moves the counts. */
  function change(siteId: number, number: number, decide: (d: DiscussionRow) => Partial<Discussion> | null): DiscussionRow {
    return write(() => {
      const before = get(siteId, number)
      const changes = decide(before)
      if (!changes) return before
      const after = { ...before, ...changes, updatedAt: new Date(clock()) }
      saveChanges.run({ ...after, public: after.public ? 1 : 0, at: after.updatedAt.getTime() })
      counts.move(counted(before), counted(after))
      return after
    })
  }

  return {
    list: listing.list,
    explain: listing.explain,
    counts,

    /** The discussion with this number on this site; a StoreError (not_found) otherwise. */
    get: (siteId: number, number: number) => get(siteId, number),

    /** The comments of a discussion in the order they were written; all of them unless a page is asked for. */
    comments(discussionId: number, offset = 0, limit = -1): CommentRow[] {
      return commentsOf.all({ discussionId, offset, limit })
    },

    /** Comment `number` (1 is the opening post) of the discussion, or undefined. */
    comment(discussionId: number, number: number): CommentRow | undefined {
      return commentAt.get({ discussionId, number })
    },

    /**
     * Creates a discussion with its opening post (comment 1) and returns both, as written: no
     * need to read them back. A category that is not the site's is a StoreError (not_found).
     */
    create(input: NewDiscussion): { discussion: DiscussionRow; comment: CommentRow } {
      return write(() => {
        const category = findCategory(input.siteId, input.categoryId)
        const author = authorOf(input.siteId, input)
        const number = (lastNumber.get({ siteId: input.siteId })?.n ?? 0) + 1
        const state = initialState(author.bySupporter)
        const isPublic = input.public ?? category.public
        const title = input.title.trim()
        const now = new Date(clock())
        insertDiscussion.run({
          siteId: input.siteId,
          number,
          title,
          permalink: slugify(title, 'discussion'),
          state,
          public: isPublic,
          authorId: author.id,
          categoryId: input.categoryId,
          now,
        })
        const discussion = get(input.siteId, number)
        const opening = {
          discussionId: discussion.id,
          number: 1,
          authorId: author.id,
          bySupporter: author.bySupporter,
          body: input.body,
          internal: false,
          via: input.via,
        }
        const { lastInsertRowid } = insertComment.run({ ...opening, now })
        counts.bump(counted(discussion), 1)
        // The opening post's author is the discussion's: the row just read names them.
        const comment: CommentRow = {
          id: Number(lastInsertRowid),
          ...opening,
          createdAt: now,
          authorEmail: discussion.authorEmail,
          authorName: discussion.authorName,
        }
        return { discussion, comment }
      })
    },

    /** Adds a comment and moves the discussion's state as a reply does. */
    reply(input: NewComment): { discussion: DiscussionRow; comment: CommentRow } {
      return write(() => {
        const before = get(input.siteId, input.number)
        refuseDeleted(before)
        const author = authorOf(input.siteId, input)
        const now = new Date(clock())
        const number = before.commentsCount + 1
        const state = stateAfterComment(before.state, author.bySupporter, input.internal)
        insertComment.run({
          discussionId: before.id,
          number,
          authorId: author.id,
          bySupporter: author.bySupporter,
          body: input.body,
          internal: input.internal,
          via: input.via,
          now,
        })
        afterComment.run({ id: before.id, state, count: number, at: now.getTime() })
        counts.move(counted(before), counted({ ...before, state }))
        const discussion = get(input.siteId, input.number)
        return { discussion, comment: commentAt.get({ discussionId: before.id, number })! }
      })
    },

    /** Title, visibility and category; a deleted discussion must be restored first. */
    update(siteId: number, number: number, changes: DiscussionChanges, categoryField = 'category'): DiscussionRow {
      return change(siteId, number, (d) => {
        refuseDeleted(d)
        if (changes.categoryId !== undefined) checkCategory(siteId, changes.categoryId, categoryField)
        const title = changes.title?.trim()
        const next: Partial<Discussion> = {}
        if (title !== undefined && title !== d.title) Object.assign(next, { title, permalink: slugify(title, 'discussion') })
        if (changes.public !== undefined && changes.public !== d.public) next.public = changes.public
        if (changes.categoryId !== undefined && changes.categoryId !== d.categoryId) next.categoryId = changes.categoryId
        return Object.keys(next).length === 0 ? null : next
      })
    },

    /** resolve, unresolve, toggle, delete or restore. Repeating one changes nothing. */
    act(siteId: number, number: number, action: Action): DiscussionRow {
      return change(siteId, number, (d) => {
        if (action !== 'restore' && action !== 'delete') refuseDeleted(d)
        const state = stateAfterAction(d.state, action, d.stateBeforeDelete)
        if (state === d.state) return null
        return { state, stateBeforeDelete: state === 'deleted' ? d.state : null }
      })
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncDiscussionStore = ReturnType<typeof createDiscussionStore>
export type DiscussionStore = Async<SyncDiscussionStore>
