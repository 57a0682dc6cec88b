import type { FastifyInstance } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static, type TSchema } from 'typebox'
import { MAX_RULE_NAME, MAX_NOTE, type Rule, type RuleInput } from '../../db/stores/rules.ts'
import { discussionStates } from '../../db/values.ts'
import { actionNamesFrom, describeAction, MAX_ACTIONS, MAX_CONDITION_VALUES, MAX_RULES, ruleAnchors, ruleTriggers, settableStates, type ActionNames, type RuleAction, type RuleConditions } from '../../lib/rules.ts'
import { slaChannels } from '../../lib/sla.ts'
import { FIELD_KEY, MAX_FIELDS } from '../../lib/fields.ts'
import { actorOf } from '../actor.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly, answeredAsDiscussions } from './administrators-only.ts'

// A site's rules through the API (issue 70; docs/decisions.md, "Rules and macros"): read by its
// support staff, written and tried (the dry run) by its administrators.

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 })
const Listed = <T extends TSchema>(item: T, what: string) => Type.Array(item, { minItems: 1, maxItems: MAX_CONDITION_VALUES, description: what })
const Tag = Type.String({ minLength: 1, maxLength: 50 })
export const RuleConditionsSchema = Type.Object(
  {
    states: Type.Optional(Listed(Type.Enum(discussionStates.filter((s) => s !== 'deleted')), 'Its state is one of these')),
    categories: Type.Optional(Listed(Id, 'Its category is one of these (ids)')),
    channels: Type.Optional(Listed(Type.Enum(slaChannels), 'It came by one of these: mail, web (the support site), api (MCP too)')),
    tags: Type.Optional(Listed(Tag, 'It carries all of these tags')),
    no_tags: Type.Optional(Listed(Tag, 'It carries none of these tags')),
    owner: Type.Optional(Type.Union([Type.Enum(['none', 'anyone']), Listed(Id, 'One of these supporters (user ids)')], { description: 'Its owner: none, anyone, or one of these supporters' })),
    domains: Type.Optional(Listed(Type.String({ minLength: 1, maxLength: 253 }), "Its customer's address is at one of these domains")),
    words: Type.Optional(Listed(Type.String({ minLength: 1, maxLength: 200 }), 'One of these words or phrases (any case, whole words) is in its title or the comment that started the rule')),
    awaiting: Type.Optional(Type.Enum(['team', 'customer'], { description: 'Who owes the next answer: the team (the customer wrote last) or the customer' })),
    fields: Type.Optional(
      Type.Object({}, {
        additionalProperties: Listed(Type.String({ minLength: 1, maxLength: 1_000 }), 'its value is one of these'),
        propertyNames: { pattern: FIELD_KEY.source },
        maxProperties: MAX_FIELDS,
        description: 'Custom fields, by key: its value is one of these (a number, a date YYYY-MM-DD, true or false, a choice, a text), as ?field.<key>= reads it',
      }),
    ),
  },
  { additionalProperties: false, description: 'Every condition given must hold; none given: every discussion.' },
)
const Tags = Type.Array(Tag, { minItems: 1, maxItems: 20 })
const FieldActions = [
  Type.Object({ type: Type.Enum(['set_category']), category: Id }, { additionalProperties: false }),
  Type.Object({ type: Type.Enum(['set_state']), state: Type.Enum(settableStates, { description: 'resolved: resolve it; open: open a resolved one again (a new one stays new until the team answers).' }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Enum(['set_owner']), owner: Type.Union([Id, Type.Enum(['none', 'round_robin'])], { description: "A supporter's user id, none, or round_robin: the category's next in turn" }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Enum(['add_tags']), tags: Tags }, { additionalProperties: false }),
  Type.Object({ type: Type.Enum(['remove_tags']), tags: Tags }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Enum(['set_fields']),
      fields: Type.Object({}, {
        additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String()), Type.Null()]),
        propertyNames: { pattern: FIELD_KEY.source },
        minProperties: 1,
        maxProperties: MAX_FIELDS,
        description: "Custom fields' values by key, as a discussion's PUT takes them (null clears one)",
      }),
    },
    { additionalProperties: false },
  ),
]
export const FieldActionSchema = Type.Union(FieldActions, { description: 'What it changes: category, state, owner, tags, custom fields.' })
export const RuleActionSchema = Type.Union(
  [
    ...FieldActions,
    Type.Object({ type: Type.Enum(['add_note']), body: Type.String({ minLength: 1, maxLength: MAX_NOTE, pattern: '\\S' }) }, { additionalProperties: false }),
    Type.Object({ type: Type.Enum(['send_reply']), saved_reply: Id }, { additionalProperties: false }),
    Type.Object({ type: Type.Enum(['mark_spam']) }, { additionalProperties: false }),
    Type.Object({ type: Type.Enum(['notify']), to: Type.Union([Type.Enum(['owner', 'team']), Id], { description: 'Its owner, the team (those told of new discussions), or a supporter (user id)' }) }, { additionalProperties: false }),
    Type.Object({ type: Type.Enum(['webhook']) }, { additionalProperties: false, description: 'Posts rule.fired to the endpoints that ask for it' }),
  ],
  { description: 'What it does: set category, state or owner, add or remove tags, set custom fields, add an internal note, send a saved reply, mark spam, notify, post a webhook.' },
)
const Name = Type.String({ minLength: 1, maxLength: MAX_RULE_NAME, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const fields = {
  enabled: Type.Optional(Type.Boolean({ description: 'Whether it runs; true when not given.' })),
  position: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RULES, description: 'Where it goes in the order: 1 runs first. The end when not given.' })),
  events: Type.Optional(Type.Array(Type.Enum(ruleTriggers), { minItems: 1, maxItems: ruleTriggers.length, uniqueItems: true, description: 'What starts it (a rule on events).' })),
  after_minutes: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 525_600 }), Type.Null()], { description: 'A rule on time: it fires this many minutes after `since`, once for each such moment.' })),
  business: Type.Optional(Type.Boolean({ description: "A rule on time: minutes of the business hours of the discussion's SLA policy (around the clock without one)." })),
  since: Type.Optional(Type.Enum(ruleAnchors, { description: 'A rule on time counts from its creation, its last change (updated), or its newest comment.' })),
  conditions: Type.Optional(RuleConditionsSchema),
}
const Actions = Type.Array(RuleActionSchema, { minItems: 1, maxItems: MAX_ACTIONS })
export const NewRule = Type.Object({ name: Name, ...fields, actions: Actions }, { additionalProperties: false })
export const RuleChange = Type.Object({ name: Type.Optional(Name), ...fields, actions: Type.Optional(Actions) }, { additionalProperties: false, minProperties: 1 })

