import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { Customer as CustomerRow } from '../../db/stores/fields.ts'
import { actorOf } from '../actor.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { FieldsGiven } from './discussions/schemas.ts'
import { notFound } from './discussions/http-errors.ts'
import { answeredAsDiscussions } from './administrators-only.ts'

// A customer of a site and the team's record of them (issue 72; docs/decisions.md, "Custom
// fields"): their values of the site's customer fields (`of: customer`), read by its staff, set by
// its supporters as a discussion's are. A customer's id is their discussions' author id (the
// discussion resource's user_href lists their discussions).

export const CustomerResource = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  email: Type.String(),
  fields: Type.Object({}, { additionalProperties: true, description: "Their values of the site's customer fields, by key (GET /{site}/fields?of=customer names them and their kinds)." }),
  discussions_href: Type.String({ format: 'uri' }),
  href: Type.String({ format: 'uri' }),
})
const CustomerParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: "The customer's id: their discussions' author id." }) })
export const CustomerChange = Type.Object({ fields: FieldsGiven }, { additionalProperties: false })
const errors = { 400: InvalidRequestBody, 404: ErrorBody }
const FindQuery = Type.Object({ email: Type.String({ minLength: 1, maxLength: 254, description: 'Their address, as they wrote it or in any case.' }) })
export const CustomerListing = Type.Object({ customers: Type.Array(CustomerResource) })

const customerRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  const view = (permalink: string, c: CustomerRow): Static<typeof CustomerResource> => ({
    id: c.id,
    name: c.name,
    email: c.email,
    fields: c.fields,
    discussions_href: `${fastify.urls.site(permalink)}/discussions?user_id=${c.id}`,
    href: `${fastify.urls.site(permalink)}/customers/${c.id}`,
  })
  const none = (id: number) => notFound(`there is no customer ${id} on this site`)

  fastify.get(
    '/:site/customers/:id',
    { schema: { tags: ['customers'], operationId: 'getCustomer', summary: 'A customer of the site, with their values of its customer fields', params: CustomerParams, response: { 200: CustomerResource, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      const found = await fastify.fields.customer(site.id, request.params.id)
      if (!found) throw none(request.params.id)
      return view(site.permalink, found)
    },
  )
  fastify.get(
    '/:site/customers',
    { schema: { tags: ['customers'], operationId: 'findCustomers', summary: 'The customer of the site with this address (none or one): to find whose data to export', params: SiteParams, querystring: FindQuery, response: { 200: CustomerListing, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      const account = await fastify.users.find(request.query.email)
      const found = account && (await fastify.fields.customer(site.id, account.id))
      return { customers: found ? [view(site.permalink, found)] : [] }
    },
  )
  fastify.put(
    '/:site/customers/:id',
    { schema: { tags: ['customers'], operationId: 'changeCustomer', summary: "Set a customer's values of the site's customer fields (by key; null clears one; the others stay)", params: CustomerParams, body: CustomerChange, response: { 200: CustomerResource, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      const changed = await fastify.fields.setCustomerValues(site.id, request.params.id, request.body.fields as Record<string, unknown>, actorOf(request))
      if (!changed) throw none(request.params.id)
      return view(site.permalink, changed)
    },
  )
}

export default customerRoutes
