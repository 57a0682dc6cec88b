import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import pg from 'pg'
import pino from 'pino'
import { addresses, bareSchema, bearerOf, commentJson, discussionJson, HEADERS, listingSchema, logLine, NEW_ROW, NOT_FOUND, notFoundSchema, pageLinks, pageOf, PER_PAGE, refusal, siteJson, siteSchema, slug, tokenStatus, type PageRow, type TokenRow } from './baseline-shape.ts'

// The baseline on PostgreSQL: tools/bench/baseline.ts with `pg` in place of better-sqlite3, the
// limit of bare Fastify and the same driver, with the same pool size as the service
// (SERVICE_DB_POOL_SIZE, 10 by default), for the same pages. Like the SQLite baseline it imports
// none of the project's modules: fastify, pg, node and tools/bench/baseline-shape.ts alone. Its SQL
// is written here by hand from db/postgres/migrations/, as named (server-side prepared) statements,
// the way the service's stores prepare theirs. Each request is three round trips, one statement
// each (the site, the live total from discussion_counts, the page's rows), the reads the service
// makes for the same page besides its authentication.
//
// It answers GET /:site/discussions[?page=N], GET /:site, GET /bare and GET /job/:site (the site to
// a personal token: the token's digest and the site in one round trip, one log line), as
// tools/bench/baseline.ts does; elsewhere with no authentication, no logging, no media-type
// negotiation and no validation beyond reading `page`. Started with BASELINE_WRITES=on on a schema
// of its own (issue 75), the two writes as tools/bench/baseline.ts answers them: a new discussion
// (the token and site in one round trip, then in one transaction the site's row locked for the next
// number, the category, the discussion, its opening comment, its search row and the count) and a
// reply (the token and site, then in one transaction the discussion locked, its comment, counters
// and state, its search row made again from its comments, the counts moved). Its search row is
// PostgreSQL's own `to_tsvector('simple', ...)` of the same texts, weighted by section as the
// service's: the stack doing that job, where the service writes its own words' positions.
//
// node --import tsx tools/bench/baseline-postgres.ts --db postgres://...?schema=NAME --pool N --port N --base-url URL --site-url URL

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    pool: { type: 'string' },
    port: { type: 'string' },
    'base-url': { type: 'string' },
    'site-url': { type: 'string' },
  },
})
const baseUrl = values['base-url']!
const siteUrl = values['site-url']!

// The service's address form: ?schema=NAME names the schema its tables are in.
const url = new URL(values.db!)
const schema = url.searchParams.get('schema') ?? 'public'
url.searchParams.delete('schema')
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`bad schema name: ${schema}`)
const pool = new pg.Pool({ connectionString: url.toString(), max: Number(values.pool ?? process.env.SERVICE_DB_POOL_SIZE ?? 10), options: `-c search_path=${schema}` })
pool.on('error', () => {})

const SITE = { name: 'site', text: 'SELECT id, name, permalink FROM sites WHERE permalink = $1' }
// The live total from the per-category counts the schema keeps (discussion_counts), not a count(*).
const TOTAL = { name: 'total', text: "SELECT coalesce(sum(count), 0)::integer AS n FROM discussion_counts WHERE site_id = $1 AND state not in ('deleted', 'spam', 'merged')" }
// The page's ids from the partial activity index (discussions_site_activity_idx), then only those
// rows, joined to their authors.
const PAGE = {
  name: 'page',
  text: `
  SELECT d.number, d.title, d.permalink, d.state, d.public, d.author_id, d.category_id,
         d.created_at, d.updated_at, d.last_updated_at, d.comments_count,
         u.email AS author_email, u.name AS author_name,
         d.assignee_id, (SELECT name FROM users a WHERE a.id = d.assignee_id) AS assignee_name, d.tags,
         d.sla_policy_id, d.first_reply_due_at, d.next_reply_due_at, d.resolution_due_at, d.sla_breached,
         d.first_reply_at, d.first_reply_minutes, d.first_reply_business, d.resolved_at, d.resolution_minutes, d.resolution_business,
         d.reopens, d.team_replies, d.rating, d.rating_comment, d.rated_at, d.fields, d.merged_into, d.split_from
  FROM discussions d JOIN users u ON u.id = d.author_id
  WHERE d.id IN (
    SELECT id FROM discussions
    WHERE site_id = $1 AND state not in ('deleted', 'spam', 'merged')
    ORDER BY last_updated_at DESC, id DESC
    LIMIT $2 OFFSET $3)
  ORDER BY d.last_updated_at DESC, d.id DESC`,
}

