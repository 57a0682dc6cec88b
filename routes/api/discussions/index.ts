import multipart from '@fastify/multipart'
import type { FastifyError, FastifyPluginAsync } from 'fastify'
import type { FileLimits } from '../../../lib/files.ts'
import { multipartBody } from '../files.ts'
import { strictValidatorCompiler } from '../../../plugins/http/validation.ts'
import actionRoutes from './actions.ts'
import categoryRoutes from './categories.ts'
import changeRoutes from './changes.ts'
import { discussionAddress, discussionContext } from './context.ts'
import { VersionMoved } from '../../../db/stores/errors.ts'
import { discussionVersion, tagOf } from '../../../plugins/http/conditional.ts'
import { httpError } from './http-errors.ts'
import listingRoutes from './listing.ts'
import mergeRoutes from './merges.ts'
import participantRoutes from './participants.ts'
import searchRoutes from './search.ts'
import { DISCUSSION_BODY_LIMIT } from './schemas.ts'
import showRoutes from './show.ts'
import writeRoutes from './write.ts'

// Request bodies are JSON; the vendor type of v1 is accepted as well. A post (a discussion's
// opening one, a comment) may also come as multipart/form-data with its files. Anything else is a 415.
const JSON_TYPES = ['application/json', 'application/vnd.service-v1+json']

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A discussion route that takes multipart/form-data: its fields and files (routes/api/files.ts). */
    takesFiles?: boolean
  }
  interface FastifyRequest {
    /** The uploads a multipart request made, removed again when it fails. */
    uploaded?: number[]
    /** The SHA-256 of each file a multipart request carried, in order (plugins/http/idempotency.ts). */
    uploadedDigests?: string[]
  }
}

/**
 * Discussions and categories: every route of the v1 shape, all scoped to the authenticated site.
 * Registered inside the authenticated scope of app.ts, so authentication has run (and refused
 * read-only tokens on writes) before a body is read. The stores are the instance's
 * (plugins/stores.ts); the routes never build one.
 */
const discussionRoutes: FastifyPluginAsync<{ fileLimits: FileLimits }> = async (fastify, { fileLimits }) => {
  // Validation that never coerces a body and names every bad field (plugins/http/validation.ts).
  fastify.setValidatorCompiler(strictValidatorCompiler)
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, fastify.getDefaultJsonParser('error', 'error'))
  await fastify.register(multipart)
  fastify.addHook('onRoute', (route) => {
    route.bodyLimit ??= DISCUSSION_BODY_LIMIT
  })
  // A multipart post is read before validation: its files kept as uploads, its fields made the
  // body the schema checks. Whatever it uploaded is removed again when the request fails.
  fastify.addHook('preValidation', async (request, reply) => {
    if (!request.isMultipart()) return
    if (!request.routeOptions.config.takesFiles) {
      return reply.code(415).send({ error: 'unsupported_media_type', message: 'This route takes JSON; only a post (a discussion, a comment) may be sent as multipart/form-data.' })
    }
    const { body, uploaded, digests } = await multipartBody(fastify, request, fileLimits, { siteId: request.auth!.site.id, userId: request.auth!.user.id })
    request.body = body
    request.uploaded = uploaded
    request.uploadedDigests = digests
  })
  // Before the refusal is sent, so a client that reads it finds nothing of the request kept.
  fastify.addHook('onError', async (request) => {
    if (request.uploaded) await fastify.files.discard(request.auth!.site.id, request.auth!.user.id, request.uploaded)
  })
  // Store refusals become 404, 409 or 400 here; the app's error handler writes the body.
  // A change refused for its If-Match says which version the discussion is at now (RFC 9110, 13.1.1).
  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof VersionMoved) reply.header('etag', tagOf(request, discussionVersion(error.version), discussionAddress(request)))
    throw httpError(error)
  })

  const context = discussionContext(fastify)
  await fastify.register(listingRoutes, context)
  await fastify.register(searchRoutes, context)
  await fastify.register(showRoutes, context)
  await fastify.register(writeRoutes, context)
  await fastify.register(actionRoutes, context)
  await fastify.register(mergeRoutes, context)
  await fastify.register(categoryRoutes, context)
  await fastify.register(changeRoutes, context)
  await fastify.register(participantRoutes, context)
}

export default discussionRoutes
