import { createDiscovery, exchangeCode, openIdLibrary, startAuthorization, type Discovery, type PendingSignIn } from './openid.ts'

export type { PendingSignIn }

// Mailboxes connected with OAuth (docs/decisions.md, "Mailboxes connected with OAuth"): the
// applications the operator registers at Microsoft 365, Google Workspace or another OpenID
// provider, and the protocol with them, by openid-client (loaded on first use: most processes
// connect no mailbox): the authorization code flow with PKCE, state and nonce; refreshing the
// access token a mailbox signs in to IMAP and SMTP with (XOAUTH2); revoking a refresh token.

/** A server a connected mailbox signs in to. */
export interface MailServer {
  host: string
  port: number
  /** TLS from the start; otherwise STARTTLS. */
  secure: boolean
}

/** An application registered at a provider, as the operator gave it (kept sealed: it holds the client secret). */
export interface ProviderSettings {
  issuer: string
  clientId: string
  clientSecret: string
  scopes: string[]
  /** Parameters the provider's authorization request needs besides the usual (Google: a refresh token only with access_type=offline). */
  authorizationParameters: Record<string, string>
  imap: MailServer
  smtp: MailServer
}

/** The tokens of a connected mailbox (kept sealed); times in milliseconds since the epoch. */
export interface MailTokens {
  refreshToken: string
  accessToken: string
  issuedAt: number
  expiresAt: number
}

/** The providers the service knows: their issuer, scopes and servers, so the operator gives only the application's id and secret. */
export const PRESETS = {
  microsoft: {
    label: 'Microsoft 365',
    // `organizations`: any work account (openid-client checks the issuer against the account's tenant); a tenant id: that tenant's only.
    issuer: (tenant = 'organizations') => `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/v2.0`,
    scopes: ['openid', 'email', 'profile', 'offline_access', 'https://outlook.office.com/IMAP.AccessAsUser.All', 'https://outlook.office.com/SMTP.Send'],
    authorizationParameters: {},
    imap: { host: 'outlook.office365.com', port: 993, secure: true },
    smtp: { host: 'smtp.office365.com', port: 587, secure: false },
  },
  google: {
    label: 'Google Workspace',
    issuer: () => 'https://accounts.google.com',
    scopes: ['openid', 'email', 'https://mail.google.com/'],
    // Google gives a refresh token for offline access, asked with consent each time (a second connection would get none otherwise).
    authorizationParameters: { access_type: 'offline', prompt: 'consent' },
    imap: { host: 'imap.gmail.com', port: 993, secure: true },
    smtp: { host: 'smtp.gmail.com', port: 465, secure: true },
  },
} as const

export type PresetName = keyof typeof PRESETS

/** The scopes of another provider when the operator names none: OpenID's, the address, and a refresh token. */
export const DEFAULT_SCOPES = ['openid', 'email', 'offline_access']

/** Whether a text can be an application's client secret: printable ASCII on one line (what the providers give). */
export const isClientSecret = (secret: string) => /^[\x20-\x7E]{1,500}$/.test(secret)

/** A provider's name: a short word of lower-case letters, digits and dashes. */
export const isProviderName = (name: string) => /^[a-z][a-z0-9-]{0,30}$/.test(name)

/** A server from `imaps://host[:port]` or `smtps://host[:port]` (`imap://`, `smtp://`: STARTTLS), or a text saying what is wrong. */
export function parseServer(value: string, kind: 'imap' | 'smtp'): MailServer | string {
  const url = URL.canParse(value) ? new URL(value) : undefined
  const example = kind === 'imap' ? 'imaps://imap.example.com:993' : 'smtps://smtp.example.com:465 or smtp://smtp.example.com:587'
  if (!url || ![`${kind}:`, `${kind}s:`].includes(url.protocol) || url.hostname === '') return `must be an address such as ${example}`
  if (url.username !== '' || url.password !== '') return 'names no user or password: the mailbox signs in with its token'
  const secure = url.protocol === `${kind}s:`
  const port = url.port === '' ? (kind === 'imap' ? (secure ? 993 : 143) : secure ? 465 : 587) : Number(url.port)
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port, secure }
}

