import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { shownMoment } from '../../lib/clock.ts'
import type { InteractionResults } from 'oidc-provider'
import { bindToBrowser } from '../../plugins/oauth/consent-binding.ts'
import { permalinkOfResource } from '../../lib/urls.ts'
import { SECURITY_HEADERS } from '../../plugins/views.ts'
import type { SitePolicy } from '../../db/stores/site-policy.ts'
import { confirmedRecently, confirmFirst } from './confirm.ts'
import { logPageEvent, notFoundPage, pageData, requireSupporter } from './pages.ts'

// The sign-in and consent step of an OAuth authorization (docs/decisions.md, "OAuth for
// applications"): {site_url}/oauth/authorize/<uid>, where the library's interaction URL points. The
// supporter signs in with the site's own sign-in (same session, CSRF, lockout); only the site's
// support staff may authorize; Allow grants the access asked for on this site's API, Deny answers
// the application access_denied. Read-and-write access asks the supporter to have signed in or
// confirmed it is them recently (routes/web/confirm.ts), before the page is shown and again when
// Allow is sent.

const UID = /^[\w-]{10,64}$/

/** What the consent page says of the access asked: write includes read, as for personal tokens. */
export function accessLabel(scope: string): { label: string; scopes: string } {
  const asked = new Set(scope.split(' '))
  return asked.has('write') ? { label: 'Read and write', scopes: 'read write' } : { label: 'Read only', scopes: 'read' }
}

/** Whether the access asked includes writing. */
const writes = (scope: string) => accessLabel(scope).scopes.includes('write')

/**
 * The access the signed-in supporter may give for the scope asked: under "Read and write tokens:
 * administrators only", read for anyone else (the API holds the same rule: plugins/auth/site-rules.ts).
 */
export function offeredScopes(scope: string, site: SitePolicy, administrator: boolean): string {
  return site.writeTokens === 'administrators' && !administrator ? 'read' : accessLabel(scope).scopes
}

const DAY_S = 24 * 60 * 60

const expired = (request: FastifyRequest, reply: FastifyReply) =>
  reply.page(
    'error',
    pageData(request, reply, {
      title: 'This authorization has expired',
      message: 'The request of the application is no longer waiting for an answer. Go back to the application and connect again.',
    }),
    400,
  )

const when = shownMoment

/** The applications the signed-in supporter authorized on this site, for the API tokens page. */
export async function authorizedApplications(request: FastifyRequest) {
  const { oauthRecords, oauth, urls } = request.server
  const resource = urls.site(request.web.site.permalink)
  const grants = await oauthRecords.list('Grant', { accountId: String(request.web.user!.id), resource })
  return Promise.all(
    grants.map(async (row) => {
      // Listed by client and resource, so both are in the grant (removing a client removes its grants).
      const payload = JSON.parse(row.payload) as { clientId: string; resources: Record<string, string>; rejected?: { resources?: Record<string, string> } }
      // What is in effect: the scopes given, less those refused under the site's write rule.
      const refused = new Set(payload.rejected?.resources?.[resource]?.split(' '))
      const client = await (await oauth.provider()).Client.find(payload.clientId)
      return {
        grantId: row.grantId!,
        name: client?.clientName ?? payload.clientId,
        access: accessLabel(payload.resources[resource].split(' ').filter((scope) => !refused.has(scope)).join(' ')).label,
        authorized: when(row.createdAt),
        lastUsed: row.lastUsedAt ? when(row.lastUsedAt) : 'never',
      }
    }),
  )
}

