import { isMailAddress, normalAddress } from './mail.ts'
import { createDiscovery, exchangeCode, startAuthorization, type ClientSettings, type Discovery, type PendingSignIn } from './openid.ts'

// Staff sign in with the company's account (issue 73; docs/decisions.md, "Staff sign-in with the
// company's account"): the rules of who an ID token may be, as pure functions, and the protocol with
// the company's OpenID provider through openid-client (the code flow with PKCE, state and nonce) and
// jose (a back-channel logout token's signature, OpenID Connect Back-Channel Logout 1.0).

export const providerKinds = ['google', 'microsoft', 'oidc'] as const
export type ProviderKind = (typeof providerKinds)[number]

/** What a new person of one of a provider's domains becomes on the staff. */
export const domainRoles = ['supporter', 'collaborator'] as const
export type DomainRole = (typeof domainRoles)[number]

/** The issuers of the presets: Google's one, and a Microsoft Entra ID tenant's (its id or one of its domains). */
export const PRESET_ISSUERS: Record<Exclude<ProviderKind, 'oidc'>, (tenant: string) => string> = {
  google: () => 'https://accounts.google.com',
  microsoft: (tenant) => `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/v2.0`,
}

/** A provider's name on its button: "Sign in with <name>". */
export const MAX_PROVIDER_NAME = 60
/** The most email domains one provider admits new people of. */
export const MAX_DOMAINS = 20

/**
 * What is wrong with a Microsoft tenant, or null: its id (a GUID) or a domain of it. Not `common`,
 * `organizations` or `consumers`: those let any company's accounts sign in, and their ID tokens'
 * issuer is the account's own tenant, not one the site named.
 */
export function tenantProblem(tenant: string): string | null {
  if (['common', 'organizations', 'consumers'].includes(tenant.toLowerCase())) return `must be your company's tenant (its id, or a domain of it), not "${tenant}", which lets any company's accounts in`
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(tenant) || /^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(tenant) ? null : 'must be the tenant id (a GUID such as 72f988bf-86f1-41af-91ab-2d7cd011db47) or a domain of the tenant'
}

/** A domain as the list keeps it (lower case, no `@`), or null for one that is not a domain name. */
export function domainOf(value: string): string | null {
  const domain = value.trim().toLowerCase().replace(/^@/, '')
  return /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(domain) ? domain : null
}

/** Whether an address is of one of the domains (exactly: a subdomain is another domain). */
export const ofDomains = (address: string, domains: readonly string[]) => domains.includes(address.slice(address.lastIndexOf('@') + 1).toLowerCase())

/** The claims of an ID token the sign-in reads. */
export interface SignInClaims {
  sub: string
  email?: unknown
  email_verified?: unknown
  /** Microsoft Entra ID's "email domain owner verified" optional claim: its email_verified. */
  xms_edov?: unknown
  name?: unknown
  amr?: unknown
  acr?: unknown
  auth_time?: unknown
  sid?: unknown
  /** Google's hosted domain: the Workspace an account belongs to (none for a personal Google account). */
  hd?: unknown
}

const yes = (value: unknown) => value === true || value === 'true' || value === 1 || value === '1'

/**
 * The address an ID token signs in as: its `email`, only when the provider says it verified it
 * (`email_verified`, or Microsoft's `xms_edov`). A provider that lets its users type any address
 * unchecked must not make them anyone here (the "nOAuth" mistake).
 */
export function verifiedAddress(claims: SignInClaims, kind: ProviderKind): { address: string } | { refused: 'no_email' | 'unverified' | 'not_workspace' } {
  const email = typeof claims.email === 'string' ? normalAddress(claims.email) : ''
  if (!isMailAddress(email)) return { refused: 'no_email' }
  if (!(yes(claims.email_verified) || yes(claims.xms_edov))) return { refused: 'unverified' }
  // Google: an account of the company's Workspace, whose domain is its address's; a personal
  // Google account may carry a verified address of the company's domain (an old colleague's).
  if (kind === 'google' && (typeof claims.hd !== 'string' || claims.hd.toLowerCase() !== email.slice(email.lastIndexOf('@') + 1))) return { refused: 'not_workspace' }
  return { address: email }
}

/** The `acr` values that name a sign-in with more than one factor (the PAPE policies). */
const MFA_ACR = new Set(['http://schemas.openid.net/pape/policies/2007/06/multi-factor', 'http://schemas.openid.net/pape/policies/2007/06/multi-factor-physical'])
/** The `amr` values of RFC 8176 that are a factor other than something the person knows. */
const OTHER_FACTORS = new Set(['hwk', 'swk', 'otp', 'sms', 'tel', 'fpt', 'face', 'iris', 'retina', 'vbm', 'sc', 'pop'])

