import fc from 'fast-check'

// Hostile requests for the property tests of test/fuzz and the long runner of tools/fuzz/run.ts. Pure:
// every generator is a function of the credentials it may damage, so the suite (app.inject) and
// the runner (a real socket) draw from the same inputs.

export const V1 = 'application/vnd.service-v1+json'

/** One request, as data any client can send. Repeated headers are arrays, in order. */
export interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string | string[]>
  payload?: string
}

/** The genuine credentials and rows of the fuzzed database, which the generators damage or aim at. */
export interface Known {
  /** A site where the supporter below is staff. */
  site: string
  /** A site where the supporter is not staff. */
  otherSite: string
  /** A Read and write personal token of the supporter. */
  token: string
  /** The supporter's legacy account token. */
  legacyKey: string
  /** A multipass token naming the supporter, made with the site's key, valid for a long time. */
  multipass: string
  /** Ids that exist: a category and a discussion number of the site. */
  categoryId: number
  discussionNumber: number
}

// ---- text

/** Fragments that have broken other services' parsers, queries or templates. */
export const NASTY = [
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR ""="',
  '1; DELETE FROM discussions',
  "1' UNION SELECT name, sql FROM sqlite_master --",
  '%',
  '%00',
  '%zz',
  '%%32%65',
  '%c0%ae%c0%ae',
  '%2e%2e%2f',
  '..',
  '../../etc/passwd',
  '..\\..\\windows',
  '\u0000',
  '\r\nX-Injected: yes',
  '\u202e',
  '\ud800',
  '\uffff',
  '<script>alert(1)</script>',
  '${7*7}',
  '{{7*7}}',
  '<%= it %>',
  '%s%n%x',
  '__proto__',
  'constructor',
  'toString',
  'null',
  'undefined',
  'NaN',
  '-1',
  '0',
  '1e309',
  '0x10',
  '9007199254740993',
  '\t',
  ' ',
  '',
]

const controlChar = fc.integer({ min: 0, max: 31 }).map((code) => String.fromCharCode(code))
const sizes = fc.constantFrom(1_000, 9_000, 20_000, 70_000)

/**
 * Any text at all: printable, full Unicode (lone surrogates included), control characters,
 * fragments above, and long runs. `maxSize` bounds the long runs.
 */
export function hostileText(maxSize = 70_000): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.oneof(controlChar, fc.integer({ min: 32, max: 126 }).map((code) => String.fromCharCode(code))), maxLength: 20 }) },
    { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom('a', '=', ' ', '%', '\u00e9', ',', 'Bearer '), sizes).map(([s, n]) => s.repeat(Math.min(n, maxSize))),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NASTY), fc.string({ maxLength: 10 })).map(([a, b]) => a + b) },
  )
}

// ---- damaged credentials

/**
 * A copy of `value` that differs from it in a way no parser may forgive: truncated, a bit flipped,
 * a character replaced, inserted or repeated. Never only white space added or removed at an end
 * (a real HTTP parser trims header values, which would hand back the genuine value).
 */
export function damaged(value: string): fc.Arbitrary<string> {
  const at = fc.integer({ min: 0, max: value.length - 1 })
  const visible = fc.string({ unit: fc.constantFrom(...'AZaz09+/=_-.%!~\u00e9\u0000'), minLength: 1, maxLength: 4 })
  return fc
    .oneof(
      at.map((i) => value.slice(0, i)),
      fc.tuple(at, fc.integer({ min: 0, max: 6 })).map(([i, bit]) => value.slice(0, i) + String.fromCharCode(value.charCodeAt(i) ^ (1 << bit)) + value.slice(i + 1)),
      fc.tuple(at, visible).map(([i, s]) => value.slice(0, i) + s + value.slice(i)),
      fc.tuple(at, visible).map(([i, s]) => value.slice(0, i) + s + value.slice(i + 1)),
      visible.map((s) => value + s),
      at.map((i) => value.slice(i) + value.slice(0, i)),
      fc.constant(value + value),
      fc.constant(value.toUpperCase()),
    )
    .filter((s) => s.trim() !== value)
}

