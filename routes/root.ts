import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

export const RootDocument = Type.Object({
  name: Type.String(),
  api_url_template: Type.String(),
  openapi_url: Type.String(),
})

/**
 * GET {base_url}/: a small public pointer for people and tools that open the bare address. It
 * names no site, so it reveals nothing about which sites exist.
 */
const rootRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { baseUrl } = fastify.config
  const document = { name: 'Service Desk', api_url_template: `${baseUrl}/{site}`, openapi_url: `${baseUrl}/openapi.json` }
  fastify.get('/', { schema: { response: { 200: RootDocument } } }, async () => document)
  // Browsers ask for it on every page; it is not a site.
  fastify.get('/favicon.ico', async (_request, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send())
}

export default rootRoutes
