import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static, type TSchema } from 'typebox'
import type { OpenInvitation } from '../../db/stores/invitations.ts'
import { changeStaff, invitationMail } from '../team.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { administratorsOnly } from './administrators-only.ts'
import { actorOf } from '../actor.ts'
import { staffRoles } from '../../db/values.ts'

// The site's team through the API (issue 67; docs/decisions.md, "Invitations"), for its
// administrators as Administration -> Team is: its support staff, and invitations to it.

const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })
const Role = Type.Enum([...staffRoles], {
  description: 'administrator: also runs the site (team, mail, policy, webhooks); supporter: works on the discussions; collaborator: reads the queue and the discussions, and writes internal notes only.',
})

export const InvitationResource = Type.Object({
  id: Type.Integer(),
  email: Type.String({ description: 'The address invited: only it can take the invitation.' }),
  role: Role,
  invited_by: Nullable(Type.String(), 'The name of the administrator who invited; null when unknown (their account is gone).'),
  created_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time', description: 'Until when its link works (7 days from the last sending).' }),
  href: Type.String({ format: 'uri', description: 'DELETE withdraws it; POST …/resend mails it again with a new link.' }),
})

export const StaffListing = Type.Object({
  staff: Type.Array(
    Type.Object({
      id: Type.Integer(),
      email: Type.String(),
      name: Type.String(),
      role: Role,
      disabled: Type.Boolean({ description: 'The account is switched off by the operator.' }),
      second_factor: Type.Boolean({ description: 'Whether they have a second factor (an authenticator app or a passkey).' }),
      last_sign_in_at: Nullable(Type.String({ format: 'date-time' }), 'Their last sign-in on the pages, on any site; null: never.'),
    }),
  ),
  invitations: Type.Array(InvitationResource, { description: 'The invitations not yet taken, withdrawn or past their time, newest first.' }),
})

export const NewInvitation = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, description: 'The address to invite.' }),
  role: Type.Optional(Role),
})

const InvitationParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) })
export const RoleChange = Type.Object({ role: Role })

const teamRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { invitations, urls } = fastify
  administratorsOnly(fastify, 'its team', { strict: true })
  const tags = ['team']
  const view = (permalink: string, i: OpenInvitation): Static<typeof InvitationResource> => ({
    id: i.id,
    email: i.email,
    role: i.role,
    invited_by: i.invitedBy,
    created_at: moment(i.createdAt),
    expires_at: moment(i.expiresAt),
    href: `${urls.site(permalink)}/invitations/${i.id}`,
  })
  const notFound = () => Object.assign(new Error('This site has no open invitation of that id.'), { statusCode: 404, code: 'not_found' })

  fastify.get('/:site/staff', { schema: { tags, operationId: 'listStaff', summary: "The site's support staff and its open invitations", params: SiteParams, response: { 200: StaffListing, 400: InvalidRequestBody } } }, async (request) => {
    const { site } = request.auth!
    const staff = (await invitations.team(site.id)).map((p) => ({ id: p.id, email: p.email, name: p.name, role: p.role, disabled: p.disabled, second_factor: p.secondFactor, last_sign_in_at: p.lastSignInAt && moment(p.lastSignInAt) }))
    return { staff, invitations: (await invitations.open(site.id)).map((i) => view(site.permalink, i)) }
  })

  fastify.post(
    '/:site/invitations',
    {
      schema: {
        tags,
        operationId: 'invite',
        summary: "Invite an address to the site's staff: a mail with a link that works once, for 7 days",
        description: 'An open invitation of the same address is replaced (its link stops working). Someone already of the staff is a 409.',
        params: SiteParams,
        body: NewInvitation,
        response: { 201: InvitationResource, 400: InvalidRequestBody, 409: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      const role = request.body.role ?? 'supporter'
      const inviter = await fastify.users.byId(user.id)
      const invited = await invitations.invite(site.id, { email: request.body.email, role, invitedBy: user.id }, invitationMail(fastify.urls, site.permalink, inviter?.name ?? null, role), actorOf(request))
      const resource = view(site.permalink, invited)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )

  fastify.post(
    '/:site/invitations/:id/resend',
    { schema: { tags, operationId: 'resendInvitation', summary: 'Mail an open invitation again, with a new link and a new week', params: InvitationParams, response: { 200: InvitationResource, 400: InvalidRequestBody, 404: ErrorBody } } },
    async (request) => {
      const { site, user } = request.auth!
      const open = (await invitations.open(site.id)).find((i) => i.id === request.params.id)
      const inviter = await fastify.users.byId(user.id)
      if (!open || !(await invitations.resend(site.id, open.id, invitationMail(fastify.urls, site.permalink, inviter?.name ?? null, open.role), actorOf(request)))) throw notFound()
      return view(site.permalink, (await invitations.open(site.id)).find((i) => i.id === open.id)!)
    },
  )

  fastify.patch(
    '/:site/staff/:id',
    {
      schema: {
        tags,
        operationId: 'changeRole',
        summary: 'Make someone of the staff an administrator, a supporter or a collaborator',
        description: 'Never oneself: another administrator does it (403), so a site always keeps one.',
        params: InvitationParams,
        body: RoleChange,
        response: { 204: Type.Null(), 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      await changeStaff(fastify, site, request.params.id, request.body.role, { ...actorOf(request), id: user.id })
      return reply.code(204).send(null)
    },
  )

  fastify.delete(
    '/:site/staff/:id',
    {
      schema: {
        tags,
        operationId: 'removeFromStaff',
        summary: 'Take someone off the staff: their pages, tokens and applications for this site stop working at once',
        description: 'They stay a customer, who keeps what they wrote. Never oneself (403).',
        params: InvitationParams,
        response: { 204: Type.Null(), 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site, user } = request.auth!
      await changeStaff(fastify, site, request.params.id, 'remove', { ...actorOf(request), id: user.id })
      return reply.code(204).send(null)
    },
  )

  fastify.delete(
    '/:site/invitations/:id',
    { schema: { tags, operationId: 'withdrawInvitation', summary: 'Withdraw an invitation: its link stops working', params: InvitationParams, response: { 204: Type.Null(), 400: InvalidRequestBody, 404: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      if (!(await invitations.withdraw(site.id, request.params.id, actorOf(request)))) throw notFound()
      return reply.code(204).send(null)
    },
  )
}

export default teamRoutes
