// What both baselines answer, whatever engine they read (tools/bench/baseline.ts on SQLite,
// tools/bench/baseline-postgres.ts on PostgreSQL): the v1 JSON of the listing and of the site
// resource, their response schemas (Fastify serialises with fast-json-stringify, its usual way), and
// the headers the service sets. Written by hand from the documented v1 shapes, like the baselines
// themselves; it imports nothing, and the run checks before measuring that each baseline answers
// the same bytes as the service for the same rows.

export const PER_PAGE = 30

/** A discussion of the page joined to its author: SQLite gives moments as milliseconds and flags as 0/1, PostgreSQL as Date and boolean. */
export interface PageRow {
  number: number
  title: string
  permalink: string
  state: string
  public: 0 | 1 | boolean
  author_id: number
  category_id: number
  created_at: number | Date
  updated_at: number | Date
  last_updated_at: number | Date
  comments_count: number
  author_email: string
  author_name: string
  assignee_id: number | null
  assignee_name: string | null
  tags: string
  sla_policy_id: number | null
  first_reply_due_at: number | Date | null
  next_reply_due_at: number | Date | null
  resolution_due_at: number | Date | null
  sla_breached: string
  first_reply_at: number | Date | null
  first_reply_minutes: number | null
  first_reply_business: number | null
  resolved_at: number | Date | null
  resolution_minutes: number | null
  resolution_business: number | null
  reopens: number
  team_replies: number
  rating: string | null
  rating_comment: string
  rated_at: number | Date | null
  /** Custom fields' values, JSON (issue 72); the numbers of a merge's and a split's other discussion (issue 71). */
  fields: string
  merged_into: number | null
  split_from: number | null
}

/** A moment in ISO 8601, UTC, to the second: 2026-03-01T12:00:00Z. */
const iso = (moment: number | Date) => `${(typeof moment === 'number' ? new Date(moment) : moment).toISOString().slice(0, 19)}Z`

export interface Addresses {
  site: string
  discussions: string
  web: string
}

/** The addresses of one site, computed once per request from --base-url and --site-url ({site} is the permalink). */
export function addresses(baseUrl: string, siteUrl: string, permalink: string): Addresses {
  const segment = encodeURIComponent(permalink)
  const site = `${baseUrl}/${segment}`
  return { site, discussions: `${site}/discussions`, web: siteUrl.replace('{site}', segment) }
}

const str = { type: 'string' } as const
const int = { type: 'integer' } as const
const bool = { type: 'boolean' } as const
const object = (properties: Record<string, object>) => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false })
/** A field that may be null, as a type list: fast-json-stringify writes it from the value's type, with no validator to ask. */
const orNull = (schema: { type: string }) => ({ ...schema, type: [schema.type, 'null'] })

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
  assignee: orNull(object({ id: int, name: str })),
  assign_href: str,
  tags: { type: 'array', items: str },
  sla: orNull(
    object({
      policy: object({ id: int, href: str }),
      first_reply_due_at: orNull(str),
      next_reply_due_at: orNull(str),
      resolution_due_at: orNull(str),
      breached: { type: 'array', items: str },
    }),
  ),
  facts: object({
    first_reply_at: orNull(str),
    first_reply_minutes: orNull(int),
    first_reply_business_minutes: orNull(int),
    resolved_at: orNull(str),
    resolution_minutes: orNull(int),
    resolution_business_minutes: orNull(int),
    reopens: int,
    team_replies: int,
  }),
  satisfaction: orNull(object({ rating: str, comment: str, rated_at: str })),
  fields: { type: 'object', additionalProperties: true },
  merged_into: orNull(object({ number: int, href: str })),
  merge_href: str,
  split_from: orNull(object({ number: int, href: str })),
  split_href: str,
})
export const listingSchema = object({ offset: int, total: int, per_page: int, discussions: { type: 'array', items: discussionSchema } })
export const siteSchema = object({
  name: str,
  permalink: str,
  href: str,
  html_href: str,
  discussions_href: str,
  new_discussions_href: str,
  open_discussions_href: str,
  resolved_discussions_href: str,
  deleted_discussions_href: str,
  spam_discussions_href: str,
  categories_href: str,
  api_tokens_url: str,
  api_documentation_href: str,
})
export const bareSchema = object({ ok: bool })
export const notFoundSchema = object({ error: str })

/** What every API answer of the service carries besides its body. */
export const HEADERS = {
  'content-type': 'application/vnd.service-v1+json; charset=utf-8',
  'cache-control': 'no-store',
  vary: 'Accept, Authorization, X-Service-Auth, X-Multipass',
}
export const NOT_FOUND = { error: 'not_found' }

/** The page number asked for (`?page=`), 1 when absent or not a number. */
export const pageOf = (query: unknown) => Math.max(1, Number.parseInt((query as { page?: string }).page ?? '1', 10) || 1)

export function siteJson(baseUrl: string, site: { name: string; permalink: string }, a: Addresses) {
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
    spam_discussions_href: `${a.discussions}/spam`,
    categories_href: `${a.site}/categories`,
    api_tokens_url: `${a.web}/profile/api_tokens`,
    api_documentation_href: `${baseUrl}/openapi.json`,
  }
}

