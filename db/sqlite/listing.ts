import { and, eq, getTableColumns, inArray, sql, type Column, type Placeholder, type SQL, type SQLWrapper } from '../drizzle.ts'
import { isLive } from '../live.ts'
import type { Db } from './client.ts'
import { discussions, discussionTags, fieldValues, users } from '../schema/sqlite.ts'
import {
  assigneeNameOf,
  countScope,
  listingShape,
  totalFromCounts,
  type CountTotal,
  type DiscussionListing,
  type DiscussionRow,
  type ListingQuery,
  type ListingShape,
} from '../stores/discussion-listing.ts'

// The discussion listings on SQLite (db/stores/discussion-listing.ts): one query shape per combination of filters, prepared the first time it
// is used. Which index reads a page is decided here, not left to SQLite's planner: without
// statistics it may walk a whole order index to find one author's rows, or sort every discussion
// newer than `since`. A column written `+column` cannot use an index (SQLite's documented way to
// steer the planner), so each shape names exactly one usable index.

/** A discussion with its author's address and name, as every read returns it. */
const discussionView = {
  ...getTableColumns(discussions),
  authorEmail: users.email,
  authorName: users.name,
  assigneeName: assigneeNameOf(discussions, users),
}

// Column types whose values come from SQLite as they are stored: no decoder to run.
const IDENTITY = new Set(['SQLiteInteger', 'SQLiteText'])

const ORDER_COLUMN = { activity: discussions.lastUpdatedAt, created: discussions.createdAt, updated: discussions.updatedAt, number: discussions.number, due: discussions.dueAt }

// Past this many matches, `since=<number>` (or a tag, or a field's value) reads the page in listing
// order instead of through the number index (or the tag's, the value's), which would sort every match first.
export const NARROW_SINCE = 5_000

/** The index that reads a page: the listing order's, an author's, the number's, a category's, an owner's, the tag's, a field value's, the queue's first tab's, the breached ones' or the order by due time's. */
type Driver = 'order' | 'author' | 'number' | 'category' | 'assignee' | 'tag' | 'field' | 'todo' | 'breached' | 'due'

type Shape = ListingShape & { driver: Driver }

function shapeOf(query: ListingQuery, driver: Driver): Shape {
  return { ...listingShape(query), driver }
}

/** The driver before the number of matches is known (and for counting). */
function firstDriver(query: ListingQuery): Driver {
  if (query.authorId !== undefined) return 'author'
  // Few break a promise: their index reads fewer rows than any order's.
  if (query.breached) return 'breached'
  // The due times run only for what the team owes (the listing asks for it: new, open, or both).
  if (query.sort === 'due') return 'due'
  if (query.since?.kind === 'number' || query.sort === 'number') return 'number'
  if (query.tag !== undefined) return 'tag'
  if (query.field !== undefined) return 'field'
  // The owner's index holds the live discussions only.
  if (query.assignee !== undefined && (query.state === 'live' || query.state === 'todo')) return 'assignee'
  if (query.categoryId !== undefined && query.sort === 'activity') return 'category'
  if (query.state === 'todo' && query.sort === 'activity') return 'todo'
  return 'order'
}

