import { createHmac } from 'node:crypto'
import Provider, { errors, type Configuration, type KoaContextWithOIDC, type ClientMetadata } from 'oidc-provider'
import type { OAuthStore } from '../../db/stores/oauth.ts'
import type { SiteStore } from '../../db/stores/sites.ts'
import type { UserStore } from '../../db/stores/users.ts'
import { generateToken, OAUTH_ACCESS_TOKEN_PREFIX, OAUTH_REFRESH_TOKEN_PREFIX } from '../../lib/token-format.ts'
import { permalinkOfResource, type Urls } from '../../lib/urls.ts'
import { recordAdapter } from './adapter.ts'
import { METADATA_LIMITS } from './anti-automation.ts'
import { ACCESS_TOKEN_TTL_S, accountIdOf, API_SCOPES, GRANT_TTL_S, INTERACTION_TTL_S, libraryAccount, OAUTH_ROUTES, refreshTokenTtl, registrableRedirectUri, signingKey } from './settings.ts'

// The OAuth 2.1 authorization server of the service (docs/decisions.md, "OAuth for applications"),
// on oidc-provider: one issuer, the API's base URL, for every site; an access token is bound by
// RFC 8707 `resource` to one site's API, {base_url}/<site>. Only what OAuth 2.1 keeps is on:
// authorization code with PKCE S256, refresh tokens rotated on every use, revocation (RFC 7009),
// dynamic registration (RFC 7591) unless turned off. This module only configures the library;
// plugins/oauth/index.ts mounts it and routes/web/oauth.ts is its sign-in and consent page.

export interface ProviderOptions {
  issuer: string
  urls: Urls
  store: OAuthStore
  sites: SiteStore
  users: UserStore
  serverKey: string
  /** Whether RFC 7591 dynamic registration is open (SERVICE_OAUTH_REGISTRATION). */
  registration: boolean
  /** Renders the library's error page (a wrong redirect URI, an unknown client): never a redirect. */
  renderError(ctx: KoaContextWithOIDC, out: { error: string; error_description?: string }): void
  now?: () => number
}

/** Refuses registration metadata over the bounds (the library has read and parsed it already). */
export function checkMetadataSize(metadata: ClientMetadata): void {
  const name = metadata.client_name
  if (typeof name === 'string' && name.length > METADATA_LIMITS.name) {
    throw new errors.InvalidClientMetadata(`client_name must be at most ${METADATA_LIMITS.name} characters`)
  }
  const uris = metadata.redirect_uris ?? []
  if (uris.length > METADATA_LIMITS.redirectUris) {
    throw new errors.InvalidClientMetadata(`at most ${METADATA_LIMITS.redirectUris} redirect_uris`)
  }
  if (uris.some((uri) => uri.length > METADATA_LIMITS.uri)) {
    throw new errors.InvalidClientMetadata(`a redirect URI must be at most ${METADATA_LIMITS.uri} characters`)
  }
  if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_LIMITS.total) {
    throw new errors.InvalidClientMetadata(`the metadata must be at most ${METADATA_LIMITS.total} bytes as JSON`)
  }
}

function requestedScopes(ctx: KoaContextWithOIDC): string[] {
  const scope = ctx.oidc.params?.scope
  return typeof scope === 'string' ? scope.split(' ').filter(Boolean) : []
}