/**
 * A multipass token damaged in its cipher text: a bit flipped, bytes cut or added, then written in
 * one of the forms the decoder tolerates. Base64 allows equivalent spellings (`+` or `-`, padding
 * or not), so damage to the text itself could leave the token intact; damage to the bytes cannot.
 */
export function damagedMultipass(token: string): fc.Arbitrary<string> {
  const bytes = Buffer.from(decodeURIComponent(token).replace(/\s/g, ''), 'base64')
  const unpadded = decodeURIComponent(token).replace(/\s|=+$/g, '')
  const changed = fc.oneof(
    fc.tuple(fc.nat(bytes.length - 1), fc.integer({ min: 0, max: 7 })).map(([i, bit]) => {
      const copy = Buffer.from(bytes)
      copy[i] ^= 1 << bit
      return copy
    }),
    fc.integer({ min: 0, max: bytes.length - 1 }).map((n) => bytes.subarray(0, n)),
    fc.uint8Array({ minLength: 1, maxLength: 32 }).map((extra) => Buffer.concat([bytes, extra])),
    fc.uint8Array({ minLength: 16, maxLength: 64 }).map((random) => Buffer.from(random)),
  )
  return fc.oneof(
    fc.tuple(changed, fc.boolean(), fc.boolean()).map(([b, urlSafe, padded]) => {
      let text = b.toString('base64')
      if (!padded) text = text.replace(/=+$/, '')
      return urlSafe ? text.replaceAll('+', '-').replaceAll('/', '_') : text
    }),
    // Cut inside the characters that carry bytes, so the length no longer holds whole blocks.
    fc.integer({ min: 0, max: unpadded.length - 1 }).map((n) => unpadded.slice(0, n)),
  )
}

// ---- credential headers

/** An Authorization value: random, oversized, a damaged token, odd schemes and Basic pairs. */
export function authorization(known: Known): fc.Arbitrary<string> {
  const basicPair = fc
    .tuple(hostileText(2_000), hostileText(2_000))
    .map(([email, password]) => `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`)
  return fc.oneof(
    hostileText(),
    // Damage to the scheme could leave it readable ("bearer" is "Bearer"), so only the token is damaged.
    fc.tuple(fc.constantFrom('Bearer ', 'bearer ', 'Bearer  '), damaged(known.token)).map(([scheme, t]) => scheme + t),
    fc.tuple(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Basic', 'Token', 'Digest', 'MAC', ''), fc.constantFrom(' ', '  ', '\t', ''), hostileText()).map(
      ([scheme, space, value]) => scheme + space + value,
    ),
    basicPair,
    fc.tuple(fc.constantFrom('Basic ', 'basic '), hostileText()).map(([scheme, value]) => scheme + value),
    fc.constant(`Bearer ${known.token} ${known.token}`),
    fc.constant(`Bearer ${known.token},Bearer ${known.token}`),
  )
}

export const legacyHeader = (known: Known) => fc.oneof(hostileText(), damaged(known.legacyKey))
export const multipassHeader = (known: Known) => fc.oneof(hostileText(), damagedMultipass(known.multipass))

/** Accept values: the ones that select v1, others that must be 406, and junk. */
export function accept(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(V1, 'application/json', '*/*', 'application/*', 'application/vnd.service+json'),
    fc.constantFrom('application/vnd.service-v2+json', 'text/html', 'image/*', 'application/xml', `${V1};q=0`, `${V1};q=2`, `${V1};q=abc`),
    fc.array(fc.tuple(fc.constantFrom(V1, 'application/json', 'text/plain', '*/*', 'x/y', ''), fc.constantFrom('', ';q=0.5', ';q=0', ';q=1.0001', ';level=1', ';q=')), { maxLength: 6 }).map((parts) =>
      parts.map(([range, params]) => range + params).join(', '),
    ),
    hostileText(),
  )
}

// ---- addresses