const oauthRoutes: FastifyPluginAsync = async (fastify) => {
  const { issuer } = fastify.oauth

  /** The waiting authorization this page answers, when it is for this site. */
  async function pending(request: FastifyRequest) {
    const { uid } = request.params as { uid: string }
    if (!UID.test(uid)) return undefined
    const provider = await fastify.oauth.provider()
    const interaction = await provider.Interaction.find(uid)
    if (!interaction) return undefined
    const resource = interaction.params.resource
    if (typeof resource !== 'string' || permalinkOfResource(resource, issuer) !== request.web.site.permalink) return undefined
    // A client removed while its supporter was on this page: the authorization has nothing to go back to.
    const client = await provider.Client.find(String(interaction.params.client_id))
    return client && { interaction, client, resource, scope: String(interaction.params.scope) }
  }

  /** The library finishes the authorization at returnTo, on the issuer; the form may go there and to the application. */
  function formTargets(redirectUri: string) {
    const origins = new Set([new URL(issuer).origin, new URL(redirectUri).origin])
    const csp = SECURITY_HEADERS['content-security-policy'].replace("form-action 'self'", `form-action 'self' ${[...origins].join(' ')}`)
    return { 'content-security-policy': csp }
  }

  fastify.get('/oauth/authorize/:uid', { preHandler: requireSupporter }, async (request, reply) => {
    const found = await pending(request)
    if (!found) return expired(request, reply)
    const { client, interaction, scope } = found
    const offered = offeredScopes(scope, request.web.site, request.web.user!.administrator)
    if (writes(offered) && !confirmedRecently(request)) return confirmFirst(request, reply, 'oauth', `/oauth/authorize/${interaction.uid}`)
    const redirectUri = String(interaction.params.redirect_uri)
    return reply.page(
      'oauth_consent',
      pageData(request, reply, {
        title: `Authorize ${client.clientName ?? client.clientId}`,
        application: client.clientName ?? client.clientId,
        redirectHost: new URL(redirectUri).host,
        // An administrator's registration binds the application to a site (service-desk oauth-client add).
        selfRegistered: client.metadata().service_site === undefined,
        access: accessLabel(offered).label,
        writeRefused: writes(scope) && !writes(offered),
        action: `${fastify.urls.siteWeb(request.web.site.permalink)}/oauth/authorize/${interaction.uid}`,
      }),
      200,
      formTargets(redirectUri),
    )
  })

  fastify.post('/oauth/authorize/:uid', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ownAccount: true } }, async (request, reply) => {
    const found = await pending(request)
    if (!found) return expired(request, reply)
    const { interaction, client, resource, scope } = found
    const user = request.web.user!
    const decision = (request.body as { decision?: unknown } | undefined)?.decision
    let result: InteractionResults
    const { site } = request.web
    const offered = offeredScopes(scope, site, user.administrator)
    if (decision === 'allow' && writes(offered) && !confirmedRecently(request)) return confirmFirst(request, reply, 'oauth', `/oauth/authorize/${interaction.uid}`)
    if (decision === 'allow') {
      const accountId = String(user.id)
      // The grant this supporter already gave the application on this site is extended (one row on
      // the token page per application); otherwise a new one starts.
      const [given] = await fastify.oauthRecords.list('Grant', { accountId, clientId: client.clientId, resource })
      const provider = await fastify.oauth.provider()
      const existing = given && (await provider.Grant.find(given.grantId!))
      const grant = existing || new provider.Grant({ accountId, clientId: client.clientId })
      // Never longer than the site's longest token lifetime, from now: the grant ends every refresh
      // token of it (an extended grant is shortened to it too).
      grant.exp = Math.min(grant.exp ?? Infinity, Math.floor(Date.now() / 1000) + site.tokenMaxDays * DAY_S)
      // A write the rule keeps from this supporter is answered as refused, so the library finds
      // nothing left to ask (and an earlier grant's write ends at its next refresh); once the rule
      // allows it, a new consent may give it again.
      if (writes(scope) && !writes(offered)) {
        grant.rejectOIDCScope('write')
        grant.rejectResourceScope(resource, 'write')
      } else delete grant.rejected
      grant.addResourceScope(resource, offered)
      // The same names are scopes of the server too (plugins/oauth/provider.ts): granted alike, so
      // the library finds nothing left to consent to. offline_access stays in a request only with
      // prompt=consent, then must be granted like them, or consent is asked again and again.
      grant.addOIDCScope(scope.split(' ').includes('offline_access') ? `${offered} offline_access` : offered)
      const grantId = await grant.save()
      result = { login: { accountId }, consent: { grantId } }
      const detail = { client_id: client.clientId, application: client.clientName ?? client.clientId, access: accessLabel(offered).label }
      await logPageEvent(request, 'oauth_authorized', detail)
      // oidc-provider saved the grant through its adapter: its event follows in a transaction of its own.
      await fastify.tellAfter({
        type: 'application.authorized',
        siteId: site.id,
        application: { grantId, clientId: client.clientId, name: detail.application, access: writes(offered) ? 'write' : 'read', owner: { email: user.email, name: user.name }, createdAt: new Date(fastify.clock()) },
      })
    } else {
      result = { error: 'access_denied', error_description: 'The supporter denied the application access.' }
    }
    // The answer takes effect only where the authorization started (plugins/oauth/consent-binding.ts).
    const returnTo = bindToBrowser(interaction, result)
    await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)))
    return reply.redirect(returnTo, 303)
  })

  // Revoke on the API tokens page: the grant goes, and with it every access and refresh token of it.
  fastify.post('/profile/applications/:grant/revoke', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ownAccount: true } }, async (request, reply) => {
    const { grant } = request.params as { grant: string }
    const page = `${fastify.urls.siteWeb(request.web.site.permalink)}/profile/api_tokens`
    const mine = (await authorizedApplications(request)).find((app) => app.grantId === grant)
    if (!mine) {
      const message = 'There is no application you authorized on this site with this address. Its access may have been revoked already.'
      return notFoundPage(request, reply, { title: 'No such application', message, back: { path: '/profile/api_tokens', label: 'Back to your API tokens' } })
    }
    await fastify.oauthRecords.destroyGrant(grant)
    await logPageEvent(request, 'oauth_revoked', { application: mine.name })
    return reply.redirect(`${page}?app_revoked=1`, 303)
  })
}

export default oauthRoutes