/** A server as an address: `imaps://host:993`. */
export function serverAddress(server: MailServer, kind: 'imap' | 'smtp'): string {
  const host = server.host.includes(':') ? `[${server.host}]` : server.host
  return `${kind}${server.secure ? 's' : ''}://${host}:${server.port}`
}

/**
 * Whether an issuer may be spoken to without TLS: only one on this machine (a provider of the
 * tests, or one beside the service), as RFC 8252 allows loopback redirects. Anywhere else the
 * tokens would cross the network in plain text.
 */
export function isLoopbackIssuer(issuer: string): boolean {
  return isLoopbackHost(new URL(issuer).hostname)
}

/** Whether a host is this machine: the only place a token may travel without TLS (a server beside the service, or the tests'). */
export const isLoopbackHost = (host: string) => host === 'localhost' || host === '127.0.0.1' || host === '[::1]' || host === '::1'

/** Whether an issuer is an address the service can use: https, or http on this machine. */
export function issuerProblem(issuer: string): string | null {
  if (!URL.canParse(issuer)) return 'must be the provider\'s issuer address, such as https://login.example.com'
  const url = new URL(issuer)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https:// address'
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return 'must be the issuer alone, with no user, query or fragment'
  if (url.protocol === 'http:' && !isLoopbackIssuer(issuer)) return 'must be an https:// address (plain http only on this machine)'
  return null
}

/**
 * When a mailbox's access token is renewed: a third of its life before it ends, but no earlier than
 * five minutes before (an hour's token, five minutes before; a connection opened just before the
 * end would be cut soon after).
 */
export function renewalDue(tokens: Pick<MailTokens, 'issuedAt' | 'expiresAt'>, now: number): boolean {
  const margin = Math.min(5 * 60_000, (tokens.expiresAt - tokens.issuedAt) / 3)
  return now >= tokens.expiresAt - margin
}

/** An error of the provider's answer: its OAuth error code and words. */
interface ProviderAnswer {
  error: string
  error_description?: string
}

const answerOf = (error: unknown): ProviderAnswer | undefined => {
  const { error: code, error_description: words } = (error ?? {}) as { error?: unknown; error_description?: unknown }
  return typeof code === 'string' ? { error: code, ...(typeof words === 'string' && { error_description: words }) } : undefined
}

/**
 * The words of a refusal that only a person can mend (the grant revoked, the password changed, the
 * application removed or its secret ended): an OAuth error of the token endpoint but a temporary one.
 * Undefined for anything else (the provider unreachable, a 5xx): tried again later.
 */
export function refusalWords(error: unknown, label: string): string | undefined {
  const answer = answerOf(error)
  const { status } = (error ?? {}) as { status?: unknown }
  // A server in trouble (5xx) or asking for patience (429) refuses nothing for good, whatever its words.
  if (typeof status === 'number' && (status >= 500 || status === 429)) return undefined
  if (!answer || answer.error === 'temporarily_unavailable' || answer.error === 'server_error') return undefined
  // The provider's own words, on one line and short: Microsoft's carry a trace id and a time.
  const words = answer.error_description?.replace(/\s+/g, ' ').slice(0, 200)
  return `${label} refused to renew the mailbox's access (${answer.error}${words ? `: ${words}` : ''}): an administrator connects it again`
}

/** The address of the mailbox an answer signs in as: the ID token's verified `email`, or Microsoft's `preferred_username` (its sign-in name, the address). */
export function addressOfClaims(claims: Record<string, unknown> | undefined): string | undefined {
  if (!claims) return undefined
  const email = typeof claims.email === 'string' && claims.email_verified !== false ? claims.email : undefined
  const name = typeof claims.preferred_username === 'string' ? claims.preferred_username : undefined
  const address = (email ?? name)?.trim().toLowerCase()
  return address && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address) ? address : undefined
}

