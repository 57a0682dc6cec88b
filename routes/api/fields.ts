import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { actorOf } from '../actor.ts'
import type { Field } from '../../db/stores/fields.ts'
import { FIELD_KEY, fieldAudiences, fieldKinds, fieldSubjects, MAX_CHOICE, MAX_CHOICES, MAX_FIELD_NAME } from '../../lib/fields.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly, answeredAsDiscussions } from './administrators-only.ts'

// A site's custom fields through the API (issue 72; db/stores/fields.ts; docs/decisions.md,
// "Custom fields"): read by its support staff, defined by its administrators. A discussion's
// values are its resource's `fields`, set with its PUT (routes/api/discussions/write.ts).

export const FieldResource = Type.Object({
  id: Type.Integer(),
  key: Type.String({ description: 'What `fields` of a discussion, `?field.<key>=` of a listing and the search name it by.' }),
  name: Type.String(),
  kind: Type.Enum(fieldKinds, { description: 'text, number, date (YYYY-MM-DD), choice (one of `choices`), choices (several), yes_no (true or false), link (an http or https address).' }),
  audience: Type.Enum(fieldAudiences, { description: 'team: the team only; customers: shown to its customers too.' }),
  of: Type.Enum(fieldSubjects, { description: "discussion: each discussion has its values (the resource's `fields`); customer: each customer of the site has theirs (GET /{site}/customers/{id}), the team's record of them." }),
  required: Type.Boolean({ description: "Asked of every customer's new discussion on the support site (a field for customers)." }),
  choices: Type.Array(Type.String(), { description: 'For choice and choices: what may be chosen, in order.' }),
  position: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  removed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Removed: it takes no value, no filter finds by it; the values given stay on their discussions.' }),
  href: Type.String({ format: 'uri' }),
})
const Name = Type.String({ minLength: 1, maxLength: MAX_FIELD_NAME, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const Choices = Type.Array(Type.String({ minLength: 1, maxLength: MAX_CHOICE }), { maxItems: MAX_CHOICES })
export const NewField = Type.Object(
  {
    key: Type.String({ pattern: FIELD_KEY.source, description: 'Lower-case letters, digits and _, starting with a letter, at most 40; never changes.', errorMessage: { pattern: 'must be lower-case letters, digits and _, starting with a letter, at most 40' } }),
    name: Name,
    kind: Type.Enum(fieldKinds),
    audience: Type.Optional(Type.Enum(fieldAudiences, { description: 'team by default.' })),
    required: Type.Optional(Type.Boolean()),
    choices: Type.Optional(Choices),
    of: Type.Optional(Type.Enum(fieldSubjects, { description: 'discussion by default; never changes.' })),
  },
  { additionalProperties: false },
)
export const FieldChange = Type.Object({ name: Type.Optional(Name), audience: Type.Optional(Type.Enum(fieldAudiences)), required: Type.Optional(Type.Boolean()), choices: Type.Optional(Choices) }, { additionalProperties: false, minProperties: 1 })
export const FieldListing = Type.Object({ fields: Type.Array(FieldResource) })
const FieldParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The field id.' }) })
const ListQuery = Type.Object({ removed: Type.Optional(Type.Enum(['true', 'false'], { description: 'true: the removed fields too.' })), of: Type.Optional(Type.Enum(fieldSubjects, { description: "Only the fields of discussions, or of customers (without it: both)." })) })
const errors = { 400: InvalidRequestBody, 404: ErrorBody }

function view(fastify: FastifyInstance, request: FastifyRequest, field: Field): Static<typeof FieldResource> {
  return {
    id: field.id,
    key: field.key,
    name: field.name,
    kind: field.kind,
    audience: field.audience,
    of: field.of,
    required: field.required,
    choices: JSON.parse(field.choices) as string[],
    position: field.position,
    created_at: moment(field.createdAt),
    removed_at: field.removedAt && moment(field.removedAt),
    href: `${fastify.urls.site(request.auth!.site.permalink)}/fields/${field.id}`,
  }
}

const readRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get(
    '/:site/fields',
    { schema: { tags: ['fields'], operationId: 'listFields', summary: "The site's custom fields, in order", params: SiteParams, querystring: ListQuery, response: { 200: FieldListing, ...errors } } },
    async (request) => ({ fields: (await fastify.fields.list(request.auth!.site.id, { removed: request.query.removed === 'true', of: request.query.of })).map((f) => view(fastify, request, f)) }),
  )
  fastify.get(
    '/:site/fields/:id',
    { schema: { tags: ['fields'], operationId: 'getField', summary: 'A custom field', params: FieldParams, response: { 200: FieldResource, ...errors } } },
    async (request) => {
      const found = await fastify.fields.find(request.auth!.site.id, request.params.id)
      if (!found) throw notFound(`there is no field ${request.params.id} on this site`)
      return view(fastify, request, found)
    },
  )
}

const writeRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its fields')
  fastify.post(
    '/:site/fields',
    { schema: { tags: ['fields'], operationId: 'addField', summary: 'A new custom field (administrators)', params: SiteParams, body: NewField, response: { 201: FieldResource, ...errors, 409: ErrorBody, 429: ErrorBody } } },
    async (request, reply) => {
      const resource = view(fastify, request, await fastify.fields.add(request.auth!.site.id, request.body, actorOf(request)))
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.patch(
    '/:site/fields/:id',
    { schema: { tags: ['fields'], operationId: 'changeField', summary: 'Change its name, audience, whether it is required, or its choices (administrators); its key and kind stay', params: FieldParams, body: FieldChange, response: { 200: FieldResource, ...errors } } },
    async (request) => view(fastify, request, await fastify.fields.update(request.auth!.site.id, request.params.id, request.body, actorOf(request))),
  )
  fastify.delete(
    '/:site/fields/:id',
    { schema: { tags: ['fields'], operationId: 'removeField', summary: 'Remove a custom field (administrators): its values stay readable on their discussions', params: FieldParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await fastify.fields.remove(request.auth!.site.id, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )
}

/** GET for the support staff; POST, PATCH and DELETE for the administrators. */
const fieldRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  await fastify.register(readRoutes)
  await fastify.register(writeRoutes)
}

export default fieldRoutes
