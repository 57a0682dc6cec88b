import type { FastifyInstance, FastifyRequest } from 'fastify'
import { actorOf } from '../actor.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { SavedReply, SavedReplyInput } from '../../db/stores/saved-replies.ts'
import { MAX_ACTIONS } from '../../lib/rules.ts'
import { FieldActionSchema } from './rules.ts'
import { MAX_SAVED_BODY, MAX_SAVED_TITLE } from '../../db/stores/saved-replies.ts'
import { fillSavedReply } from '../../lib/team-queue.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly, answeredAsDiscussions } from './administrators-only.ts'

// A site's saved replies through the API (docs/decisions.md, "The team's queue"): read by its
// support staff, each with its text filled in for a discussion when one is named (`?discussion=`),
// what a client then posts as the reply; written by its administrators. A saved reply with actions
// is a macro (issue 70; docs/decisions.md, "Rules and macros"): the same rows are `/macros`, and
// `POST /<site>/discussions/<n>/apply_macro` replies and acts in one go.

export const SavedReplyResource = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  body: Type.String({ description: 'The text as written, placeholders ({{customer.name}}, {{customer.first_name}}, {{supporter.name}}, {{site.name}}, {{discussion.number}}) included.' }),
  filled: Type.Union([Type.String(), Type.Null()], { description: 'With ?discussion=<number>: the text with its placeholders filled in for that discussion, ready to post. Null otherwise.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  actions: Type.Array(FieldActionSchema, { description: 'What applying it as a macro does besides replying (POST /{site}/discussions/{number}/apply_macro).' }),
  href: Type.String({ format: 'uri' }),
})

const Title = Type.String({ minLength: 1, maxLength: MAX_SAVED_TITLE, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const Body = Type.String({ minLength: 1, maxLength: MAX_SAVED_BODY, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const Actions = Type.Array(FieldActionSchema, { maxItems: MAX_ACTIONS, description: 'A macro\'s actions: set category, state or owner, add or remove tags, set custom fields.' })
export const NewSavedReply = Type.Object({ title: Title, body: Body, actions: Type.Optional(Actions) })
export const SavedReplyChange = Type.Object({ title: Type.Optional(Title), body: Type.Optional(Body), actions: Type.Optional(Actions) }, { minProperties: 1 })
export const SavedReplyListing = Type.Object({ saved_replies: Type.Array(SavedReplyResource) })
export const MacroListing = Type.Object({ macros: Type.Array(SavedReplyResource) })
const ForDiscussion = Type.Object({ discussion: Type.Optional(Type.Integer({ minimum: 1, description: 'Fill the placeholders in for this discussion.' })) })
const SavedReplyParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, description: 'The saved reply id.' }) })
/** The two names of the same rows: saved replies, and macros. */
const COLLECTIONS = [
  { path: 'saved_replies', tags: ['saved replies'], one: 'SavedReply', many: 'SavedReplies', what: 'saved reply' },
  { path: 'macros', tags: ['macros'], one: 'Macro', many: 'Macros', what: 'macro' },
] as const
type Collection = (typeof COLLECTIONS)[number]
const errors = { 400: InvalidRequestBody, 404: ErrorBody }

/** The saved reply as the API shows it, filled in for `discussion` when one is named. */
async function view(fastify: FastifyInstance, request: FastifyRequest, reply: SavedReply, discussion: number | undefined, path: Collection['path']): Promise<Static<typeof SavedReplyResource>> {
  const { site, user } = request.auth!
  return {
    id: reply.id,
    title: reply.title,
    body: reply.body,
    filled: discussion === undefined ? null : await filledFor(fastify, site, user, discussion, reply.body),
    created_at: moment(reply.createdAt),
    updated_at: moment(reply.updatedAt),
    actions: JSON.parse(reply.actions) as Array<Static<typeof FieldActionSchema>>,
    href: `${fastify.urls.site(site.permalink)}/${path}/${reply.id}`,
  }
}

/** The text filled in for discussion `number` of the site, by `supporter` (the customer is its author). */
export async function filledFor(fastify: FastifyInstance, site: { id: number; name: string }, supporter: { name: string }, number: number, body: string): Promise<string> {
  const d = await fastify.discussions.get(site.id, number)
  return fillSavedReply(body, { customerName: d.authorName, supporterName: supporter.name, siteName: site.name, number })
}

const readRoutes: FastifyPluginAsyncTypebox<Collection> = async (fastify, { path, tags, one, many, what }) => {
  fastify.get(
    `/:site/${path}`,
    { schema: { tags, operationId: `list${many}`, summary: `The site's ${what === 'macro' ? 'macros (its saved replies, with their actions)' : 'saved replies'}, by title`, params: SiteParams, querystring: ForDiscussion, response: { 200: path === 'macros' ? MacroListing : SavedReplyListing, ...errors } } },
    async (request) => {
      const replies = await fastify.savedReplies.list(request.auth!.site.id)
      const views = await Promise.all(replies.map((r) => view(fastify, request, r, request.query.discussion, path)))
      return path === 'macros' ? { macros: views } : { saved_replies: views }
    },
  )
  fastify.get(
    `/:site/${path}/:id`,
    { schema: { tags, operationId: `get${one}`, summary: `A ${what}`, params: SavedReplyParams, querystring: ForDiscussion, response: { 200: SavedReplyResource, ...errors } } },
    async (request) => {
      const found = await fastify.savedReplies.find(request.auth!.site.id, request.params.id)
      if (!found) throw notFound(`there is no ${what} ${request.params.id} on this site`)
      return view(fastify, request, found, request.query.discussion, path)
    },
  )
}

const writeRoutes: FastifyPluginAsyncTypebox<Collection> = async (fastify, { path, tags, one, what }) => {
  administratorsOnly(fastify, `its ${what}s`)
  fastify.post(
    `/:site/${path}`,
    { schema: { tags, operationId: `add${one}`, summary: `A new ${what} (administrators)`, params: SiteParams, body: NewSavedReply, response: { 201: SavedReplyResource, ...errors, 409: ErrorBody, 429: ErrorBody } } },
    async (request, reply) => {
      const resource = await view(fastify, request, await fastify.savedReplies.add(request.auth!.site.id, request.body as SavedReplyInput & { title: string; body: string }, actorOf(request)), undefined, path)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.patch(
    `/:site/${path}/:id`,
    { schema: { tags, operationId: `change${one}`, summary: 'Change its title, text or actions (administrators)', params: SavedReplyParams, body: SavedReplyChange, response: { 200: SavedReplyResource, ...errors, 409: ErrorBody } } },
    async (request) => view(fastify, request, await fastify.savedReplies.update(request.auth!.site.id, request.params.id, request.body as SavedReplyInput, actorOf(request)), undefined, path),
  )
  fastify.delete(
    `/:site/${path}/:id`,
    { schema: { tags, operationId: `remove${one}`, summary: `Remove a ${what} (administrators)`, params: SavedReplyParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await fastify.savedReplies.remove(request.auth!.site.id, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )
}

/** GET for the support staff; POST, PATCH and DELETE for the administrators. */
const savedReplyRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  for (const collection of COLLECTIONS) {
    await fastify.register(readRoutes, collection)
    await fastify.register(writeRoutes, collection)
  }
}

export default savedReplyRoutes
