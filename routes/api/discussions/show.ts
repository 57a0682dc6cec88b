import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ErrorBody, InvalidRequestBody } from '../../schemas.ts'
import { discussionVersion, notModified } from '../../../plugins/http/conditional.ts'
import { commentExtras, discussionAddress, type DiscussionContext } from './context.ts'
import { notFound } from './http-errors.ts'
import {
  Comment,
  CommentListing,
  CommentParams,
  DiscussionWithComments,
  NumberParams,
  PageQuery,
  PER_PAGE,
  ShowParams,
} from './schemas.ts'
import { envelope, pageLinks } from './views.ts'

/** GET and HEAD of one discussion with its comments, of its comments page by page, and of one comment. */
const showRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { discussions, views } = context
  const response = { 400: InvalidRequestBody, 404: ErrorBody }

  fastify.get(
    '/:site/discussions/:number',
    { schema: { tags: ['discussions'], operationId: 'getDiscussion', summary: 'Show a discussion with its comments', params: ShowParams, response: { 200: DiscussionWithComments, ...response } } },
    async (request, reply) => {
      const { permalink, id } = request.auth!.site
      const discussion = await discussions.get(id, request.params.number)
      // Its ETag is the one If-Match on a change to it compares (context.ts): made for its address.
      if (notModified(request, reply, discussionVersion(discussion.version), discussionAddress(request))) return reply
      const rows = await discussions.comments(discussion.id)
      const extras = await commentExtras(context, rows, discussion.id)
      const comments = rows.map((c) => views.comment(permalink, discussion.number, c, extras(c)))
      return { ...views.discussion(permalink, discussion), comments }
    },
  )

  fastify.get(
    '/:site/discussions/:number/comments',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'listComments',
        summary: 'List the comments of a discussion, oldest first',
        params: NumberParams,
        querystring: PageQuery,
        response: { 200: CommentListing, ...response },
      },
    },
    async (request, reply) => {
      const { permalink, id } = request.auth!.site
      const discussion = await discussions.get(id, request.params.number)
      if (notModified(request, reply, discussionVersion(discussion.version))) return reply
      const page = request.query.page ?? 1
      const offset = (page - 1) * PER_PAGE
      // comments_count is kept with every comment, so it is the total without counting.
      const total = discussion.commentsCount
      const rows = offset >= total ? [] : await discussions.comments(discussion.id, offset, PER_PAGE)
      const extras = await commentExtras(context, rows, discussion.id)
      reply.header('link', pageLinks(`${views.discussionHref(permalink, discussion.number)}/comments`, {}, page, total))
      return { ...envelope(page, total), comments: rows.map((c) => views.comment(permalink, discussion.number, c, extras(c))) }
    },
  )

  fastify.get(
    '/:site/discussions/:number/comments/:comment',
    { schema: { tags: ['discussions'], operationId: 'getComment', summary: 'Show one comment', params: CommentParams, response: { 200: Comment, ...response } } },
    async (request, reply) => {
      const { permalink, id } = request.auth!.site
      const discussion = await discussions.get(id, request.params.number)
      if (notModified(request, reply, discussionVersion(discussion.version))) return reply
      const comment = await discussions.comment(discussion.id, request.params.comment)
      if (!comment) throw notFound(`discussion ${discussion.number} has no comment ${request.params.comment}`)
      return views.comment(permalink, discussion.number, comment, (await commentExtras(context, [comment]))(comment))
    },
  )
}

export default showRoutes
