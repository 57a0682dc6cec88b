import type { Configuration } from 'openid-client'

// What speaking to an OpenID provider needs, whatever it is for (a mailbox connected with OAuth,
// lib/mail-oauth.ts; the staff's sign-in with the company's account, lib/company-sign-in.ts):
// openid-client, loaded on first use (most processes talk to no provider), and each application's
// discovered configuration, cached for an hour.

/** An application registered at a provider: what discovery and the token endpoint need. */
export interface ClientSettings {
  issuer: string
  clientId: string
  clientSecret: string
}

/** How long the service waits on a provider's answer. */
export const OPENID_TIMEOUT_SECONDS = 15

/** How long a discovered configuration is kept before the provider is asked again. */
const KEPT_MS = 60 * 60_000

export const openIdLibrary = () => import('openid-client')

/** The applications' discovered configurations, and where their sign-ins send a browser (a page's CSP lets its forms go there). */
export function createDiscovery() {
  const cache = new Map<string, { at: number; config: Promise<Configuration> }>()
  const authorizationEndpoints = new Map<string, string>()
  const keyOf = (settings: ClientSettings) => `${settings.issuer} ${settings.clientId} ${settings.clientSecret}`

  return {
    async configOf(settings: ClientSettings): Promise<Configuration> {
      const key = keyOf(settings)
      const known = cache.get(key)
      if (known && Date.now() - known.at < KEPT_MS) return known.config
      const client = await openIdLibrary()
      const execute = new URL(settings.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : []
      const config = client.discovery(new URL(settings.issuer), settings.clientId, settings.clientSecret, undefined, { execute, timeout: OPENID_TIMEOUT_SECONDS }).then((found) => {
        found.timeout = OPENID_TIMEOUT_SECONDS
        const endpoint = found.serverMetadata().authorization_endpoint
        if (endpoint) authorizationEndpoints.set(key, endpoint)
        return found
      })
      cache.set(key, { at: Date.now(), config })
      // A failed discovery is not kept: the next try asks again.
      config.catch(() => cache.delete(key))
      return config
    },

    /** The issuers' origins, and their authorization endpoints' where discovery found them elsewhere. */
    signInOrigins(all: ClientSettings[]): string[] {
      const origins = all.flatMap((settings) => {
        const endpoint = authorizationEndpoints.get(keyOf(settings))
        return [new URL(settings.issuer).origin, ...(endpoint ? [new URL(endpoint).origin] : [])]
      })
      return [...new Set(origins)]
    },
  }
}

export type Discovery = ReturnType<typeof createDiscovery>

/** What a sign-in at the provider needs kept until the browser comes back (in the browser's own sealed cookie). */
export interface PendingSignIn {
  state: string
  nonce: string
  verifier: string
}

/**
 * The provider's sign-in address for the browser (the authorization code flow with PKCE, state and
 * nonce), and what to keep until it comes back; `parameters` are the request's own (scope, prompt...).
 */
export async function startAuthorization(discovery: Discovery, settings: ClientSettings, redirectUri: string, parameters: Record<string, string>): Promise<{ url: string; pending: PendingSignIn }> {
  const client = await openIdLibrary()
  const config = await discovery.configOf(settings)
  const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() }
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    response_type: 'code',
    code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
    code_challenge_method: 'S256',
    state: pending.state,
    nonce: pending.nonce,
    ...parameters,
  })
  return { url: url.href, pending }
}

/** The browser came back to `callback`: its code exchanged at the token endpoint, the state, nonce, PKCE and the ID token (its issuer, audience, signature, times) checked by openid-client. */
export async function exchangeCode(discovery: Discovery, settings: ClientSettings, callback: URL, pending: PendingSignIn) {
  const client = await openIdLibrary()
  return client.authorizationCodeGrant(await discovery.configOf(settings), callback, { pkceCodeVerifier: pending.verifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true })
}
