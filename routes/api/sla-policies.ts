import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static, type TSchema } from 'typebox'
import { MAX_LISTED, MAX_POLICIES, MAX_POLICY_NAME, MAX_TARGET_MINUTES, MAX_WARN_MINUTES, type SlaPolicyChange as PolicyChange, type SlaPolicyInput, type SlaPolicyRow } from '../../db/stores/sla-policies.ts'
import { slaChannels, type SlaConditions } from '../../lib/sla.ts'
import { actorOf } from '../actor.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly, answeredAsDiscussions } from './administrators-only.ts'

// A site's SLA policies through the API (issue 68; docs/decisions.md, "SLA policies"): read by its
// support staff, written by its administrators. Targets are minutes of the policy's schedule of
// business hours (or of the clock, without one).

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 })
const Target = (what: string) =>
  Type.Union([Type.Integer({ minimum: 1, maximum: MAX_TARGET_MINUTES }), Type.Null()], { description: `${what}, in minutes of the policy's hours; null: no such promise.` })
const Listed = <T extends TSchema>(item: T, what: string) => Type.Array(item, { maxItems: MAX_LISTED, description: `${what}; empty: any.` })
const Conditions = Type.Object(
  {
    categories: Type.Optional(Listed(Id, 'Category ids, one of which is the discussion\'s')),
    tags: Type.Optional(Listed(Type.String({ maxLength: 50 }), 'Tags, one of which the discussion carries')),
    domains: Type.Optional(Listed(Type.String({ maxLength: 253 }), "Domains, one of which is the customer's (example.com: its subdomains too)")),
    channels: Type.Optional(Listed(Type.Enum(slaChannels), 'How it came: mail, web (the support site), api (MCP too)')),
  },
  { additionalProperties: false, description: 'Which discussions it chooses: every condition given must hold.' },
)
const Name = Type.String({ minLength: 1, maxLength: MAX_POLICY_NAME, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const fields = {
  position: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_POLICIES, description: 'Where it goes in the order: 1 is looked at first. The end when not given.' })),
  conditions: Type.Optional(Conditions),
  schedule_id: Type.Optional(Type.Union([Id, Type.Null()], { description: 'The business hours its targets count in (GET /{site}/schedules); null: around the clock.' })),
  first_reply_minutes: Type.Optional(Target('The first reply of the team')),
  next_reply_minutes: Type.Optional(Target("The team's answer to each later message of the customer")),
  resolution_minutes: Type.Optional(Target('Resolving it, the time it waits on the customer aside')),
  warn_minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WARN_MINUTES, description: 'How many minutes before a due time the warning is told (sla.warning, a mail); 0: none. 30 when not given.' })),
}
export const NewSlaPolicy = Type.Object({ name: Name, ...fields }, { additionalProperties: false })
export const SlaPolicyChange = Type.Object({ name: Type.Optional(Name), ...fields }, { additionalProperties: false, minProperties: 1 })

