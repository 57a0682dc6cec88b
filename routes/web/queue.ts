import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { Category } from '../../db/stores/categories.ts'
import { inStateScope, NO_ASSIGNEE, type StateScope } from '../../db/stores/discussion-counts.ts'
import type { DiscussionRow } from '../../db/stores/discussion-listing.ts'
import { shownMoment } from '../../lib/clock.ts'
import { tagList, tagOf } from '../../lib/team-queue.ts'
import { NEVER } from '../../lib/sla.ts'
import { MAX_BODY } from '../api/discussions/schemas.ts'
import { pageData, queryString, requireSupporter, wholeNumber } from './pages.ts'
import { fieldsShown } from './field-form.ts'
import { valuesOf, type Field } from '../../db/stores/fields.ts'

// The supporter's queue (docs/decisions.md, "The queue on the web"): {site_url}/discussions and
// {site_url}/discussions/<number>, the addresses the API's html_href names. Where the site URL
// and the API share paths (the default), one address has two representations, chosen by Accept
// (RFC 9110, proactive negotiation): a browser asks for text/html and gets the page; an API
// client gets the API. Every action is a form with CSRF protection calling the store the API
// calls: one rule, two doors.

/** How many discussions a page of the queue shows. */
export const QUEUE_PAGE = 30
/** The largest reply form: MAX_BODY characters of three UTF-8 bytes, each written %XX, and the other fields. */
export const REPLY_FORM_BYTES = MAX_BODY * 9 + 4096

// An API credential makes a request the API's, whatever it accepts: the API never reads a cookie,
// the pages never read an API credential (docs/decisions.md, "The queue on the web").
const API_HEADERS = ['authorization', 'x-service-auth', 'x-multipass']
const API_QUERY = /[?&](auth|sso|access_token)=/i

/** Whether a request asks for a page: its Accept names text/html (a browser's always does) and it carries no API credential. */
export function wantsPage(request: Pick<IncomingMessage, 'headers' | 'url'>): boolean {
  // Derived for every request the router sees, the API's included: the plain search first.
  const accept = request.headers.accept?.toLowerCase()
  if (accept === undefined || !accept.includes('text/html') || !/(^|,)\s*text\/html\s*(;|,|$)/.test(accept)) return false
  return !API_HEADERS.some((name) => name in request.headers) && !API_QUERY.test(String(request.url))
}

/** The router's constraint that sends a browser to the page and anyone else to the API at the same address. */
export function addPageConstraint(fastify: FastifyInstance) {
  fastify.addConstraintStrategy({
    name: 'page',
    storage() {
      const stores = new Map<string, unknown>()
      return { get: (value: string) => (stores.get(value) ?? null) as never, set: (value: string, store: unknown) => void stores.set(value, store) }
    },
    deriveConstraint: (request: IncomingMessage) => (wantsPage(request) ? 'html' : 'data'),
    mustMatchWhenDerived: false,
  })
}

/** The states the queue's tabs show, in order, by the API's names; the first (what needs an answer: new and open) is the default, `live` is every one but deleted and spam. */
export const TABS: Array<{ scope: StateScope; label: string }> = [
  { scope: 'todo', label: 'To do' },
  { scope: 'new', label: 'New' },
  { scope: 'open', label: 'Open' },
  { scope: 'resolved', label: 'Resolved' },
  { scope: 'spam', label: 'Spam' },
  { scope: 'deleted', label: 'Deleted' },
  { scope: 'live', label: 'All' },
]

/** The tabs whose discussions have due times (lib/sla.ts: what the team owes), which the queue may sort by them. */
const DUE_TABS: StateScope[] = ['todo', 'new', 'open']
/** A due time this near is marked "due soon". */
const DUE_SOON_MS = 60 * 60_000

/** Whose discussions the queue shows: the signed-in supporter's, nobody's, or everyone's (the default). */
const OWNERS = [
  { owner: 'mine', label: 'Mine' },
  { owner: 'none', label: 'Unassigned' },
  { owner: 'all', label: 'Everyone\'s' },
] as const
type Owner = (typeof OWNERS)[number]['owner']

/** A page, category or discussion number from a query, form or path field, or undefined. */
export const whole = (value: unknown) => wholeNumber(value, 9)

