import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../../actor.ts'
import type { Action } from '../../../db/stores/discussions.ts'
import { expectedVersion, type DiscussionContext } from './context.ts'
import { Type } from 'typebox'
import { AssignQuery, ChangeCategoryQuery, Discussion, errorResponses, NumberParams } from './schemas.ts'
import { apiVia } from '../../../lib/via.ts'
import { moment } from './views.ts'
import { RuleActionSchema } from '../rules.ts'

export const ApplyMacro = Type.Object(
  {
    macro: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The macro (a saved reply with actions: GET /{site}/macros).' }),
    internal: Type.Optional(Type.Boolean({ description: 'Post its text as an internal note instead of a public reply.' })),
  },
  { additionalProperties: false },
)
export const RuleHistory = Type.Object({
  firings: Type.Array(
    Type.Object({
      rule: Type.Union([Type.Object({ id: Type.Integer(), href: Type.String({ format: 'uri' }) }), Type.Null()], { description: 'The rule, null once removed.' }),
      name: Type.String({ description: 'Its name when it fired.' }),
      trigger: Type.String({ description: 'What started it: an event (created, customer_replied...) or time.' }),
      actions: Type.Array(RuleActionSchema),
      at: Type.String({ format: 'date-time' }),
    }),
  ),
})

/** A supporter named by `me`, `none` or a user id: the user id, null for nobody. */
export function assigneeOf(named: string, me: number): number | null {
  return named === 'me' ? me : named === 'none' ? null : Number(named)
}

const SUMMARIES: Record<Exclude<Action, 'delete'>, string> = {
  resolve: 'Resolve a discussion',
  unresolve: 'Unresolve a discussion: resolved moves to open',
  toggle: 'Toggle a discussion between resolved and open',
  restore: 'Restore a deleted discussion to the state it was deleted from',
  spam: 'Mark a discussion spam: out of the queue and its counts, told to no one',
  not_spam: 'Mark a discussion not spam: back in the state it had (new when it arrived as spam), its sender allowed on the site',
}

/** POST /<site>/discussions/<number>/<action>: the state actions and change_category. Repeating one changes nothing. */
const actionRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, { discussions, views }) => {
  const response = { 200: Discussion, ...errorResponses }

  for (const [action, summary] of Object.entries(SUMMARIES) as Array<[Action, string]>) {
    fastify.post(
      `/:site/discussions/:number/${action}`,
      { schema: { tags: ['discussions'], operationId: `${action.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}Discussion`, summary, params: NumberParams, response } },
      async (request) => {
        const { site } = request.auth!
        return views.discussion(site.permalink, await discussions.act(site.id, request.params.number, action, expectedVersion(request), actorOf(request)))
      },
    )
  }

  fastify.post(
    '/:site/discussions/:number/change_category',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'changeDiscussionCategory',
        summary: 'Move a discussion to another category of the site',
        params: NumberParams,
        querystring: ChangeCategoryQuery,
        response,
      },
    },
    async (request) => {
      const { site } = request.auth!
      const changed = await discussions.update(site.id, request.params.number, { categoryId: request.query.to }, { category: 'to' }, expectedVersion(request))
      return views.discussion(site.permalink, changed)
    },
  )

  fastify.post(
    '/:site/discussions/:number/assign',
    {
      schema: {
        tags: ['discussions'],
        operationId: 'assignDiscussion',
        summary: 'Give a discussion to a supporter of the site (its owner), or to nobody',
        params: NumberParams,
        querystring: AssignQuery,
        response,
      },
    },
    async (request) => {
      const { site, user } = request.auth!
      const changes = { assigneeId: assigneeOf(request.query.to, user.id), actor: user }
      return views.discussion(site.permalink, await discussions.update(site.id, request.params.number, changes, { assignee: 'to' }, expectedVersion(request)))
    },
  )

  fastify.post(
    '/:site/discussions/:number/apply_macro',
    {
      schema: {
        tags: ['discussions', 'macros'],
        operationId: 'applyMacro',
        summary: 'Apply a macro: its text as your reply (placeholders filled in), then its actions, in one go',
        params: NumberParams,
        body: ApplyMacro,
        response,
      },
    },
    async (request) => {
      const { site, user } = request.auth!
      const how = { via: apiVia(request.headers), internal: request.body.internal }
      return views.discussion(site.permalink, await fastify.rules.applyMacro(site.id, request.params.number, request.body.macro, user, how, expectedVersion(request)))
    },
  )

  fastify.get(
    '/:site/discussions/:number/rule_firings',
    { schema: { tags: ['discussions', 'rules'], operationId: 'listRuleFirings', summary: "The discussion's history of rules: each firing, oldest first", params: NumberParams, response: { 200: RuleHistory, ...errorResponses } } },
    async (request) => {
      const { site } = request.auth!
      const d = await discussions.get(site.id, request.params.number)
      const base = fastify.urls.site(site.permalink)
      const firings = await fastify.rules.firings(d.id)
      return { firings: firings.map((f) => ({ rule: f.ruleId === null ? null : { id: f.ruleId, href: `${base}/rules/${f.ruleId}` }, name: f.ruleName, trigger: f.trigger, actions: f.actions as never, at: moment(f.at) })) }
    },
  )
}

export default actionRoutes