const Minutes = Type.Union([Type.Integer(), Type.Null()])
export const SlaPolicyResource = Type.Object({
  id: Type.Integer(),
  href: Type.String({ format: 'uri' }),
  name: Type.String(),
  position: Type.Integer({ description: 'Its place in the order: the first policy whose conditions hold chooses a discussion.' }),
  conditions: Type.Object({ categories: Type.Array(Type.Integer()), tags: Type.Array(Type.String()), domains: Type.Array(Type.String()), channels: Type.Array(Type.Enum(slaChannels)) }),
  schedule: Type.Union([Type.Object({ id: Type.Integer(), href: Type.String({ format: 'uri' }) }), Type.Null()]),
  first_reply_minutes: Minutes,
  next_reply_minutes: Minutes,
  resolution_minutes: Minutes,
  warn_minutes: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export const SlaPolicyListing = Type.Object({ sla_policies: Type.Array(SlaPolicyResource) })
const PolicyParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The SLA policy id.' }) })
const tags = ['SLA policies']
const errors = { 400: InvalidRequestBody, 404: ErrorBody }

/** Whatever the body gives, as the store takes a change (what it does not give stays as it is: merged under the policy's lock). */
function changeOf(body: Partial<Static<typeof NewSlaPolicy>>): PolicyChange {
  const defined = <T extends object>(fields: T) => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>
  const targets = defined({ firstReply: body.first_reply_minutes, nextReply: body.next_reply_minutes, resolution: body.resolution_minutes })
  return defined({
    name: body.name,
    position: body.position,
    conditions: body.conditions && (defined(body.conditions) as Partial<SlaConditions>),
    scheduleId: body.schedule_id,
    targets: Object.keys(targets).length > 0 ? targets : undefined,
    warnBefore: body.warn_minutes,
  })
}

function view(base: string, p: SlaPolicyRow): Static<typeof SlaPolicyResource> {
  return {
    id: p.id,
    href: `${base}/sla_policies/${p.id}`,
    name: p.name,
    position: p.position,
    conditions: p.conditions,
    schedule: p.scheduleId === null ? null : { id: p.scheduleId, href: `${base}/schedules/${p.scheduleId}` },
    first_reply_minutes: p.targets.firstReply,
    next_reply_minutes: p.targets.nextReply,
    resolution_minutes: p.targets.resolution,
    warn_minutes: p.warnBefore,
    created_at: moment(p.createdAt),
    updated_at: moment(p.updatedAt),
  }
}

const readRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.get('/:site/sla_policies', { schema: { tags, operationId: 'listSlaPolicies', summary: "The site's SLA policies, in the order they are looked at", params: SiteParams, response: { 200: SlaPolicyListing, ...errors } } }, async (request) => {
    const { site } = request.auth!
    return { sla_policies: (await fastify.slaPolicies.list(site.id)).map((p) => view(base(site.permalink), p)) }
  })
  fastify.get('/:site/sla_policies/:id', { schema: { tags, operationId: 'getSlaPolicy', summary: 'One SLA policy', params: PolicyParams, response: { 200: SlaPolicyResource, ...errors } } }, async (request) => {
    const { site } = request.auth!
    const found = await fastify.slaPolicies.find(site.id, request.params.id)
    if (!found) throw notFound(`there is no SLA policy ${request.params.id} on this site`)
    return view(base(site.permalink), found)
  })
}

const writeRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its SLA policies')
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.post(
    '/:site/sla_policies',
    { schema: { tags, operationId: 'addSlaPolicy', summary: 'A new SLA policy (administrators)', params: SiteParams, body: NewSlaPolicy, response: { 201: SlaPolicyResource, ...errors, 409: ErrorBody, 415: ErrorBody, 429: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const { conditions, targets, ...rest } = changeOf(request.body)
      const input = {
        scheduleId: null,
        warnBefore: 30,
        ...rest,
        conditions: { categories: [], tags: [], domains: [], channels: [], ...conditions },
        targets: { firstReply: null, nextReply: null, resolution: null, ...targets },
      } as SlaPolicyInput
      const resource = view(base(site.permalink), await fastify.slaPolicies.add(site.id, input, actorOf(request)))
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.patch(
    '/:site/sla_policies/:id',
    {
      schema: {
        tags,
        operationId: 'changeSlaPolicy',
        summary: 'Change its name, place, conditions, hours or targets (administrators); it applies to each discussion it chooses from that discussion\'s next change',
        params: PolicyParams,
        body: SlaPolicyChange,
        response: { 200: SlaPolicyResource, ...errors, 409: ErrorBody, 415: ErrorBody },
      },
    },
    async (request) => {
      const { site } = request.auth!
      return view(base(site.permalink), await fastify.slaPolicies.update(site.id, request.params.id, changeOf(request.body), actorOf(request)))
    },
  )
  fastify.delete(
    '/:site/sla_policies/:id',
    { schema: { tags, operationId: 'removeSlaPolicy', summary: 'Remove an SLA policy (administrators): the clocks of the discussions it chose stop', params: PolicyParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await fastify.slaPolicies.remove(request.auth!.site.id, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )
}

/** GET for the support staff; POST, PATCH and DELETE for the administrators. */
const slaPolicyRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  await fastify.register(readRoutes)
  await fastify.register(writeRoutes)
}

export default slaPolicyRoutes
