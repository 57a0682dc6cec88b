import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { accessLevels } from '../../db/values.ts'
import { ADDRESSES_KEPT, type TokenAddress } from '../../db/stores/token-rules.ts'
import { PERSONAL_TOKEN_PREFIX } from '../../lib/token-format.ts'
import { tagOf } from '../../plugins/http/conditional.ts'
import { ErrorBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'

// GET {base_url}/<site>/personal_tokens/self: a personal token's own record, read with the token
// itself (issue 18; docs/decisions.md, "Token lifecycle"). What a script asks before it runs: which
// token is this, what may it do, when does it die, and where has it been used from.

// Moments as every v1 answer writes them: ISO 8601 in UTC to the second (2026-03-01T12:00:00Z).
const Moment = Type.String({ format: 'date-time' })

export const PersonalTokenSelf = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  access: Type.Enum(accessLevels, { description: 'read: Read only; write: Read and write.' }),
  active: Type.Boolean({ description: 'Always true: an inactive token cannot ask.' }),
  created_at: Moment,
  last_used_at: Moment,
  expires_at: Moment,
  last_used_from: Type.Array(Type.Object({ address: Type.String(), last_used_at: Moment }), {
    description: `The last ${ADDRESSES_KEPT} addresses the token was used from, most recent first; this request's among them.`,
  }),
  api_tokens_url: Type.String({ description: 'The page where its owner revokes it.' }),
})

/** The token's addresses with this request's use first: the record is written after the answer. */
export function withThisUse(addresses: TokenAddress[], address: string, now: Date): TokenAddress[] {
  return [{ address, lastUsedAt: now }, ...addresses.filter((known) => known.address !== address)].slice(0, ADDRESSES_KEPT)
}

const personalTokenRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { tokens, urls, clock } = fastify
  fastify.get(
    '/:site/personal_tokens/self',
    {
      schema: {
        tags: ['tokens'],
        operationId: 'getCurrentPersonalToken',
        summary: 'The personal token of this request: its name, access, expiry and the addresses it was used from',
        description: 'Only a personal token reads this; other credentials get 404.',
        params: SiteParams,
        response: { 200: PersonalTokenSelf, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site, tokenId } = request.auth!
      const token = tokenId === undefined ? undefined : await tokens.find(site.id, tokenId)
      if (!token) {
        throw Object.assign(new Error(`Only a personal token has a record to read here; send one as "Authorization: Bearer ${PERSONAL_TOKEN_PREFIX}...".`), {
          statusCode: 404,
          code: 'not_found',
        })
      }
      const now = new Date(clock())
      const answer = {
        id: token.id,
        name: token.name,
        access: token.access,
        active: true,
        created_at: moment(token.createdAt),
        last_used_at: moment(now),
        expires_at: moment(token.expiresAt),
        last_used_from: withThisUse(token.addresses, request.ip, now).map((use) => ({ address: use.address, last_used_at: moment(use.lastUsedAt) })),
        api_tokens_url: urls.apiTokensPage(site.permalink),
      }
      // The answer names this very use, so every answer differs: its tag is a digest of the answer.
      reply.header('etag', tagOf(request, 't', JSON.stringify(answer)))
      return answer
    },
  )
}

export default personalTokenRoutes
