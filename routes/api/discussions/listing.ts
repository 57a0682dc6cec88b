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
import { Discussion, DiscussionListing, ListingQuery, PagedForm, PER_PAGE, WalkedForm } from './schemas.ts'
import { cursorLinks, envelope, PAGE_WITH_CURSOR, pageLinks, walkedPage } from './views.ts'
import { cursorOf, positionOf } from '../../../lib/cursors.ts'
import { filterText } from '../../../lib/fields.ts'
import { shapeOf, type FieldStore } from '../../../db/stores/fields.ts'

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

/**
 * Where a walk by cursor starts: below the number the cursor names, or at the top for the empty
 * one. Refused (400) with `page`, with an order other than creation's, or for a cursor this API
 * did not give for a listing.
 */
function walkStart(query: Static<typeof ListingQuery>): number {
  if (query.page !== undefined) throw new InvalidRequest([PAGE_WITH_CURSOR])
  if (query.sort !== undefined && query.sort !== 'created') {
    throw new InvalidRequest([{ field: 'sort', problem: 'must be created (or left out) with cursor: a walk by cursor goes in the order of creation, which no change reorders' }])
  }
  const before = positionOf('discussions', query.cursor!, Number.MAX_SAFE_INTEGER)
  if (before === undefined) throw new InvalidRequest([{ field: 'cursor', problem: 'is not a cursor of a listing of discussions' }])
  return before
}

/** A listing of resolved, deleted or spam discussions has no order by due time: none of them has one (400). */
function refuseDueOf(state: StateScope): void {
  if (state === 'resolved' || state === 'deleted' || state === 'spam') throw new InvalidRequest([{ field: 'sort', problem: `cannot be due for ${state} discussions: due times run for new and open ones only` }])
}

/**
 * The field a listing is filtered by (`?field.<key>=<value>`), as field_values keeps its value; none
 * without one. One field a listing, a key of one of the site's fields, a value its kind takes (400).
 */
async function fieldFilter(fields: FieldStore, siteId: number, query: Record<string, unknown>): Promise<{ filter?: { id: number; value: string }; kept: Record<string, string> }> {
  const named = Object.keys(query).filter((name) => name.startsWith(FIELD_PARAM))
  if (named.length === 0) return { kept: {} }
  if (named.length > 1) throw new InvalidRequest([{ field: named[1]!, problem: 'is a second field: a listing is filtered by one field (and a tag)' }])
  const name = named[0]!
  const given = query[name]
  if (typeof given !== 'string') throw new InvalidRequest([{ field: name, problem: 'must be given once' }])
  const field = (await fields.list(siteId, { of: 'discussion' })).find((f) => f.key === name.slice(FIELD_PARAM.length))
  if (!field) throw new InvalidRequest([{ field: name, problem: 'is not a field of this site (GET /<site>/fields lists them)' }])
  const text = filterText(shapeOf(field), given)
  if ('problem' in text) throw new InvalidRequest([{ field: name, problem: text.problem }])
  return { filter: { id: field.id, value: text.text }, kept: { [name]: given } }
}

/** The listing's filter by a custom field: `?field.<key>=<value>`. */
const FIELD_PARAM = 'field.'

export interface ListingRequest {
  auth: Authenticated | null
  query: Static<typeof ListingQuery>
}

/**
 * Answers a listing request: one page of the discussions in `scope`, filtered by the query, with
 * the envelope of docs/decisions.md and RFC 8288 Link headers pointing at `address`.
 */
export async function listDiscussions(
  { discussions, fields, views }: DiscussionContext,
  users: UserStore,
  request: ListingRequest,
  reply: FastifyReply,
  scope: { state: StateScope; categoryId?: number },
  address: string,
): Promise<Static<typeof DiscussionListing> | FastifyReply> {
  const site = request.auth!.site
  // Before anything is read: a poll of an unchanged listing costs the authentication alone.
  if (notModified(request as FastifyRequest, reply, siteVersion(site.version))) return reply
  const { page = 1, sort = 'activity', user_id, user_email, assignee, tag, cursor, sla, ...query } = request.query
  // Due times run for what the team owes: the order by them lists new and open discussions (db/stores/discussions.ts, list).
  if (sort === 'due') refuseDueOf(scope.state)
  const since = parseSince(query.since)
  // A walk by cursor goes in the order of creation (the numbers), which no change reorders.
  const before = cursor === undefined ? undefined : walkStart(request.query)
  if (user_id !== undefined && user_email !== undefined) {
    throw new InvalidRequest([{ field: 'user_email', problem: 'cannot be combined with user_id: send one of them' }])
  }
  // An address nobody has matches no discussion; 0 is no user's id.
  const authorId = user_email === undefined ? user_id : ((await users.find(user_email))?.id ?? 0)
  const field = await fieldFilter(fields, site.id, request.query as Record<string, unknown>)
  const { total, discussions: rows } = await discussions.list({
    siteId: site.id,
    siteVersion: site.version,
    ...scope,
    public: query.public === undefined ? undefined : query.public === '1' || query.public === 'true',
    authorId,
    // Nobody's (0) for none; a tag that cannot be one is carried by no discussion (the empty page).
    assignee: assignee === undefined ? undefined : (assigneeOf(assignee, request.auth!.user.id) ?? NO_ASSIGNEE),
    tag: tag === undefined ? undefined : keptTag(tag),
    field: field.filter,
    breached: sla === 'breached',
    since,
    ...(before === undefined ? { sort, offset: (page - 1) * PER_PAGE, limit: PER_PAGE } : { sort: 'number', before, offset: 0, limit: PER_PAGE + 1 }),
  })
  const kept = { sort: request.query.sort, public: query.public, since: query.since, user_id, user_email, assignee, tag, sla, ...field.kept }
  let shown = rows
  let around: Record<string, unknown>
  if (before === undefined) {
    reply.header('link', pageLinks(address, kept, page, total))
    around = envelope(page, total)
  } else {
    const walked = walkedPage(rows, (last) => cursorOf('discussions', last.number))
    shown = walked.rows
    reply.header('link', cursorLinks(address, kept, walked.next))
    around = { total, per_page: PER_PAGE, next_cursor: walked.next }
  }
  // The form's serializer writes the envelope around no items; each item's JSON is the views'
  // (made once per version of the discussion), joined in place of the empty list.
  const shell = reply.compileSerializationSchema((before === undefined ? PagedForm : WalkedForm).discussions as unknown as Record<string, unknown>)({ ...around, discussions: [] })
  const item = reply.compileSerializationSchema(Discussion as unknown as Record<string, unknown>)
  const items = shown.map((row) => views.discussionJson(site.permalink, row, item))
  const at = shell.lastIndexOf(NO_ITEMS) + NO_ITEMS.length - 1
  return reply.type(SERIALIZED_JSON).send(`${shell.slice(0, at)}${items.join(',')}${shell.slice(at)}`)
}

// The serializer's text of the envelope around no items holds this once (no other field is a list
// of discussions); the items go between its brackets.
const NO_ITEMS = '"discussions":[]'

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

  fastify.get('/:site/discussions', { schema: schema('listDiscussions', 'List discussions in every state but deleted and spam') }, async (request, reply) =>
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