const STATES = ['new', 'open', 'resolved', 'deleted']
const ACTIONS = ['resolve', 'unresolve', 'toggle', 'restore', 'change_category', 'comments']

/** A path segment as it is written in a URL: encoded hostile text, raw traversal and bad escapes. */
export function segment(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: hostileText(300).map((s) => encodeURIComponent(s.toWellFormed())) },
    { weight: 2, arbitrary: fc.constantFrom('..', '.', '%2e%2e', '%2E%2e%2F', '%2F', '%5C', '%00', '%zz', '%', '%c0%ae', '%ED%A0%80', '%252e%252e', ';', '%3B', '~', '*', '%20', '+') },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'abc019-_.~!$&\'()*+,;=:@'), maxLength: 12 }) },
  )
}

/** Numbers and ids as the path and query carry them: real ones, edges, and anything else. */
export function number(real: number): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(String(real), '0', '-1', '1.5', '1e3', '0x1', '00001', '9007199254740991', '9007199254740992', '99999999999999999999', ' 1', '1 '),
    fc.integer().map(String),
    segment(),
  )
}

/** A site segment: the real site, another one, or anything. */
export function siteSegment(known: Known): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(known.site) },
    { weight: 1, arbitrary: fc.constant(known.otherSite) },
    { weight: 1, arbitrary: fc.constant(known.site.toUpperCase()) },
    { weight: 2, arbitrary: segment() },
  )
}

/** Web page paths under a site, which an API path must not land on. */
const WEB_PAGES = new Set(['', 'login', 'logout', 'profile'])

