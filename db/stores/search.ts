import { and, asc, count, desc, eq, gte, inArray, isNull, lt, lte, ne, or, sql, type SQL } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { lastly, unguarded, type StorePort } from '../port.ts'
import { discussionStates } from '../values.ts'
import { parseQuery, searchDocument, snippetOf, type SearchQuery, type Snippet } from '../../lib/search-text.ts'
import { tagOf } from '../../lib/team-queue.ts'
import { fieldMatch, type FieldMatch } from '../../lib/fields.ts'
import { activeFieldsIn, shapeOf, type Field } from './fields.ts'
import { holdsNul } from '../../lib/nul.ts'
import { dayStart } from '../../lib/clock.ts'
import { NO_ASSIGNEE, SCOPE_STATES, type StateScope } from './discussion-counts.ts'
import { discussionViews, type DiscussionRow } from './discussion-listing.ts'
import { StoreError } from './errors.ts'
import { findUserByEmail } from './users.ts'

// Full-text search over the discussions of a site (docs/decisions.md, "Search"): the words of
// titles and comments (lib/search-text.ts) in each engine's index (port.search), written in the
// transaction of every change to them, and read here for the API, MCP, the queue and the
// customer's pages. A search considers the WINDOW newest discussions that match, ranks them by
// how well they match, and pages through them.

/** How many of the newest matching discussions a search ranks: past it, `capped` says to narrow the query. */
export const WINDOW = 1_000
/** How many discussions a batch of the backfill indexes, in one transaction. */
export const BACKFILL_BATCH = 500

/**
 * Who searches: the staff see every discussion and the team's notes; a customer (or a visitor:
 * no user) their own discussions and, where the site shows them, the public ones, without notes.
 */
export type Searcher = { staff: true; userId: number } | { staff: false; userId: number | null; publicToo: boolean }

export interface SearchRequest {
  siteId: number
  searcher: Searcher
  /** The query as written (lib/search-text.ts, parseQuery). */
  q: string
  offset: number
  limit: number
}

export interface SearchResult {
  discussion: DiscussionRow
  /** Where the words are: in a comment (its number) or in the title (null); null when the query had only filters. */
  snippet: (Snippet & { comment: number | null }) | null
}

export interface SearchAnswer {
  /** How many discussions match, counted up to WINDOW. */
  total: number
  /** Whether more than WINDOW discussions match: only the newest WINDOW are ranked and paged. */
  capped: boolean
  results: SearchResult[]
}

/** The comments' texts of one discussion, in order, read on `port` (for its document). */
function textsOf(port: StorePort) {
  const { comments } = port.tables
  return port.prepared('search_texts', (db) =>
    db
      .select({ body: comments.body, internal: comments.internal })
      .from(comments)
      .where(eq(comments.discussionId, sql.placeholder('discussionId')))
      .orderBy(asc(comments.number))
      .prepare('search_texts'),
  )
}

/**
 * Writes the discussion's document as it is now (its title and every comment), in the transaction
 * of `port`: called by every write that changes them, after the write.
 */
export async function indexDiscussion(port: StorePort, discussion: { id: number; title: string }, created?: { body: string }): Promise<void> {
  // A discussion just created holds its opening post alone, which the caller has: nothing to read, nothing to replace.
  const comments = created ? [{ body: created.body, internal: false }] : await textsOf(port).execute({ discussionId: discussion.id })
  const document = searchDocument(discussion.title, comments)
  // Nothing in the write reads it after: one of its last statements, sent with its COMMIT, first of them.
  await lastly(port, '0', () => port.search.write(discussion.id, document, created !== undefined))
}

/** The filters of a query, as the discussions table holds them. */
interface Filters {
  state: StateScope
  categoryId?: number
  authorId?: number
  /** An owner's id, or null for the discussions nobody owns. */
  assignee?: number | null
  tag?: string
  /** Only those that broke a promise of an SLA policy (sla:breached). */
  breached?: boolean
  from?: Date
  before?: Date
  /** Custom fields' values, as field_values keeps them (`<key>:<value>`). */
  fields: Array<{ id: number } & FieldMatch>
}

const STATE_FILTERS: readonly string[] = [...discussionStates, 'todo']

/** The refusal of a query that cannot be read: a 400 naming `q` on the API, the page's message. */
const unreadable = (problem: string) => new StoreError(problem, 'invalid', 'q')