function conditions(shape: Shape): { where: SQL; orderUsable: boolean } {
  const { driver } = shape
  const order = ORDER_COLUMN[shape.sort]
  const column = (c: SQLWrapper, usable: boolean) => (usable ? sql`${c}` : sql`+${c}`)
  // Which columns the driving index may use; every other term is a plain filter.
  const orderUsable =
    driver === 'order' ||
    (shape.sort === 'number' && driver === 'number') ||
    (shape.sort === 'activity' && (driver === 'author' || driver === 'category' || driver === 'assignee' || driver === 'todo' || driver === 'breached')) ||
    (shape.sort === 'due' && driver === 'due')
  // Every index starts with the site.
  const where: SQL[] = [eq(discussions.siteId, sql.placeholder('siteId'))]
  // The partial indexes are used only where the query's terms are written as their WHERE is.
  if (driver === 'due') {
    where.push(sql`${discussions.state} in ('new', 'open')`)
    if (shape.state === 'one') where.push(sql`+${discussions.state} = ${sql.placeholder('state')}`)
  } else if (driver === 'breached') {
    // Only the breached ones' index: the state is a plain filter.
    where.push(shape.state === 'one' ? sql`+${discussions.state} = ${sql.placeholder('state')}` : shape.state === 'todo' ? sql`+${discussions.state} in ('new', 'open')` : sql`+${discussions.state} not in ('deleted', 'spam', 'merged')`)
  } else if (shape.state === 'todo' && driver === 'todo') where.push(sql`${discussions.state} in ('new', 'open')`)
  else if (shape.state === 'todo') where.push(isLive(discussions.state), sql`+${discussions.state} in ('new', 'open')`)
  else if (shape.state === 'live') where.push(isLive(discussions.state))
  else where.push(sql`${column(discussions.state, driver === 'order')} = ${sql.placeholder('state')}`)
  if (shape.assignee === 'one') where.push(sql`${column(discussions.assigneeId, driver === 'assignee')} = ${sql.placeholder('assignee')}`)
  if (shape.assignee === 'none') where.push(sql`${column(discussions.assigneeId, driver === 'assignee')} is null`)
  if (shape.tag) {
    const tagged = sql`select ${discussionTags.discussionId} from ${discussionTags} where ${discussionTags.siteId} = ${sql.placeholder('siteId')} and ${discussionTags.tag} = ${sql.placeholder('tag')}`
    where.push(sql`${column(discussions.id, driver === 'tag')} in (${tagged})`)
  }
  if (shape.field) {
    const valued = sql`select ${fieldValues.discussionId} from ${fieldValues} where ${fieldValues.siteId} = ${sql.placeholder('siteId')} and ${fieldValues.fieldId} = ${sql.placeholder('fieldId')} and ${fieldValues.value} = ${sql.placeholder('fieldValue')}`
    where.push(sql`${column(discussions.id, driver === 'field')} in (${valued})`)
  }
  if (shape.breached) where.push(sql`${column(discussions.slaBreached, driver === 'breached')} <> ''`)
  if (shape.category) where.push(sql`${column(discussions.categoryId, driver === 'category')} = ${sql.placeholder('categoryId')}`)
  if (shape.public) where.push(sql`+${discussions.public} = ${sql.placeholder('public')}`)
  if (shape.author) where.push(eq(discussions.authorId, sql.placeholder('authorId')))
  if (shape.since === 'number') {
    where.push(sql`${column(discussions.number, driver === 'number')} > ${sql.placeholder('since')}`)
  }
  // A walk by cursor (in the order of the numbers) takes a date as the listing by creation does.
  if (shape.since === 'date' && shape.sort === 'number') where.push(sql`+${discussions.createdAt} >= ${sql.placeholder('since')}`)
  else if (shape.since === 'date') where.push(sql`${column(order, orderUsable)} >= ${sql.placeholder('since')}`)
  if (shape.before) where.push(sql`${column(discussions.number, driver === 'number')} < ${sql.placeholder('before')}`)
  return { where: and(...where)!, orderUsable }
}

/** The page's order: newest first, but for the order by due time (the soonest first); the id breaks ties the same way. */
function orderOf(shape: Shape, usable: boolean): SQL[] {
  const order = ORDER_COLUMN[shape.sort]
  const direction = shape.sort === 'due' ? sql`asc` : sql`desc`
  return [usable ? sql`${order} ${direction}` : sql`+${order} ${direction}`, sql`${discussions.id} ${direction}`]
}

