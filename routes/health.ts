import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

export const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  database: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
})

/** How long /healthz waits for the database: a load balancer's check is told 503 rather than left to time out. */
export const HEALTH_DEADLINE_MS = 2_000

/**
 * GET /healthz for load balancers and supervisors: 200 when the process answers and the database
 * can be read within HEALTH_DEADLINE_MS, 503 otherwise (a paused or silent database never answers,
 * so the deadline is the check's own). Public, unversioned, never cached; it tells nothing about sites.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/healthz', { schema: { hide: true, response: { 200: Health, 503: Health } } }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the database did not answer within ${HEALTH_DEADLINE_MS} ms`)), HEALTH_DEADLINE_MS)
    })
    try {
      await Promise.race([fastify.database.ping(), deadline])
      return { status: 'ok', database: 'ok' } as const
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unavailable')
      return reply.code(503).header('retry-after', '5').send({ status: 'unavailable', database: 'unavailable' })
    } finally {
      clearTimeout(timer)
    }
  })
}

export default healthRoutes
