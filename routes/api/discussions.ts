import type { FastifyError, FastifyPluginAsync } from 'fastify'
import { InvalidRequest, strictValidatorCompiler } from '../../lib/validation.ts'
import { createCategoryStore, type CategoryStore } from '../../db/stores/categories.ts'
import { createDiscussionStore, type DiscussionStore } from '../../db/stores/discussions.ts'
import { StoreError } from '../../db/stores/errors.ts'
import categoryRoutes from './categories.ts'
import actionRoutes from './discussions-actions.ts'
import listingRoutes from './discussions-listing.ts'
import { DISCUSSION_BODY_LIMIT } from './discussions-schemas.ts'
import showRoutes from './discussions-show.ts'
import { createViews, type Views } from './discussions-views.ts'
import writeRoutes from './discussions-write.ts'

/** What every discussion route plugin is given. */
export interface DiscussionContext {
  discussions: DiscussionStore
  categories: CategoryStore
  views: Views
}

// Request bodies are JSON; the vendor type of v1 is accepted as well. Anything else is a 415.
const JSON_TYPES = ['application/json', 'application/vnd.service-v1+json']

const sentence = (text: string) => `${text[0].toUpperCase()}${text.slice(1)}.`

const STATUS = { not_found: 404, conflict: 409, forbidden: 403, limit: 429 } as const

/** A refusal of the stores, as the HTTP error it means; anything else unchanged. */
export function httpError(error: unknown): unknown {
  if (!(error instanceof StoreError)) return error
  if (error.code === 'invalid') return new InvalidRequest([{ field: error.field ?? 'request', problem: error.message }])
  return Object.assign(new Error(sentence(error.message)), { statusCode: STATUS[error.code], code: error.code })
}

/**
 * Discussions and categories: every route of the v1 shape, all scoped to the authenticated site.
 * Registered inside the authenticated scope of app.ts, so authentication has run (and refused
 * read-only tokens on writes) before a body is read.
 */
const discussionRoutes: FastifyPluginAsync = async (fastify) => {
  // Validation that never coerces a body and names every bad field (lib/validation.ts).
  fastify.setValidatorCompiler(strictValidatorCompiler)
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, fastify.getDefaultJsonParser('error', 'error'))
  fastify.addHook('onRoute', (route) => {
    route.bodyLimit ??= DISCUSSION_BODY_LIMIT
  })
  // Store refusals become 404, 409 or 400 here; the app's error handler writes the body.
  fastify.setErrorHandler((error: FastifyError) => {
    throw httpError(error)
  })

  const context: DiscussionContext = {
    discussions: createDiscussionStore(fastify.db, fastify.clock, fastify.users),
    categories: createCategoryStore(fastify.db, fastify.clock),
    views: createViews(fastify.urls),
  }
  await fastify.register(listingRoutes, context)
  await fastify.register(showRoutes, context)
  await fastify.register(writeRoutes, context)
  await fastify.register(actionRoutes, context)
  await fastify.register(categoryRoutes, context)
}

export default discussionRoutes
