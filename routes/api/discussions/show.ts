import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from 'typebox'
import { SERIALIZED_JSON } from '../../../lib/accept.ts'
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
  PagedForm,
  WalkedForm,
  PER_PAGE,
  ShowParams,
} from './schemas.ts'
import { cursorLinks, envelope, PAGE_WITH_CURSOR, pageLinks, walkedPage } from './views.ts'
import { cursorOf, positionOf } from '../../../lib/cursors.ts'
import { InvalidRequest } from '../../../plugins/http/validation.ts'
import type { CommentRow } from '../../../db/stores/discussions.ts'

/** The answer written by the serializer of its form (schemas.ts, PagedForm and WalkedForm): its fields in their order. */
function inForm(reply: FastifyReply, form: TSchema, answer: Record<string, unknown>) {
  return reply.type(SERIALIZED_JSON).send(reply.compileSerializationSchema(form as unknown as Record<string, unknown>)(answer))
}

/** GET and HEAD of one discussion with its comments, of its comments page by page, and of one comment. */
const showRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { discussions, views } = context
  const response = { 307: ErrorBody, 400: InvalidRequestBody, 404: ErrorBody }

  /**
   * The discussion a GET names; a merged one answered with a redirect (307: a merge may be undone)
   * to the one it went into, past those that went further, at the same place under it
   * (docs/decisions.md, "Merge and split"). Undefined when the redirect is sent.
   */
  async function shown(request: FastifyRequest, number: number, reply: FastifyReply, rest = '') {
    const { permalink, id } = request.auth!.site
    const discussion = await discussions.get(id, number)
    if (discussion.state !== 'merged') return discussion
    const into = await discussions.current(id, discussion.mergedInto!)
    const query = request.url.indexOf('?')
    reply.code(307).header('location', `${views.discussionHref(permalink, into.number)}${rest}${query < 0 ? '' : request.url.slice(query)}`)
    void reply.send({ error: 'merged', message: `Discussion ${discussion.number} was merged into discussion ${discussion.mergedInto}.` })
    return undefined
  }

  fastify.get(
    '/:site/discussions/:number',
    { schema: { tags: ['discussions'], operationId: 'getDiscussion', summary: 'Show a discussion with its comments', params: ShowParams, response: { 200: DiscussionWithComments, ...response } } },
    async (request, reply) => {
      const { permalink } = request.auth!.site
      const discussion = await shown(request, request.params.number, reply)
      if (!discussion) return reply
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
      const { permalink } = request.auth!.site
      const discussion = await shown(request, request.params.number, reply, '/comments')
      if (!discussion) return reply
      if (notModified(request, reply, discussionVersion(discussion.version))) return reply
      const { page = 1, cursor } = request.query
      // comments_count is kept with every comment, so it is the total without counting.
      const total = discussion.commentsCount
      const address = `${views.discussionHref(permalink, discussion.number)}/comments`
      const show = async (rows: CommentRow[]) => {
        const extras = await commentExtras(context, rows, discussion.id)
        return rows.map((c) => views.comment(permalink, discussion.number, c, extras(c)))
      }
      if (cursor !== undefined) {
        // Comments are numbered 1, 2, 3... and never removed: the ones after number n are those past the first n.
        if (request.query.page !== undefined) throw new InvalidRequest([PAGE_WITH_CURSOR])
        const after = positionOf('comments', cursor, 0)
        if (after === undefined) throw new InvalidRequest([{ field: 'cursor', problem: "is not a cursor of a discussion's comments" }])
        const walked = walkedPage(after >= total ? [] : await discussions.comments(discussion.id, after, PER_PAGE + 1), (last) => cursorOf('comments', last.number))
        reply.header('link', cursorLinks(address, {}, walked.next))
        return inForm(reply, WalkedForm.comments, { total, per_page: PER_PAGE, next_cursor: walked.next, comments: await show(walked.rows) })
      }
      const offset = (page - 1) * PER_PAGE
      reply.header('link', pageLinks(address, {}, page, total))
      return inForm(reply, PagedForm.comments, { ...envelope(page, total), comments: await show(offset >= total ? [] : await discussions.comments(discussion.id, offset, PER_PAGE)) })
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
