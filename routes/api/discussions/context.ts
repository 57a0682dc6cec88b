import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { CategoryStore } from '../../../db/stores/categories.ts'
import type { DiscussionStore, Expected } from '../../../db/stores/discussions.ts'
import type { FileStore } from '../../../db/stores/files.ts'
import type { OutboxStore } from '../../../db/stores/outbox.ts'
import { discussionVersion, ifMatch } from '../../../plugins/http/conditional.ts'
import { createViews, type Views } from './views.ts'

/** What every discussion route plugin is given. */
export interface DiscussionContext {
  discussions: DiscussionStore
  categories: CategoryStore
  files: FileStore
  outbox: OutboxStore
  views: Views
}

/**
 * The address of the discussion a request is about (/<site>/discussions/<number>), as the client
 * wrote it: its GET's ETag is made for it, and If-Match on a change to it is compared with that.
 */
export function discussionAddress(request: FastifyRequest): string {
  return /^\/[^/?]+\/discussions\/[^/?]+/.exec(request.url)![0]
}

/** What If-Match asks of the discussion a change is about; undefined without the header. */
export function expectedVersion(request: FastifyRequest): Expected | undefined {
  return ifMatch(request, discussionAddress(request), discussionVersion)
}

/** The stores the instance is decorated with (plugins/stores.ts) and the views over its URLs. */
export function discussionContext(fastify: FastifyInstance): DiscussionContext {
  return {
    discussions: fastify.discussions,
    categories: fastify.categories,
    files: fastify.files,
    outbox: fastify.outbox,
    views: createViews(fastify.urls),
  }
}
