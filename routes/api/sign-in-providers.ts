import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { actorOf } from '../actor.ts'
import { domainsOf, type SignInProvider } from '../../db/stores/sign-in-providers.ts'
import { domainRoles, MAX_DOMAINS, MAX_PROVIDER_NAME, providerKinds, type DomainRole } from '../../lib/company-sign-in.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly } from './administrators-only.ts'

// A site's identity providers for its staff's sign-in (issue 73; db/stores/sign-in-providers.ts;
// docs/decisions.md, "Staff sign-in with the company's account"), for its administrators: the
// application registered at the company's Google, Microsoft Entra ID or other OpenID provider.
// The client secret is written, never read back.

export const SignInProviderResource = Type.Object({
  id: Type.Integer(),
  name: Type.String({ description: 'The name on its button: "Sign in with <name>".' }),
  kind: Type.Enum(providerKinds, { description: 'google, microsoft (Entra ID, one tenant), or oidc (any OpenID Connect provider by its issuer).' }),
  issuer: Type.String({ format: 'uri', description: 'Its issuer; its configuration is discovered at <issuer>/.well-known/openid-configuration.' }),
  client_id: Type.String(),
  domains: Type.Array(Type.String(), { description: 'Email domains whose people join the staff at their first sign-in, as domain_role says.' }),
  domain_role: Type.Union([Type.Enum(domainRoles), Type.Null()], { description: 'What a new person of those domains becomes; null: nobody joins so (invited people only).' }),
  trust_mfa: Type.Boolean({ description: "Whether the provider's second factor (its ID token's amr or acr saying one was asked) stands for the site's own." }),
  redirect_uri: Type.String({ format: 'uri', description: 'The address to register with the application at the provider.' }),
  backchannel_logout_uri: Type.String({ format: 'uri', description: "The address of its back-channel logout, to register where the provider offers it: the provider's sign-out ends the sessions it made here." }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  href: Type.String({ format: 'uri' }),
})
const Name = Type.String({ minLength: 1, maxLength: MAX_PROVIDER_NAME, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const ClientId = Type.String({ minLength: 1, maxLength: 300 })
const ClientSecret = Type.String({ minLength: 1, maxLength: 500, description: 'Written, never read back: kept sealed with the server key.' })
const Domains = Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: MAX_DOMAINS })
const DomainRoleSchema = Type.Union([Type.Enum(domainRoles), Type.Null()])
export const NewSignInProvider = Type.Object(
  {
    name: Name,
    kind: Type.Enum(providerKinds),
    issuer: Type.Optional(Type.String({ maxLength: 300, description: 'For oidc: the issuer (https; http only on this machine).' })),
    tenant: Type.Optional(Type.String({ maxLength: 100, description: "For microsoft: the company's tenant id or a domain of it (not common, organizations or consumers)." })),
    client_id: ClientId,
    client_secret: ClientSecret,
    domains: Type.Optional(Domains),
    domain_role: Type.Optional(DomainRoleSchema),
    trust_mfa: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export const SignInProviderChange = Type.Object(
  { name: Type.Optional(Name), client_id: Type.Optional(ClientId), client_secret: Type.Optional(ClientSecret), domains: Type.Optional(Domains), domain_role: Type.Optional(DomainRoleSchema), trust_mfa: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
)
export const SignInProviderListing = Type.Object({ sign_in_providers: Type.Array(SignInProviderResource) })
const ProviderParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The provider id.' }) })
const errors = { 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody }

function view(fastify: FastifyInstance, request: FastifyRequest, provider: SignInProvider): Static<typeof SignInProviderResource> {
  const pages = fastify.urls.siteWeb(request.auth!.site.permalink)
  return {
    id: provider.id,
    name: provider.name,
    kind: provider.kind as Static<typeof SignInProviderResource>['kind'],
    issuer: provider.issuer,
    client_id: provider.clientId,
    domains: domainsOf(provider),
    domain_role: provider.domainRole as DomainRole | null,
    trust_mfa: provider.trustMfa,
    redirect_uri: `${pages}/login/provider/callback`,
    backchannel_logout_uri: `${pages}/login/provider/${provider.id}/logout`,
    created_at: moment(provider.createdAt),
    updated_at: moment(provider.updatedAt),
    href: `${fastify.urls.site(request.auth!.site.permalink)}/sign_in_providers/${provider.id}`,
  }
}

/** Every route for the site's administrators only. */
const signInProviderRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'how its staff sign in', { strict: true })
  const tags = ['sign-in providers']
  const { signInProviders } = fastify

  fastify.get(
    '/:site/sign_in_providers',
    { schema: { tags, operationId: 'listSignInProviders', summary: "The identity providers the site's staff sign in at (administrators)", params: SiteParams, response: { 200: SignInProviderListing, 403: ErrorBody } } },
    async (request) => ({ sign_in_providers: (await signInProviders.list(request.auth!.site.id)).map((p) => view(fastify, request, p)) }),
  )
  fastify.get(
    '/:site/sign_in_providers/:id',
    { schema: { tags, operationId: 'getSignInProvider', summary: 'An identity provider of the staff (administrators)', params: ProviderParams, response: { 200: SignInProviderResource, ...errors } } },
    async (request) => {
      const found = await signInProviders.find(request.auth!.site.id, request.params.id)
      if (!found) throw notFound(`this site has no sign-in provider ${request.params.id}`)
      return view(fastify, request, found)
    },
  )
  fastify.post(
    '/:site/sign_in_providers',
    { schema: { tags, operationId: 'addSignInProvider', summary: 'A new identity provider: its button is on the sign-in page (administrators)', params: SiteParams, body: NewSignInProvider, response: { 201: SignInProviderResource, ...errors, 409: ErrorBody } } },
    async (request, reply) => {
      const { client_id: clientId, client_secret: clientSecret, domain_role: domainRole, trust_mfa: trustMfa, ...rest } = request.body
      const added = await signInProviders.add(request.auth!.site.id, { ...rest, clientId, clientSecret, domainRole, trustMfa }, actorOf(request))
      const resource = view(fastify, request, added)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.patch(
    '/:site/sign_in_providers/:id',
    { schema: { tags, operationId: 'changeSignInProvider', summary: 'Change its name, client, domains or trust (administrators); its kind and issuer stay', params: ProviderParams, body: SignInProviderChange, response: { 200: SignInProviderResource, ...errors, 409: ErrorBody } } },
    async (request) => {
      const { client_id: clientId, client_secret: clientSecret, domain_role: domainRole, trust_mfa: trustMfa, name, domains } = request.body
      return view(fastify, request, await signInProviders.update(request.auth!.site.id, request.params.id, { name, clientId, clientSecret, domains, domainRole, trustMfa }, actorOf(request)))
    },
  )
  fastify.delete(
    '/:site/sign_in_providers/:id',
    { schema: { tags, operationId: 'removeSignInProvider', summary: 'Remove an identity provider (administrators): the people it linked sign in another way', params: ProviderParams, response: { 204: Type.Null(), ...errors, 409: ErrorBody } } },
    async (request, reply) => {
      await signInProviders.remove(request.auth!.site.id, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )
}

export default signInProviderRoutes