/** The query read (lib/search-text.ts), or the refusal saying why it cannot be. */
function readQuery(q: string, fieldKeys: readonly string[]): SearchQuery {
  try {
    return parseQuery(q, fieldKeys)
  } catch (error) {
    // parseQuery throws QueryProblem only: a sentence about the query.
    throw unreadable((error as Error).message)
  }
}

/** The snippet of a title, read only where no comment held a word searched for. */
function titleSnippet(title: string, query: SearchQuery): SearchResult['snippet'] {
  const found = snippetOf(title, query)
  return found && { comment: null, ...found }
}

/** A date of a filter (YYYY-MM-DD, UTC), at its midnight. */
function dayOf(name: string, value: string): Date {
  const at = dayStart(value)
  if (at === undefined) throw unreadable(`gives ${name}:${value}, which is not a date written YYYY-MM-DD`)
  return new Date(at)
}

export function createSearchStore(port: StorePort) {
  const { db, tables } = port
  const { discussions, categories, comments, discussionTags, fieldValues, users, searchBackfill } = tables
  const view = discussionViews(port)

  /** The query's filters, looked up on the site; a customer may filter by state, category and dates only. */
  async function filtersOf(siteId: number, searcher: Searcher, query: SearchQuery, searchable: Field[]): Promise<Filters> {
    const given = query.filters
    const filters: Filters = { state: 'live', fields: [] }
    for (const [key, text] of Object.entries(query.fields)) {
      const field = searchable.find((f) => f.key === key)!
      const kept = fieldMatch(shapeOf(field), text)
      if ('problem' in kept) throw unreadable(`gives ${key}:${text}, and the field ${key} ${kept.problem}`)
      filters.fields.push({ id: field.id, ...kept })
    }
    if (!searcher.staff) {
      const teamOnly = (['from', 'assignee', 'tag', 'sla'] as const).find((name) => given[name] !== undefined)
      if (teamOnly) throw unreadable(`gives ${teamOnly}:, which only the team may search by`)
    }
    for (const value of Object.values(given)) if (holdsNul(value)) throw unreadable('holds the character U+0000')
    if (given.state !== undefined) {
      const state = given.state.toLowerCase()
      if (!STATE_FILTERS.includes(state)) throw unreadable(`gives state:${given.state}; a state is one of ${STATE_FILTERS.join(', ')}`)
      filters.state = state as StateScope
    }
    if (given.category !== undefined) {
      const name = given.category.toLowerCase()
      // A customer's or a visitor's search knows the public categories only: a private one's name
      // or number is answered as one that does not exist, so the search tells nothing of it.
      const all = await db
        .select({ id: categories.id, name: categories.name })
        .from(categories)
        .where(and(eq(categories.siteId, siteId), searcher.staff ? undefined : eq(categories.public, true)))
      const category = all.find((c) => String(c.id) === name || c.name.toLowerCase() === name)
      if (!category) throw unreadable(`gives category:${given.category}, and there is no such category on this site`)
      filters.categoryId = category.id
    }
    // An address nobody has, or no supporter's, matches no discussion: 0 is no user's id.
    if (given.from !== undefined) filters.authorId = (await findUserByEmail(port, given.from))?.id ?? 0
    if (given.assignee !== undefined) {
      const who = given.assignee.toLowerCase()
      filters.assignee = who === 'me' ? searcher.userId! : who === 'none' ? null : ((await findUserByEmail(port, given.assignee))?.id ?? NO_ASSIGNEE)
    }
    if (given.tag !== undefined) {
      const tag = tagOf(given.tag)
      if ('problem' in tag) throw unreadable(`gives tag:${given.tag}, which cannot be a tag (it ${tag.problem})`)
      filters.tag = tag.tag
    }
    if (given.sla !== undefined) {
      if (given.sla.toLowerCase() !== 'breached') throw unreadable(`gives sla:${given.sla}; the SLA filter is sla:breached`)
      filters.breached = true
    }
    if (given.after !== undefined) filters.from = dayOf('after', given.after)
    if (given.before !== undefined) filters.before = dayOf('before', given.before)
    return filters
  }

  /** The discussions a search may return, as a condition over the discussions table. */
  function scopeOf(siteId: number, searcher: Searcher, filters: Filters): SQL {
    const where: Array<SQL | undefined> = [eq(discussions.siteId, siteId)]
    const { state } = filters
    where.push(state === 'live' ? isLive(discussions.state) : state === 'todo' ? inArray(discussions.state, [...SCOPE_STATES.todo]) : eq(discussions.state, state))
    if (!searcher.staff) {
      const theirs = searcher.userId === null ? undefined : eq(discussions.authorId, searcher.userId)
      const shown = searcher.publicToo ? eq(discussions.public, true) : undefined
      // A custom field's value is the discussion's customer's (an order number, a plan): a
      // customer's search finds by it among their own discussions only, never a public one of
      // someone else's, so no value of another customer is told by what it finds.
      where.push(isLive(discussions.state), (filters.fields.length > 0 ? theirs : or(theirs, shown)) ?? sql`1 = 0`)
    }
    if (filters.categoryId !== undefined) where.push(eq(discussions.categoryId, filters.categoryId))
    if (filters.authorId !== undefined) where.push(eq(discussions.authorId, filters.authorId))
    if (filters.assignee !== undefined) where.push(filters.assignee === null ? isNull(discussions.assigneeId) : eq(discussions.assigneeId, filters.assignee))
    if (filters.tag !== undefined) {
      where.push(inArray(discussions.id, db.select({ id: discussionTags.discussionId }).from(discussionTags).where(and(eq(discussionTags.siteId, siteId), eq(discussionTags.tag, filters.tag)))))
    }
    for (const field of filters.fields) {
      // One value, or a range of dates (YYYY-MM-DD sorts as text): either way the index's order.
      const value = 'text' in field ? eq(fieldValues.value, field.text) : and(field.from === null ? undefined : gte(fieldValues.value, field.from), field.to === null ? undefined : lte(fieldValues.value, field.to))
      where.push(inArray(discussions.id, db.select({ id: fieldValues.discussionId }).from(fieldValues).where(and(eq(fieldValues.siteId, siteId), eq(fieldValues.fieldId, field.id), value))))
    }
    if (filters.breached) where.push(ne(discussions.slaBreached, ''))
    if (filters.from !== undefined) where.push(gte(discussions.createdAt, filters.from))
    if (filters.before !== undefined) where.push(lt(discussions.createdAt, filters.before))
    return and(...where)!
  }

  /** The snippet of each discussion on the page: in its first comment the searcher may read that holds a word searched for, else in its title. */
  async function snippetsOf(ids: number[], query: SearchQuery, searcher: Searcher): Promise<Map<number, SearchResult['snippet']>> {
    const snippets = new Map<number, SearchResult['snippet']>()
    if (query.find.length === 0 || ids.length === 0) return snippets
    const rows = await db
      .select({ discussionId: comments.discussionId, number: comments.number, body: comments.body })
      .from(comments)
      .where(and(inArray(comments.discussionId, ids), searcher.staff ? undefined : eq(comments.internal, false)))
      .orderBy(asc(comments.discussionId), asc(comments.number))
    for (const row of rows) {
      if (snippets.has(row.discussionId)) continue
      const snippet = snippetOf(row.body, query)
      if (snippet) snippets.set(row.discussionId, { comment: row.number, ...snippet })
    }
    return snippets
  }

  /**
   * Indexes the next batch of the discussions that were there before the index (the newest
   * first), in one transaction; whether any are left. Every process may run it: the row that
   * says how far it went is held by the batch, so batches take turns.
   */
  async function backfill(batch = BACKFILL_BATCH): Promise<{ indexed: number; done: boolean }> {
    return port.atomic(async (tx) => {
      const [progress] = await tx.locked(tx.db.select({ below: searchBackfill.below }).from(searchBackfill).where(eq(searchBackfill.key, 1)))
      if (!progress || progress.below <= 1) return { indexed: 0, done: true }
      const { discussions: d, comments: c } = tx.tables
      const rows = await tx.db.select({ id: d.id, title: d.title }).from(d).where(lt(d.id, progress.below)).orderBy(desc(d.id)).limit(batch)
      const lowest = rows.length === 0 ? 1 : rows[rows.length - 1].id
      const texts = await tx.db
        .select({ discussionId: c.discussionId, body: c.body, internal: c.internal })
        .from(c)
        .where(and(gte(c.discussionId, lowest), lt(c.discussionId, progress.below)))
        .orderBy(asc(c.discussionId), asc(c.number))
      const byDiscussion = Map.groupBy(texts, (t) => t.discussionId)
      // Each has its opening post: its comments are there.
      await tx.search.writeBatch(rows.map((row) => ({ discussionId: row.id, document: searchDocument(row.title, byDiscussion.get(row.id)!) })))
      await tx.db.update(searchBackfill).set({ below: lowest }).where(eq(searchBackfill.key, 1))
      return { indexed: rows.length, done: lowest <= 1 }
    })
  }

  return {
    /**
     * The discussions of the site that match the query, best first, one page of them. A query
     * that cannot be read, or a filter naming what is not there (a category, a state), is a
     * StoreError (invalid, field `q`) saying why.
     */
    async find(request: SearchRequest): Promise<SearchAnswer> {
      const { siteId, searcher } = request
      // The fields the searcher may filter by: the team's all, a customer's those shown to customers.
      const searchable = (await activeFieldsIn(port, siteId)).filter((f) => searcher.staff || f.audience === 'customers')
      const query = readQuery(request.q, searchable.map((f) => f.key))
      const filters = await filtersOf(siteId, searcher, query, searchable)
      const where = scopeOf(siteId, searcher, filters)
      // Words: the index finds them. Filters alone: the newest discussions they keep.
      const window =
        query.find.length > 0
          ? await port.search.window({ query, sections: searcher.staff ? undefined : ['title', 'text'], where, limit: WINDOW + 1 })
          : (await db.select({ id: discussions.id }).from(discussions).where(where).orderBy(desc(discussions.id)).limit(WINDOW + 1)).map(({ id }) => ({ id, score: 0 }))
      const capped = window.length > WINDOW
      const ranked = window.slice(0, WINDOW).sort((a, b) => b.score - a.score || b.id - a.id)
      const page = ranked.slice(request.offset, request.offset + request.limit).map(({ id }) => id)
      if (page.length === 0) return { total: ranked.length, capped, results: [] }
      const rows = await db.select(view.discussion).from(discussions).innerJoin(users, eq(users.id, discussions.authorId)).where(inArray(discussions.id, page))
      const byId = new Map(rows.map((row) => [row.id, row as DiscussionRow]))
      const snippets = await snippetsOf(page, query, searcher)
      // Every one is there still: a discussion is never removed, only marked deleted.
      const results = page.map((id) => {
        const discussion = byId.get(id)!
        return { discussion, snippet: snippets.get(id) ?? titleSnippet(discussion.title, query) }
      })
      return { total: ranked.length, capped, results }
    },

    backfill,

    /**
     * Runs batches of the backfill until none is left or `closing` aborts, letting everything else
     * run between two (a batch holds SQLite's connection for tens of milliseconds); how many it
     * indexed. Not a share of the connection: each batch is a transaction of its own.
     */
    backfillAll: unguarded(async ({ closing, onBatch, batch }: { closing?: AbortSignal; onBatch?: (indexed: number) => void; batch?: number } = {}): Promise<number> => {
      let indexed = 0
      while (!closing?.aborted) {
        const step = await backfill(batch)
        indexed += step.indexed
        if (step.indexed > 0) onBatch?.(indexed)
        if (step.done) {
          if (indexed > 0) await port.search.settle()
          break
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
      return indexed
    }),

    /** How many discussions the backfill has still to index. */
    async waiting(): Promise<number> {
      const [progress] = await db.select({ below: searchBackfill.below }).from(searchBackfill).where(eq(searchBackfill.key, 1))
      if (!progress || progress.below <= 1) return 0
      const [{ n }] = await db.select({ n: count() }).from(discussions).where(lt(discussions.id, progress.below))
      return Number(n)
    },

    /** Starts the index again for every discussion there is (after rows came in by another way than the stores: a copy, a seed). */
    async reindexAll(): Promise<void> {
      const [{ top }] = await db.select({ top: sql<number>`coalesce(max(${discussions.id}), 0)` }).from(discussions)
      const below = Number(top) + 1
      await db.insert(searchBackfill).values({ key: 1, below }).onConflictDoUpdate({ target: searchBackfill.key, set: { below } })
    },
  }
}

export type SearchStore = ReturnType<typeof createSearchStore>
