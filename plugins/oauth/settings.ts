import { createHmac, createPrivateKey } from 'node:crypto'

// What the OAuth authorization server is set up with and what the rest of the service needs of it
// without loading the library (oidc-provider, about 180 ms and 40 MB, loaded on first use by
// plugins/oauth/index.ts): its addresses, its scopes, the lifetimes, and the pure rules.

/** The scopes of the API (spec: the resource metadata's scopes_supported). */
export const API_SCOPES = ['read', 'write'] as const

/** Where the library's endpoints live, under the issuer. */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/logout',
  userinfo: '/oauth/userinfo',
  introspection: '/oauth/introspect',
  pushed_authorization_request: '/oauth/par',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
} as const

export const ACCESS_TOKEN_TTL_S = 60 * 60
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 60 * 60
export const GRANT_TTL_S = 365 * 24 * 60 * 60
export const INTERACTION_TTL_S = 15 * 60

/**
 * A refresh token's lifetime in seconds, at `nowS`, under a grant that ends at `grantExp`: never
 * past the grant. The library asks for the lifetime before it reads the clock it adds it to (a
 * token's save reads its remaining time, then the moment it is issued at), so a second may turn
 * between the two readings: one second is kept in hand for it.
 */
export function refreshTokenTtl(grantExp: number, nowS: number): number {
  return Math.max(1, Math.min(REFRESH_TOKEN_TTL_S, grantExp - nowS - 1))
}

/** An account as the library wants it; the API's scopes carry no identity, so its claims are its id alone. */
export function libraryAccount(sub: string) {
  return { accountId: sub, claims: async () => ({ sub }) }
}

/** The user id an account id of the library names, or undefined. */
export function accountIdOf(sub: string): number | undefined {
  return /^[1-9]\d{0,15}$/.test(sub) ? Number(sub) : undefined
}

/** A redirect URI dynamic registration accepts: https, or http on the loopback interface (RFC 8252). */
export function registrableRedirectUri(uri: string): boolean {
  const url = URL.parse(uri)
  if (!url || url.hash) return false
  if (url.protocol === 'https:') return true
  return url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)
}

/** The token's signing key (the library wants one even though no ID token is asked for), from the server key. */
export function signingKey(serverKey: string) {
  const seed = createHmac('sha256', serverKey).update('service-desk oauth signing key').digest()
  // PKCS #8 wrapping of a raw Ed25519 seed (RFC 8410).
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed])
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' })
}

