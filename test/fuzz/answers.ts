import pg from 'pg'
import type Database from 'better-sqlite3'
import { V1 } from './arbitraries.ts'

// What a documented answer looks like (docs/auth-and-access.md tables 5.4 and 7, docs/decisions.md), as a
// pure check of status, headers and body, shared by the suite and the runner.

export interface Answer {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

/** Where a path lands: the v1 API, a supporter page, or a public document. */
export type Area = 'api' | 'web' | 'public'

const PUBLIC = new Set(['', 'favicon.ico', 'openapi.json', 'README.md', 'healthz', '.well-known'])
const WEB = new Set(['', 'login', 'logout', 'profile'])

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** The area of a request path (both servers put the site pages at `/{site}`, like the API). */
export function areaOf(url: string): Area {
  const [, first = '', second, ...rest] = url.split(/[?#]/)[0].split('/').map(decoded)
  if (second === undefined) return PUBLIC.has(first) ? 'public' : 'api'
  if (first === '.well-known') return 'public'
  return WEB.has(second) && !(second === '' && rest.length > 0) ? 'web' : 'api'
}

export interface Expectation {
  /** The API base URL, which resource_metadata must name. */
  baseUrl: string
  /** The origin of the supporter pages, where every redirect must stay. */
  siteOrigin: string
  /** True when the request carried no usable credential: an API answer must be a refusal. */
  refused: boolean
  /** True when it carried exactly one genuine credential and nothing else that is one. */
  oneCredential?: boolean
  /** True when the request asks for a page (see asksForPage): the queue's addresses answer it as pages. */
  page?: boolean
}

/**
 * Whether the router sends this request to a page where a page and the API share an address
 * (docs/decisions.md, "The queue on the web"): its Accept names text/html and it carries no API
 * credential, in a header or the query.
 */
export function asksForPage(request: { url: string; headers: Record<string, string | string[]> }): boolean {
  const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), [value].flat().join(',')]))
  const html = /(^|,)\s*text\/html\s*(;|,|$)/i.test(headers.accept ?? '')
  return html && !['authorization', 'x-service-auth', 'x-multipass'].some((name) => name in headers) && !/[?&](auth|sso|access_token)=/i.test(request.url)
}

const header = (answer: Answer, name: string) => {
  const value = answer.headers[name]
  return value === undefined ? undefined : String(value)
}

