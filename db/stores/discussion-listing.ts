import { getTableColumns, sql, type Column } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { CountScope, StateScope } from './discussion-counts.ts'

// What a listing of discussions is asked and answers, on either engine. The page is read by a
// query that differs by engine (db/sqlite/listing.ts steers SQLite's planner, which keeps no
// statistics, and decodes the rows itself; db/postgres/listing.ts leaves the choice to PostgreSQL's
// planner): the one place the stores are not written once (docs/decisions.md, "One store, two
// engines").

// Newest first by activity, creation or change; `due`: the soonest SLA due time first, of what the
// team owes only (the new and open ones of the scope; lib/sla.ts), those with no clock running after them.
export const sorts = ['activity', 'created', 'updated', 'due'] as const
/** The orders a client asks for, and the number's: the order of a walk by cursor (`before`), newest first. */
export type Sort = (typeof sorts)[number] | 'number'

export type Since = { kind: 'number'; after: number } | { kind: 'date'; from: number }

export interface ListingQuery {
  siteId: number
  state: StateScope
  categoryId?: number
  public?: boolean
  authorId?: number
  /** The owner's user id, or NO_ASSIGNEE (db/stores/discussion-counts.ts) for the discussions nobody owns. */
  assignee?: number
  /** Discussions carrying this tag (as kept: lib/team-queue.ts, tagOf). */
  tag?: string
  /** Discussions whose custom field `id` holds this value, as field_values keeps it (lib/fields.ts, filterText). */
  field?: { id: number; value: string }
  /** Only those that broke a promise of an SLA policy (lib/sla.ts). */
  breached?: boolean
  since?: Since
  /** A walk by cursor: only the discussions numbered below this (sort: 'number'). */
  before?: number
  /** The site's version the caller read (a request's, with its authentication): the total may be kept by it (CountScope). */
  siteVersion?: number
  sort: Sort
  offset: number
  limit: number
}

/** A discussion with its author's address and name and its owner's name, as every read returns it. */
export type DiscussionRow = Tables['discussions']['$inferSelect'] & { authorEmail: string; authorName: string; assigneeName: string | null }

/**
 * The owner's name, read beside a discussion row (a lookup of the users' primary key, none when
 * nobody owns it). The users table is the one the read joins for the author: the subquery's own
 * `users` hides it.
 */
export function assigneeNameOf(columns: { assigneeId: Column }, users: { id: Column; name: Column }) {
  return sql<string | null>`(select ${users.name} from ${users} where ${users.id} = ${columns.assigneeId})`
}
/** A column of the user `id` names, as a subquery (a lookup of the users' primary key). */
const userColumn = <T>(users: { id: Column }, column: Column, id: Column) => sql<T>`(select ${column} from ${users} where ${users.id} = ${id})`

/**
 * The columns of a read of discussions (joined to their authors) and of comments (likewise), on the
 * port's tables; and the same rows as an insert's RETURNING gives them (`inserted...`), the author's
 * address and name by subquery, so that a write has its row without reading it back.
 */
export function discussionViews({ tables: { comments, discussions, users } }: StorePort) {
  return {
    discussion: { ...getTableColumns(discussions), authorEmail: users.email, authorName: users.name, assigneeName: assigneeNameOf(discussions, users) },
    comment: { ...getTableColumns(comments), authorEmail: users.email, authorName: users.name },
    insertedDiscussion: {
      ...getTableColumns(discussions),
      authorEmail: userColumn<string>(users, users.email, discussions.authorId),
      authorName: userColumn<string>(users, users.name, discussions.authorId),
      assigneeName: assigneeNameOf(discussions, users),
    },
    insertedComment: { ...getTableColumns(comments), authorEmail: userColumn<string>(users, users.email, comments.authorId), authorName: userColumn<string>(users, users.name, comments.authorId) },
  }
}

/** A comment with its author's email and name. */
export type CommentRow = Tables['comments']['$inferSelect'] & { authorEmail: string; authorName: string }

export interface DiscussionListing {
  /**
   * One page of a listing and the number of discussions in it all. Without an author or a
   * `since` the total is a sum of the maintained counts; with one it is counted. A page past the
   * end costs no read beyond the total.
   */
  list(query: ListingQuery): Promise<{ total: number; discussions: DiscussionRow[] }>
  /** The engine's plan for reading a page of this listing when it has `total` matches (for the tests). */
  explain(query: ListingQuery, total?: number): Promise<string[]>
}

/** Which filters a listing has, not their values: one query (prepared once) per shape. */
export interface ListingShape {
  state: 'live' | 'todo' | 'one'
  category: boolean
  public: boolean
  author: boolean
  assignee: 'any' | 'none' | 'one'
  tag: boolean
  field: boolean
  breached: boolean
  since: 'none' | 'number' | 'date'
  before: boolean
  sort: Sort
}

export function listingShape(query: ListingQuery): ListingShape {
  return {
    state: query.state === 'live' || query.state === 'todo' ? query.state : 'one',
    category: query.categoryId !== undefined,
    public: query.public !== undefined,
    author: query.authorId !== undefined,
    assignee: query.assignee === undefined ? 'any' : query.assignee === 0 ? 'none' : 'one',
    tag: query.tag !== undefined,
    field: query.field !== undefined,
    breached: query.breached === true,
    since: query.since?.kind ?? 'none',
    before: query.before !== undefined,
    sort: query.sort,
  }
}

/** What a listing needs of the counts: their sum over a scope. */
export type CountTotal = (scope: CountScope) => Promise<number>

/** The engine's listing over the port the discussion store runs on (the database, or a transaction of it). */
export type ListingOf = (port: StorePort, total: CountTotal) => DiscussionListing

/** Whether the listing's total is a sum of the counts (no author, no `since`, no tag, no field, not only the breached). */
export function totalFromCounts(query: ListingQuery): boolean {
  return query.authorId === undefined && query.since === undefined && query.tag === undefined && query.field === undefined && query.breached !== true
}

/** The scope of the counts a listing's total sums. */
export function countScope(query: ListingQuery): CountScope {
  return { siteId: query.siteId, state: query.state, categoryId: query.categoryId, public: query.public, assignee: query.assignee, siteVersion: query.siteVersion }
}
