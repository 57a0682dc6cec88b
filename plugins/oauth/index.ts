import type { FastifyReply, FastifyRequest } from 'fastify'
import { escapeHtml } from '../../lib/html.ts'
import fp from 'fastify-plugin'
import type Provider from 'oidc-provider'
import type { KoaContextWithOIDC } from 'oidc-provider'
import { repeatInBackground } from '../background.ts'
import { SECURITY_HEADERS } from '../views.ts'
import { clientTrusted, keepClient } from './adapter.ts'
import { oauthPace, type PaceKind } from './anti-automation.ts'
import { PROOF_PARAMETER, resumeAllowed } from './consent-binding.ts'
import { OAUTH_ROUTES } from './settings.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The OAuth authorization server (plugins/oauth/provider.ts), loaded on first use, and its
     * issuer, the API's base URL.
     */
    oauth: { provider(): Promise<Provider>; issuer: string }
  }
}

export interface OAuthOptions {
  /** RFC 7591 dynamic registration (SERVICE_OAUTH_REGISTRATION), on by default. */
  registration: boolean
}

export const SWEEP_EVERY_MS = 60 * 60 * 1000

// At the top level: tsc rewrites the .ts of a dynamic import here for dist/, not inside the plugin's callback.
const loadProvider = () => import('./provider.ts')


/**
 * The page the library shows instead of redirecting (an unknown client, a redirect URI it was not
 * registered with): plain, self-contained, and never a redirect to an address we cannot trust.
 */
export function oauthErrorPage(out: { error: string; error_description?: string | null }): string {
  const description = out.error_description ?? 'The application sent a request that cannot be completed.'
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization failed</title>' +
    '<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>' +
    `<main><h1>This application's request cannot be completed</h1><p>${escapeHtml(description)}</p>` +
    `<p><code>${escapeHtml(out.error)}</code></p><p>Go back to the application and try again, or ask its publisher.</p></main></body></html>`
  )
}

/**
 * Mounts the authorization server at the root: its endpoints under /oauth/ and its RFC 8414 (and
 * OpenID) metadata under /.well-known/. The library reads its own request bodies (form or JSON, at
 * most 56 KiB), so this scope has no body parser of Fastify's; the raw request goes to it.
 */
