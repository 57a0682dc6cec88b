import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pino from 'pino'
import { addresses, bareSchema, bearerOf, discussionJson, HEADERS, listingSchema, logLine, NOT_FOUND, notFoundSchema, pageLinks, pageOf, PER_PAGE, siteJson, siteSchema, tokenStatus, type PageRow, type TokenRow } from './baseline-shape.ts'

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

// The same SQLite file the service reads, opened as it exists (never created), and used for reads only.
const db = new Database(values.db!, { fileMustExist: true })
db.pragma('query_only = ON')

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
  const status = row === undefined ? 401 : tokenStatus(row, Date.now())
  log.write(logLine(request.method, request.url, request.ip, status, reply.elapsedTime))
  if (status !== 200) return reply.code(status).send({ error: status === 401 ? 'invalid_token' : 'staff_only' })
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

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

// A clean exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  void app.close().then(() => {
    db.close()
    process.exit(0)
  })
})
