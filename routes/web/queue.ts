import type { IncomingMessage } from 'node:http'
import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Category } from '../../db/stores/categories.ts'
import type { StateScope } from '../../db/stores/discussion-counts.ts'
import type { Action } from '../../db/stores/discussion-states.ts'
import type { DiscussionRow } from '../../db/stores/discussion-listing.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import type { CommentVia, DiscussionState } from '../../db/values.ts'
import { shownMoment } from '../../lib/clock.ts'
import { MESSAGE_LIMITS, shownInline, shownSize, type FileLimits } from '../../lib/files.ts'
import { readMultipart, sendAttachment } from '../api/files.ts'
import type { CommentExtras } from '../api/discussions/views.ts'
import { commentExtras } from '../api/discussions/context.ts'
import type { Delivery } from '../../db/stores/outbox.ts'
import { MAX_BODY } from '../api/discussions/schemas.ts'
import { holdsNul } from '../../lib/nul.ts'
import { messageProblem, notFoundPage, refusalOf, pageData, queryString, requireSupporter, wholeNumber } from './pages.ts'

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
/** The longest search over titles, in characters. */
const MAX_SEARCH = 100

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

/** The states the queue's tabs show, in order, by the API's names; `live` is every one but deleted. */
const TABS: Array<{ scope: StateScope; label: string }> = [
  { scope: 'live', label: 'Live' },
  { scope: 'new', label: 'New' },
  { scope: 'open', label: 'Open' },
  { scope: 'resolved', label: 'Resolved' },
  { scope: 'deleted', label: 'Deleted' },
]

/** How a comment came, as its byline says it (the API's own are not remarked on). */
const VIA: Record<CommentVia, string> = { api: ', through the API', mcp: ', by an assistant (MCP)', web: ', on the web', email: ', by mail' }

/** A page, category or discussion number from a query, form or path field, or undefined. */
const whole = (value: unknown) => wholeNumber(value, 9)

const PAGE = { constraints: { page: 'html' } }

