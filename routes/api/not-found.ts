import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ErrorBody } from '../schemas.ts'

const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE']

/**
 * Any other address under a site is still part of the API: it is authenticated like the rest
 * (read-only tokens refused on writes, no answer before a credential) and only then answered 404.
 */
const apiNotFound: FastifyPluginAsyncTypebox = async (fastify) => {
  const schema = { response: { 404: ErrorBody } }
  const notFound = async () => {
    throw Object.assign(new Error('There is no such API resource.'), { statusCode: 404, code: 'not_found' })
  }
  fastify.route({ method: WRITE_METHODS, url: '/:site', schema, handler: notFound })
  fastify.all('/:site/*', { schema }, notFound)
}

export default apiNotFound