export const RuleResource = Type.Object({
  id: Type.Integer(),
  href: Type.String({ format: 'uri' }),
  name: Type.String(),
  position: Type.Integer({ description: 'Its place in the order: rules run in it, each on the discussion as the ones before left it.' }),
  enabled: Type.Boolean(),
  events: Type.Array(Type.Enum(ruleTriggers)),
  after_minutes: Type.Union([Type.Integer(), Type.Null()]),
  business: Type.Boolean(),
  since: Type.Enum(ruleAnchors),
  conditions: RuleConditionsSchema,
  actions: Type.Array(RuleActionSchema),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
})
export const RuleListing = Type.Object({ rules: Type.Array(RuleResource) })
export const DryRunResult = Type.Object({
  looked_at: Type.Integer({ description: 'How many discussions were looked at: the newest, up to 1,000, deleted and spam aside.' }),
  matches: Type.Array(
    Type.Object({
      number: Type.Integer(),
      title: Type.String(),
      href: Type.String({ format: 'uri' }),
      would: Type.Array(Type.String(), { description: 'What the rule would do to it, in words.' }),
    }),
  ),
})
const RuleParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The rule id.' }) })
const tags = ['rules']
const errors = { 400: InvalidRequestBody, 404: ErrorBody }

/** The body as the store takes it. */
export function ruleInputOf(body: Partial<Static<typeof NewRule>>): Partial<RuleInput> {
  const input: Partial<RuleInput> = {
    name: body.name,
    enabled: body.enabled,
    position: body.position,
    events: body.events,
    afterMinutes: body.after_minutes,
    business: body.business,
    since: body.since,
    conditions: body.conditions as RuleConditions | undefined,
    actions: body.actions as RuleAction[] | undefined,
  }
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<RuleInput>
}

