import createClient, { type Client, type Middleware } from 'openapi-fetch'
import { Webhook } from 'standardwebhooks'
import type { components, operations, paths, webhooks } from './schema.d.ts'

// The Service Desk API client: openapi-fetch over the types generated from the OpenAPI document
// (schema.d.ts, `npm run client:generate`), with what every call needs: the v1 media type, the
// Bearer token, the token's expiry as the service announces it, and the challenge of a 401 or 403
// turned into a typed error. Everything else is openapi-fetch's: `client.GET('/{site}/discussions',
// { params: { path: { site } } })` answers `{ data, error, response }`, typed by the document.

export type { components, operations, paths, webhooks } from './schema.d.ts'
export type Schemas = components['schemas']
export type Site = Schemas['Site']
export type Discussion = Schemas['Discussion']
export type DiscussionWithComments = Schemas['DiscussionWithComments']
export type DiscussionListing = Schemas['DiscussionListing']
export type Comment = Schemas['Comment']
export type Category = Schemas['Category']
export type PersonalToken = Schemas['PersonalToken']
export type Change = Schemas['Change']
export type ApiError = Schemas['Error']
export type ValidationError = Schemas['ValidationError']

export const V1_MEDIA_TYPE = 'application/vnd.service-v1+json'
const EXPIRED = 'The access token has expired'

export type AuthErrorKind = 'invalid_token' | 'expired' | 'insufficient_scope' | 'invalid_request' | 'forbidden'

/** A 401 or 403 of the API, or its 400 to a credential sent wrongly: what the challenge (WWW-Authenticate) says, as a value a program can branch on. */
export class ServiceDeskAuthError extends Error {
  override readonly name = 'ServiceDeskAuthError'
  readonly status: number
  /** invalid_token (wrong, revoked, another site's), expired, insufficient_scope (a Read only token on a write), invalid_request (400: more than one credential, or a token in the URL), or forbidden (no challenge: the owner is not on the site's staff). */
  readonly kind: AuthErrorKind
  /** The challenge's error_description, such as "The access token has expired". */
  readonly description: string | undefined
  /** The scope the request needed (insufficient_scope: "write"). */
  readonly scope: string | undefined
  /** The raw WWW-Authenticate header, if any. */
  readonly challenge: string | undefined

  constructor(fields: { status: number; kind: AuthErrorKind; description?: string; scope?: string; challenge?: string; message: string }) {
    super(fields.message)
    this.status = fields.status
    this.kind = fields.kind
    this.description = fields.description
    this.scope = fields.scope
    this.challenge = fields.challenge
  }
}

/** The auth-params of a Bearer challenge (RFC 6750: name="value", comma separated). */
export function challengeParams(header: string): Record<string, string> {
  const params: Record<string, string> = {}
  for (const [, name, value] of header.matchAll(/([\w-]+)="([^"]*)"/g)) params[name.toLowerCase()] = value
  return params
}

/** The typed error of a 401 or 403 answer, or of a 400 whose challenge says invalid_request; undefined for any other answer (a 400 refusing a field stays an `error` value). */
export function authErrorOf(status: number, challenge: string | null, body: string): ServiceDeskAuthError | undefined {
  const params = challenge ? challengeParams(challenge) : {}
  const error = params.error
  if (status !== 401 && status !== 403 && !(status === 400 && error === 'invalid_request')) return undefined
  const kind: AuthErrorKind =
    error === 'invalid_token' && params.error_description === EXPIRED
      ? 'expired'
      : error === 'invalid_token' || error === 'insufficient_scope' || error === 'invalid_request'
        ? error
        : status === 401
          ? 'invalid_token'
          : 'forbidden'
  return new ServiceDeskAuthError({ status, kind, description: params.error_description, scope: params.scope, challenge: challenge ?? undefined, message: body.trim() || `HTTP ${status}` })
}

/** When the service says a token expires: the Service-Token-Expiration header, or undefined. */
export function tokenExpiration(headers: Headers): Date | undefined {
  const value = headers.get('service-token-expiration')
  const date = value ? new Date(value) : undefined
  return date && !Number.isNaN(date.getTime()) ? date : undefined
}

/** A policy's standing as the last answer told it (GitHub's X-RateLimit-* names, on every answer after authentication). */
export interface RateLimit {
  /** reads, writes, anonymous (requests without an accepted credential, per address) or failures (failed authentications, per address). */
  policy: string
  limit: number
  remaining: number
  used: number
  /** When the window ends and the whole limit is back. */
  resetAt: Date
}

/** The rate limit an answer carries, or undefined when it carries none. */
export function rateLimitOf(headers: Headers): RateLimit | undefined {
  const [policy, limit, remaining, used, reset] = ['resource', 'limit', 'remaining', 'used', 'reset'].map((name) => headers.get(`x-ratelimit-${name}`))
  if (!policy || !limit || !remaining || !used || !reset) return undefined
  return { policy, limit: Number(limit), remaining: Number(remaining), used: Number(used), resetAt: new Date(Number(reset) * 1000) }
}

