// The WWW-Authenticate challenge of spec 5.4 and table 7. Parameters always come in this order,
// each quoted: realm, resource_metadata, scope, error, error_description (decisions.md).

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