export const PAGE = { constraints: { page: 'html' } }

/** The owner filter of the listing and the counts: the user's id, nobody's, or none. */
const assigneeOf = (owner: Owner, userId: number) => (owner === 'mine' ? userId : owner === 'none' ? NO_ASSIGNEE : undefined)

const queueRoutes: FastifyPluginAsync = async (fastify) => {
  const { discussions, categories, urls } = fastify
  const base = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)

  /** Every category of the site (a negative limit: all); each discussion's is among them. */
  async function categoriesOf(siteId: number): Promise<Category[]> {
    return (await categories.list(siteId, 0, -1)).categories
  }

  const row = (request: FastifyRequest, d: DiscussionRow, names: Map<number, string>, tagHref: (tag: string) => string, now: number, columns: Field[]) => ({
    number: d.number,
    title: d.title,
    state: d.state,
    category: names.get(d.categoryId)!,
    author: d.authorName,
    owner: d.assigneeName,
    mine: d.assigneeId === request.web.user!.id,
    tags: tagList(d.tags).map((tag) => ({ tag, href: tagHref(tag) })),
    lastActivity: shownMoment(d.lastUpdatedAt),
    // The soonest due time of its SLA clocks (lib/sla.ts), and the marks: a promise broken, or one
    // due within the hour or warned of (the policy's warning, told by plugins/sla-alerts.ts).
    due: d.dueAt.getTime() === NEVER.getTime() ? null : shownMoment(d.dueAt),
    breached: d.slaBreached !== '',
    dueSoon: d.slaBreached === '' && d.dueAt.getTime() !== NEVER.getTime() && (d.dueAt.getTime() - now <= DUE_SOON_MS || d.slaTold.includes('.warning')),
    comments: d.commentsCount,
    // The customer spoke last and the discussion is still to be worked: the team owes an answer.
    waiting: d.awaitingTeam && (d.state === 'new' || d.state === 'open'),
    // Started by a customer on the customer's pages (routes/web/customers.ts).
    fromWeb: d.startedOnTheWeb,
    href: `${base(request)}/discussions/${d.number}`,
    // The values of the fields the supporter shows as columns, in their order.
    columns: columns.length === 0 ? [] : fieldsShown(columns, valuesOf(d.fields)).active.map((f) => f.shown),
  })

  /** The fields of discussions the supporter chose as columns, in the site's order (a removed one left out). */
  async function columnsOf(siteId: number, userId: number): Promise<{ all: Field[]; chosen: Field[] }> {
    const [all, keys] = await Promise.all([fastify.fields.list(siteId, { of: 'discussion' }), fastify.users.queueFields(siteId, userId)])
    return { all, chosen: all.filter((f) => keys.includes(f.key)) }
  }

  // The columns of the queue, chosen per supporter: the fields of discussions ticked.
  // A collaborator's choice is of their own account too (routes/web/pages.ts requireSupporter).
  fastify.post('/discussions/columns', { ...PAGE, config: { ownAccount: true }, preHandler: [fastify.csrfProtection, requireSupporter] }, async (request, reply) => {
    const { site, user } = request.web
    const ticked = (request.body as { column?: unknown } | undefined)?.column
    const asked = (Array.isArray(ticked) ? ticked : ticked === undefined ? [] : [ticked]).map(String)
    const { all } = await columnsOf(site.id, user!.id)
    await fastify.users.setQueueFields(site.id, user!.id, all.filter((f) => asked.includes(f.key)).map((f) => f.key))
    const back = (request.body as { back?: unknown }).back
    // Back to the queue as it was shown (its own address only: no open redirect).
    return reply.redirect(typeof back === 'string' && back.startsWith('?') ? `${base(request)}/discussions${back}` : `${base(request)}/discussions`, 303)
  })

  fastify.get('/discussions', { ...PAGE, preHandler: requireSupporter }, async (request, reply) => {
    const query = request.query as { state?: unknown; category?: unknown; page?: unknown; q?: unknown; owner?: unknown; tag?: unknown; sort?: unknown; sla?: unknown }
    // The queue's search of earlier versions (titles only) is the full search now: its addresses lead there.
    if (typeof query.q === 'string' && query.q.trim() !== '') return reply.redirect(`${base(request)}/search${queryString({ q: query.q.trim() })}`, 303)
    const { site, user } = request.web
    const tab = TABS.find((t) => t.scope === query.state) ?? TABS[0]
    const owner = OWNERS.find((o) => o.owner === query.owner) ?? OWNERS[2]
    const all = await categoriesOf(site.id)
    const category = all.find((c) => c.id === whole(query.category))
    const page = whole(query.page) ?? 1
    const asked = typeof query.tag === 'string' ? tagOf(query.tag) : undefined
    const tag = asked && 'tag' in asked ? asked.tag : undefined
    const scope = { siteId: site.id, categoryId: category?.id }
    // By due time where due times run (what the team owes); by last activity anywhere else.
    const byDue = query.sort === 'due' && DUE_TABS.includes(tab.scope)
    const breached = query.sla === 'breached'
    const columns = await columnsOf(site.id, user!.id)
    const { total, discussions: rows } = await discussions.list({
      ...scope,
      state: tab.scope,
      assignee: assigneeOf(owner.owner, user!.id),
      tag,
      breached,
      sort: byDue ? 'due' : 'activity',
      offset: (page - 1) * QUEUE_PAGE,
      limit: QUEUE_PAGE,
    })
    // The tabs' counts are kept, not counted (db/stores/discussion-counts.ts), read in one go: the
    // states' for the owner shown, the owners' for the state shown.
    const owned = await discussions.counts.byStateAndOwner(site.id, category?.id)
    const sum = (scope: StateScope, o: Owner) => {
      const assignee = assigneeOf(o, user!.id)
      return owned.reduce((n, c) => (inStateScope(scope, c.state) && (assignee === undefined || c.assigneeId === assignee) ? n + c.n : n), 0)
    }
    const stateCounts = TABS.map((t) => sum(t.scope, owner.owner))
    const ownerCounts = OWNERS.map((o) => sum(tab.scope, o.owner))
    const names = new Map(all.map((c) => [c.id, c.name]))
    const kept = { state: tab === TABS[0] ? undefined : tab.scope, owner: owner === OWNERS[2] ? undefined : owner.owner, category: category?.id, tag, sort: byDue ? 'due' : undefined, sla: breached ? 'breached' : undefined }
    const filters = (changes: Record<string, string | number | undefined>) => `${base(request)}/discussions${queryString({ ...kept, ...changes })}`
    const pages = Math.max(1, Math.ceil(total / QUEUE_PAGE))
    return reply.page(
      'queue',
      pageData(request, reply, {
        title: `${tab.label} discussions`,
        tabs: TABS.map((t, i) => ({ ...t, count: stateCounts[i], current: t === tab, href: filters({ state: t === TABS[0] ? undefined : t.scope, page: undefined }) })),
        owners: OWNERS.map((o, i) => ({ ...o, count: ownerCounts[i], current: o === owner, href: filters({ owner: o === OWNERS[2] ? undefined : o.owner, page: undefined }) })),
        categories: all.map((c) => ({ id: c.id, name: c.name, selected: c.id === category?.id })),
        kept,
        tag: tag ?? null,
        untagged: filters({ tag: undefined, page: undefined }),
        // A tag asked for that cannot be one: said, and nothing is filtered by it.
        tagProblem: asked && 'problem' in asked ? `Tag: ${asked.problem}.` : null,
        total,
        rows: rows.map((d) => row(request, d, names, (t) => filters({ tag: t, page: undefined }), fastify.clock(), columns.chosen)),
        columns: columns.chosen.map((f) => ({ key: f.key, name: f.name })),
        columnChoices: columns.all.map((f) => ({ key: f.key, name: f.name, chosen: columns.chosen.includes(f) })),
        here: queryString({ ...kept, page: page === 1 ? undefined : page }),
        sortable: DUE_TABS.includes(tab.scope),
        byDue,
        breached,
        page,
        pages,
        previous: page > 1 ? filters({ page: page - 1 }) : null,
        next: page < pages ? filters({ page: page + 1 }) : null,
        live: `${base(request)}/live`,
      }),
    )
  })
}

export default queueRoutes
