import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { discussionStates } from '../../../db/values.ts'
import { SERIALIZED_JSON } from '../../../lib/accept.ts'
import { dayStart } from '../../../lib/clock.ts'
import { InvalidRequest } from '../../../plugins/http/validation.ts'
import type { Authenticated } from '../../../plugins/auth/authenticate.ts'
import { NO_ASSIGNEE, type StateScope } from '../../../db/stores/discussion-counts.ts'
import { tagOf } from '../../../lib/team-queue.ts'
import { assigneeOf } from './actions.ts'
import type { Since } from '../../../db/stores/discussion-listing.ts'
import type { UserStore } from '../../../db/stores/users.ts'
import { InvalidRequestBody, SiteParams } from '../../schemas.ts'
import { notModified, siteVersion } from '../../../plugins/http/conditional.ts'
import type { DiscussionContext } from './context.ts'
import { Discussion, DiscussionListing, ListingQuery, PER_PAGE } from './schemas.ts'
import { envelope, pageLinks } from './views.ts'

/** `since` as a number (discussions numbered above it) or a UTC date (at or after its midnight). */
export function parseSince(since: string | undefined): Since | undefined {
  if (since === undefined) return undefined
  if (/^\d+$/.test(since)) return { kind: 'number', after: Number(since) }
  const from = dayStart(since)
  if (from === undefined) throw new InvalidRequest([{ field: 'since', problem: 'is not a date of the calendar' }])
  return { kind: 'date', from }
}

/** A tag asked for, as tags are kept; one that cannot be a tag is refused (400) with the reason. */
function keptTag(text: string): string {
  const found = tagOf(text)
  if ('problem' in found) throw new InvalidRequest([{ field: 'tag', problem: found.problem }])
  return found.tag
}

export interface ListingRequest {
  auth: Authenticated | null
  query: Static<typeof ListingQuery>
}

/**
 * Answers a listing request: one page of the discussions in `scope`, filtered by the query, with
 * the envelope of docs/decisions.md and RFC 8288 Link headers pointing at `address`.
 */
export async function listDiscussions(
  { discussions, views }: DiscussionContext,
  users: UserStore,
  request: ListingRequest,
  reply: FastifyReply,
  scope: { state: StateScope; categoryId?: number },
  address: string,
): Promise<Static<typeof DiscussionListing> | FastifyReply> {
  const site = request.auth!.site
  // Before anything is read: a poll of an unchanged listing costs the authentication alone.
  if (notModified(request as FastifyRequest, reply, siteVersion(site.version))) return reply
  const { page = 1, sort = 'activity', user_id, user_email, assignee, tag, ...query } = request.query
  const since = parseSince(query.since)
  if (user_id !== undefined && user_email !== undefined) {
    throw new InvalidRequest([{ field: 'user_email', problem: 'cannot be combined with user_id: send one of them' }])
  }
  // An address nobody has matches no discussion; 0 is no user's id.
  const authorId = user_email === undefined ? user_id : ((await users.find(user_email))?.id ?? 0)
  const { total, discussions: rows } = await discussions.list({
    siteId: site.id,
    ...scope,
    public: query.public === undefined ? undefined : query.public === '1' || query.public === 'true',
    authorId,
    // Nobody's (0) for none; a tag that cannot be one is carried by no discussion (the empty page).
    assignee: assignee === undefined ? undefined : (assigneeOf(assignee, request.auth!.user.id) ?? NO_ASSIGNEE),
    tag: tag === undefined ? undefined : keptTag(tag),
    since,
    sort,
    offset: (page - 1) * PER_PAGE,
    limit: PER_PAGE,
  })
  const kept = { sort: request.query.sort, public: query.public, since: query.since, user_id, user_email, assignee, tag }
  reply.header('link', pageLinks(address, kept, page, total))
  // The route's own serializer writes the envelope around no items; each item's JSON is the views'
  // (made once per version of the discussion), joined in place of the empty list at its end.
  const shell = reply.getSerializationFunction('200')!({ ...envelope(page, total), discussions: [] })
  const item = reply.compileSerializationSchema(Discussion as unknown as Record<string, unknown>)
  const items = rows.map((row) => views.discussionJson(site.permalink, row, item))
  return reply.type(SERIALIZED_JSON).send(`${shell.slice(0, -ITEMS_END.length)}${items.join(',')}${ITEMS_END}`)
}

// The listing's schema ends with its items: the serializer's text of no items ends `[]}`, and the
// items go between the brackets.
const ITEMS_END = ']}'

/** GET and HEAD {base_url}/<site>/discussions, and the same for one state: /discussions/<state>. */
const listingRoutes: FastifyPluginAsyncTypebox<DiscussionContext> = async (fastify, context) => {
  const { urls, users } = fastify
  const schema = (operationId: string, summary: string) => ({
    tags: ['discussions'],
    operationId,
    summary,
    params: SiteParams,
    querystring: ListingQuery,
    response: { 200: DiscussionListing, 400: InvalidRequestBody },
  })

  fastify.get('/:site/discussions', { schema: schema('listDiscussions', 'List discussions in every state but deleted') }, async (request, reply) =>
    listDiscussions(context, users, request, reply, { state: 'live' }, urls.discussions(request.auth!.site.permalink)),
  )

  // One static route per state, so /discussions/<number> stays free for a discussion and an
  // unknown state is refused by that route's number check.
  for (const state of discussionStates) {
    fastify.get(`/:site/discussions/${state}`, { schema: schema(`list${state[0].toUpperCase()}${state.slice(1)}Discussions`, `List ${state} discussions`) }, async (request, reply) =>
      listDiscussions(context, users, request, reply, { state }, `${urls.discussions(request.auth!.site.permalink)}/${state}`),
    )
  }
}

export default listingRoutes
