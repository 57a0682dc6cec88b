import { and, asc, desc, eq, getTableColumns, inArray, sql, type Placeholder, type SQL, type SQLWrapper } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { assigneeNameOf, countScope, listingShape, totalFromCounts, type CountTotal, type ListingShape, type DiscussionListing, type DiscussionRow, type ListingQuery } from '../stores/discussion-listing.ts'
import type { Executor } from '../port.ts'
import type { PgDb } from './client.ts'
import { discussions, discussionTags, fieldValues, users } from '../schema/postgres.ts'

/** An id compared as bigint (db/port.ts, `wide`). */
const big = (value: SQLWrapper) => sql`${value}::bigint`

// The discussion listings on PostgreSQL: the same filters, orders, `since`, paging and totals as
// db/sqlite/listing.ts. One query shape per combination of filters, prepared (named) the
// first time it is used. Unlike SQLite's, PostgreSQL's planner keeps statistics, so nothing steers
// it; the live scope is written as the literal (db/live.ts) that the partial listing
// indexes are declared with, so a generic plan may still use them.

/** A discussion with its author's address and name, as every read returns it. */
const discussionView = {
  ...getTableColumns(discussions),
  authorEmail: users.email,
  authorName: users.name,
  assigneeName: assigneeNameOf(discussions, users),
}

const ORDER_COLUMN = { activity: discussions.lastUpdatedAt, created: discussions.createdAt, updated: discussions.updatedAt, number: discussions.number, due: discussions.dueAt }

/** Newest first, but for the order by due time (the soonest first); the id breaks ties the same way. */
const orderOf = (shape: ListingShape) => (shape.sort === 'due' ? [asc(discussions.dueAt), asc(discussions.id)] : [desc(ORDER_COLUMN[shape.sort]), desc(discussions.id)])

/** A short name of the shape, for its prepared statements (unique app-wide with their prefix). */
function shapeKey(shape: ListingShape): string {
  const flag = (b: boolean) => (b ? '1' : '0')
  return `${shape.state}_${flag(shape.category)}${flag(shape.public)}${flag(shape.author)}${flag(shape.tag)}${flag(shape.field)}${flag(shape.breached)}_${shape.assignee}_${shape.since}_${flag(shape.before)}_${shape.sort}`
}

function conditions(shape: ListingShape): SQL {
  const p = sql.placeholder
  const where: SQL[] = [eq(discussions.siteId, p('siteId'))]
  // Written as the partial indexes' WHERE is, so that a generic plan may use them.
  if (shape.state === 'todo') where.push(sql`${discussions.state} in ('new', 'open')`)
  else where.push(shape.state === 'live' ? isLive(discussions.state) : eq(discussions.state, p('state')))
  if (shape.assignee === 'one') where.push(eq(discussions.assigneeId, big(p('assignee'))))
  if (shape.assignee === 'none') where.push(sql`${discussions.assigneeId} is null`)
  if (shape.tag) {
    where.push(sql`${discussions.id} in (select ${discussionTags.discussionId} from ${discussionTags} where ${discussionTags.siteId} = ${p('siteId')} and ${discussionTags.tag} = ${p('tag')})`)
  }
  if (shape.field) {
    where.push(sql`${discussions.id} in (select ${fieldValues.discussionId} from ${fieldValues} where ${fieldValues.siteId} = ${p('siteId')} and ${fieldValues.fieldId} = ${p('fieldId')} and ${fieldValues.value} = ${p('fieldValue')})`)
  }
  if (shape.breached) where.push(sql`${discussions.slaBreached} <> ''`)
  if (shape.category) where.push(eq(discussions.categoryId, big(p('categoryId'))))
  if (shape.public) where.push(eq(discussions.public, p('public')))
  if (shape.author) where.push(eq(discussions.authorId, big(p('authorId'))))
  if (shape.since === 'number') where.push(sql`${discussions.number} > ${big(p('since'))}`)
  // A walk by cursor (in the order of the numbers) takes a date as the listing by creation does.
  if (shape.since === 'date') where.push(sql`${shape.sort === 'number' ? discussions.createdAt : ORDER_COLUMN[shape.sort]} >= ${p('since')}`)
  if (shape.before) where.push(sql`${discussions.number} < ${big(p('before'))}`)
  return and(...where)!
}

/** Placeholders are not mapped through the columns: flags go in as booleans, moments as Dates. */
function parameters(query: ListingQuery): Record<string, unknown> {
  return {
    siteId: query.siteId,
    state: query.state,
    categoryId: query.categoryId,
    public: query.public,
    authorId: query.authorId,
    assignee: query.assignee,
    tag: query.tag,
    fieldId: query.field?.id,
    fieldValue: query.field?.value,
    since: query.since === undefined ? undefined : query.since.kind === 'number' ? query.since.after : new Date(query.since.from),
    before: query.before,
    limit: query.limit,
    offset: query.offset,
  }
}

/** The listing's statements on `db` (the pool or a transaction); its plans, for the tests, asked of the pool. */
export function createPostgresListing(pool: PgDb, db: Executor, countTotal: CountTotal): DiscussionListing {
  // The page's ids are found first, from an index; only those rows are then read and joined to
  // their authors, so rows skipped by the offset cost an index step each, not a join.
  function pageQuery(shape: ListingShape) {
    const ids = db
      .select({ id: discussions.id })
      .from(discussions)
      .where(conditions(shape))
      .orderBy(...orderOf(shape))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
    return db
      .select(discussionView)
      .from(discussions)
      .innerJoin(users, eq(users.id, discussions.authorId))
      .where(inArray(discussions.id, ids))
      .orderBy(...orderOf(shape))
  }

  type Page = { execute(values: Record<string, unknown>): Promise<DiscussionRow[]> }
  type Count = { execute(values: Record<string, unknown>): Promise<Array<{ n: number }>> }
  const pages = new Map<string, Page>()
  const counters = new Map<string, Count>()

  function pageStatement(shape: ListingShape): Page {
    const key = shapeKey(shape)
    let statement = pages.get(key)
    if (!statement) {
      statement = pageQuery(shape).prepare(`sd_discussion_page_${key}`)
      pages.set(key, statement)
    }
    return statement
  }

  function countStatement(shape: ListingShape): Count {
    const key = shapeKey(shape)
    let statement = counters.get(key)
    if (!statement) {
      statement = db
        .select({ n: sql<number>`count(*)::integer` })
        .from(discussions)
        .where(conditions(shape))
        .prepare(`sd_discussion_count_${key}`)
      counters.set(key, statement)
    }
    return statement
  }

  return {
    async list(query) {
      const values = parameters(query)
      const shape = listingShape(query)
      // The whole listing's, a walk by cursor's too.
      const total = totalFromCounts(query) ? await countTotal(countScope(query)) : (await countStatement({ ...shape, before: false }).execute(values))[0].n
      if (query.offset >= total) return { total, discussions: [] }
      return { total, discussions: await pageStatement(shape).execute(values) }
    },

    // One line of PostgreSQL's plan each; `total` is SQLite's hint, unused here.
    async explain(query) {
      const { sql: text, params } = pageQuery(listingShape(query)).toSQL()
      // Every value of a listing query is a placeholder.
      const values = parameters(query)
      const bound = params.map((p) => values[(p as Placeholder).name])
      const result = await pool.$client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, bound)
      return result.rows.map((row) => row['QUERY PLAN'])
    },
  }
}

