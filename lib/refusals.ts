import { buildChallenge, type Challenge } from './challenge.ts'
import type { Urls } from './urls.ts'

// Every refusal of the authentication path (spec table 7, decisions.md "Credentials"), as a pure
// function from what went wrong to the status, headers and body sent back.

export type Refusal =
  | { kind: 'no_credential' }
  | { kind: 'invalid_request'; reason: string }
  | { kind: 'invalid_token' }
  | { kind: 'token_expired' }
  | { kind: 'insufficient_scope' }
  | { kind: 'staff_only' }

export interface RefusalResponse {
  status: 400 | 401 | 403
  headers: Record<string, string>
  body: string
}

export const EXPIRED_DESCRIPTION = 'The access token has expired'

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
    case 'insufficient_scope':
      return {
        status: 403,
        headers: challenge({ error: 'insufficient_scope' }, 'write'),
        body: `This token lacks the write scope: it is Read only. Create a Read and write token for changes at ${tokensPage}\n`,
      }
    case 'staff_only':
      return { status: 403, headers: { 'content-type': TEXT }, body: "API access is limited to the site's support staff.\n" }
  }
}
