import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { createHash } from 'node:crypto'
import { Type, type Static } from 'typebox'
import { ChoiceNeeded } from '../../plugins/administration.ts'
import { actorOf } from '../actor.ts'
import { notModified } from '../../plugins/http/conditional.ts'
import { credentialKinds, filterFromParams, MAX_REASON, MAX_REVOKED_AT_ONCE, sortColumns, type InventoryEntry } from '../../db/stores/inventory-rules.ts'
import { MAX_TOKEN_DAYS, policyOf, type SitePolicy } from '../../db/stores/site-policy.ts'
import { accessLevels, writeTokenRules } from '../../db/values.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { httpError, sentence } from './discussions/http-errors.ts'
import { moment } from './discussions/views.ts'
import { administratorsOnly } from './administrators-only.ts'

// The administrators' resources of the v1 API (docs/decisions.md, "Site administrators"): the
// site's credentials inventory, revocation, and its token policy. An administrator of the site
// only (403 otherwise, whatever the credential); changes need write access like any change. The
// same actions as the administration pages, through the same plugin (plugins/administration.ts).

export const Credential = Type.Object({
  id: Type.String({ description: 'pat-<id>, oauth-<grant> or legacy-<user id>: what a revocation names.' }),
  kind: Type.Enum(credentialKinds),
  owner: Type.String({ description: "The owner's email." }),
  owner_name: Type.String(),
  name: Type.String({ description: "The token's name, the application's, or Legacy token." }),
  access: Type.Enum(accessLevels),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_used_from: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  state: Type.Enum(['active', 'unusable', 'expired', 'revoked']),
  revocable: Type.Boolean({ description: 'False for a legacy token, which belongs to the account on every site.' }),
})

export const CredentialList = Type.Object({
  credentials: Type.Array(Credential),
  total: Type.Integer(),
  page: Type.Integer(),
  pages: Type.Integer(),
})

const InventoryQuery = Type.Object({
  owner: Type.Optional(Type.String({ maxLength: 254, description: 'Part of the owner email, in any case.' })),
  kind: Type.Optional(Type.Enum(credentialKinds)),
  access: Type.Optional(Type.Enum(accessLevels)),
  unused_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650, description: 'Not used for at least this many days (never used counts).' })),
  expires_within_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650, description: 'Active and ending within this many days.' })),
  sort: Type.Optional(Type.Enum(sortColumns)),
  direction: Type.Optional(Type.Enum(['asc', 'desc'])),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
})

export const Revocation = Type.Object(
  {
    ids: Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: MAX_REVOKED_AT_ONCE }),
    reason: Type.String({ minLength: 1, maxLength: MAX_REASON, description: 'Told to each owner by mail, and kept in their security log.' }),
  },
  { additionalProperties: false },
)

export const Revoked = Type.Object({ revoked: Type.Array(Credential) })

export const Policy = Type.Object({
  max_token_days: Type.Integer({ minimum: 1, maximum: MAX_TOKEN_DAYS, description: 'The longest lifetime of a new personal token.' }),
  write_tokens: Type.Enum(writeTokenRules, { description: 'Who may create Read and write personal tokens.' }),
  legacy_token: Type.Boolean({ description: 'Whether the API accepts the legacy account token.' }),
  multipass: Type.Boolean({ description: 'Whether the API accepts multipass.' }),
  password: Type.Boolean({ description: 'Whether the API accepts email and password (Basic).' }),
  staff_second_factor: Type.Boolean({ description: 'Whether the support staff must have a second factor: until they add one, their sign-in on the pages leads only to adding one.' }),
  visitor_discussions: Type.Boolean({ description: "Whether a visitor who is not signed in may start a discussion on the customer's pages; it is posted once the link mailed to them is followed." }),
  public_discussions: Type.Boolean({ description: "Whether the customer's pages show the site's public discussions beside a customer's own." }),
  new_discussions_to_team: Type.Boolean({ description: 'Whether a supporter who has not chosen on their profile is mailed about every new discussion (on for a new site).' }),
  satisfaction: Type.Boolean({ description: 'Whether customers are asked to rate each resolved discussion, by a link in the mail and on its page (on for a new site).' }),
  company_sign_in_only: Type.Boolean({
    description:
      "Whether the support staff sign in with the company's account only (GET /{site}/sign_in_providers): no password or passkey of theirs on the pages, and Basic and the legacy token refused whatever `password` and `legacy_token` say. Switched on only once the site has a provider and the administrator switching it signed in with one.",
  }),
})

export const PolicyChange = Type.Object(
  {
    ...Type.Partial(Policy).properties,
    existing_tokens: Type.Optional(
      Type.Enum(['shorten', 'leave'], {
        description: 'Required when a shorter max_token_days leaves active tokens over it: shorten them to end within it (owners mailed), or leave them.',
      }),
    ),
  },
  { additionalProperties: false },
)

export const PolicyAnswer = Type.Object({
  policy: Policy,
  shortened: Type.Integer({ description: 'Tokens shortened to the new longest lifetime.' }),
  left_over: Type.Integer({ description: 'Tokens left lasting longer than it (existing_tokens: leave).' }),
})

export const ChoiceBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
  dry_run: Type.Object({ max_token_days: Type.Integer(), tokens: Type.Integer(), people: Type.Integer() }),
})