/**
 * Whether the provider says it asked more than one factor: `amr` naming `mfa`, or a factor of
 * another kind beside a password (RFC 8176: Keycloak's ["pwd","otp"]), or a multi-factor `acr`.
 */
export function mfaAtProvider(claims: SignInClaims): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((m): m is string => typeof m === 'string') : []
  if (amr.includes('mfa')) return true
  if (amr.some((m) => OTHER_FACTORS.has(m)) && amr.length > 1) return true
  return typeof claims.acr === 'string' && MFA_ACR.has(claims.acr)
}

/** The name a new person takes: the token's `name`, on one line and short, or the address's first part. */
export function newcomerName(claims: SignInClaims, address: string): string {
  const name = typeof claims.name === 'string' ? claims.name.replace(/[\p{Cc}\p{Cf}]/gu, '').replace(/\s+/g, ' ').trim().slice(0, 100) : ''
  return name || address.slice(0, address.indexOf('@'))
}

/**
 * Whether an ID token of a re-authentication is fresh: the provider says (`auth_time`) it signed the
 * person in again after it was asked to, a minute's drift between clocks allowed. A provider that
 * does not say confirms nothing: it may have answered from its session without asking.
 */
export const freshAuthentication = (claims: SignInClaims, askedAt: number) => typeof claims.auth_time === 'number' && claims.auth_time * 1000 >= askedAt - 60_000

/** The event a back-channel logout token carries (OpenID Connect Back-Channel Logout 1.0, 2.4). */
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** Who a back-channel logout ends: the provider's session (`sid`), or every session of the subject (`sub`). */
export interface LogoutOrder {
  sub?: string
  sid?: string
  jti: string
}

/** The protocol with the sites' providers. */
export function createCompanySignIn(discovery: Discovery = createDiscovery()) {
  const keySets = new Map<string, ReturnType<typeof import('jose').createRemoteJWKSet>>()

  return {
    signInOrigins: discovery.signInOrigins,

    /** The provider's sign-in address; `again`: the person signs in anew there (sudo mode: `prompt=login`, `max_age=0`). */
    start(settings: ClientSettings, redirectUri: string, { again = false, loginHint }: { again?: boolean; loginHint?: string } = {}): Promise<{ url: string; pending: PendingSignIn }> {
      return startAuthorization(discovery, settings, redirectUri, { scope: 'openid email profile', ...(again && { prompt: 'login', max_age: '0' }), ...(loginHint && { login_hint: loginHint }) })
    },

    /** The ID token's claims, once openid-client checked the code's answer (state, PKCE, nonce, issuer, audience, signature, times). */
    async finish(settings: ClientSettings, callback: URL, pending: PendingSignIn): Promise<SignInClaims> {
      const answer = await exchangeCode(discovery, settings, callback, pending)
      return answer.claims() as unknown as SignInClaims
    },

    /**
     * A back-channel logout token checked (its signature by the provider's published keys, its
     * issuer, audience, age, event, and no nonce): whom it signs out. Throws for one that will not do.
     */
    async logout(settings: ClientSettings, token: string): Promise<LogoutOrder> {
      const jose = await import('jose')
      const config = await discovery.configOf(settings)
      const metadata = config.serverMetadata()
      if (!metadata.jwks_uri) throw new Error('the provider publishes no keys (jwks_uri)')
      let keys = keySets.get(metadata.jwks_uri)
      if (!keys) {
        keys = jose.createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: 15_000 })
        keySets.set(metadata.jwks_uri, keys)
      }
      const { payload } = await jose.jwtVerify(token, keys, { issuer: metadata.issuer, audience: settings.clientId, maxTokenAge: '5m' })
      const events = payload.events as Record<string, unknown> | undefined
      if (!events || typeof events[LOGOUT_EVENT] !== 'object') throw new Error('the token carries no back-channel logout event')
      if ('nonce' in payload) throw new Error('a logout token carries no nonce')
      if (typeof payload.jti !== 'string') throw new Error('the token has no jti')
      const sub = typeof payload.sub === 'string' ? payload.sub : undefined
      const sid = typeof payload.sid === 'string' ? payload.sid : undefined
      if (!sub && !sid) throw new Error('the token names neither a subject nor a session')
      return { jti: payload.jti, ...(sub && { sub }), ...(sid && { sid }) }
    },
  }
}

export type CompanySignIn = ReturnType<typeof createCompanySignIn>
