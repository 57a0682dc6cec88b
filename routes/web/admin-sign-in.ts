import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { ProviderChange, ProviderInput } from '../../db/stores/sign-in-providers.ts'
import { domainsOf } from '../../db/stores/sign-in-providers.ts'
import { domainRoles, providerKinds, type DomainRole, type ProviderKind } from '../../lib/company-sign-in.ts'
import { actorOf } from '../actor.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/sign_in: how the site's staff sign in (issue 73; docs/decisions.md, "Staff
// sign-in with the company's account"), as the API's /<site>/sign_in_providers has it: the
// company's identity providers (Google, Microsoft Entra ID, or any OpenID provider), each with the
// address to register at it, changed on its row (a new secret replaces the old, never shown), or
// removed; and the switch that signs the staff in with the company's account only.

const NOTICES: Record<string, string> = {
  added: "The provider is added: its button is on the sign-in page. Sign in with it once yourself before you switch passwords off.",
  changed: 'The provider is changed.',
  removed: 'The provider is removed; the people it linked sign in another way.',
  only: "The staff sign in with the company's account only.",
  both: 'The staff may sign in with a password again.',
}
const STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400 }
const KIND_NAMES: Record<ProviderKind, string> = { google: 'Google Workspace', microsoft: 'Microsoft Entra ID', oidc: 'Another OpenID Connect provider (Okta, Keycloak, Authentik...)' }

/** The domains box: separated by commas, spaces or lines. */
const domainsFrom = (text: string) => text.split(/[\s,]+/).filter((d) => d !== '')

const adminSignInRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, signInProviders, administration } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/sign_in`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/sign_in')] }
  const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '')
  const roleOf = (value: unknown): DomainRole | null => ((domainRoles as readonly string[]).includes(text(value)) ? (text(value) as DomainRole) : null)
  const empty = { name: '', kind: 'google', issuer: '', tenant: '', client_id: '', domains: '', domain_role: '', trust_mfa: '' }

  async function signInPageOfAdmin(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const rows = (await signInProviders.list(request.web.site.id)).map((p) => ({ ...p, kindName: KIND_NAMES[p.kind as ProviderKind], domainsText: domainsOf(p).join(', '), sealed: signInProviders.settingsOf(p) === null }))
    const done = (request.query as { done?: unknown }).done
    return reply.page(
      'admin_sign_in',
      pageData(request, reply, {
        title: 'Sign-in',
        rows,
        kinds: providerKinds.map((kind) => ({ kind, name: KIND_NAMES[kind] })),
        redirectAddress: `${urls.siteWeb(request.web.site.permalink)}/login/provider/callback`,
        logoutAddress: (id: number) => `${urls.siteWeb(request.web.site.permalink)}/login/provider/${id}/logout`,
        companyOnly: request.web.site.companySignInOnly,
        values: empty,
        notice: NOTICES[String(done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  /** Runs a change; a refusal of the store is the page again, saying why (the secret never sent back). */
  async function changed(request: FastifyRequest, reply: FastifyReply, done: string, work: () => Promise<unknown>, values = empty) {
    const error = await refusalOf(work, ['invalid', 'not_found', 'conflict'])
    if (!error) return reply.redirect(`${base(request)}?done=${done}`, 303)
    return signInPageOfAdmin(request, reply, STATUS[error.code]!, { error: sentence(error.message), values })
  }

  fastify.get('/admin/sign_in', { preHandler: requireAdministrator }, (request, reply) => signInPageOfAdmin(request, reply))

  fastify.post('/admin/sign_in', action, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const values = { name: text(body.name), kind: text(body.kind), issuer: text(body.issuer), tenant: text(body.tenant), client_id: text(body.client_id), domains: text(body.domains), domain_role: roleOf(body.domain_role) ?? '', trust_mfa: body.trust_mfa === 'yes' ? 'yes' : '' }
    if (!(providerKinds as readonly string[]).includes(values.kind)) return signInPageOfAdmin(request, reply, 400, { error: 'Choose the kind of provider.', values })
    const input: ProviderInput = {
      name: values.name,
      kind: values.kind as ProviderKind,
      issuer: values.issuer,
      tenant: values.tenant,
      clientId: values.client_id,
      clientSecret: text(body.client_secret),
      domains: domainsFrom(values.domains),
      domainRole: roleOf(body.domain_role),
      trustMfa: values.trust_mfa === 'yes',
    }
    return changed(request, reply, 'added', () => signInProviders.add(request.web.site.id, input, actorOf(request)), values)
  })

  fastify.post('/admin/sign_in/policy', action, async (request, reply) => {
    const only = (request.body as { company_only?: unknown } | undefined)?.company_only === 'on'
    return changed(request, reply, only ? 'only' : 'both', () => administration.setPolicy(request.web.site, { companySignInOnly: only }, undefined, actorOf(request)))
  })

  fastify.post('/admin/sign_in/:id', action, async (request, reply) => {
    const id = wholeNumber((request.params as { id: string }).id, 10) ?? 0
    const body = (request.body ?? {}) as Record<string, unknown>
    if (body.remove === 'yes') return changed(request, reply, 'removed', () => signInProviders.remove(request.web.site.id, id, actorOf(request)))
    const change: ProviderChange = { name: text(body.name), clientId: text(body.client_id), domains: domainsFrom(text(body.domains)), domainRole: roleOf(body.domain_role), trustMfa: body.trust_mfa === 'yes' }
    // An empty secret box keeps the secret.
    if (text(body.client_secret) !== '') change.clientSecret = text(body.client_secret)
    return changed(request, reply, 'changed', () => signInProviders.update(request.web.site.id, id, change, actorOf(request)))
  })
}

export default adminSignInRoutes
