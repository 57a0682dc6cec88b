import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import Fastify from 'fastify'

// The baseline: the limit of this stack for the same pages. The house rule: a benchmark's
// baseline never imports the project's own modules; it is the bare stack doing the same job, so
// the ratio shows what the project's layers cost. So this file imports fastify, better-sqlite3 and
// node alone: its SQL and its mapping from rows to JSON are written here by hand, from the schema
// (db/schema.ts) and the documented v1 shapes, and the run (tools/bench/run.ts) checks before
// measuring anything that it answers the same bytes as the service for the same rows.
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
// (the run starts it compiled to plain JavaScript: baselineScript() in tools/bench/processes.ts)

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
const PER_PAGE = 30

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
         u.email AS author_email, u.name AS author_name
  FROM discussions d JOIN users u ON u.id = d.author_id
  WHERE d.id IN (
    SELECT id FROM discussions
    WHERE site_id = ? AND state <> 'deleted'
    ORDER BY last_updated_at DESC, id DESC
    LIMIT ? OFFSET ?)
  ORDER BY +d.last_updated_at DESC, d.id DESC`)

interface PageRow {
  number: number
  title: string
  permalink: string
  state: string
  public: 0 | 1
  author_id: number
  category_id: number
  created_at: number
  updated_at: number
  last_updated_at: number
  comments_count: number
  author_email: string
  author_name: string
}

/** Milliseconds since the epoch to ISO 8601 in UTC, to the second: 2026-03-01T12:00:00Z. */
const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`

/** The addresses of one site, computed once per request. */
function addresses(permalink: string) {
  const segment = encodeURIComponent(permalink)
  const site = `${baseUrl}/${segment}`
  return { site, discussions: `${site}/discussions`, web: siteUrl.replace('{site}', segment) }
}

const str = { type: 'string' } as const
const int = { type: 'integer' } as const
const bool = { type: 'boolean' } as const
const object = (properties: Record<string, object>) => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false })

// Response schemas of this file's own, so Fastify serialises with fast-json-stringify (its usual way).
const discussionSchema = object({
  href: str,
  number: int,
  title: str,
  permalink: str,
  state: str,
  public: bool,
  created_at: str,
  updated_at: str,
  last_updated_at: str,
  author_email: str,
  author_name: str,
  user_href: str,
  comments_count: int,
  category_href: str,
  comments_href: str,
  html_href: str,
  resolve_href: str,
  unresolve_href: str,
  toggle_href: str,
  restore_href: str,
  change_category_href: str,
})
const listingSchema = object({ offset: int, total: int, per_page: int, discussions: { type: 'array', items: discussionSchema } })
const siteSchema = object({
  name: str,
  permalink: str,
  href: str,
  html_href: str,
  discussions_href: str,
  new_discussions_href: str,
  open_discussions_href: str,
  resolved_discussions_href: str,
  deleted_discussions_href: str,
  categories_href: str,
  api_tokens_url: str,
  api_documentation_href: str,
})
const bareSchema = object({ ok: bool })
const notFoundSchema = object({ error: str })

// What every API answer of the service carries besides its body.
const HEADERS = {
  'content-type': 'application/vnd.service-v1+json; charset=utf-8',
  'cache-control': 'no-store',
  vary: 'Accept, Authorization, X-Service-Auth, X-Multipass',
}
const NOT_FOUND = { error: 'not_found' }

const app = Fastify({ logger: false })

app.get('/bare', { schema: { response: { 200: bareSchema } } }, async () => ({ ok: true }))

app.get('/:site', { schema: { response: { 200: siteSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = siteByPermalink.get((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  const a = addresses(site.permalink)
  reply.headers(HEADERS)
  return {
    name: site.name,
    permalink: site.permalink,
    href: a.site,
    html_href: `${a.web}/`,
    discussions_href: a.discussions,
    new_discussions_href: `${a.discussions}/new`,
    open_discussions_href: `${a.discussions}/open`,
    resolved_discussions_href: `${a.discussions}/resolved`,
    deleted_discussions_href: `${a.discussions}/deleted`,
    categories_href: `${a.site}/categories`,
    api_tokens_url: `${a.web}/profile/api_tokens`,
    api_documentation_href: `${baseUrl}/openapi.json`,
  }
})

app.get('/:site/discussions', { schema: { response: { 200: listingSchema, 404: notFoundSchema } } }, async (request, reply) => {
  const site = siteByPermalink.get((request.params as { site: string }).site)
  if (!site) return reply.code(404).send(NOT_FOUND)
  const page = Math.max(1, Number.parseInt((request.query as { page?: string }).page ?? '1', 10) || 1)
  const offset = (page - 1) * PER_PAGE
  const total = liveTotal.get(site.id)!.n
  const rows = offset < total ? livePage.all(site.id, PER_PAGE, offset) : []
  const a = addresses(site.permalink)
  const discussions = rows.map((row) => {
    const href = `${a.discussions}/${row.number}`
    return {
      href,
      number: row.number,
      title: row.title,
      permalink: row.permalink,
      state: row.state,
      public: row.public === 1,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      last_updated_at: iso(row.last_updated_at),
      author_email: row.author_email,
      author_name: row.author_name,
      user_href: `${a.discussions}?user_id=${row.author_id}`,
      comments_count: row.comments_count,
      category_href: `${a.site}/categories/${row.category_id}`,
      comments_href: `${href}/comments`,
      html_href: `${a.web}/discussions/${row.number}`,
      resolve_href: `${href}/resolve`,
      unresolve_href: `${href}/unresolve`,
      toggle_href: `${href}/toggle`,
      restore_href: `${href}/restore`,
      change_category_href: `${href}/change_category`,
    }
  })
  // RFC 8288 links to the first, previous, next and last pages (past the end, previous is the last).
  const last = Math.max(1, Math.ceil(total / PER_PAGE))
  const to = (n: number) => `<${a.discussions}?page=${n}>`
  let link = `${to(1)}; rel="first"`
  if (page > 1) link += `, ${to(Math.min(page - 1, last))}; rel="prev"`
  if (page < last) link += `, ${to(page + 1)}; rel="next"`
  link += `, ${to(last)}; rel="last"`
  reply.headers(HEADERS).header('link', link)
  return { offset, total, per_page: PER_PAGE, discussions }
})

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

// A clean exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  app.close().then(() => {
    db.close()
    process.exit(0)
  })
})
