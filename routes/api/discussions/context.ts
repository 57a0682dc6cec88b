import type { FastifyInstance } from 'fastify'
import type { CategoryStore } from '../../../db/stores/categories.ts'
import type { DiscussionStore } from '../../../db/stores/discussions.ts'
import { createViews, type Views } from './views.ts'

/** What every discussion route plugin is given. */
export interface DiscussionContext {
  discussions: DiscussionStore
  categories: CategoryStore
  views: Views
}

/** The stores the instance is decorated with (plugins/stores.ts) and the views over its URLs. */
export function discussionContext(fastify: FastifyInstance): DiscussionContext {
  return {
    discussions: fastify.discussions,
    categories: fastify.categories,
    views: createViews(fastify.urls),
  }
}
