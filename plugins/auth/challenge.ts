import fp from 'fastify-plugin'
import type { Urls } from '../../lib/urls.ts'
import { SWITCHABLE_NAMES, type SwitchableMethod } from '../../db/stores/site-policy.ts'

// The WWW-Authenticate challenge of spec 5.4 and table 7. Parameters always come in this order,
// each quoted: realm, resource_metadata, scope, error, error_description (docs/decisions.md).

export const REALM = 'Service'

export type ChallengeError = 'invalid_request' | 'invalid_token' | 'insufficient_scope'

export interface Challenge {
  /** {base_url}/.well-known/oauth-protected-resource/<site> */
  resourceMetadata: string
  scope: 'read write' | 'write'
  error?: ChallengeError
  errorDescription?: string
}

// RFC 6750 section 3: attribute values are quoted strings without `"` or `\`, and error values are
// limited to printable ASCII. Every value we send is ours, but a slip must fail loudly in tests,
// not produce a header a client cannot parse.
const SAFE_VALUE = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

function param(name: string, value: string): string {
  if (!SAFE_VALUE.test(value)) throw new Error(`challenge parameter ${name} holds a character that cannot be quoted`)
  return `${name}="${value}"`
}

export function buildChallenge(challenge: Challenge): string {
  const params = [
    param('realm', REALM),
    param('resource_metadata', challenge.resourceMetadata),
    param('scope', challenge.scope),
  ]
  if (challenge.error) params.push(param('error', challenge.error))
  if (challenge.errorDescription) params.push(param('error_description', challenge.errorDescription))
  return `Bearer ${params.join(', ')}`
}


// Every refusal of the authentication path (spec table 7, docs/decisions.md "Credentials"), as a pure
// function from what went wrong to the status, headers and body sent back.

export type Refusal =
  | { kind: 'no_credential' }
  | { kind: 'invalid_request'; reason: string }
  | { kind: 'invalid_token' }
  | { kind: 'token_expired' }
  /** The legacy account token's own expiry answer: JSON, spec table 7. */
  | { kind: 'legacy_token_expired' }
  | { kind: 'multipass_expired' }
  /** Email and password that do not match an account that may sign in. */
  | { kind: 'invalid_password' }
  | { kind: 'insufficient_scope' }
  | { kind: 'staff_only' }
  /** A right password of an account with a second factor: the API takes a token from it instead. */
  | { kind: 'second_factor_required' }
  /** A person the site holds until they add the second factor it requires (plugins/auth/site-rules.ts). */
  | { kind: 'second_factor_enrollment' }
  /** A write with a credential that the site's write-token rule leaves to its administrators. */
  | { kind: 'writes_for_administrators' }
  /** A right credential of a kind the site's token policy switched off (db/stores/site-policy.ts). */
  | { kind: 'switched_off'; method: SwitchableMethod }
  /** Too many failed authentications from the client address, or password checks of the account. */
  | { kind: 'too_many_attempts'; retryAfter: number }
  /** Every password check slot and queue place is taken. */
  | { kind: 'busy'; retryAfter: number }

export interface RefusalResponse {
  status: 400 | 401 | 403 | 429 | 503
  headers: Record<string, string>
  /** A Buffer is sent exactly as it is, with exactly the content-type given. */
  body: string | Buffer
}

export const EXPIRED_DESCRIPTION = 'The access token has expired'
export const LEGACY_EXPIRED_MESSAGE = 'API token has expired. Please generate a new token from your account settings.'
// Spec table 7 gives this answer `Content-Type: application/json` exactly; plugins/versioning.ts
// leaves a bare application/json alone, and a Buffer body keeps Fastify from adding a charset.
const LEGACY_EXPIRED_BODY = Buffer.from(`{"error": ${JSON.stringify(LEGACY_EXPIRED_MESSAGE)}}`)

const TEXT = 'text/plain; charset=utf-8'

