import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import pino from 'pino'
import { addresses, bareSchema, bearerOf, commentJson, discussionJson, HEADERS, listingSchema, logLine, NEW_ROW, NOT_FOUND, notFoundSchema, pageLinks, pageOf, PER_PAGE, refusal, siteJson, siteSchema, slug, tokenStatus, type PageRow, type TokenRow } from './baseline-shape.ts'

// The baseline: the limit of this stack for the same pages. The house rule: a benchmark's
// baseline never imports the project's own modules; it is the bare stack doing the same job, so
// the ratio shows what the project's layers cost. So this file imports fastify, better-sqlite3,
// node and tools/bench/baseline-shape.ts (the v1 shapes both baselines answer, itself importing
// nothing) alone (and pino, Fastify's own logger, for the same job's log line): its SQL and its mapping from rows to JSON are written here by hand, from the
// schema (db/schema/sqlite.ts) and the documented v1 shapes, and the run (tools/bench/run.ts) checks
// before measuring anything that it answers the same bytes as the service for the same rows.
// tools/bench/baseline-postgres.ts is the same on PostgreSQL.
//
// It answers
//   GET /:site/discussions[?page=N]  the listing of the site's live discussions (every state but
//                                    deleted) by last activity, 30 a page, in the v1 envelope;
//   GET /:site                       the site resource;
//   GET /bare                        a small constant JSON object: the limit of the stack itself,
//                                    for the pairs that build no page (authentication alone, the 401);
//   GET /job/:site                   the site resource as the service's job is to answer it to a
//                                    personal token: the token's digest and the site read in one
//                                    statement, the token checked (401, 403), one log line written.
// and, started with BASELINE_WRITES=on on a copy of its own (issue 75), the writes as the same job:
//   POST /job/:site/categories/:id/discussions   a new discussion: the token (write access) and the
//                                    site read, then in one transaction the category, the next
//                                    number, the discussion, its opening comment, its search row and
//                                    the site's count of it; one log line; the item and its comment back;
//   POST /job/:site/discussions/:number/comments  a reply: the token and the site, then in one
//                                    transaction the discussion, its comment, its counters and state,
//                                    its search row made again from its comments, the counts moved;
//                                    one log line; the comment back.
// The file is opened as the service opens it (WAL, every commit synced, foreign keys on).
// Elsewhere no authentication, no logging, no media-type negotiation, no validation beyond reading `page`.
// Links are built from --base-url and --site-url ({site} is the site's permalink), as the service
// builds them from its configuration.
//
// node --import tsx tools/bench/baseline.ts --db FILE --port N --base-url URL --site-url URL
// (the run starts it bundled into plain JavaScript: baselineScript() in tools/bench/servers.ts)

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    port: { type: 'string' },
    'base-url': { type: 'string' },
    'site-url': { type: 'string' },
  },
})
const baseUrl = values['base-url']!
const siteUrl = values['site-url']!

const writes = process.env.BASELINE_WRITES === 'on'
// The same SQLite file the service reads, opened as it exists (never created), and used for reads
// only; or, for the writes, with the service's settings (db/sqlite/client.ts).
const db = new Database(values.db!, { fileMustExist: true })
if (writes) {
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
} else db.pragma('query_only = ON')

const siteByPermalink = db.prepare<[string], { id: number; name: string; permalink: string }>('SELECT id, name, permalink FROM sites WHERE permalink = ?')
// The live total from the per-category counts the schema keeps (discussion_counts), not a count(*).
const liveTotal = db.prepare<[number], { n: number }>("SELECT coalesce(sum(count), 0) AS n FROM discussion_counts WHERE site_id = ? AND state not in ('deleted', 'spam', 'merged')")
// The page's ids from the activity index alone (a deep page skips index entries, not rows), then
// only those rows, joined to their authors. `+` keeps the outer ORDER BY off the index: it sorts 30 rows.
const livePage = db.prepare<[number, number, number], PageRow>(`
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
    WHERE site_id = ? AND state not in ('deleted', 'spam', 'merged')
    ORDER BY last_updated_at DESC, id DESC
    LIMIT ? OFFSET ?)
  ORDER BY +d.last_updated_at DESC, d.id DESC`)

// The site with the token made for it, its owner's state and role there: one statement.
const siteWithToken = db.prepare<[string, string], { id: number; name: string; permalink: string } & TokenRow>(`
  SELECT s.id, s.name, s.permalink, t.expires_at, t.revoked_at, t.access, u.disabled, m.role
  FROM sites s
  LEFT JOIN personal_tokens t ON t.fingerprint = ? AND t.site_id = s.id
  LEFT JOIN users u ON u.id = t.user_id
  LEFT JOIN memberships m ON m.site_id = s.id AND m.user_id = t.user_id
  WHERE s.permalink = ?`)