/** A 429: past a rate limit, or past the failed-authentication budget of the address or account. */
export class ServiceDeskRateLimitError extends Error {
  override readonly name = 'ServiceDeskRateLimitError'
  readonly status = 429
  /** Seconds to wait before trying again (Retry-After). */
  readonly retryAfter: number
  /** The policy that was spent, as the answer told it. */
  readonly rateLimit: RateLimit | undefined

  constructor(fields: { retryAfter: number; rateLimit: RateLimit | undefined; message: string }) {
    super(fields.message)
    this.retryAfter = fields.retryAfter
    this.rateLimit = fields.rateLimit
  }
}

/** The typed error of a 429 answer: its Retry-After, its rate limit, and the message of its JSON or text body. */
export function rateLimitErrorOf(headers: Headers, body: string): ServiceDeskRateLimitError {
  let message = body.trim()
  try {
    message = (JSON.parse(body) as { message?: string }).message ?? message
  } catch {
    // A text answer (the failure budget's) is the message itself.
  }
  return new ServiceDeskRateLimitError({ retryAfter: Number(headers.get('retry-after')) || 1, rateLimit: rateLimitOf(headers), message: message || 'HTTP 429' })
}

export interface ServiceDeskOptions {
  /** The API's base URL, e.g. http://localhost:3000 (the first-run banner prints it). */
  baseUrl: string
  /** A personal API token (service_pat_...) or an OAuth access token. */
  token: string
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: typeof fetch
  /**
   * How many times a request is tried again after a lost answer (a network error) or a 502, 503
   * or 504, and a POST after the 409 of its key in use: 2 by default, 0 for none. Only requests
   * that are safe to repeat: GET, HEAD, PUT, DELETE, and a POST, which always carries an
   * Idempotency-Key (one of its own unless the call gave one), the same on every try.
   */
  retries?: number
  /** How the client waits between tries (tests pass their own); setTimeout by default. */
  sleep?: (ms: number) => Promise<void>
}

const RETRIED_STATUSES = new Set([502, 503, 504])
const SAFE_TO_REPEAT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'POST'])

/** How long before try `attempt` + 1: what Retry-After says, else 0.25 s, 0.5 s, 1 s... at most 10 s. */
function pause(response: Response | undefined, attempt: number): number {
  const said = Number(response?.headers.get('retry-after'))
  return Math.min(10_000, Number.isFinite(said) && said > 0 ? said * 1000 : 250 * 2 ** attempt)
}

/**
 * `fetchImpl` with safe retries (ServiceDeskOptions.retries): every POST gets an Idempotency-Key
 * (a random UUID, quoted as the draft has it) unless it has one, so a retry after a lost answer
 * gets the first answer instead of doing the write twice.
 */
export function retryingFetch(fetchImpl: typeof fetch, retries: number, sleep: (ms: number) => Promise<void>): (input: Request) => Promise<Response> {
  return async (input: Request) => {
    let request = input
    if (request.method === 'POST' && !request.headers.has('idempotency-key')) {
      const headers = new Headers(request.headers)
      headers.set('idempotency-key', `"${crypto.randomUUID()}"`)
      request = new Request(request, { headers })
    }
    const repeatable = SAFE_TO_REPEAT.has(request.method)
    for (let attempt = 0; ; attempt++) {
      let response: Response
      try {
        response = await fetchImpl(request.clone())
      } catch (error) {
        if (!repeatable || attempt >= retries) throw error
        await sleep(pause(undefined, attempt))
        continue
      }
      const again = RETRIED_STATUSES.has(response.status) || (response.status === 409 && request.method === 'POST' && (await response.clone().text()).includes('"idempotency_key_in_use"'))
      if (!repeatable || !again || attempt >= retries) return response
      await sleep(pause(response, attempt))
    }
  }
}

export type ServiceDeskClient = Client<paths, typeof V1_MEDIA_TYPE> & {
  /** When the token expires, from the last answer that said so (every answer to a personal token does). */
  readonly tokenExpiresAt: Date | undefined
  /** The rate limit of the last answer that told one: what is left of the policy it counted against. */
  readonly rateLimit: RateLimit | undefined
}

/**
 * A client of the API. Requests send `Accept: application/vnd.service-v1+json` and the token, and
 * are tried again where that is safe (ServiceDeskOptions.retries: every POST carries an Idempotency-Key);
 * a 401 or 403 (or the 400 of a credential sent wrongly) rejects with a ServiceDeskAuthError, a
 * 429 with a ServiceDeskRateLimitError; other refusals come back as openapi-fetch's `error` (the
 * API's JSON `{ error, message, fields? }`).
 */
