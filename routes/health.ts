import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

export const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  database: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
})

/**
 * GET /healthz for load balancers and supervisors: 200 when the process answers and the database
 * file can be read, 503 otherwise. Public, unversioned, never cached; it tells nothing about sites.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/healthz', { schema: { hide: true, response: { 200: Health, 503: Health } } }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    try {
      await fastify.database.ping()
      return { status: 'ok', database: 'ok' } as const
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unavailable')
      return reply.code(503).header('retry-after', '5').send({ status: 'unavailable', database: 'unavailable' })
    }
  })
}

export default healthRoutes
