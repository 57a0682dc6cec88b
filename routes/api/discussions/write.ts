import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../../actor.ts'
import { apiVia } from '../../../lib/via.ts'
import { InvalidRequest, WHOLE_BODY } from '../../../plugins/http/validation.ts'
import { commentExtras, expectedVersion, type DiscussionContext } from './context.ts'
import {
  CategoryParams,
  Comment,
  CreateBody,
  Discussion,
  DiscussionWithComments,
  errorResponses,
  NumberParams,
  ReplyBody,
  UpdateBody,
  writeErrorResponses,
} from './schemas.ts'

/** author_email (and author_name) of a body: whom the supporter posts on behalf of, if anyone. */
function onBehalfOf(body: { author_email?: string; author_name?: string }) {
  if (body.author_email === undefined) return undefined
  return { email: body.author_email.trim(), name: body.author_name?.trim() }
}

/** Create a discussion, reply to one, change one, delete one. Each needs a Read and write credential. */
const writeRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { discussions, views } = context
  const withFiles = { takesFiles: true }
  // JSON, or a form with the post's fields and its files (routes/api/files.ts).
  const consumes = ['application/json', 'application/vnd.service-v1+json', 'multipart/form-data']
  fastify.post(
    '/:site/categories/:id/discussions',
    {
      config: withFiles,
      schema: {
        tags: ['discussions'],
        operationId: 'createDiscussion',
        summary: 'Create a discussion in a category, as yourself or on behalf of a customer',
        params: CategoryParams,
        consumes,
        body: CreateBody,
        response: { 201: DiscussionWithComments, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      const { title, body } = request.body
      // The store checks the category: one of another site or none is its not_found, a 404 here.
      const { discussion, comment, made } = await discussions.create({
        siteId: site.id,
        categoryId: request.params.id,
        title,
        body,
        public: request.body.public,
        supporterId: user.id,
        onBehalfOf: onBehalfOf(request.body),
        via: apiVia(request.headers),
        uploads: request.body.uploads,
        fields: request.body.fields as Record<string, unknown> | undefined,
      })
      const resource = views.discussion(site.permalink, discussion)
      const comments = [views.comment(site.permalink, discussion.number, comment, (await commentExtras(context, [comment], undefined, made))(comment))]
      return reply.code(201).header('location', resource.href).send({ ...resource, comments })
    },
  )

  fastify.post(
    '/:site/discussions/:number/comments',
    {
      // A collaborator's internal note, as themselves (plugins/auth/notes-only.ts).
      config: { ...withFiles, notesOnly: (body) => (body as { internal?: boolean }).internal === true && onBehalfOf(body as object) === undefined },
      schema: {
        tags: ['discussions'],
        operationId: 'createComment',
        summary: 'Reply to a discussion, as yourself or on behalf of a customer',
        description:
          "A supporter's reply moves a new discussion to open (an internal note does not); a customer's reply moves a resolved one to open.",
        params: NumberParams,
        consumes,
        body: ReplyBody,
        response: { 201: Comment, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      const { comment, discussion, made } = await discussions.reply({
        siteId: site.id,
        number: request.params.number,
        body: request.body.body,
        internal: request.body.internal ?? false,
        supporterId: user.id,
        onBehalfOf: onBehalfOf(request.body),
        via: apiVia(request.headers),
        uploads: request.body.uploads,
      }, expectedVersion(request))
      const resource = views.comment(site.permalink, discussion.number, comment, (await commentExtras(context, [comment], undefined, made))(comment))
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )

  fastify.put(
    '/:site/discussions/:number',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'updateDiscussion',
        summary: 'Change the title, visibility, category, owner, tags or custom fields of a discussion',
        params: NumberParams,
        body: UpdateBody,
        response: { 200: Discussion, ...errorResponses },
      },
    },
    async (request) => {
      const { site, user } = request.auth!
      const { title, public: isPublic, category, assignee, tags, fields } = request.body
      if (title === undefined && isPublic === undefined && category === undefined && assignee === undefined && tags === undefined && fields === undefined) {
        throw new InvalidRequest([{ field: WHOLE_BODY, problem: 'names nothing to change: send title, public, category, assignee, tags or fields' }])
      }
      const changes = { title, public: isPublic, categoryId: category, assigneeId: assignee, tags, fields: fields as Record<string, unknown> | undefined, actor: user }
      const changed = await discussions.update(site.id, request.params.number, changes, {}, expectedVersion(request))
      return views.discussion(site.permalink, changed)
    },
  )

  fastify.delete(
    '/:site/discussions/:number',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'deleteDiscussion',
        summary: 'Delete a discussion (it moves to the deleted state; restore brings it back)',
        params: NumberParams,
        response: { 200: Discussion, ...errorResponses },
      },
    },
    async (request) => {
      const { site } = request.auth!
      return views.discussion(site.permalink, await discussions.act(site.id, request.params.number, 'delete', expectedVersion(request), actorOf(request)))
    },
  )
}

export default writeRoutes