export function createServiceDeskClient(options: ServiceDeskOptions): ServiceDeskClient {
  let expiresAt: Date | undefined
  let rateLimit: RateLimit | undefined
  const client = createClient<paths, typeof V1_MEDIA_TYPE>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { accept: V1_MEDIA_TYPE, authorization: `Bearer ${options.token}` },
    fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retries ?? 2, options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)))),
  })
  const auth: Middleware = {
    async onResponse({ response }) {
      expiresAt = tokenExpiration(response.headers) ?? expiresAt
      rateLimit = rateLimitOf(response.headers) ?? rateLimit
      if (response.status === 429) throw rateLimitErrorOf(response.headers, await response.clone().text())
      const challenge = response.headers.get('www-authenticate')
      const refused = challenge !== null || response.status === 401 || response.status === 403
      const error = authErrorOf(response.status, challenge, refused ? await response.clone().text() : '')
      if (error) throw error
      return undefined
    },
  }
  client.use(auth)
  return Object.defineProperties(client, {
    tokenExpiresAt: { get: () => expiresAt, enumerable: true },
    rateLimit: { get: () => rateLimit, enumerable: true },
  }) as ServiceDeskClient
}

type ListingQuery = NonNullable<operations['listDiscussions']['parameters']['query']>

/**
 * Every discussion of the site's listing (every state but deleted; `query` filters it as the
 * listing's parameters do, but for page and sort), newest first, page after page by cursor: each
 * discussion once, however the discussions change meanwhile.
 */
export async function* allDiscussions(client: ServiceDeskClient, site: string, query: Omit<ListingQuery, 'page' | 'sort' | 'cursor'> = {}): AsyncGenerator<Discussion> {
  let cursor: string | null = ''
  while (cursor !== null) {
    const page: { data?: DiscussionListing; error?: unknown } = await client.GET('/{site}/discussions', { params: { path: { site }, query: { ...query, cursor } } })
    if (!page.data) throw new Error(`listing ${site}: ${JSON.stringify(page.error)}`)
    yield* page.data.discussions
    cursor = page.data.next_cursor ?? null
  }
}

/** Every comment of a discussion, oldest first, page after page by cursor. */
export async function* allComments(client: ServiceDeskClient, site: string, number: number): AsyncGenerator<Comment> {
  let cursor: string | null = ''
  while (cursor !== null) {
    const page: { data?: Schemas['CommentListing']; error?: unknown } = await client.GET('/{site}/discussions/{number}/comments', { params: { path: { site, number }, query: { cursor } } })
    if (!page.data) throw new Error(`comments of ${site} ${number}: ${JSON.stringify(page.error)}`)
    yield* page.data.comments
    cursor = page.data.next_cursor ?? null
  }
}

export interface ChangesOptions {
  /** The cursor to go on after (a change's `cursor`, kept by the caller); from the first change without one. */
  after?: string
  /** Keep waiting for new changes (long polling, `wait` seconds a request) instead of ending at the end of the stream; stop with `signal`. */
  follow?: boolean
  wait?: number
  signal?: AbortSignal
}

/**
 * The site's changes in the order they were committed, each with its discussion as it is now:
 * keep the last one's `cursor` to go on from there next time. Ends at the end of the stream unless
 * `follow`, which waits for more until `signal` aborts.
 */
export async function* changesOf(client: ServiceDeskClient, site: string, options: ChangesOptions = {}): AsyncGenerator<Change> {
  let after = options.after
  const wait = options.follow ? (options.wait ?? 30) : 0
  for (;;) {
    if (options.signal?.aborted) return
    const { data, error } = await client.GET('/{site}/changes', { params: { path: { site }, query: { ...(after !== undefined && { after }), wait } }, signal: options.signal })
    if (!data) throw new Error(`changes of ${site}: ${JSON.stringify(error)}`)
    for (const change of data.changes) {
      // Aborted: not one change more.
      if (options.signal?.aborted) return
      yield change
    }
    after = data.next_cursor
    if (data.end_of_stream && !options.follow) return
  }
}

/** A webhook's event as the service posts it: `{ type, timestamp, data }`, `data` typed by `type`. */
export type WebhookEvent = {
  [Type in keyof webhooks]: operations[`${Type extends `${infer A}.${infer B}` ? `${A}${Capitalize<B>}` : never}Event`]['requestBody']['content']['application/json']
}[keyof webhooks]

/**
 * The event of a webhook delivery, once its Standard Webhooks signature (webhook-id,
 * webhook-timestamp, webhook-signature) checks out under `secret` (whsec_..., shown when the
 * webhook was made or its secret rotated) and its timestamp is within five minutes of now. Give it
 * the body exactly as received (not parsed and written again). Throws otherwise.
 */
export function verifyWebhook(secret: string, body: string, headers: Headers | Record<string, string | string[] | undefined>): WebhookEvent {
  const plain: Record<string, string> = {}
  if (headers instanceof Headers) headers.forEach((value, name) => (plain[name] = value))
  else for (const [name, value] of Object.entries(headers)) if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
  return new Webhook(secret).verify(body, plain) as WebhookEvent
}
