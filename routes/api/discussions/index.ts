import type { FastifyError, FastifyPluginAsync } from 'fastify'
import { strictValidatorCompiler } from '../../../plugins/http/validation.ts'
import actionRoutes from './actions.ts'
import categoryRoutes from './categories.ts'
import { discussionAddress, discussionContext } from './context.ts'
import { VersionMoved } from '../../../db/stores/errors.ts'
import { discussionVersion, tagOf } from '../../../plugins/http/conditional.ts'
import { httpError } from './http-errors.ts'
import listingRoutes from './listing.ts'
import { DISCUSSION_BODY_LIMIT } from './schemas.ts'
import showRoutes from './show.ts'
import writeRoutes from './write.ts'

// Request bodies are JSON; the vendor type of v1 is accepted as well. Anything else is a 415.
const JSON_TYPES = ['application/json', 'application/vnd.service-v1+json']

/**
 * Discussions and categories: every route of the v1 shape, all scoped to the authenticated site.
 * Registered inside the authenticated scope of app.ts, so authentication has run (and refused
 * read-only tokens on writes) before a body is read. The stores are the instance's
 * (plugins/stores.ts); the routes never build one.
 */
const discussionRoutes: FastifyPluginAsync = async (fastify) => {
  // Validation that never coerces a body and names every bad field (plugins/http/validation.ts).
  fastify.setValidatorCompiler(strictValidatorCompiler)
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, fastify.getDefaultJsonParser('error', 'error'))
  fastify.addHook('onRoute', (route) => {
    route.bodyLimit ??= DISCUSSION_BODY_LIMIT
  })
  // Store refusals become 404, 409 or 400 here; the app's error handler writes the body.
  // A change refused for its If-Match says which version the discussion is at now (RFC 9110, 13.1.1).
  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof VersionMoved) reply.header('etag', tagOf(request, discussionVersion(error.version), discussionAddress(request)))
    throw httpError(error)
  })

  const context = discussionContext(fastify)
  await fastify.register(listingRoutes, context)
  await fastify.register(showRoutes, context)
  await fastify.register(writeRoutes, context)
  await fastify.register(actionRoutes, context)
  await fastify.register(categoryRoutes, context)
}

export default discussionRoutes