export function createProvider(options: ProviderOptions): Provider {
  const { issuer, store, sites, users, serverKey } = options
  const now = options.now ?? Date.now
  const cookieKey = createHmac('sha256', serverKey).update('service-desk oauth cookies').digest('base64url')

  /** The one site an authorization or token request is for; refuses another site of a site-bound client. */
  async function checkResource(ctx: KoaContextWithOIDC, resource: string, client?: { metadata(): ClientMetadata }) {
    const permalink = permalinkOfResource(resource, issuer)
    const site = permalink && (await sites.find(permalink))
    if (!site) throw new errors.InvalidTarget(`resource must be the API of a site of this service: ${issuer}/<site>`)
    const bound = client?.metadata().service_site
    if (bound && bound !== site.permalink) throw new errors.InvalidTarget(`this application is registered for the site ${String(bound)} only`)
    const requested = requestedScopes(ctx)
    // `openid` too: the service is no identity provider, and a scope it would not grant would only
    // bring the supporter back to the consent page.
    const unknown = requested.filter((s) => !(API_SCOPES as readonly string[]).includes(s) && s !== 'offline_access')
    if (unknown.length) throw new errors.InvalidScope(`the scopes of this API are read and write, not ${unknown.join(' ')}`, unknown.join(' '))
    // An authorization asks for some access to the API; what a token request asks is within its grant.
    if (ctx.oidc.route === 'authorization' && !requested.some((s) => (API_SCOPES as readonly string[]).includes(s))) {
      throw new errors.InvalidScope('ask for scope=read, or scope=read write', 'read')
    }
    return site
  }

  const configuration: Configuration = {
    adapter: recordAdapter(store, now),
    clients: [],
    // The account of a grant is the user's id; a disabled or deleted account gets no more tokens.
    async findAccount(ctx, sub) {
      const id = accountIdOf(sub)
      const user = id === undefined ? undefined : await users.byId(id)
      if (user?.disabled !== false) return undefined
      // A refresh asks for its grant's API or none: anything else is refused here, before the
      // library spends the refresh token (which would make the next, right refresh a reuse).
      if (ctx.oidc?.route === 'token' && ctx.oidc.params?.grant_type === 'refresh_token') {
        const asked = ctx.oidc.params.resource
        // The library has found the refresh token's grant by now, or refused it.
        const granted = Object.keys(ctx.oidc.entities.Grant!.resources!)
        if (asked !== undefined && (typeof asked !== 'string' || !granted.includes(asked))) {
          throw new errors.InvalidTarget(`a refresh token of this authorization is for ${granted.join(' ')} only`)
        }
      }
      return libraryAccount(sub)
    },
    jwks: { keys: [signingKey(serverKey)] },
    cookies: { keys: [cookieKey] },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    responseTypes: ['code'],
    // read and write are the API's (resource) scopes; listed here too so that a client may name
    // them in its registration metadata (MCP clients do) and the metadata advertises them.
    scopes: [...API_SCOPES, 'offline_access'],
    claims: { openid: ['sub'] },
    pkce: { required: () => true },
    routes: OAUTH_ROUTES,
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: 60,
      // Never past its grant, whose end the site's longest token lifetime sets (routes/web/oauth.ts).
      // (A refresh token is issued only with its grant: the code's exchange and the refresh load it.)
      RefreshToken: (ctx) => refreshTokenTtl(ctx.oidc.entities.Grant!.exp!, Math.floor(Date.now() / 1000)),
      Grant: GRANT_TTL_S,
      // An authorization waits this long for its sign-in and consent; an abandoned one is swept after.
      Interaction: INTERACTION_TTL_S,
      Session: 7 * 24 * 60 * 60,
      IdToken: 60 * 60,
    },
    // Every use of a refresh token gives a new one and ends the old one (OAuth 2.1 for public clients).
    rotateRefreshToken: () => true,
    async issueRefreshToken(_ctx, client) {
      return client.grantTypeAllowed('refresh_token')
    },
    // Every authorization passes through the site's sign-in and consent page (routes/web/oauth.ts),
    // which checks the supporter's own session and staff membership and extends the grant the
    // supporter already gave the application there: the library's browser session alone never
    // authorizes an application again.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined
    },
    // A grant outlives the library's browser session: an application keeps its access until revoked.
    expiresWithSession: async () => false,
    extraClientMetadata: {
      // The site an administrator registered the application for (service-desk oauth-client add).
      properties: ['service_site'],
      validator(ctx, key, value, metadata) {
        if (ctx?.oidc?.route !== 'registration') return
        if (key === 'service_site' && value !== undefined) {
          throw new errors.InvalidClientMetadata('service_site is set by an administrator, not by registration')
        }
        checkMetadataSize(metadata)
        const uris = metadata.redirect_uris ?? []
        const refused = uris.find((uri) => !registrableRedirectUri(uri))
        if (refused !== undefined) {
          const error = new errors.InvalidRedirectUri()
          // The library's own description speaks of matching; this one says what registration accepts.
          error.error_description = `redirect_uris must use https, or http on the loopback interface (127.0.0.1, [::1], localhost), not ${refused}`
          throw error
        }
      },
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      // An application revokes its own tokens only (RFC 7009 section 2.1).
      revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      registration: { enabled: options.registration },
      resourceIndicators: {
        enabled: true,
        // Without `resource`, an application registered for one site gets that site's API.
        async defaultResource(_ctx, client) {
          const bound = client?.metadata().service_site
          if (typeof bound === 'string') return `${issuer}/${bound}`
          throw new errors.InvalidTarget(`name the site's API with resource=${issuer}/<site>`)
        },
        async getResourceServerInfo(ctx, resource, client) {
          const requested = ctx.oidc.params?.resource
          if (Array.isArray(requested) && requested.length > 1) throw new errors.InvalidTarget('one site per authorization')
          await checkResource(ctx, resource, client)
          return {
            scope: API_SCOPES.join(' '),
            audience: resource,
            accessTokenTTL: ACCESS_TOKEN_TTL_S,
            accessTokenFormat: 'opaque',
          }
        },
        useGrantedResource: async () => true,
      },
    },
    interactions: {
      // The sign-in and consent page is on the pages of the site the resource names.
      // The resource was checked before any interaction starts: one site of the service.
      async url(_ctx, interaction) {
        const permalink = permalinkOfResource(String(interaction.params.resource), issuer)!
        return `${options.urls.siteWeb(permalink)}/oauth/authorize/${interaction.uid}`
      },
    },
    async renderError(ctx, out) {
      options.renderError(ctx, out as { error: string; error_description?: string })
    },
  }

  const provider = new Provider(issuer, configuration)
  // The addresses the library writes come from the configured base URL (plugins/oauth/index.ts sets
  // the forwarded headers from it), never from a request's Host header.
  provider.proxy = true
  // Access and refresh tokens look like personal tokens: a prefix, 256 random bits, a checksum.
  const tokenId = (prefix: typeof OAUTH_ACCESS_TOKEN_PREFIX | typeof OAUTH_REFRESH_TOKEN_PREFIX) =>
    function (this: { format?: string }) {
      this.format = 'opaque'
      return generateToken(prefix)
    }
  Object.defineProperty(provider.AccessToken.prototype, 'generateTokenId', { value: tokenId(OAUTH_ACCESS_TOKEN_PREFIX) })
  Object.defineProperty(provider.RefreshToken.prototype, 'generateTokenId', { value: tokenId(OAUTH_REFRESH_TOKEN_PREFIX) })
  return provider
}