function escape(text: string) {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

function challengePattern(baseUrl: string) {
  return new RegExp(
    `^Bearer realm="Service", resource_metadata="${escape(baseUrl)}/\\.well-known/oauth-protected-resource/[^"\\\\\\s]*", ` +
      'scope="(read write|write)"(, error="(invalid_request|invalid_token|insufficient_scope)")?(, error_description="[^"\\\\]+")?$',
  )
}

/** A JSON error body: `{error: <snake_case code>, message}`, plus `fields` on invalid_request. */
export function jsonErrorProblem(answer: Answer): string | null {
  const type = header(answer, 'content-type') ?? ''
  if (!/^application\/(json|vnd\.service-v1\+json)\b/.test(type)) return `a JSON error was expected, not content-type "${type}"`
  let body: unknown
  try {
    body = JSON.parse(answer.body)
  } catch {
    return 'the error body is not JSON'
  }
  const { error, message, fields, ...extra } = (body ?? {}) as Record<string, unknown>
  if (typeof error !== 'string' || !/^[a-z][a-z0-9_]*$/.test(error)) return `"error" is not a snake_case code: ${JSON.stringify(error)}`
  if (typeof message !== 'string' || message === '') return '"message" is not a sentence'
  if (fields !== undefined) {
    const ok = Array.isArray(fields) && fields.every((f) => typeof f?.field === 'string' && typeof f?.problem === 'string')
    if (!ok || error !== 'invalid_request') return '"fields" is not a list of {field, problem}'
  }
  if (Object.keys(extra).length) return `the error body has undocumented fields: ${Object.keys(extra).join(', ')}`
  return null
}

function apiProblem(method: string, answer: Answer, expectation: Expectation): string | null {
  const { status } = answer
  if (expectation.refused && status < 400) return `a request without a usable credential was answered ${status}`
  const challenge = header(answer, 'www-authenticate')
  const type = header(answer, 'content-type') ?? ''
  if (status < 400) {
    return /^application\/(json|vnd\.service-v1\+json); charset=utf-8$/.test(type) ? null : `${status} with content-type "${type}"`
  }
  // Exactly one genuine credential was sent: nothing else in the request may count as a second.
  if (expectation.oneCredential && challenge?.includes('error="invalid_request"')) return 'one credential was taken for two'
  const hasBody = method !== 'HEAD'
  if (challenge !== undefined && !challengePattern(expectation.baseUrl).test(challenge)) return `malformed challenge: ${challenge}`
  switch (status) {
    case 401:
      if (challenge === undefined) return '401 without WWW-Authenticate'
      if (/error="insufficient_scope"|scope="write"/.test(challenge)) return `401 with the 403 challenge: ${challenge}`
      if (!/^(text\/plain|application\/json)/.test(type)) return `401 with content-type "${type}"`
      return hasBody && answer.body === '' ? '401 without a body' : null
    case 403:
      if (challenge !== undefined) return /scope="write", error="insufficient_scope"$/.test(challenge) ? null : `403 with challenge ${challenge}`
      // A route of the site's administrators (or a collaborator's write) refuses in the API's JSON shape, saying so.
      if (/^application\/(json|vnd\.service-v1\+json)/.test(type)) return !hasBody || /"error":"forbidden"/.test(answer.body) ? null : '403 in JSON that is not forbidden'
      return /^text\/plain/.test(type) && (!hasBody || /support staff/.test(answer.body)) ? null : '403 that is neither insufficient_scope nor staff-only, nor forbidden'
    case 406:
      return /^text\/plain/.test(type) && (!hasBody || answer.body.includes(V1)) ? null : '406 without the plain-text list of media types'
    case 429:
      return header(answer, 'retry-after') === undefined ? '429 without Retry-After' : null
  }
  if (challenge !== undefined) {
    if (status !== 400 || !/error="invalid_request"/.test(challenge)) return `${status} with a challenge: ${challenge}`
    return /^text\/plain/.test(type) ? null : `400 invalid_request with content-type "${type}"`
  }
  return hasBody ? jsonErrorProblem(answer) : null
}

function webProblem(answer: Answer, expectation: Expectation): string | null {
  const { status } = answer
  if (status >= 300 && status < 400) {
    const location = header(answer, 'location') ?? ''
    const here = location.startsWith(`${expectation.siteOrigin}/`) || (location.startsWith('/') && !/^\/[/\\]/.test(location))
    return here ? null : `redirect away from the site: ${JSON.stringify(location)}`
  }
  return null
}

/**
 * Why an answer breaks the contract, or null when it keeps it: never a 5xx; API refusals with
 * their challenge or JSON error body; pages that redirect only within the site.
 */
export function answerProblem(method: string, url: string, answer: Answer, expectation: Expectation): string | null {
  if (!Number.isInteger(answer.status) || answer.status < 200) return `no usable status: ${answer.status}`
  if (answer.status >= 500) return `server error ${answer.status}: ${answer.body.slice(0, 200)}`
  for (const [name, value] of Object.entries(answer.headers)) {
    if (/[\r\n\0]/.test(String(value))) return `header ${name} holds a line break`
  }
  // The queue's pages share the API's addresses under /<site>/discussions; the router takes an empty
  // site segment as a site too (`//discussions`), which the pages answer as a site that does not exist.
  if (expectation.page && /^\/[^/?#]*\/discussions([/?#]|$)/.test(url)) return webProblem(answer, expectation)
  switch (areaOf(url)) {
    case 'api':
      return apiProblem(method, answer, expectation)
    case 'web':
      return webProblem(answer, expectation)
    case 'public':
      return null
  }
}

/**
 * Every row of every table, as text to compare. What records the use of a genuine token is left
 * out: the time and address it was last used, its last addresses and the security log's first use
 * from a new address. They are recorded whatever the answer (docs/decisions.md, "Token lifecycle"),
 * and the fuzzers send each request from a new address. Nor what fair use counted (rate_limit_windows):
 * every request, refused or not, is counted (docs/decisions.md, "Fair use").
 */
export function snapshot(sqlite: Database.Database): string {
  return dumpTables(readersOf(sqlite).map(([table, read]) => [table, read.all() as Array<Record<string, unknown>>]))
}

// A reader of each table of a connection, prepared once: the fuzzers take two snapshots per refused
// request, hundreds of times, and compiling the sixty-odd statements again each time was a quarter
// of a fuzzing file's time. The tables are named once, as postgresSnapshot names them once.
const readers = new WeakMap<Database.Database, Array<[string, Database.Statement]>>()

function readersOf(sqlite: Database.Database): Array<[string, Database.Statement]> {
  let tables = readers.get(sqlite)
  if (!tables) {
    const names = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[]
    readers.set(sqlite, (tables = names.map((table) => [table, sqlite.prepare(`SELECT * FROM "${table}"`)])))
  }
  return tables
}

/** The same, of a PostgreSQL schema (its migrations' own table left out). */
/**
 * A reader of every table of the schema, as one round trip per snapshot: the names are read once
 * (the fuzzers take two snapshots per refused request, hundreds of times, while other test
 * processes load the same server).
 */
export async function postgresSnapshot(client: pg.Client, schema: string): Promise<() => Promise<string>> {
  const { rows } = await client.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_name <> '__drizzle_migrations' ORDER BY 1",
    [schema],
  )
  const names = rows.map((row) => row.name)
  const all = names.map((name) => `SELECT * FROM "${schema}"."${name}"`).join('; ')
  return async () => {
    // Several statements in one simple query answer one result each, in order.
    const results = (await client.query(all)) as unknown as Array<{ rows: Array<Record<string, unknown>> }>
    return dumpTables(names.map((name, i) => [name, results[i]!.rows]))
  }
}

// The security log's records of a refusal itself (a failed sign-in or second step, a lockout) are
// what a refusal does write: the audit trail of the attempt (docs/decisions.md, "Token lifecycle").
const RECORDS_OF_ATTEMPTS = new Set(['sign_in_failed', 'lockout', 'second_factor_failed'])

/** A snapshot without the security log's records of attempts: what a refusal must leave as it was. */
export function withoutAttempts(dump: string): string {
  const tables = JSON.parse(dump) as Record<string, string[]>
  tables.security_events = (tables.security_events ?? []).filter((row) => !RECORDS_OF_ATTEMPTS.has((JSON.parse(row) as { kind: string }).kind))
  return JSON.stringify(tables)
}

function dumpTables(tables: Array<[string, Array<Record<string, unknown>>]>): string {
  const dump: Record<string, string[]> = {}
  for (const [table, rows] of tables) {
    if (table === 'personal_token_addresses' || table === 'rate_limit_windows') continue
    dump[table] = rows
      .filter((row) => !(table === 'security_events' && row.kind === 'token_new_address'))
      .map((row) => {
        if (table === 'personal_tokens') {
          delete row.last_used_at
          delete row.last_used_from
        }
        return JSON.stringify(row)
      })
      .sort()
  }
  return JSON.stringify(dump)
}

/** Which tables differ between two snapshots. */
export function changedTables(before: string, after: string): string[] {
  const a = JSON.parse(before) as Record<string, string[]>
  const b = JSON.parse(after) as Record<string, string[]>
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((t) => JSON.stringify(a[t]) !== JSON.stringify(b[t]))
}