// The site with the token made for it, its owner's state and role there: one round trip.
const SITE_WITH_TOKEN = {
  name: 'site_with_token',
  text: `
  SELECT s.id, s.name, s.permalink, t.expires_at, t.revoked_at, t.access, u.disabled, m.role
  FROM sites s
  LEFT JOIN personal_tokens t ON t.fingerprint = $1 AND t.site_id = s.id
  LEFT JOIN users u ON u.id = t.user_id
  LEFT JOIN memberships m ON m.site_id = s.id AND m.user_id = t.user_id
  WHERE s.permalink = $2`,
}
// One line a request, written as the service writes its own: buffered, to standard output.
const log = pino.destination({ dest: 1, sync: false })

async function siteByPermalink(permalink: string) {
  const { rows } = await pool.query<{ id: number; name: string; permalink: string }>({ ...SITE, values: [permalink] })
  return rows[0]
}

const app = Fastify({ logger: false })

app.get('/bare', { schema: { response: { 200: bareSchema } } }, async () => ({ ok: true }))

app.get('/:site', { schema: { response: { 200: siteSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = await siteByPermalink((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  reply.headers(HEADERS)
  return siteJson(baseUrl, site, addresses(baseUrl, siteUrl, site.permalink))
})

app.get('/job/:site', { schema: { response: { 200: siteSchema, 401: notFoundSchema, 403: notFoundSchema } } }, async (request, reply) => {
  const token = bearerOf(request.headers.authorization)
  const values = token === undefined ? undefined : [createHash('sha256').update(token).digest('hex'), (request.params as { site: string }).site]
  const row = values === undefined ? undefined : (await pool.query<{ id: number; name: string; permalink: string } & TokenRow>({ ...SITE_WITH_TOKEN, values })).rows[0]
  const status = tokenStatus(row, Date.now())
  log.write(logLine(request.method, request.url, request.ip, status, reply.elapsedTime))
  if (status !== 200) return reply.code(status).send(refusal(status))
  reply.headers(HEADERS)
  return siteJson(baseUrl, row!, addresses(baseUrl, siteUrl, row!.permalink))
})

app.get('/:site/discussions', { schema: { response: { 200: listingSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = await siteByPermalink((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  const page = pageOf(request.query)
  const offset = (page - 1) * PER_PAGE
  const total = (await pool.query<{ n: number }>({ ...TOTAL, values: [site.id] })).rows[0].n
  const rows = offset < total ? (await pool.query<PageRow>({ ...PAGE, values: [site.id, PER_PAGE, offset] })).rows : []
  const a = addresses(baseUrl, siteUrl, site.permalink)
  reply.headers(HEADERS).header('link', pageLinks(a, page, total))
  return { offset, total, per_page: PER_PAGE, discussions: rows.map((row) => discussionJson(row, a)) }
})

if (process.env.BASELINE_WRITES === 'on') writeRoutes()

/** The writes as the same job done plainly: each request's statements, named (prepared once by the server), in one transaction. */
function writeRoutes() {
  // The site with the token made for it, its owner's state, role and name there: one round trip.
  const WRITER = {
    name: 'writer',
    text: `
    SELECT s.id, s.permalink, t.expires_at, t.revoked_at, t.access, u.disabled, m.role, u.id AS user_id, u.email, u.name
    FROM sites s
    LEFT JOIN personal_tokens t ON t.fingerprint = $1 AND t.site_id = s.id
    LEFT JOIN users u ON u.id = t.user_id
    LEFT JOIN memberships m ON m.site_id = s.id AND m.user_id = t.user_id
    WHERE s.permalink = $2`,
  }
  const LOCK_SITE = { name: 'lock_site', text: 'SELECT id FROM sites WHERE id = $1 FOR UPDATE' }
  const CATEGORY = { name: 'category', text: 'SELECT public FROM categories WHERE id = $1 AND site_id = $2' }
  const LAST_NUMBER = { name: 'last_number', text: 'SELECT max(number) AS n FROM discussions WHERE site_id = $1' }
  const INSERT_DISCUSSION = {
    name: 'insert_discussion',
    text: `INSERT INTO discussions (site_id, number, title, permalink, state, public, author_id, category_id, created_at, updated_at, last_updated_at, comments_count, awaiting_team)
      VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $8, $8, $8, 1, false) RETURNING id`,
  }
  const INSERT_COMMENT = { name: 'insert_comment', text: "INSERT INTO comments (discussion_id, number, author_id, by_supporter, body, internal, via, created_at) VALUES ($1, $2, $3, true, $4, false, 'api', $5) RETURNING id" }
  const SEARCH = {
    name: 'search',
    text: `INSERT INTO discussion_search (discussion_id, document)
      VALUES ($1, setweight(to_tsvector('simple', $2), 'A') || setweight(to_tsvector('simple', $3), 'B') || setweight(to_tsvector('simple', $4), 'C'))
      ON CONFLICT (discussion_id) DO UPDATE SET document = excluded.document`,
  }
  const COUNT = {
    name: 'count',
    text: `INSERT INTO discussion_counts (site_id, category_id, state, public, assignee_id, count) VALUES ($1, $2, $3, $4, 0, $5)
      ON CONFLICT (site_id, category_id, state, public, assignee_id) DO UPDATE SET count = discussion_counts.count + excluded.count`,
  }
  const DISCUSSION = { name: 'discussion', text: 'SELECT id, title, state, public, category_id, comments_count FROM discussions WHERE site_id = $1 AND number = $2 FOR UPDATE' }
  const TEXTS = { name: 'texts', text: 'SELECT body, internal FROM comments WHERE discussion_id = $1 ORDER BY number' }
  const AFTER_COMMENT = { name: 'after_comment', text: 'UPDATE discussions SET comments_count = $1, state = $2, updated_at = $3, last_updated_at = $3, awaiting_team = false WHERE id = $4' }

  /** Runs `work` in one transaction on one connection of the pool. */
  async function transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      await client.query('ROLLBACK')
      throw error
    } finally {
      client.release()
    }
  }
  type Writer = { id: number; permalink: string; user_id: number; email: string; name: string } & TokenRow
  /** The request's writer, or the refusal's status; one log line either way, as the service writes. */
  async function writer(request: FastifyRequest, reply: FastifyReply) {
    const token = bearerOf(request.headers.authorization)
    const row = token === undefined ? undefined : (await pool.query<Writer>({ ...WRITER, values: [createHash('sha256').update(token).digest('hex'), (request.params as { site: string }).site] })).rows[0]
    const status = tokenStatus(row, Date.now(), 'write')
    return { row, status, logged: (code: number) => log.write(logLine(request.method, request.url, request.ip, code, reply.elapsedTime)) }
  }

  app.post('/job/:site/categories/:id/discussions', async (request, reply) => {
    const { row, status, logged } = await writer(request, reply)
    if (status !== 200) {
      logged(status)
      return reply.code(status).send(refusal(status))
    }
    const { title: asked, body, public: askedPublic } = request.body as { title: string; body: string; public?: boolean }
    const title = asked.trim()
    const categoryId = Number((request.params as { id: string }).id)
    const at = new Date()
    const made = await transaction(async (client) => {
      await client.query({ ...LOCK_SITE, values: [row!.id] })
      const found = (await client.query<{ public: boolean }>({ ...CATEGORY, values: [categoryId, row!.id] })).rows[0]
      if (!found) return undefined
      const isPublic = askedPublic ?? found.public
      const number = ((await client.query<{ n: number | null }>({ ...LAST_NUMBER, values: [row!.id] })).rows[0].n ?? 0) + 1
      const { id } = (await client.query<{ id: number }>({ ...INSERT_DISCUSSION, values: [row!.id, number, title, slug(title), isPublic, row!.user_id, categoryId, at] })).rows[0]
      const comment = (await client.query<{ id: number }>({ ...INSERT_COMMENT, values: [id, 1, row!.user_id, body, at] })).rows[0]
      await client.query({ ...SEARCH, values: [id, title, body, ''] })
      await client.query({ ...COUNT, values: [row!.id, categoryId, 'open', isPublic, 1] })
      return { number, isPublic, commentId: comment.id }
    })
    if (!made) {
      logged(404)
      return reply.code(404).send(NOT_FOUND)
    }
    logged(201)
    const a = addresses(baseUrl, siteUrl, row!.permalink)
    const item = discussionJson({ ...NEW_ROW, number: made.number, title, permalink: slug(title), public: made.isPublic, author_id: row!.user_id, category_id: categoryId, created_at: at, updated_at: at, last_updated_at: at, author_email: row!.email, author_name: row!.name }, a)
    reply.code(201).headers(HEADERS).header('location', item.href)
    return { ...item, comments: [commentJson(a, made.number, { id: made.commentId, number: 1, body, created_at: at.getTime() }, row!)] }
  })

  app.post('/job/:site/discussions/:number/comments', async (request, reply) => {
    const { row, status, logged } = await writer(request, reply)
    if (status !== 200) {
      logged(status)
      return reply.code(status).send(refusal(status))
    }
    const { body } = request.body as { body: string }
    const number = Number((request.params as { number: string }).number)
    const at = new Date()
    const made = await transaction(async (client) => {
      const d = (await client.query<{ id: number; title: string; state: string; public: boolean; category_id: number; comments_count: number }>({ ...DISCUSSION, values: [row!.id, number] })).rows[0]
      if (!d || d.state === 'deleted') return undefined
      const next = d.comments_count + 1
      const { id } = (await client.query<{ id: number }>({ ...INSERT_COMMENT, values: [d.id, next, row!.user_id, body, at] })).rows[0]
      const state = d.state === 'new' ? 'open' : d.state
      await client.query({ ...AFTER_COMMENT, values: [next, state, at, d.id] })
      const texts = (await client.query<{ body: string; internal: boolean }>({ ...TEXTS, values: [d.id] })).rows
      const text = (internal: boolean) => texts.filter((c) => c.internal === internal).map((c) => c.body).join('\n')
      await client.query({ ...SEARCH, values: [d.id, d.title, text(false), text(true)] })
      if (state !== d.state) {
        await client.query({ ...COUNT, values: [row!.id, d.category_id, d.state, d.public, -1] })
        await client.query({ ...COUNT, values: [row!.id, d.category_id, state, d.public, 1] })
      }
      return { id, number: next }
    })
    if (!made) {
      logged(404)
      return reply.code(404).send(NOT_FOUND)
    }
    logged(201)
    const json = commentJson(addresses(baseUrl, siteUrl, row!.permalink), number, { id: made.id, number: made.number, body, created_at: at.getTime() }, row!)
    return reply.code(201).headers(HEADERS).header('location', json.href).send(json)
  })
}

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

process.once('SIGTERM', () => {
  void app.close().then(async () => {
    await pool.end()
    process.exit(0)
  })
})