export default fp<OAuthOptions>(
  async (fastify, { registration }) => {
    const issuer = fastify.config.baseUrl
    const renderError = (ctx: Pick<KoaContextWithOIDC, 'type' | 'body' | 'set'>, out: { error: string; error_description?: string | null }) => {
      ctx.type = 'html'
      // The pages' own headers (a CSP with no script and forms to ourselves only), whatever the library set.
      ctx.set(SECURITY_HEADERS)
      ctx.body = oauthErrorPage(out)
    }
    // The library (about 180 ms and 40 MB) is loaded and set up on first use: most processes serve
    // API requests and pages, and never pay for it; the first OAuth request after a start does,
    // once (docs/decisions.md, "Loaded on first use").
    let made: Promise<{ provider: Provider; callback: ReturnType<Provider['callback']> }> | undefined
    const ready = () => (made ??= setUp())

    async function setUp() {
      const { createProvider } = await loadProvider()
      const provider = createProvider({
        issuer,
        urls: fastify.urls,
        store: fastify.oauthRecords,
        sites: fastify.sites,
        users: fastify.users,
        serverKey: fastify.serverKey,
        registration,
        renderError,
      })
      // Every error the library meets is answered by it; those it did not expect are logged here.
      provider.on('server_error', (_ctx, error) => fastify.log.error({ err: error }, 'oauth server error'))
      // The event comes before the library's answer, so the check below knows an authorization
      // failed whatever form its answer takes: a redirect with the error in the query or the
      // fragment, a page that posts it by itself (form_post), or any mode added later.
      const failures = new WeakMap<object, { error: string; error_description?: string | null }>()
      provider.on('authorization.error', (ctx, error) => failures.set(ctx, { error: error.error, error_description: error.error_description }))
      // A path under /oauth/ that the library does not serve (or an endpoint turned off) gets the
      // service's own 404, as every other unknown path does.
      provider.use(async (ctx, next) => {
        await next()
        if (ctx.status === 404 && ctx.body === undefined) {
          ctx.status = 404
          ctx.body = { error: 'not_found', message: `There is nothing at ${ctx.method} ${ctx.path}.` }
        }
        const { oidc } = ctx
        // An error of the authorization endpoint goes back to the application's redirect URI, before
        // any supporter saw a page: for an application that registered itself and never completed an
        // authorization, that URI is anyone's, so the error is shown here instead, in every response
        // mode (RFC 9700 section 4.11.2: no automatic redirect, and no form that posts itself, to an
        // address the server does not trust).
        const failure = failures.get(ctx)
        if (oidc?.route === 'authorization' && oidc.client && failure && !(await clientTrusted(fastify.oauthRecords, oidc.client.clientId))) {
          ctx.remove('location')
          if (ctx.status < 400) ctx.status = 400
          renderError(ctx, failure)
        }
        // A code exchanged: the application completed an authorization and is kept (anti-automation.ts).
        if (oidc?.route === 'token' && ctx.status === 200 && oidc.params?.grant_type === 'authorization_code' && oidc.client) {
          await keepClient(fastify.oauthRecords, oidc.client.clientId)
        }
      })
      return { provider, callback: provider.callback() }
    }
    const origin = new URL(issuer)

    async function handle(request: FastifyRequest, reply: FastifyReply) {
      const { callback } = await ready()
      const { raw } = request
      // The addresses the library writes come from the base URL, and the client address is Fastify's.
      raw.headers['x-forwarded-host'] = origin.host
      raw.headers['x-forwarded-proto'] = origin.protocol.slice(0, -1)
      raw.headers['x-forwarded-for'] = request.ip
      // Headers the app's hooks already set (Strict-Transport-Security) go with the library's answer.
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value)
      reply.hijack()
      return callback(raw, reply.raw)
    }

    const pace = oauthPace(fastify.clock)
    /** Registrations and authorization starts, at a bounded pace per client address. */
    const paced = (kind: PaceKind) => (request: FastifyRequest, reply: FastifyReply) => {
      const retryAfter = pace.take(kind, request.ip)
      if (retryAfter === undefined) return handle(request, reply)
      const error = { error: 'too_many_requests', error_description: `Too many requests from this address: try again in ${retryAfter} seconds.` }
      reply.code(429).headers(SECURITY_HEADERS).header('retry-after', String(retryAfter))
      return kind === 'registrations' ? reply.send(error) : reply.type('text/html; charset=utf-8').send(oauthErrorPage(error))
    }

    /** The library's resume address, where an answered authorization finishes in the browser that started it. */
    async function resume(request: FastifyRequest, reply: FastifyReply) {
      const { uid } = request.params as { uid: string }
      // The library resumes the interaction its signed resume cookie names, whatever the address
      // says: the proof is checked against that one, and an address naming another is refused.
      const { provider } = await ready()
      const resuming = provider.createContext(request.raw, reply.raw).cookies.get(provider.cookieName('resume'))
      const proof = (request.query as Record<string, unknown>)[PROOF_PARAMETER]
      if (resuming === uid && resumeAllowed(await provider.Interaction.find(uid), proof)) return handle(request, reply)
      fastify.log.warn({ uid }, 'an OAuth authorization answered in another browser was refused')
      return reply
        .code(403)
        .headers(SECURITY_HEADERS)
        .type('text/html; charset=utf-8')
        .send(
          oauthErrorPage({
            error: 'access_denied',
            error_description:
              'This authorization was answered in another browser than the one that started it, so it cannot finish here. ' +
              'If someone sent a supporter the link to its consent page, the answer given there does not count.',
          }),
        )
    }

    fastify.decorate('oauth', { provider: async () => (await ready()).provider, issuer })
    // Expired codes, tokens, interactions and grants leave the table at start and then hourly,
    // whichever process sweeps; a sweep under way is finished before the database closes.
    const sweep = async () => {
      await fastify.oauthRecords.sweep().catch((error: unknown) => fastify.log.warn({ err: error }, 'could not remove expired OAuth records'))
    }
    repeatInBackground(fastify, { firstAfterMs: 0, everyMs: SWEEP_EVERY_MS }, sweep)
    await fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers()
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null))
      scope.all('/oauth/*', handle)
      scope.get(`${OAUTH_ROUTES.authorization}/:uid`, resume)
      scope.route({ method: ['GET', 'POST'], url: OAUTH_ROUTES.authorization, handler: paced('authorizations') })
      scope.post(OAUTH_ROUTES.registration, paced('registrations'))
      scope.get('/.well-known/oauth-authorization-server', handle)
      scope.get('/.well-known/openid-configuration', handle)
    })
  },
  { name: 'oauth', fastify: '5.x', dependencies: ['config', 'server-key', 'site-store', 'user-store', 'oauth-store'] },
)
