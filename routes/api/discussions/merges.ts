import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../../actor.ts'
import { mergeTarget } from '../../../lib/merge-target.ts'
import { InvalidRequest } from '../../../plugins/http/validation.ts'
import { expectedVersion, type DiscussionContext } from './context.ts'
import { Discussion, errorResponses, MergeBody, NumberParams, SplitBody } from './schemas.ts'
import { apiVia } from '../../../lib/via.ts'

// POST /<site>/discussions/<number>/merge, …/unmerge and …/split (issue 71; db/stores/merges.ts;
// docs/decisions.md, "Merge and split"). A merged discussion's GET answers with a redirect (show.ts).

const mergeRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, { views }) => {
  const response = { 200: Discussion, ...errorResponses }

  fastify.post(
    '/:site/discussions/:number/merge',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'mergeDiscussion',
        summary: 'Merge a discussion into another of its site: its comments (and their files) move there, its customer and participants join it, and its address redirects there',
        params: NumberParams,
        body: MergeBody,
        response,
      },
    },
    async (request) => {
      const { site } = request.auth!
      const target = mergeTarget(request.body.into, [fastify.urls.discussions(site.permalink), `${fastify.urls.siteWeb(site.permalink)}/discussions`])
      if ('problem' in target) throw new InvalidRequest([{ field: 'into', problem: target.problem }])
      return views.discussion(site.permalink, await fastify.merges.merge(site.id, request.params.number, target.number, actorOf(request), expectedVersion(request)))
    },
  )

  fastify.post(
    '/:site/discussions/:number/split',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'splitDiscussion',
        summary: 'Make a new discussion of a comment (and those after it): same category, its author the customer, a link both ways',
        params: NumberParams,
        body: SplitBody,
        response: { 201: Discussion, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      const { comment, following = false, title } = request.body
      const made = await fastify.merges.split(site.id, request.params.number, { comment, following, title }, user.id, apiVia(request.headers), actorOf(request), expectedVersion(request))
      const shown = views.discussion(site.permalink, made)
      return reply.code(201).header('location', shown.href).send(shown)
    },
  )

  fastify.post(
    '/:site/discussions/:number/unmerge',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'unmergeDiscussion',
        summary: 'Undo the merge of a discussion: the last merge into a discussion, for a day after it, puts the merged one back as it was',
        params: NumberParams,
        response,
      },
    },
    async (request) => {
      const { site } = request.auth!
      return views.discussion(site.permalink, await fastify.merges.unmerge(site.id, request.params.number, actorOf(request)))
    },
  )
}

export default mergeRoutes