/** The protocol with the providers, through openid-client (lib/openid.ts: their configurations discovered once an hour). */
export function createMailOAuth(discovery: Discovery = createDiscovery()) {
  const { configOf } = discovery
  const library = openIdLibrary

  const tokensOf = (answer: { access_token: string; refresh_token?: string; expires_in?: number }, refreshToken: string | undefined, now: number): MailTokens => {
    const refresh = answer.refresh_token ?? refreshToken
    if (!refresh) throw Object.assign(new Error('the provider gave no refresh token: the application must ask for offline access'), { error: 'no_refresh_token' })
    // Without expires_in, an hour (the providers' usual life of an access token).
    return { refreshToken: refresh, accessToken: answer.access_token, issuedAt: now, expiresAt: now + (answer.expires_in ?? 3600) * 1000 }
  }

  return {
    /**
     * Where a browser sent to these applications' sign-ins goes: their issuers' origins, and their
     * authorization endpoints' where discovery found them elsewhere (a page's CSP lets its forms go there).
     */
    signInOrigins: discovery.signInOrigins,

    /** The provider's sign-in address for the browser, and what to keep until it comes back. */
    async start(settings: ProviderSettings, redirectUri: string, loginHint?: string): Promise<{ url: string; pending: PendingSignIn }> {
      return startAuthorization(discovery, settings, redirectUri, { scope: settings.scopes.join(' '), ...settings.authorizationParameters, ...(loginHint && { login_hint: loginHint }) })
    },

    /** The browser came back to `callback`: the code exchanged (state, nonce and PKCE checked), the mailbox's address and tokens. */
    async finish(settings: ProviderSettings, callback: URL, pending: PendingSignIn, now: number): Promise<{ address: string; tokens: MailTokens }> {
      const answer = await exchangeCode(discovery, settings, callback, pending)
      const address = addressOfClaims(answer.claims() as Record<string, unknown> | undefined)
      if (!address) throw Object.assign(new Error('the provider did not say the account\'s mail address (its ID token has no verified email)'), { error: 'no_address' })
      return { address, tokens: tokensOf(answer, undefined, now) }
    },

    /** New tokens for a refresh token (the same refresh token kept when the provider sends none). */
    async renew(settings: ProviderSettings, refreshToken: string, now: number): Promise<MailTokens> {
      const client = await library()
      return tokensOf(await client.refreshTokenGrant(await configOf(settings), refreshToken), refreshToken, now)
    },

    /** Revokes a refresh token at the provider; false when the provider offers no revocation (Microsoft). */
    async revoke(settings: ProviderSettings, refreshToken: string): Promise<boolean> {
      const client = await library()
      const config = await configOf(settings)
      if (!config.serverMetadata().revocation_endpoint) return false
      await client.tokenRevocation(config, refreshToken, { token_type_hint: 'refresh_token' })
      return true
    },
  }
}

export type MailOAuth = ReturnType<typeof createMailOAuth>

/**
 * Revokes a removed mailbox's refresh token at its provider, where the provider offers it: what
 * happened, in words for the log and the command line; never throws (the mailbox is gone either way).
 */
export async function revokeConnection(protocol: MailOAuth, provider: { label: string; settings: ProviderSettings | null } | undefined, tokens: MailTokens | null): Promise<string> {
  if (!provider?.settings || !tokens) return 'its token could not be opened: withdraw its consent at the provider'
  try {
    return (await protocol.revoke(provider.settings, tokens.refreshToken)) ? `its token is revoked at ${provider.label}` : `${provider.label} offers no revocation: withdraw the consent there if the mailbox should never be read again`
  } catch (error) {
    return `its token could not be revoked at ${provider.label} (${(error as Error).message}): withdraw the consent there`
  }
}