const queueRoutes: FastifyPluginAsync<{ fileLimits: FileLimits }> = async (fastify, { fileLimits }) => {
  const { discussions, categories, files, urls } = fastify
  // The reply form takes files (multipart/form-data), in this scope only.
  await fastify.register(multipart)
  const base = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)
  const supporters = { ...PAGE, preHandler: requireSupporter }
  const forms = { ...PAGE, preHandler: [fastify.csrfProtection, requireSupporter] }

  /** Every category of the site (a negative limit: all); each discussion's is among them. */
  async function categoriesOf(siteId: number): Promise<Category[]> {
    return (await categories.list(siteId, 0, -1)).categories
  }

  const row = (request: FastifyRequest, d: DiscussionRow, names: Map<number, string>) => ({
    number: d.number,
    title: d.title,
    state: d.state,
    category: names.get(d.categoryId)!,
    author: d.authorName,
    lastActivity: shownMoment(d.lastUpdatedAt),
    comments: d.commentsCount,
    // The customer spoke last and the discussion is still to be worked: the team owes an answer.
    waiting: d.awaitingTeam && (d.state === 'new' || d.state === 'open'),
    // Started by a customer on the customer's pages (routes/web/customers.ts).
    fromWeb: d.startedOnTheWeb,
    href: `${base(request)}/discussions/${d.number}`,
  })

  fastify.get('/discussions', supporters, async (request, reply) => {
    const query = request.query as { state?: unknown; category?: unknown; page?: unknown; q?: unknown }
    const { site } = request.web
    const tab = TABS.find((t) => t.scope === query.state) ?? TABS[0]
    const all = await categoriesOf(site.id)
    const category = all.find((c) => c.id === whole(query.category))
    const page = whole(query.page) ?? 1
    // A search over titles: up to 100 characters; text that could not be stored could not be found.
    const q = typeof query.q === 'string' ? query.q.trim().slice(0, MAX_SEARCH) : ''
    const title = q === '' || holdsNul(q) ? undefined : q
    const { total, discussions: rows } = await discussions.list({
      siteId: site.id,
      state: tab.scope,
      categoryId: category?.id,
      title,
      sort: 'activity',
      offset: (page - 1) * QUEUE_PAGE,
      limit: QUEUE_PAGE,
    })
    const counts = await Promise.all(TABS.map((t) => discussions.counts.total({ siteId: site.id, state: t.scope, categoryId: category?.id })))
    const names = new Map(all.map((c) => [c.id, c.name]))
    const filters = (changes: Record<string, string | number | undefined>) => {
      const kept = { state: tab.scope === 'live' ? undefined : tab.scope, category: category?.id, q: title, ...changes }
      return `${base(request)}/discussions${queryString(kept)}`
    }
    const pages = Math.max(1, Math.ceil(total / QUEUE_PAGE))
    return reply.page(
      'queue',
      pageData(request, reply, {
        title: `${tab.label} discussions`,
        tabs: TABS.map((t, i) => ({ ...t, count: counts[i], current: t === tab, href: filters({ state: t.scope === 'live' ? undefined : t.scope, page: undefined }) })),
        categories: all.map((c) => ({ id: c.id, name: c.name, selected: c.id === category?.id })),
        state: tab.scope,
        q: title ?? '',
        total,
        rows: rows.map((d) => row(request, d, names)),
        page,
        pages,
        previous: page > 1 ? filters({ page: page - 1 }) : null,
        next: page < pages ? filters({ page: page + 1 }) : null,
      }),
    )
  })

  /** The discussion of the address on this site, or the not-found page. */
  async function discussionOf(request: FastifyRequest, reply: FastifyReply) {
    const number = whole((request.params as { number: string }).number)
    try {
      if (number !== undefined) return await discussions.get(request.web.site.id, number)
    } catch (error) {
      if (!(error instanceof StoreError) || error.code !== 'not_found') throw error
    }
    await notFoundPage(request, reply, {
      title: 'No such discussion',
      message: `${request.web.site.name} has no discussion with this number.`,
      back: { path: '/discussions', label: 'Back to the discussions' },
    })
    return undefined
  }

  async function discussionPage(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, status = 200, error: string | null = null, draft = '') {
    const all = await categoriesOf(request.web.site.id)
    const comments = await discussions.comments(d.id)
    // What the API shows beside each comment, read as the API reads it.
    const extras = await commentExtras(fastify, comments, d.id)
    return reply.page(
      'discussion',
      pageData(request, reply, {
        title: d.title,
        discussion: {
          number: d.number,
          title: d.title,
          state: d.state,
          public: d.public,
          category: all.find((c) => c.id === d.categoryId)!.name,
          author: d.authorName,
          authorEmail: d.authorEmail,
          created: shownMoment(d.createdAt),
          href: `${base(request)}/discussions/${d.number}`,
        },
        comments: comments.map((c) => ({
          ...pageExtras(extras(c), base(request)),
          number: c.number,
          body: c.body,
          internal: c.internal,
          author: c.authorName,
          authorEmail: c.authorEmail,
          bySupporter: c.bySupporter,
          via: c.via === 'email' && extras(c).mail?.mailbox ? `, by mail to ${extras(c).mail!.mailbox}` : VIA[c.via],
          when: shownMoment(c.createdAt),
        })),
        categories: all.map((c) => ({ id: c.id, name: c.name, selected: c.id === d.categoryId })),
        actions: actionsFor(d.state),
        queue: `${base(request)}/discussions`,
        error,
        draft,
        fileLimits: { count: MESSAGE_LIMITS.files, size: shownSize(fileLimits.fileBytes) },
      }),
      status,
    )
  }

  fastify.get('/discussions/:number', supporters, async (request, reply) => {
    const d = await discussionOf(request, reply)
    return d && discussionPage(request, reply, d)
  })

  /**
   * Runs a change of the page's discussion. A discussion changed by someone else meanwhile (deleted
   * while a reply was being written, say) refuses the change in the store: the page is shown again
   * as it is now, `409`, with what was typed still in the form, as the API answers 409.
   */
  async function change(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, work: () => Promise<unknown>, draft = '') {
    const error = await refusalOf(work)
    if (!error) return true
    // A discussion is never removed from its site (deleting it is a state), so it is read again.
    const now = await discussions.get(d.siteId, d.number)
    if (error.code === 'too_large') await discussionPage(request, reply, now, 413, `That was not sent: ${error.message}. Choose fewer or smaller files, then send it again.`, draft)
    else await discussionPage(request, reply, now, 409, `That was not done: ${error.message}. Someone changed the discussion since the page was shown.`, draft)
    return false
  }

  /** After a change: back to the discussion, where a reload shows it again without sending the form twice. */
  const back = (request: FastifyRequest, reply: FastifyReply, number: number, anchor = '') =>
    reply.redirect(`${base(request)}/discussions/${number}${anchor}`, 303)

  // A file of the site's discussions, for its support staff: as the API sends it (routes/api/files.ts).
  fastify.get('/files/:id', { preHandler: requireSupporter }, async (request, reply) => {
    const id = whole((request.params as { id: string }).id)
    const found = id === undefined ? undefined : await files.find(request.web.site.id, id)
    if (!found || found.commentId === null) {
      return notFoundPage(request, reply, { title: 'No such file', message: `${request.web.site.name} has no file with this number.`, back: { path: '/discussions', label: 'Back to the discussions' } })
    }
    return sendAttachment(files, found, request, reply)
  })

  // The reply form with files: read before CSRF and the staff check run (they need its fields), by
  // a signed-in supporter only; what it uploaded is removed again when the reply is refused.
  const replyWithFiles = async (request: FastifyRequest) => {
    const { user, site } = request.web
    if (!request.isMultipart() || !user || !isStaffRole(user.role)) return
    const { fields, uploads } = await readMultipart(fastify, request, fileLimits, { siteId: site.id, userId: user.id })
    request.body = Object.fromEntries([...fields].map(([name, values]) => [name, values[0]]))
    request.uploaded = uploads.map((u) => u.id)
  }
  const dropUploads = async (request: FastifyRequest) => {
    if (request.uploaded?.length) await files.discard(request.web.site.id, request.web.user!.id, request.uploaded)
  }

  // A reply may be as long as the API takes (MAX_BODY characters), which a form encodes in up to
  // nine bytes each: more than the pages' usual 64 KiB.
  // Dropped before a refusal is sent (onError), and after any answer that did not take them (a
  // redirect to add a second factor first, say): only uploads no comment carries are removed.
  fastify.post('/discussions/:number/reply', { ...forms, bodyLimit: REPLY_FORM_BYTES, preValidation: replyWithFiles, onError: dropUploads, onResponse: dropUploads }, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return (await dropUploads(request), reply)
    // The form's fields (CSRF has checked there is a form).
    const body = request.body as { body?: unknown; internal?: unknown }
    const text = typeof body.body === 'string' ? body.body : ''
    const problem = messageProblem(text)
    if (problem) {
      await dropUploads(request)
      return discussionPage(request, reply, d, 400, request.uploaded?.length ? `${problem} Choose the files again too.` : problem)
    }
    let number = 0
    const sent = await change(request, reply, d, async () => {
      number = (await discussions.reply({ siteId: d.siteId, number: d.number, body: text, internal: body.internal === 'yes', supporterId: request.web.user!.id, via: 'web', uploads: request.uploaded })).comment.number
    }, text)
    if (!sent) await dropUploads(request)
    return sent ? back(request, reply, d.number, `#comment-${number}`) : reply
  })

  fastify.post('/discussions/:number/act', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const action = (request.body as { action?: unknown } | undefined)?.action
    if (!actionsFor(d.state).some((a) => a.action === action)) return discussionPage(request, reply, d, 409, 'That cannot be done to the discussion as it is now. It may have changed since the page was shown.')
    return (await change(request, reply, d, () => discussions.act(d.siteId, d.number, action as Action))) ? back(request, reply, d.number) : reply
  })

  fastify.post('/discussions/:number/category', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const categoryId = whole((request.body as { category?: unknown } | undefined)?.category)
    const category = categoryId === undefined ? undefined : await categories.find(d.siteId, categoryId)
    if (!category) return discussionPage(request, reply, d, 400, 'Choose one of the categories of this site.')
    return (await change(request, reply, d, () => discussions.update(d.siteId, d.number, { categoryId: category.id }))) ? back(request, reply, d.number) : reply
  })
}