/** A path of the API: every route shape, with real and hostile values in each slot. */
export function apiPath(known: Known): fc.Arbitrary<string> {
  const n = number(known.discussionNumber)
  const id = number(known.categoryId)
  const rest = fc.oneof(
    fc.constant(''),
    fc.constant('/discussions'),
    fc.constantFrom(...STATES).map((s) => `/discussions/${s}`),
    n.map((x) => `/discussions/${x}`),
    fc.tuple(n, fc.constantFrom(...ACTIONS)).map(([x, a]) => `/discussions/${x}/${a}`),
    fc.tuple(n, number(1)).map(([x, c]) => `/discussions/${x}/comments/${c}`),
    fc.constant('/categories'),
    id.map((x) => `/categories/${x}`),
    id.map((x) => `/categories/${x}/discussions`),
    fc.array(segment(), { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`),
  )
  return fc
    .tuple(siteSegment(known), rest)
    .map(([site, path]) => `/${site}${path}`)
    .filter((path) => path.split('/').length < 3 || !WEB_PAGES.has(path.split('/')[2]))
}

const QUERY_NAMES = ['page', 'sort', 'public', 'since', 'user_id', 'user_email', 'to', 'state', 'q', 'page[]', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']

/** A query string (with its `?`, or empty) of listing filters and junk, never a credential. */
export function query(): fc.Arbitrary<string> {
  const pair = fc.tuple(fc.oneof(fc.constantFrom(...QUERY_NAMES), segment()), fc.oneof(number(1), segment())).map(([k, v]) => `${k}=${v}`)
  return fc
    .array(fc.oneof(pair, segment()), { maxLength: 5 })
    .map((pairs) => (pairs.length ? `?${pairs.join('&')}` : ''))
    .filter((q) => !/(^|[?&])(auth|sso|access_token)=/i.test(q) && !q.includes('service_pat_'))
}

// ---- bodies

const BODY_FIELDS = ['title', 'body', 'public', 'author_email', 'author_name', 'internal', 'category', '__proto__', 'constructor', 'prototype']

/** JSON nested `depth` levels deep, as text (JSON.stringify of such a value would recurse). */
export function nested(depth: number, open: string, close: string, inner: string): string {
  return open.repeat(depth) + inner + close.repeat(depth)
}

/** A JSON value of a wrong or hostile type for a field. */
export function fieldValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    hostileText(5_000),
    fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2, [], {}, [''], { $ne: 1 }, { toString: 'x' }),
    fc.jsonValue({ maxDepth: 3 }),
  )
}

/** A request body and its content type: JSON of wrong shapes, huge, deep, broken, or not JSON. */
export function body(): fc.Arbitrary<{ contentType?: string; payload: string }> {
  const jsonTypes = fc.constantFrom('application/json', V1, 'application/json; charset=utf-8', 'Application/JSON', 'application/json; charset=latin1')
  const json = fc.oneof(
    fc.dictionary(fc.oneof(fc.constantFrom(...BODY_FIELDS), fc.string({ maxLength: 8 })), fieldValue(), { maxKeys: 6 }).map((o) => JSON.stringify(o)),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.tuple(fc.integer({ min: 10, max: 50_000 }), fc.constantFrom('title', 'body', 'x')).map(([d, f]) => `{"${f}":${nested(d, '[', ']', '1')}}`),
    fc.integer({ min: 10, max: 20_000 }).map((d) => nested(d, '{"a":', '}', '{"__proto__":{"x":1}}')),
    fc.constantFrom('{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}', '{"title":"a","title":"b"}', '{"body":"\\ud800"}'),
    sizes.map((n) => JSON.stringify({ title: 't', body: 'x'.repeat(n * 4) })),
    fc.constant(JSON.stringify({ title: 'x', body: 'y'.repeat(300_000) })),
    hostileText(2_000),
    fc.constantFrom('', '{', '{"title":', 'null', '[]', '"x"', '1', 'true', '\ufeff{}', '{}garbage', '{"a":1}{"b":2}'),
  )
  return fc.oneof(
    fc.tuple(jsonTypes, json).map(([contentType, payload]) => ({ contentType, payload })),
    fc.tuple(fc.oneof(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json', ''), hostileText(200)), json).map(
      ([contentType, payload]) => ({ contentType, payload }),
    ),
    json.map((payload) => ({ payload })),
  )
}

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

function withBody(method: string, url: string, headers: Record<string, string | string[]>, b: { contentType?: string; payload: string } | null): FuzzRequest {
  if (!b || method === 'GET' || method === 'HEAD') return { method, url, headers }
  const withType = b.contentType === undefined ? headers : { ...headers, 'content-type': b.contentType }
  return { method, url, headers: withType, payload: b.payload }
}

// ---- requests

/** A header that is no credential: names a proxy or a framework might read, and names of Object.prototype. */
function otherHeader(): fc.Arbitrary<[string, string]> {
  const names = ['x-forwarded-for', 'forwarded', 'cookie', 'user-agent', 'accept-version', 'x-http-method-override', 'x-original-url', 'constructor', '__proto__', 'hasownproperty', 'tostring', 'valueof', 'x-auth', 'x-service-auth-token']
  return fc.tuple(fc.constantFrom(...names), hostileText(2_000))
}

export type CredentialSlot = 'authorization' | 'x-service-auth' | 'x-multipass' | 'auth' | 'sso'

/**
 * Requests to any API path with no usable credential: none, or one or more damaged or random ones,
 * in headers (repeated or not) and query parameters. Every answer must be a refusal.
 */
export function refusedRequest(known: Known): fc.Arbitrary<FuzzRequest> {
  const value = (slot: CredentialSlot) =>
    slot === 'authorization' ? authorization(known) : slot === 'x-service-auth' || slot === 'auth' ? legacyHeader(known) : multipassHeader(known)
  const credential = fc
    .constantFrom<CredentialSlot>('authorization', 'x-service-auth', 'x-multipass', 'auth', 'sso')
    .chain((slot) => fc.tuple(fc.constant(slot), fc.array(value(slot), { minLength: 1, maxLength: 3 })))
  return fc
    .record({
      method: fc.constantFrom(...METHODS),
      path: apiPath(known),
      credentials: fc.array(credential, { maxLength: 2 }),
      accept: fc.option(accept()),
      other: fc.option(otherHeader()),
      body: fc.option(body()),
    })
    .map(({ method, path, credentials, accept: acc, other, body: b }) => {
      const headers: Record<string, string | string[]> = {}
      const params: string[] = []
      for (const [slot, values] of credentials) {
        if (slot === 'auth' || slot === 'sso') for (const v of values) params.push(`${slot}=${encodeURIComponent(v.toWellFormed())}`)
        else headers[slot] = [...[headers[slot] ?? []].flat(), ...values]
      }
      if (acc !== null) headers.accept = acc
      if (other !== null && other[0] !== 'content-length') headers[other[0]] = other[1]
      const url = params.length ? `${path}?${params.join('&')}` : path
      return withBody(method, url, headers, b)
    })
}

/**
 * Requests that carry the genuine Read and write token, once, so they reach the routes: hostile
 * paths, query strings, bodies and Accept values. Answers may be 2xx (a read, or a write that
 * happened to be valid); a refusal must leave the database as it was.
 */
export function authenticatedRequest(known: Known): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.constantFrom(...METHODS),
      path: apiPath(known),
      query: query(),
      accept: fc.option(accept(), { freq: 3 }),
      body: fc.option(body(), { freq: 4 }),
      other: fc.option(otherHeader(), { freq: 3 }),
    })
    .map(({ method, path, query: q, accept: acc, body: b, other }) => {
      const headers: Record<string, string | string[]> = { authorization: `Bearer ${known.token}` }
      if (acc !== null) headers.accept = acc
      if (other !== null) headers[other[0]] = other[1]
      return withBody(method, path + q, headers, b)
    })
}

/** What a web request may carry: a session cookie and the CSRF pair of a page, genuine or not. */
export interface WebKnown {
  site: string
  /** `name=value` of a genuine session cookie of the supporter. */
  session: string
  /** `name=value` of the CSRF cookie and the token of a page rendered with it. */
  csrfCookie: string
  csrfToken: string
}

const WEB_PATHS = ['/', '/login', '/logout', '/profile', '/profile/reset_api_token', '/profile/api_tokens', '/profile/api_tokens/1/revoke']

/** A form body: known fields with hostile values, repeated fields, junk, all urlencoded. */
function form(csrfToken: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const field = fc.tuple(
    fc.constantFrom('email', 'password', 'next', 'name', 'access', 'expires', 'form_id', '_csrf', '__proto__', 'email[]'),
    hostileText(5_000),
  )
  return fc
    .record({ csrf: fc.option(csrfToken), fields: fc.array(field, { maxLength: 6 }), raw: fc.option(segment()) })
    .map(({ csrf, fields, raw }) => {
      const pairs = fields.map(([k, v]) => `${k}=${encodeURIComponent(v.toWellFormed())}`)
      if (csrf !== null) pairs.unshift(`_csrf=${encodeURIComponent(csrf.toWellFormed())}`)
      if (raw !== null) pairs.push(raw)
      return pairs.join('&')
    })
}

/**
 * Requests to the supporter pages: odd methods, `next`, `sso`, forms, cookies and CSRF tokens
 * that are genuine, damaged or random. Answers must be pages or redirects, never 5xx.
 */
export function webRequest(known: WebKnown): fc.Arbitrary<FuzzRequest> {
  const csrfToken = fc.oneof(fc.constant(known.csrfToken), damaged(known.csrfToken), hostileText(500))
  const cookie = fc.oneof(
    fc.constant(known.session),
    fc.constant(known.csrfCookie),
    damaged(known.session),
    damaged(known.csrfCookie),
    hostileText(5_000).map((v) => `service_session=${v}`),
    hostileText(5_000).map((v) => `service_csrf=${v}`),
    hostileText(5_000),
  )
  const pageQuery = fc
    .array(fc.tuple(fc.constantFrom('next', 'sso', 'revoked', 'to', 'x'), fc.oneof(segment(), fc.constantFrom(`/${known.site}/profile`, '//evil.example', '/\\evil.example', 'https://evil.example/', `/${known.site}/%2e%2e/x`))), { maxLength: 3 })
    .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : ''))
  return fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'POST', 'HEAD', 'PUT', 'DELETE'),
      site: fc.oneof({ weight: 4, arbitrary: fc.constant(known.site) }, { weight: 1, arbitrary: segment() }),
      path: fc.oneof(fc.constantFrom(...WEB_PATHS), segment().map((s) => `/profile/api_tokens/${s}/revoke`)),
      query: pageQuery,
      cookies: fc.array(cookie, { maxLength: 3 }),
      form: form(csrfToken),
      contentType: fc.oneof(
        { weight: 5, arbitrary: fc.constant('application/x-www-form-urlencoded') },
        { weight: 1, arbitrary: fc.constantFrom('application/json', 'text/plain', 'multipart/form-data', 'application/x-www-form-urlencoded; charset=utf-16') },
      ),
      csrfHeader: fc.option(csrfToken, { freq: 4 }),
    })
    .map(({ method, site, path, query: q, cookies, form: f, contentType, csrfHeader }) => {
      const headers: Record<string, string | string[]> = {}
      if (cookies.length) headers.cookie = cookies.join('; ')
      if (csrfHeader !== null) headers['csrf-token'] = csrfHeader
      return withBody(method, `/${site}${path}${q}`, headers, { contentType, payload: f })
    })
}

// ---- raw bytes, for a real socket only (app.inject never sees the HTTP parser)

/**
 * A whole request as the bytes on the wire: bad request lines, header names and values with
 * control characters and line breaks, obs-fold, conflicting lengths and encodings, bad chunks,
 * oversized heads. `host` is the Host header of well-formed parts.
 */
export function rawRequest(known: Known, host: string): fc.Arbitrary<string> {
  const line = fc.oneof(
    fc.tuple(fc.constantFrom(...METHODS, 'get', 'CONNECT', 'TRACE', 'G\u0000T', 'PRI', ''), apiPath(known), fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 x', 'http/1.1', '')).map(
      ([m, p, v]) => `${m} ${p} ${v}`,
    ),
    fc.tuple(fc.constantFrom('GET', 'POST'), hostileText(20_000), fc.constantFrom('HTTP/1.1', '')).map(([m, p, v]) => `${m} /${p} ${v}`),
    hostileText(200),
  )
  const name = fc.oneof(
    fc.constantFrom('Authorization', 'X-Service-Auth', 'X-Multipass', 'Accept', 'Content-Length', 'Transfer-Encoding', 'Cookie', 'Host', 'Expect', 'Upgrade', 'Connection'),
    hostileText(100),
  )
  const value = fc.oneof(
    hostileText(20_000),
    fc.constantFrom('chunked', 'chunked, identity', 'identity', '-1', '99999999999999999999', '0x10', '100-continue', 'h2c', 'keep-alive'),
    authorization(known),
    legacyHeader(known),
    multipassHeader(known),
  )
  const fields = fc.array(
    fc.oneof(
      fc.tuple(name, fc.constantFrom(': ', ':', ' : ', ':\t'), value).map(([n, sep, v]) => `${n}${sep}${v}`),
      fc.tuple(name, value).map(([n, v]) => `${n}: a\r\n ${v}`),
      hostileText(300),
    ),
    { maxLength: 6 },
  )
  const end = fc.oneof(
    fc.constant(''),
    hostileText(2_000),
    fc.constantFrom('5\r\nhello\r\n0\r\n\r\n', 'zz\r\nx\r\n', '5\r\nhi\r\n', 'ffffffffffffffff\r\n', '0\r\n\r\nGET / HTTP/1.1\r\n\r\n'),
  )
  return fc
    .tuple(line, fc.boolean(), fields, fc.constantFrom('\r\n', '\n', '\r', ''), end)
    .map(([l, withHost, fs, blank, rest]) => [l, ...(withHost ? [`Host: ${host}`] : []), 'Connection: close', ...fs].join('\r\n') + '\r\n' + blank + rest)
}
