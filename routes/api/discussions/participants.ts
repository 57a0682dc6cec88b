import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { Participant } from '../../../db/stores/mail.ts'
import { participantSources } from '../../../db/values.ts'
import type { DiscussionContext } from './context.ts'
import { notFound } from './http-errors.ts'
import { NumberParams, ParticipantParams, writeErrorResponses } from './schemas.ts'
import { moment } from './views.ts'

// A discussion's participants (docs/decisions.md, "Mail a team can rely on"): whom its public
// replies copy by mail besides its customer, the people a customer's mail copied and those the
// team added. The support staff read and change them (the API is theirs alone).

export const ParticipantResource = Type.Object({
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  added_by: Type.Enum(participantSources, { description: "mail: a customer's mail copied them (its Cc, or its To besides the mailbox); team: a supporter added them." }),
  added_at: Type.String({ format: 'date-time' }),
})
export const ParticipantListing = Type.Object({ participants: Type.Array(ParticipantResource) })
export const NewParticipant = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, description: 'Their address.' }),
  name: Type.Optional(Type.String({ maxLength: 200, description: 'Their name, for the mail.' })),
})
const tags = ['discussions']

const view = (p: Participant): Static<typeof ParticipantResource> => ({ email: p.email, name: p.name, added_by: p.addedBy, added_at: moment(p.createdAt) })

const participantRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, { discussions, mailboxes }) => {
  fastify.get(
    '/:site/discussions/:number/participants',
    { schema: { tags, operationId: 'listParticipants', summary: "Whom the discussion's public replies copy by mail, besides its customer", params: NumberParams, response: { 200: ParticipantListing, 404: writeErrorResponses[404] } } },
    async (request) => {
      const d = await discussions.get(request.auth!.site.id, request.params.number)
      return { participants: (await mailboxes.participants(d.id)).map(view) }
    },
  )

  fastify.post(
    '/:site/discussions/:number/participants',
    {
      schema: {
        tags,
        operationId: 'addParticipant',
        summary: "Copy someone on the discussion's public replies; 201 when added, 200 when they were already",
        params: NumberParams,
        body: NewParticipant,
        response: { 200: ParticipantResource, 201: ParticipantResource, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      const d = await discussions.get(request.auth!.site.id, request.params.number)
      const [added] = await mailboxes.addParticipants(d, [request.body], 'team', true)
      if (added) return reply.code(201).send(view(added))
      return view((await mailboxes.participants(d.id)).find((p) => p.email === request.body.email.trim().toLowerCase())!)
    },
  )

  fastify.delete(
    '/:site/discussions/:number/participants/:email',
    { schema: { tags, operationId: 'removeParticipant', summary: "Stop copying someone on the discussion's replies", params: ParticipantParams, response: { 204: Type.Null(), 404: writeErrorResponses[404] } } },
    async (request, reply) => {
      const d = await discussions.get(request.auth!.site.id, request.params.number)
      if (!(await mailboxes.removeParticipant(d.id, request.params.email))) throw notFound(`${request.params.email} is not a participant of discussion ${d.number}`)
      return reply.code(204).send(null)
    },
  )
}

export default participantRoutes