export function credentialView(entry: InventoryEntry): Static<typeof Credential> {
  const at = (date: Date | null) => (date ? moment(date) : null)
  return {
    id: entry.id,
    kind: entry.kind,
    owner: entry.owner,
    owner_name: entry.ownerName,
    name: entry.name,
    access: entry.access,
    created_at: moment(entry.createdAt),
    last_used_at: at(entry.lastUsedAt),
    last_used_from: entry.lastUsedFrom,
    expires_at: at(entry.expiresAt),
    state: entry.state,
    revocable: entry.revocable,
  }
}

const policyView = (policy: SitePolicy): Static<typeof Policy> => ({
  max_token_days: policy.tokenMaxDays,
  write_tokens: policy.writeTokens,
  legacy_token: policy.legacyTokenOn,
  multipass: policy.multipassOn,
  password: policy.passwordOn,
  staff_second_factor: policy.staffSecondFactor,
  visitor_discussions: policy.visitorDiscussions,
  public_discussions: policy.publicDiscussions,
  new_discussions_to_team: policy.newDiscussionsToTeam,
  satisfaction: policy.satisfactionOn,
  company_sign_in_only: policy.companySignInOnly,
})

const administrationRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { administration } = fastify
  administratorsOnly(fastify, 'its credentials and token policy')
  const actor = actorOf
  const tags = ['administration']

  fastify.get(
    '/:site/credentials',
    {
      schema: {
        tags,
        operationId: 'listCredentials',
        summary: "The site's credentials inventory: personal tokens, applications and legacy tokens, active or ended in the last 30 days",
        params: SiteParams,
        querystring: InventoryQuery,
        response: { 200: CredentialList, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      const { total, page, pages, entries } = await administration.inventory(request.auth!.site, filterFromParams(request.query))
      const answer = { credentials: entries.map(credentialView), total, page, pages }
      // No counter moves with every use of every credential: the tag is a digest of the answer itself.
      if (notModified(request, reply, `c${createHash('sha256').update(JSON.stringify(answer)).digest('base64url').slice(0, 16)}`)) return reply
      return answer
    },
  )

  fastify.post(
    '/:site/credentials/revoke',
    {
      schema: {
        tags,
        operationId: 'revokeCredentials',
        summary: 'Revoke personal tokens and applications of the site, all or none, telling each owner the reason',
        params: SiteParams,
        body: Revocation,
        response: { 200: Revoked, 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request) => {
      try {
        const revoked = await administration.revoke(request.auth!.site, request.body.ids, request.body.reason, actor(request))
        return { revoked: revoked.map((entry) => credentialView({ ...entry, state: 'revoked' })) }
      } catch (error) {
        throw httpError(error)
      }
    },
  )

  fastify.get(
    '/:site/policy',
    { schema: { tags, operationId: 'getPolicy', summary: "The site's token policy", params: SiteParams, response: { 200: Policy, 403: ErrorBody } } },
    async (request, reply) => {
      const policy = policyOf(request.auth!.site)
      // The policy's values are its version.
      const version = `p${policy.tokenMaxDays}${policy.writeTokens[0]}${[policy.legacyTokenOn, policy.multipassOn, policy.passwordOn, policy.staffSecondFactor, policy.visitorDiscussions, policy.publicDiscussions, policy.newDiscussionsToTeam, policy.satisfactionOn, policy.companySignInOnly].map(Number).join('')}`
      if (notModified(request, reply, version)) return reply
      return policyView(policy)
    },
  )

  fastify.patch(
    '/:site/policy',
    {
      schema: {
        tags,
        operationId: 'changePolicy',
        summary: "Change the site's token policy; a shorter lifetime that leaves tokens over it answers 409 with a dry run until existing_tokens says what to do",
        params: SiteParams,
        body: PolicyChange,
        response: { 200: PolicyAnswer, 400: InvalidRequestBody, 403: ErrorBody, 409: Type.Union([ChoiceBody, ErrorBody]) },
      },
    },
    async (request, reply) => {
      const { existing_tokens: existing, ...fields } = request.body
      const changes: Partial<SitePolicy> = {
        tokenMaxDays: fields.max_token_days,
        writeTokens: fields.write_tokens,
        legacyTokenOn: fields.legacy_token,
        multipassOn: fields.multipass,
        passwordOn: fields.password,
        staffSecondFactor: fields.staff_second_factor,
        visitorDiscussions: fields.visitor_discussions,
        publicDiscussions: fields.public_discussions,
        newDiscussionsToTeam: fields.new_discussions_to_team,
        satisfactionOn: fields.satisfaction,
        companySignInOnly: fields.company_sign_in_only,
      }
      try {
        const { after, shortened, leftOver } = await administration.setPolicy(request.auth!.site, changes, existing, actor(request))
        return { policy: policyView(after), shortened, left_over: leftOver }
      } catch (error) {
        // The schema let through only values the policy takes: the question, and a switch that would lock the staff out.
        if (!(error instanceof ChoiceNeeded)) throw httpError(error)
        return reply.code(409).send({ error: 'conflict', message: sentence(error.message), dry_run: { max_token_days: error.days, tokens: error.tokens, people: error.people } })
      }
    },
  )
}

export default administrationRoutes