export function ruleView(base: string, r: Rule): Static<typeof RuleResource> {
  return {
    id: r.id,
    href: `${base}/rules/${r.id}`,
    name: r.name,
    position: r.position,
    enabled: r.enabled,
    events: r.events,
    after_minutes: r.afterMinutes,
    business: r.business,
    since: r.since,
    conditions: r.conditions as Static<typeof RuleConditionsSchema>,
    actions: r.actions as Array<Static<typeof RuleActionSchema>>,
    created_at: moment(r.createdAt),
    updated_at: moment(r.updatedAt),
  }
}

/** The names actions point at, for the site (categories, its staff, its saved replies), read once. */
export async function actionNamesOf(fastify: FastifyInstance, siteId: number): Promise<ActionNames> {
  const [{ categories }, staff, replies] = await Promise.all([fastify.categories.list(siteId, 0, -1), fastify.users.staffOf(siteId), fastify.savedReplies.list(siteId)])
  return actionNamesFrom(categories, staff, replies)
}

const readRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.get('/:site/rules', { schema: { tags, operationId: 'listRules', summary: "The site's rules, in the order they run", params: SiteParams, response: { 200: RuleListing, ...errors } } }, async (request) => {
    const { site } = request.auth!
    return { rules: (await fastify.rules.list(site.id)).map((r) => ruleView(base(site.permalink), r)) }
  })
  fastify.get('/:site/rules/:id', { schema: { tags, operationId: 'getRule', summary: 'One rule', params: RuleParams, response: { 200: RuleResource, ...errors } } }, async (request) => {
    const { site } = request.auth!
    const found = await fastify.rules.find(site.id, request.params.id)
    if (!found) throw notFound(`there is no rule ${request.params.id} on this site`)
    return ruleView(base(site.permalink), found)
  })
}

const writeRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its rules')
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.post(
    '/:site/rules',
    { schema: { tags, operationId: 'addRule', summary: 'A new rule (administrators)', params: SiteParams, body: NewRule, response: { 201: RuleResource, ...errors, 409: ErrorBody, 415: ErrorBody, 429: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const resource = ruleView(base(site.permalink), await fastify.rules.add(site.id, ruleInputOf(request.body) as RuleInput, actorOf(request)))
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.post(
    '/:site/rules/dry_run',
    {
      schema: {
        tags,
        operationId: 'dryRunRule',
        summary: 'Which of the newest 1,000 discussions a rule would fire on as they are now, and what it would do; nothing is saved or changed (administrators)',
        params: SiteParams,
        body: NewRule,
        response: { 200: DryRunResult, ...errors, 415: ErrorBody },
      },
    },
    async (request) => {
      const { site } = request.auth!
      const { looked, matches, rule } = await fastify.rules.dryRun(site.id, ruleInputOf(request.body) as RuleInput)
      const names = await actionNamesOf(fastify, site.id)
      const would = rule.actions.map((a) => describeAction(a, names))
      return { looked_at: looked, matches: matches.map((d) => ({ number: d.number, title: d.title, href: `${base(site.permalink)}/discussions/${d.number}`, would })) }
    },
  )
  fastify.patch(
    '/:site/rules/:id',
    { schema: { tags, operationId: 'changeRule', summary: 'Change a rule: its name, place, switch, what starts it, its conditions or actions (administrators)', params: RuleParams, body: RuleChange, response: { 200: RuleResource, ...errors, 409: ErrorBody, 415: ErrorBody } } },
    async (request) => {
      const { site } = request.auth!
      return ruleView(base(site.permalink), await fastify.rules.update(site.id, request.params.id, ruleInputOf(request.body), actorOf(request)))
    },
  )
  fastify.delete('/:site/rules/:id', { schema: { tags, operationId: 'removeRule', summary: 'Remove a rule (administrators); its firings stay in the discussions\' history', params: RuleParams, response: { 204: Type.Null(), ...errors } } }, async (request, reply) => {
    await fastify.rules.remove(request.auth!.site.id, request.params.id, actorOf(request))
    return reply.code(204).send(null)
  })
}

/** GET for the support staff; POST, PATCH and DELETE for the administrators. */
const ruleRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  await fastify.register(readRoutes)
  await fastify.register(writeRoutes)
}

export default ruleRoutes
