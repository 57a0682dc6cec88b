import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import pg from 'pg'
import pino from 'pino'
import { addresses, bareSchema, bearerOf, discussionJson, HEADERS, listingSchema, logLine, NOT_FOUND, notFoundSchema, pageLinks, pageOf, PER_PAGE, siteJson, siteSchema, tokenStatus, type PageRow, type TokenRow } from './baseline-shape.ts'

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
// negotiation and no validation beyond reading `page`.
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
  const status = row === undefined ? 401 : tokenStatus(row, Date.now())
  log.write(logLine(request.method, request.url, request.ip, status, reply.elapsedTime))
  if (status !== 200) return reply.code(status).send({ error: status === 401 ? 'invalid_token' : 'staff_only' })
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

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

process.once('SIGTERM', () => {
  void app.close().then(async () => {
    await pool.end()
    process.exit(0)
  })
})