export function createSqliteListing(db: Db, countTotal: CountTotal): DiscussionListing {
  // The page's ids are found first, from the index alone; only those rows are then read and
  // joined to their authors. Rows skipped by the offset thus cost an index step each, not a
  // table read and a join (a page deep in a million rows: milliseconds instead of a second).
  function pageQuery(shape: Shape) {
    const { where, orderUsable } = conditions(shape)
    const ids = db
      .select({ id: discussions.id })
      .from(discussions)
      .where(where)
      .orderBy(...orderOf(shape, orderUsable))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
    return db
      .select(discussionView)
      .from(discussions)
      .innerJoin(users, eq(users.id, discussions.authorId))
      .where(inArray(discussions.id, ids))
      .orderBy(...orderOf(shape, false))
  }

  // The page's SQL comes from drizzle, and better-sqlite3 runs it and hands back plain arrays that
  // are decoded here, field by field with each column's own decoder: the listing is the hot read,
  // and drizzle's generic row mapping cost about a tenth of its CPU (tools/bench/README.md).
  const fields = Object.entries(discussionView) as Array<[string, Column]>
  // The owner's name is a subquery (no column): text, as it is stored.
  const decoders = fields.map(([, column]) => (IDENTITY.has(column.columnType) || !('mapFromDriverValue' in column) ? null : column))
  function decode(values: unknown[]): DiscussionRow {
    const row: Record<string, unknown> = {}
    for (let i = 0; i < fields.length; i++) {
      const value = values[i]
      const column = decoders[i]
      row[fields[i][0]] = value === null || column === null ? value : column.mapFromDriverValue(value)
    }
    return row as DiscussionRow
  }

  function rawPage(shape: Shape) {
    const { sql: text, params } = pageQuery(shape).toSQL()
    // Every value of a listing query is a placeholder; their names, in the statement's order.
    const names = params.map((p) => (p as Placeholder).name)
    const statement = db.$client.prepare(text).raw()
    return {
      all: (values: Record<string, unknown>) => (statement.all(...names.map((name) => values[name])) as unknown[][]).map(decode),
    }
  }

  const pages = new Map<string, ReturnType<typeof rawPage>>()
  const counters = new Map<string, { get(values: Record<string, unknown>): { n: number } | undefined }>()

  function pageStatement(shape: Shape) {
    const key = JSON.stringify(shape)
    let statement = pages.get(key)
    if (!statement) {
      statement = rawPage(shape)
      pages.set(key, statement)
    }
    return statement
  }

  function countStatement(shape: Shape) {
    const key = JSON.stringify(shape)
    let statement = counters.get(key)
    if (!statement) {
      statement = db
        .select({ n: sql<number>`count(*)` })
        .from(discussions)
        .where(conditions(shape).where)
        .prepare()
      counters.set(key, statement)
    }
    return statement
  }

  function parameters(query: ListingQuery): Record<string, unknown> {
    return {
      siteId: query.siteId,
      state: query.state,
      categoryId: query.categoryId,
      public: query.public === undefined ? undefined : query.public ? 1 : 0,
      authorId: query.authorId,
      assignee: query.assignee,
      tag: query.tag,
      fieldId: query.field?.id,
      fieldValue: query.field?.value,
      since: query.since?.kind === 'number' ? query.since.after : query.since?.from,
      before: query.before,
      limit: query.limit,
      offset: query.offset,
    }
  }

  /** The driver of the page, once the number of matches is known. */
  function pageDriver(query: ListingQuery, total: number): Driver {
    const driver = firstDriver(query)
    if ((driver !== 'number' && driver !== 'tag' && driver !== 'field') || total <= NARROW_SINCE) return driver
    return firstDriver({ ...query, since: undefined, tag: undefined, field: undefined })
  }

  return {
    // With an author or a `since`, the total is counted through the same index the page is read from.
    async list(query) {
      const values = parameters(query)
      // The whole listing's, a walk by cursor's too.
      const whole = { ...query, before: undefined }
      const total = totalFromCounts(query)
        ? await countTotal(countScope(query))
        : countStatement(shapeOf(whole, firstDriver(whole))).get(values)!.n
      if (query.offset >= total) return { total, discussions: [] }
      return { total, discussions: pageStatement(shapeOf(query, pageDriver(query, total))).all(values) }
    },

    async explain(query, total = 0) {
      const values = parameters(query)
      const { sql: text, params } = pageQuery(shapeOf(query, pageDriver(query, total))).toSQL()
      // Every value of a listing query is a placeholder.
      const bound = params.map((p) => values[(p as Placeholder).name])
      const plan = db.$client.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...bound) as Array<{ detail: string }>
      return plan.map((row) => row.detail)
    },
  }
}