// One line a request, written as the service writes its own: buffered, to standard output.
const log = pino.destination({ dest: 1, sync: false })

const app = Fastify({ logger: false })

app.get('/bare', { schema: { response: { 200: bareSchema } } }, async () => ({ ok: true }))

app.get('/:site', { schema: { response: { 200: siteSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = siteByPermalink.get((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  reply.headers(HEADERS)
  return siteJson(baseUrl, site, addresses(baseUrl, siteUrl, site.permalink))
})

app.get('/job/:site', { schema: { response: { 200: siteSchema, 401: notFoundSchema, 403: notFoundSchema } } }, async (request, reply) => {
  const token = bearerOf(request.headers.authorization)
  const row = token === undefined ? undefined : siteWithToken.get(createHash('sha256').update(token).digest('hex'), (request.params as { site: string }).site)
  const status = tokenStatus(row, Date.now())
  log.write(logLine(request.method, request.url, request.ip, status, reply.elapsedTime))
  if (status !== 200) return reply.code(status).send(refusal(status))
  reply.headers(HEADERS)
  return siteJson(baseUrl, row!, addresses(baseUrl, siteUrl, row!.permalink))
})

app.get('/:site/discussions', { schema: { response: { 200: listingSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = siteByPermalink.get((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  const page = pageOf(request.query)
  const offset = (page - 1) * PER_PAGE
  const total = liveTotal.get(site.id)!.n
  const rows = offset < total ? livePage.all(site.id, PER_PAGE, offset) : []
  const a = addresses(baseUrl, siteUrl, site.permalink)
  reply.headers(HEADERS).header('link', pageLinks(a, page, total))
  return { offset, total, per_page: PER_PAGE, discussions: rows.map((row) => discussionJson(row, a)) }
})

if (writes) writeRoutes()

/** The writes as the same job done plainly: each request's statements, prepared once, in one transaction. */
function writeRoutes() {
  // The site with the token made for it, its owner's state, role and name there: one statement.
  const writerOf = db.prepare<[string, string], { id: number; permalink: string; user_id: number; email: string; name: string } & TokenRow>(`
    SELECT s.id, s.permalink, t.expires_at, t.revoked_at, t.access, u.disabled, m.role, u.id AS user_id, u.email, u.name
    FROM sites s
    LEFT JOIN personal_tokens t ON t.fingerprint = ? AND t.site_id = s.id
    LEFT JOIN users u ON u.id = t.user_id
    LEFT JOIN memberships m ON m.site_id = s.id AND m.user_id = t.user_id
    WHERE s.permalink = ?`)
  const category = db.prepare<[number, number], { public: number }>('SELECT public FROM categories WHERE id = ? AND site_id = ?')
  const lastNumber = db.prepare<[number], { n: number | null }>('SELECT max(number) AS n FROM discussions WHERE site_id = ?')
  const insertDiscussion = db.prepare(`
    INSERT INTO discussions (site_id, number, title, permalink, state, public, author_id, category_id, created_at, updated_at, last_updated_at, comments_count, awaiting_team)
    VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, 1, 0) RETURNING id`)
  const insertComment = db.prepare<unknown[], { id: number }>(`
    INSERT INTO comments (discussion_id, number, author_id, by_supporter, body, internal, via, created_at) VALUES (?, ?, ?, 1, ?, 0, 'api', ?) RETURNING id`)
  const insertSearch = db.prepare('INSERT INTO discussion_search (rowid, title, text, notes) VALUES (?, ?, ?, ?)')
  const deleteSearch = db.prepare('DELETE FROM discussion_search WHERE rowid = ?')
  const count = db.prepare(`
    INSERT INTO discussion_counts (site_id, category_id, state, public, assignee_id, count) VALUES (?, ?, ?, ?, 0, ?)
    ON CONFLICT (site_id, category_id, state, public, assignee_id) DO UPDATE SET count = count + excluded.count`)
  const discussionOf = db.prepare<[number, number], PageRow & { id: number }>(`
    SELECT d.id, d.number, d.title, d.permalink, d.state, d.public, d.author_id, d.category_id, d.created_at, d.updated_at, d.last_updated_at, d.comments_count
    FROM discussions d WHERE d.site_id = ? AND d.number = ?`)
  const textsOf = db.prepare<[number], { body: string; internal: number }>('SELECT body, internal FROM comments WHERE discussion_id = ? ORDER BY number')
  const afterComment = db.prepare('UPDATE discussions SET comments_count = ?, state = ?, updated_at = ?, last_updated_at = ?, awaiting_team = 0 WHERE id = ?')

  /** The request's writer, or the refusal's status; one log line either way, as the service writes. */
  function writer(request: FastifyRequest, reply: FastifyReply) {
    const token = bearerOf(request.headers.authorization)
    const row = token === undefined ? undefined : writerOf.get(createHash('sha256').update(token).digest('hex'), (request.params as { site: string }).site)
    const status = tokenStatus(row, Date.now(), 'write')
    return { row, status, logged: (code: number) => log.write(logLine(request.method, request.url, request.ip, code, reply.elapsedTime)) }
  }
  const create = db.transaction((site: number, categoryId: number, isPublic: number, title: string, body: string, userId: number, at: number) => {
    const number = (lastNumber.get(site)!.n ?? 0) + 1
    const { id } = insertDiscussion.get(site, number, title, slug(title), isPublic, userId, categoryId, at, at, at) as { id: number }
    const comment = insertComment.get(id, 1, userId, body, at)!
    insertSearch.run(id, title, body, '')
    count.run(site, categoryId, 'open', isPublic, 1)
    return { id, number, commentId: comment.id }
  })
  app.post('/job/:site/categories/:id/discussions', async (request, reply) => {
    const { row, status, logged } = writer(request, reply)
    if (status !== 200) {
      logged(status)
      return reply.code(status).send(refusal(status))
    }
    const { title, body, public: asked } = request.body as { title: string; body: string; public?: boolean }
    const categoryId = Number((request.params as { id: string }).id)
    const found = category.get(categoryId, row!.id)
    if (!found) {
      logged(404)
      return reply.code(404).send(NOT_FOUND)
    }
    const at = Date.now()
    const isPublic = asked === undefined ? found.public : asked ? 1 : 0
    const made = create(row!.id, categoryId, isPublic, title.trim(), body, row!.user_id, at)
    logged(201)
    const a = addresses(baseUrl, siteUrl, row!.permalink)
    const item = discussionJson({ ...NEW_ROW, number: made.number, title: title.trim(), permalink: slug(title), public: isPublic as 0 | 1, author_id: row!.user_id, category_id: categoryId, created_at: at, updated_at: at, last_updated_at: at, author_email: row!.email, author_name: row!.name }, a)
    reply.code(201).headers(HEADERS).header('location', item.href)
    return { ...item, comments: [commentJson(a, made.number, { id: made.commentId, number: 1, body, created_at: at }, row!)] }
  })

  const answer = db.transaction((site: number, number: number, body: string, userId: number, at: number) => {
    const d = discussionOf.get(site, number)
    if (!d || d.state === 'deleted') return undefined
    const next = d.comments_count + 1
    const { id } = insertComment.get(d.id, next, userId, body, at)!
    const state = d.state === 'new' ? 'open' : d.state
    afterComment.run(next, state, at, at, d.id)
    const texts = textsOf.all(d.id)
    deleteSearch.run(d.id)
    insertSearch.run(d.id, d.title, texts.filter((c) => !c.internal).map((c) => c.body).join('\n'), texts.filter((c) => c.internal).map((c) => c.body).join('\n'))
    if (state !== d.state) {
      count.run(site, d.category_id, d.state, d.public, -1)
      count.run(site, d.category_id, state, d.public, 1)
    }
    return { id, number: next }
  })
  app.post('/job/:site/discussions/:number/comments', async (request, reply) => {
    const { row, status, logged } = writer(request, reply)
    if (status !== 200) {
      logged(status)
      return reply.code(status).send(refusal(status))
    }
    const { body } = request.body as { body: string }
    const number = Number((request.params as { number: string }).number)
    const at = Date.now()
    const made = answer(row!.id, number, body, row!.user_id, at)
    if (!made) {
      logged(404)
      return reply.code(404).send(NOT_FOUND)
    }
    logged(201)
    const json = commentJson(addresses(baseUrl, siteUrl, row!.permalink), number, { id: made.id, number: made.number, body, created_at: at }, row!)
    return reply.code(201).headers(HEADERS).header('location', json.href).send(json)
  })
}

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

// A clean exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  void app.close().then(() => {
    db.close()
    process.exit(0)
  })
})
