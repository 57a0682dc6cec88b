import type { FastifyError } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { Mailbox } from '../../db/stores/mail.ts'
import { strictValidatorCompiler } from '../../plugins/http/validation.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { httpError } from './discussions/http-errors.ts'
import { moment } from './discussions/views.ts'

// The site's mailboxes through the API (docs/decisions.md, "Mail"), for its administrators as
// `service-desk mailbox` is for the operator: the addresses the site takes mail at.

export const MailboxResource = Type.Object({
  address: Type.String({ description: 'Mail to it opens discussions of the site; answers to them join theirs.' }),
  category_id: Type.Union([Type.Integer(), Type.Null()], { description: "The category its mail opens discussions in; null: the site's first." }),
  created_at: Type.String({ format: 'date-time' }),
  href: Type.String({ format: 'uri', description: 'DELETE stops taking mail at the address.' }),
})

export const MailboxListing = Type.Object({ mailboxes: Type.Array(MailboxResource) })

export const NewMailbox = Type.Object(
  {
    address: Type.String({ minLength: 3, maxLength: 254, description: 'The address, as mail is sent to it.' }),
    category_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "A category of the site; the site's first by default.", errorMessage: { type: 'must be a category id' } })),
  },
)

const MailboxParams = Type.Object({ site: SiteParams.properties.site, address: Type.String({ maxLength: 254, description: 'The mailbox address.' }) })

const mailboxRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { mailboxes, users, urls } = fastify
  fastify.setValidatorCompiler(strictValidatorCompiler)
  fastify.setErrorHandler((error: FastifyError) => {
    throw httpError(error)
  })
  // Every route here: an administrator of the site, whatever credential they sent.
  fastify.addHook('preHandler', async (request) => {
    const { site, user } = request.auth!
    if (!(await users.isAdministrator(site.id, user.id))) {
      throw Object.assign(new Error("Only administrators of this site can read or change its mailboxes."), { statusCode: 403, code: 'forbidden' })
    }
  })
  const view = (permalink: string, mailbox: Mailbox): Static<typeof MailboxResource> => ({
    address: mailbox.address,
    category_id: mailbox.categoryId,
    created_at: moment(mailbox.createdAt),
    href: `${urls.site(permalink)}/mailboxes/${encodeURIComponent(mailbox.address)}`,
  })
  const tags = ['mail']

  fastify.get(
    '/:site/mailboxes',
    { schema: { tags, operationId: 'listMailboxes', summary: "The site's mailboxes: the addresses it takes mail at", params: SiteParams, response: { 200: MailboxListing, 400: InvalidRequestBody } } },
    async (request) => {
      const { site } = request.auth!
      return { mailboxes: (await mailboxes.listMailboxes(site.id)).map((m) => view(site.permalink, m)) }
    },
  )

  fastify.post(
    '/:site/mailboxes',
    {
      schema: {
        tags,
        operationId: 'addMailbox',
        summary: 'Take the mail of an address: mail to it opens discussions of the site',
        description: 'The address must reach the built-in receiver (SERVICE_MAIL_RECEIVER): an MX record or a forward. An address is one site’s only: another’s is a 409.',
        params: SiteParams,
        body: NewMailbox,
        response: { 201: MailboxResource, 400: InvalidRequestBody, 404: ErrorBody, 409: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const mailbox = await mailboxes.addMailbox(site.id, request.body.address, request.body.category_id ?? null)
      const resource = view(site.permalink, mailbox)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )

  fastify.delete(
    '/:site/mailboxes/:address',
    {
      schema: {
        tags,
        operationId: 'removeMailbox',
        summary: 'Stop taking mail at an address; the discussions its mail made stay',
        params: MailboxParams,
        response: { 204: Type.Null(), 400: InvalidRequestBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      if (!(await mailboxes.removeMailbox(site.id, request.params.address))) {
        throw Object.assign(new Error(`This site has no mailbox ${request.params.address}.`), { statusCode: 404, code: 'not_found' })
      }
      return reply.code(204).send(null)
    },
  )
}

export default mailboxRoutes
