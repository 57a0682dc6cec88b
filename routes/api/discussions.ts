import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { SiteParams } from '../schemas.ts'

export const PER_PAGE = 30

export const DiscussionListing = Type.Object({
  offset: Type.Integer(),
  total: Type.Integer(),
  per_page: Type.Integer(),
  discussions: Type.Array(Type.Object({}, { additionalProperties: true })),
})

/** GET and HEAD {base_url}/<site>/discussions: the v1 listing shape of decisions.md. */
const discussionRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get(
    '/:site/discussions',
    { schema: { params: SiteParams, response: { 200: DiscussionListing } } },
    async () => ({ offset: 0, total: 0, per_page: PER_PAGE, discussions: [] }),
  )
}

export default discussionRoutes
