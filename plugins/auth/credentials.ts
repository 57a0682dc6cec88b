import { holdsIssuedToken } from '../../lib/token-format.ts'

// Finds the one credential of an API request (docs/decisions.md, "Credentials"), without reading the
// database. Exactly one credential is allowed: two kinds, or one kind sent twice, is a bad request.

export type Credential =
  | { kind: 'none' }
  | { kind: 'invalid_request'; reason: string }
  /** An Authorization header we cannot read: answered like a wrong token. */
  | { kind: 'malformed' }
  | { kind: 'bearer'; token: string }
  | { kind: 'basic'; email: string; password: string }
  /** inQuery: sent as `auth=` / `sso=`, so answers must not be stored, and a space in it was a `+`. */
  | { kind: 'legacy'; key: string; inQuery: boolean }
  | { kind: 'multipass'; token: string; inQuery: boolean }

export interface CredentialSource {
  method: string
  /** Node's raw header list, [name, value, name, value, ...]: repeated headers stay visible. */
  rawHeaders: string[]
  query: Record<string, unknown>
}

// Maps, not objects: a header or parameter named `constructor` or `__proto__` is no credential.
const HEADER_KINDS = new Map<string, 'authorization' | 'legacy' | 'multipass'>([
  ['authorization', 'authorization'],
  ['x-service-auth', 'legacy'],
  ['x-multipass', 'multipass'],
])
const QUERY_KINDS = new Map<string, 'legacy' | 'multipass'>([
  ['auth', 'legacy'],
  ['sso', 'multipass'],
])

type Found =
  | { from: 'authorization'; value: string }
  | { from: 'legacy' | 'multipass'; value: string; inQuery: boolean }

// A repeated query parameter arrives as an array.
function queryValues(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [String(value)]
}

function parseAuthorization(value: string): Credential {
  const match = /^([A-Za-z]+) +(\S+) *$/.exec(value)
  if (!match) return { kind: 'malformed' }
  const [, scheme, param] = match
  switch (scheme.toLowerCase()) {
    case 'bearer':
      return { kind: 'bearer', token: param }
    case 'basic': {
      const decoded = Buffer.from(param, 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      if (colon < 1) return { kind: 'malformed' }
      return { kind: 'basic', email: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
    }
    default:
      return { kind: 'malformed' }
  }
}

export function findCredential(source: CredentialSource): Credential {
  const found: Found[] = []
  for (let i = 0; i < source.rawHeaders.length; i += 2) {
    const kind = HEADER_KINDS.get(source.rawHeaders[i].toLowerCase())
    if (kind === 'authorization') found.push({ from: kind, value: source.rawHeaders[i + 1] })
    else if (kind) found.push({ from: kind, value: source.rawHeaders[i + 1], inQuery: false })
  }
  for (const [name, value] of Object.entries(source.query)) {
    const values = queryValues(value)
    const holdsToken = holdsIssuedToken(name) || values.some(holdsIssuedToken)
    if (name.toLowerCase() === 'access_token' || holdsToken) {
      return {
        kind: 'invalid_request',
        reason: 'Tokens must not be sent in a URL. Send a personal API token in the Authorization header as "Bearer <token>".',
      }
    }
    const kind = QUERY_KINDS.get(name)
    if (kind) for (const v of values) found.push({ from: kind, value: v, inQuery: true })
  }

  if (found.length === 0) return { kind: 'none' }
  if (found.length > 1) {
    return { kind: 'invalid_request', reason: 'Send exactly one credential: this request carries more than one.' }
  }
  const [credential] = found
  if (credential.from === 'authorization') return parseAuthorization(credential.value)
  if (credential.inQuery && source.method !== 'GET' && source.method !== 'HEAD') {
    return {
      kind: 'invalid_request',
      reason: `The ${credential.from === 'legacy' ? 'auth' : 'sso'} query parameter is accepted on GET and HEAD only; send the credential in a header.`,
    }
  }
  const { value, inQuery } = credential
  return credential.from === 'legacy' ? { kind: 'legacy', key: value, inQuery } : { kind: 'multipass', token: value, inQuery }
}
