import fp from 'fastify-plugin'
import { JSON_MEDIA_TYPE, negotiateMediaType, SUPPORTED_MEDIA_TYPES, type ApiMediaType } from '../lib/accept.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The media type this API request is answered with (decided from its Accept header). */
    apiMediaType: ApiMediaType
  }
}

const NOT_ACCEPTABLE =
  `This API answers with ${SUPPORTED_MEDIA_TYPES.join(' or ')}. ` +
  `Send "Accept: ${SUPPORTED_MEDIA_TYPES[0]}" to use version 1.\n`

/**
 * v1 media-type negotiation for the routes of the scope it is registered in: 406 for an Accept
 * that allows nothing we serve, and JSON answers labelled with the type the client asked for.
 */
export default fp(
  async (fastify) => {
    fastify.decorateRequest('apiMediaType', JSON_MEDIA_TYPE)
    // Hooks with a callback, not async: no promise per request.
    fastify.addHook('onRequest', (request, reply, done) => {
      // The credential headers may be named already (plugins/auth/authenticate.ts).
      const vary = reply.getHeader('vary')
      reply.header('vary', vary ? `Accept, ${String(vary)}` : 'Accept')
      const mediaType = negotiateMediaType(request.headers.accept)
      // A route answering with a file takes any Accept; its refusals are still JSON.
      if (!mediaType && !request.routeOptions.config.anyMediaType) return reply.code(406).type('text/plain; charset=utf-8').send(NOT_ACCEPTABLE)
      request.apiMediaType = mediaType ?? JSON_MEDIA_TYPE
      done()
    })
    fastify.addHook('onSend', (request, reply, payload, done) => {
      const type = reply.getHeader('content-type')
      // A bare application/json, without charset, is an answer whose exact type the contract fixes
      // (the legacy token's expiry, spec table 7): it is left as it is.
      if (typeof type === 'string' && type.startsWith(JSON_MEDIA_TYPE) && type !== JSON_MEDIA_TYPE) {
        reply.header('content-type', `${request.apiMediaType}; charset=utf-8`)
      }
      done(null, payload)
    })
  },
  { name: 'versioning', fastify: '5.x' },
)