/** A comment's files, mail and sender verdict as its page shows them. */
function pageExtras({ attachments = [], delivery, mail }: CommentExtras, base: string) {
  return {
    files: attachments.map((a) => ({ name: a.name, size: shownSize(a.size), href: `${base}/files/${a.id}`, image: shownInline(a.name, a.contentType) })),
    delivery: delivery ? deliveryLine(delivery) : null,
    notVerified: mail?.verified === false,
  }
}

/** How a reply's mail is doing, as its byline says it. */
function deliveryLine(delivery: Delivery): string {
  const state = delivery.state === 'failed' ? `failed (${delivery.lastError})` : delivery.state === 'queued' && delivery.lastError ? `queued, to be tried again (${delivery.lastError})` : delivery.state
  return `Mailed to ${delivery.to}: ${state}`
}

/** The actions a discussion in this state offers on its page, as buttons. */
export function actionsFor(state: DiscussionState): Array<{ action: Action; label: string; danger?: boolean }> {
  if (state === 'deleted') return [{ action: 'restore', label: 'Restore' }]
  const resolve = state === 'resolved' ? { action: 'unresolve' as const, label: 'Unresolve' } : { action: 'resolve' as const, label: 'Resolve' }
  return [resolve, { action: 'delete', label: 'Delete', danger: true }]
}

export default queueRoutes