export function refusalResponse(refusal: Refusal, permalink: string, urls: Urls): RefusalResponse {
  const resourceMetadata = urls.resourceMetadata(permalink)
  const challenge = (extra: Omit<Challenge, 'resourceMetadata' | 'scope'>, scope: Challenge['scope'] = 'read write') => ({
    'content-type': TEXT,
    'www-authenticate': buildChallenge({ resourceMetadata, scope, ...extra }),
  })
  const tokensPage = urls.apiTokensPage(permalink)
  switch (refusal.kind) {
    case 'no_credential':
      return {
        status: 401,
        headers: challenge({}),
        body: `Authentication required. Send a personal API token as "Authorization: Bearer <token>"; supporters create one at ${tokensPage}\n`,
      }
    case 'invalid_request':
      return { status: 400, headers: challenge({ error: 'invalid_request' }), body: `${refusal.reason}\n` }
    case 'invalid_token':
      return {
        status: 401,
        headers: challenge({ error: 'invalid_token' }),
        body: 'The access token is invalid: it is wrong, revoked, or was made for another site.\n',
      }
    case 'token_expired':
      return {
        status: 401,
        headers: challenge({ error: 'invalid_token', errorDescription: EXPIRED_DESCRIPTION }),
        body: `Your personal API token has expired. Create a new token on the API tokens page: ${tokensPage}\n`,
      }
    case 'legacy_token_expired':
      return {
        status: 401,
        headers: { ...challenge({ error: 'invalid_token', errorDescription: EXPIRED_DESCRIPTION }), 'content-type': 'application/json' },
        body: LEGACY_EXPIRED_BODY,
      }
    case 'multipass_expired':
      return {
        status: 401,
        headers: challenge({ error: 'invalid_token', errorDescription: EXPIRED_DESCRIPTION }),
        body: `The multipass token has expired. Multipass is deprecated for the API: create a personal API token at ${tokensPage}\n`,
      }
    case 'invalid_password':
      return { status: 401, headers: challenge({ error: 'invalid_token' }), body: 'Invalid email/password\n' }
    case 'insufficient_scope':
      return {
        status: 403,
        headers: challenge({ error: 'insufficient_scope' }, 'write'),
        body: `This token lacks the write scope: it is Read only. Create a Read and write token for changes at ${tokensPage}\n`,
      }
    case 'second_factor_required':
      return {
        status: 401,
        headers: challenge({ error: 'invalid_token', errorDescription: 'This account has a second factor: send a personal API token, not its password' }),
        body: `This account signs in with a second factor, so the API does not take its email and password. Send a personal API token as "Authorization: Bearer <token>"; create one at ${tokensPage}\n`,
      }
    case 'second_factor_enrollment':
      return {
        status: 403,
        headers: { 'content-type': TEXT },
        body: `This site requires a second factor of its support staff, and this account has none yet. Sign in at ${urls.siteWeb(permalink)}/login and add one on your profile; then send a personal API token as "Authorization: Bearer <token>", made at ${tokensPage}\n`,
      }
    case 'writes_for_administrators':
      return {
        status: 403,
        headers: challenge({ error: 'insufficient_scope', errorDescription: 'This site lets only its administrators write with this credential' }, 'write'),
        body: `This site's token policy leaves writes through the API with this credential to its administrators: with it you may read. Ask an administrator of the site, or use the supporter pages.\n`,
      }
    case 'switched_off':
      return {
        status: 401,
        headers: challenge({ error: 'invalid_token', errorDescription: `${SWITCHABLE_NAMES[refusal.method]} is switched off for this site` }),
        body: `${SWITCHABLE_NAMES[refusal.method]} is switched off for this site by its administrators. Send a personal API token as "Authorization: Bearer <token>"; supporters create one at ${tokensPage}\n`,
      }
    case 'staff_only':
      return { status: 403, headers: { 'content-type': TEXT }, body: "API access is limited to the site's support staff.\n" }
    case 'too_many_attempts':
      return {
        status: 429,
        headers: { 'content-type': TEXT, 'retry-after': String(refusal.retryAfter) },
        body: `Too many failed authentication attempts. Try again in ${refusal.retryAfter} seconds.\n`,
      }
    case 'busy':
      return {
        status: 503,
        headers: { 'content-type': TEXT, 'retry-after': String(refusal.retryAfter) },
        body: 'Too many password checks are under way. Try again in a moment, or use a personal API token.\n',
      }
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The status, headers and body of a refusal on the API of site `permalink` (the configured addresses). */
    refusal(refusal: Refusal, permalink: string): RefusalResponse
  }
}

/** The challenge-header builder, bound to the configured addresses; plugins/auth/authenticate.ts sends what it builds. */
export default fp(
  async (fastify) => {
    const { urls } = fastify
    fastify.decorate('refusal', (refusal: Refusal, permalink: string) => refusalResponse(refusal, permalink, urls))
  },
  { name: 'challenge', fastify: '5.x', dependencies: ['config'] },
)
