import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import { addresses, bareSchema, discussionJson, HEADERS, listingSchema, NOT_FOUND, notFoundSchema, pageLinks, pageOf, PER_PAGE, siteJson, siteSchema, type PageRow } from './baseline-shape.ts'

// The baseline: the limit of this stack for the same pages. The house rule: a benchmark's
// baseline never imports the project's own modules; it is the bare stack doing the same job, so
// the ratio shows what the project's layers cost. So this file imports fastify, better-sqlite3,
// node and tools/bench/baseline-shape.ts (the v1 shapes both baselines answer, itself importing
// nothing) alone: its SQL and its mapping from rows to JSON are written here by hand, from the
// schema (db/schema/sqlite.ts) and the documented v1 shapes, and the run (tools/bench/run.ts) checks
// before measuring anything that it answers the same bytes as the service for the same rows.
// tools/bench/baseline-postgres.ts is the same on PostgreSQL.
//
// It answers
//   GET /:site/discussions[?page=N]  the listing of the site's live discussions (every state but
//                                    deleted) by last activity, 30 a page, in the v1 envelope;
//   GET /:site                       the site resource;
//   GET /bare                        a small constant JSON object: the limit of the stack itself,
//                                    for the pairs that build no page (authentication alone, the 401).
// No authentication, no logging, no media-type negotiation, no validation beyond reading `page`.
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
const liveTotal = db.prepare<[number], { n: number }>("SELECT coalesce(sum(count), 0) AS n FROM discussion_counts WHERE site_id = ? AND state <> 'deleted'")
// The page's ids from the activity index alone (a deep page skips index entries, not rows), then
// only those rows, joined to their authors. `+` keeps the outer ORDER BY off the index: it sorts 30 rows.
const livePage = db.prepare<[number, number, number], PageRow>(`
  SELECT d.number, d.title, d.permalink, d.state, d.public, d.author_id, d.category_id,
         d.created_at, d.updated_at, d.last_updated_at, d.comments_count,
         u.email AS author_email, u.name AS author_name,
         d.assignee_id, (SELECT name FROM users a WHERE a.id = d.assignee_id) AS assignee_name, d.tags
  FROM discussions d JOIN users u ON u.id = d.author_id
  WHERE d.id IN (
    SELECT id FROM discussions
    WHERE site_id = ? AND state <> 'deleted'
    ORDER BY last_updated_at DESC, id DESC
    LIMIT ? OFFSET ?)
  ORDER BY +d.last_updated_at DESC, d.id DESC`)

const app = Fastify({ logger: false })

app.get('/bare', { schema: { response: { 200: bareSchema } } }, async () => ({ ok: true }))

app.get('/:site', { schema: { response: { 200: siteSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = siteByPermalink.get((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  reply.headers(HEADERS)
  return siteJson(baseUrl, site, addresses(baseUrl, siteUrl, site.permalink))
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
