import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ErrorBody, SiteParams } from './schemas.ts'

// RFC 9728 protected-resource metadata, one document per site: the address the challenge's
// resource_metadata parameter names. It needs no credential.
export const ResourceMetadata = Type.Object({
  resource: Type.String(),
  authorization_servers: Type.Array(Type.String()),
  scopes_supported: Type.Array(Type.String()),
  bearer_methods_supported: Type.Array(Type.String()),
  resource_name: Type.String(),
  resource_documentation: Type.String(),
})

const wellKnownRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { sites, urls } = fastify
  fastify.get(
    '/.well-known/oauth-protected-resource/:site',
    { schema: { params: SiteParams, response: { 200: ResourceMetadata, 404: ErrorBody } } },
    async (request, reply) => {
      const site = await sites.find(request.params.site)
      if (!site) return reply.code(404).send({ error: 'not_found', message: 'There is no such protected resource.' })
      reply.header('cache-control', 'public, max-age=300')
      return {
        // RFC 9728 section 3.3: this must equal the resource the client called, byte for byte.
        resource: urls.site(site.permalink),
        // The service's OAuth issuer (plugins/oauth), whose RFC 8414 metadata says how to sign in.
        authorization_servers: [fastify.oauth.issuer],
        scopes_supported: ['read', 'write'],
        bearer_methods_supported: ['header'],
        resource_name: `${site.name} (Service Desk API)`,
        resource_documentation: urls.apiTokensPage(site.permalink),
      }
    },
  )
  // Anything else under /.well-known is ours too, not a site's API path: a plain 404.
  fastify.all('/.well-known/*', { schema: { response: { 404: ErrorBody } } }, async (_request, reply) =>
    reply.code(404).send({ error: 'not_found', message: 'There is no such well-known document.' }),
  )
}

export default wellKnownRoutes