export function discussionJson(row: PageRow, a: Addresses) {
  const href = `${a.discussions}/${row.number}`
  return {
    href,
    number: row.number,
    title: row.title,
    permalink: row.permalink,
    state: row.state,
    public: row.public === true || row.public === 1,
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
    assignee: row.assignee_id === null ? null : { id: row.assignee_id, name: row.assignee_name ?? '' },
    assign_href: `${href}/assign`,
    tags: row.tags === '' ? [] : row.tags.split(' '),
    sla:
      row.sla_policy_id === null
        ? null
        : {
            policy: { id: row.sla_policy_id, href: `${a.site}/sla_policies/${row.sla_policy_id}` },
            first_reply_due_at: row.first_reply_due_at === null ? null : iso(row.first_reply_due_at),
            next_reply_due_at: row.next_reply_due_at === null ? null : iso(row.next_reply_due_at),
            resolution_due_at: row.resolution_due_at === null ? null : iso(row.resolution_due_at),
            breached: row.sla_breached === '' ? [] : row.sla_breached.split(' '),
          },
    facts: {
      first_reply_at: row.first_reply_at === null ? null : iso(row.first_reply_at),
      first_reply_minutes: row.first_reply_minutes,
      first_reply_business_minutes: row.first_reply_business,
      resolved_at: row.resolved_at === null ? null : iso(row.resolved_at),
      resolution_minutes: row.resolution_minutes,
      resolution_business_minutes: row.resolution_business,
      reopens: row.reopens,
      team_replies: row.team_replies,
    },
    satisfaction: row.rating === null || row.rated_at === null ? null : { rating: row.rating, comment: row.rating_comment, rated_at: iso(row.rated_at) },
    fields: JSON.parse(row.fields) as Record<string, unknown>,
    merged_into: row.merged_into === null ? null : { number: row.merged_into, href: `${a.discussions}/${row.merged_into}` },
    merge_href: `${href}/merge`,
    split_from: row.split_from === null ? null : { number: row.split_from, href: `${a.discussions}/${row.split_from}` },
    split_href: `${href}/split`,
  }
}

/** RFC 8288 links to the first, previous, next and last pages (past the end, previous is the last). */
export function pageLinks(a: Addresses, page: number, total: number): string {
  const last = Math.max(1, Math.ceil(total / PER_PAGE))
  const to = (n: number) => `<${a.discussions}?page=${n}>`
  let link = `${to(1)}; rel="first"`
  if (page > 1) link += `, ${to(Math.min(page - 1, last))}; rel="prev"`
  if (page < last) link += `, ${to(page + 1)}; rel="next"`
  link += `, ${to(last)}; rel="last"`
  return link
}

// ---- The same job as the service's `GET /<site>` with a personal token (issue 54): the token's
// digest and the site read together, the token checked as the service checks it, and one log line
// a request. The baselines answer it at /job/<site> (GET /job{site} in scenarios.ts).

/** The token of `Authorization: Bearer <token>`, or undefined. */
export function bearerOf(header: string | undefined): string | undefined {
  return header?.startsWith('Bearer ') ? header.slice(7) : undefined
}

/** The token's row as the baselines read it with its site: absent fields when no such token was made for the site. */
export interface TokenRow {
  expires_at: number | Date | null
  revoked_at: number | Date | null
  access: string | null
  disabled: 0 | 1 | boolean | null
  role: string | null
}

/**
 * The status the service answers for such a token (or none found): 200, 401 (none, unknown,
 * revoked, disabled owner, expired), 403 (not staff; for a write, a token of read access first).
 */
export function tokenStatus(row: TokenRow | undefined, now: number, asked: 'read' | 'write' = 'read'): 200 | 401 | 403 {
  if (row === undefined) return 401
  if (asked === 'write' && row.access !== 'write') return 403
  if (row.expires_at === null || row.revoked_at !== null || row.disabled === true || row.disabled === 1) return 401
  if ((typeof row.expires_at === 'number' ? row.expires_at : row.expires_at.getTime()) <= now) return 401
  return row.role === 'supporter' ? 200 : 403
}

/** What the service writes of a request to its log, one JSON line (pino's shape). */
export function logLine(method: string, url: string, address: string, statusCode: number, responseTime: number): string {
  return `${JSON.stringify({ level: 30, time: Date.now(), req: { method, url, remoteAddress: address }, res: { statusCode }, responseTime, msg: 'request completed' })}\n`
}

/** The body of a refusal, as the service words it. */
export const refusal = (status: 401 | 403) => ({ error: status === 401 ? 'invalid_token' : 'staff_only' })

// ---- the writes (BASELINE_WRITES=on, issue 75)

/** A new discussion's permalink from its title, as the service makes it. */
export const slug = (title: string) => title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60) || 'discussion'

/** A supporter's comment made through the API, in v1. */
export function commentJson(a: Addresses, number: number, comment: { id: number; number: number; body: string; created_at: number }, author: { email: string; name: string }) {
  return {
    href: `${a.discussions}/${number}/comments/${comment.number}`,
    id: comment.id,
    number: comment.number,
    body: comment.body,
    internal: false,
    created_at: new Date(comment.created_at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    author_email: author.email,
    author_name: author.name,
    by_supporter: true,
    via: 'api',
    attachments: [],
  }
}

/** What a new discussion's row holds beyond what the request gives. */
export const NEW_ROW: Omit<PageRow, 'number' | 'title' | 'permalink' | 'public' | 'author_id' | 'category_id' | 'created_at' | 'updated_at' | 'last_updated_at' | 'author_email' | 'author_name'> = {
  // A supporter's own discussion opens open: the team has nothing to answer (the service's initialState).
  state: 'open',
  comments_count: 1,
  assignee_id: null,
  assignee_name: null,
  tags: '',
  sla_policy_id: null,
  first_reply_due_at: null,
  next_reply_due_at: null,
  resolution_due_at: null,
  sla_breached: '',
  first_reply_at: null,
  first_reply_minutes: null,
  first_reply_business: null,
  resolved_at: null,
  resolution_minutes: null,
  resolution_business: null,
  reopens: 0,
  team_replies: 0,
  rating: null,
  rating_comment: '',
  rated_at: null,
  fields: '{}',
  merged_into: null,
  split_from: null,
}
