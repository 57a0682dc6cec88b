import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { SenderRule } from '../../db/stores/senders.ts'
import { senderVerdicts } from '../../db/values.ts'
import type { Urls } from '../../lib/urls.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { administratorsOnly } from './administrators-only.ts'

// What a site says of senders through the API (docs/decisions.md, "Spam"): an address or a domain
// whose mail is never taken for spam (allow) or always is (block). Its administrators' to read and
// change: a list of the site's correspondents is theirs to see.

export const SenderRuleResource = Type.Object({
  id: Type.Integer(),
  pattern: Type.String({ description: 'An address (ann@example.com), or a domain (example.com), which covers its subdomains too.' }),
  verdict: Type.Enum(senderVerdicts, { description: 'allow: mail from it is never taken for spam; block: it always is.' }),
  created_at: Type.String({ format: 'date-time' }),
  href: Type.String({ format: 'uri' }),
})
export const NewSenderRule = Type.Object({
  pattern: Type.String({ minLength: 1, maxLength: 254, description: 'An address or a domain; a rule the site has for it is replaced.' }),
  verdict: Type.Enum(senderVerdicts),
})
export const SenderRuleListing = Type.Object({ sender_rules: Type.Array(SenderRuleResource) })
const RuleParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, description: 'The sender rule id.' }) })
const tags = ['spam']
const errors = { 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody }

function view(urls: Urls, permalink: string, rule: SenderRule): Static<typeof SenderRuleResource> {
  return { id: rule.id, pattern: rule.pattern, verdict: rule.verdict, created_at: moment(rule.createdAt), href: `${urls.site(permalink)}/sender_rules/${rule.id}` }
}

const senderRuleRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'what it says of senders', { strict: true })
  fastify.get(
    '/:site/sender_rules',
    { schema: { tags, operationId: 'listSenderRules', summary: 'The senders the site allows or blocks, by pattern (administrators)', params: SiteParams, response: { 200: SenderRuleListing, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      return { sender_rules: (await fastify.senders.list(site.id)).map((rule) => view(fastify.urls, site.permalink, rule)) }
    },
  )
  fastify.post(
    '/:site/sender_rules',
    { schema: { tags, operationId: 'setSenderRule', summary: 'Allow or block a sender: an address or a domain (administrators)', params: SiteParams, body: NewSenderRule, response: { 201: SenderRuleResource, ...errors, 409: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const resource = view(fastify.urls, site.permalink, await fastify.senders.set(site.id, request.body.pattern, request.body.verdict))
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.delete(
    '/:site/sender_rules/:id',
    { schema: { tags, operationId: 'removeSenderRule', summary: 'Remove a sender rule (administrators)', params: RuleParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await fastify.senders.remove(request.auth!.site.id, request.params.id)
      return reply.code(204).send(null)
    },
  )
}

export default senderRuleRoutes
