import multipart from '@fastify/multipart'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Category } from '../../db/stores/categories.ts'
import { LINK_MINUTES, type PendingDiscussion } from '../../db/stores/customer-links.ts'
import type { DiscussionRow } from '../../db/stores/discussion-listing.ts'
import { StoreError } from '../../db/stores/errors.ts'
import type { Attachment } from '../../db/stores/files.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { emailProblem, nameProblem } from '../../db/stores/users.ts'
import { addressBlock } from '../../lib/address-block.ts'
import { shownMoment } from '../../lib/clock.ts'
import { MESSAGE_LIMITS, shownInline, shownSize, type FileLimits } from '../../lib/files.ts'
import { holdsNul } from '../../lib/nul.ts'
import { ratingLink } from '../../lib/rating-link.ts'
import { createAttemptLimiter } from '../../plugins/auth/attempt-limiter.ts'
import { readMultipart, sendAttachment } from '../api/files.ts'
import { commentExtras } from '../api/discussions/context.ts'
import { MAX_TITLE } from '../api/discussions/schemas.ts'
import { messageProblem, notFoundPage, pageData, queryString, refusalOf, wholeNumber } from './pages.ts'
import { REPLY_FORM_BYTES } from './queue.ts'
import { customerFields, fieldsShown } from './field-form.ts'
import { valuesOf, type Field, type FieldValues } from '../../db/stores/fields.ts'
import { searchForPage, shownResult } from './search.ts'

// The customer's side (docs/decisions.md, "The customer's side"): {site_url}/help and the pages
// under it, where a customer starts, reads and answers their discussions, and reads the site's
// public ones. A customer reaches only their own discussions and public ones, and sees only their
// public conversation: never an internal note, and no one's email, only display names. Support
// staff work from the queue: these addresses send them to its page of the same discussion.
// A visitor who is not signed in signs in by a link mailed to them, or writes a discussion that is
// posted when they follow the link of its confirmation mail (db/stores/customer-links.ts).

/** How many public discussions a page of the support site shows, and how many of a customer's own. */
export const PUBLIC_PAGE = 20
export const OWN_LIMIT = 100
/** How many discussions a customer may start in an hour on these pages. */
export const STARTED_PER_HOUR = 10
/** Searches a minute from one client address (its block) on the support site, past which a 429 page. */
export const SEARCHES_PER_MINUTE = 30

/** A discussion number or a page from the path or the query. */
const whole = (value: unknown) => wholeNumber(value, 9)

/** The trimmed text of a form field; '' when absent or not text. */
const field = (body: Record<string, unknown>, name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '')

interface Viewer {
  /** The signed-in customer, or null for a visitor. */
  userId: number | null
}

const customerRoutes: FastifyPluginAsync<{ fileLimits: FileLimits }> = async (fastify, { fileLimits }) => {
  const { discussions, categories, customerLinks, files, urls } = fastify
  await fastify.register(multipart)
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/help`

  /**
   * preHandler of every page here: support staff go to the queue (its discussion page for a
   * discussion's), where they work; customers and visitors stay.
   */
  async function customersOnly(request: FastifyRequest, reply: FastifyReply) {
    const { user, site } = request.web
    if (!user || !isStaffRole(user.role)) return
    const number = whole((request.params as { number?: string }).number)
    return reply.redirect(`${urls.siteWeb(site.permalink)}/discussions${number === undefined ? '' : `/${number}`}`, 303)
  }
  const page = { preHandler: customersOnly }
  const form = { preHandler: [fastify.csrfProtection, customersOnly] }
  const viewer = (request: FastifyRequest): Viewer => ({ userId: request.web.user?.id ?? null })
  const searchPace = createAttemptLimiter({ max: SEARCHES_PER_MINUTE, windowMs: 60_000, clock: fastify.clock })

  /** The categories a customer files a discussion in: the site's public ones. */
  async function publicCategories(siteId: number): Promise<Category[]> {
    return (await categories.list(siteId, 0, -1)).categories.filter((c) => c.public)
  }

  /** Whether the viewer may read the discussion: their own, or a public one where the site shows them; never a deleted one. */
  const readable = (request: FastifyRequest, d: DiscussionRow) =>
    d.state !== 'deleted' && (d.authorId === viewer(request).userId || (d.public && request.web.site.publicDiscussions))

  /** Whether the viewer may have a file of a comment they can read: the message a mail came as is its sender's alone (docs/decisions.md, "Mail"). */
  const ownable = (request: FastifyRequest, a: Pick<Attachment, 'originalMessage' | 'uploaderId'>) => !a.originalMessage || a.uploaderId === viewer(request).userId

  const listed = (request: FastifyRequest, d: DiscussionRow) => ({
    number: d.number,
    title: d.title,
    state: d.state === 'resolved' ? 'Solved' : d.awaitingTeam ? 'Waiting for the team' : 'Answered',
    lastActivity: shownMoment(d.lastUpdatedAt),
    comments: d.commentsCount,
    href: `${base(request)}/${d.number}`,
  })

  fastify.get('/help', page, async (request, reply) => {
    const { site } = request.web
    const { userId } = viewer(request)
    const pageNumber = whole((request.query as { page?: unknown }).page) ?? 1
    // A customer's own, open first, then solved: every one but deleted, newest activity first.
    const own = userId === null ? [] : (await discussions.list({ siteId: site.id, state: 'live', authorId: userId, sort: 'activity', offset: 0, limit: OWN_LIMIT })).discussions
    const shown = site.publicDiscussions
      ? await discussions.list({ siteId: site.id, state: 'live', public: true, sort: 'activity', offset: (pageNumber - 1) * PUBLIC_PAGE, limit: PUBLIC_PAGE })
      : { total: 0, discussions: [] }
    const pages = Math.max(1, Math.ceil(shown.total / PUBLIC_PAGE))
    const at = (n: number) => `${base(request)}${queryString({ page: n === 1 ? undefined : n })}`
    return reply.page(
      'help',
      pageData(request, reply, {
        title: userId === null ? 'Support' : 'My discussions',
        open: own.filter((d) => d.state !== 'resolved').map((d) => listed(request, d)),
        solved: own.filter((d) => d.state === 'resolved').map((d) => listed(request, d)),
        showsPublic: site.publicDiscussions,
        public: shown.discussions.map((d) => listed(request, d)),
        page: pageNumber,
        pages,
        previous: pageNumber > 1 ? at(pageNumber - 1) : null,
        next: pageNumber < pages ? at(pageNumber + 1) : null,
        mayWrite: userId !== null || site.visitorDiscussions,
        help: base(request),
      }),
    )
  })

  // Search over what the viewer may read (routes/web/search.ts): their own discussions, and the
  // public ones where the site shows them; never a deleted one or an internal note.
  fastify.get('/help/search', page, async (request, reply) => {
    const { site } = request.web
    // Paced per client address, as the site's other forms are: no account is needed to search.
    const { q } = request.query as { q?: unknown }
    if (typeof q === 'string' && q.trim() !== '') {
      const client = [addressBlock(request.ip)]
      const pace = searchPace.check(client)
      if (!pace.allowed) return limitPage(request, reply, pace.retryAfter, 'Too many searches from this address.')
      searchPace.fail(client)
    }
    const searcher = { staff: false as const, userId: viewer(request).userId, publicToo: site.publicDiscussions }
    const found = await searchForPage(fastify.discussionSearch, request, site.id, searcher, `${base(request)}/search`)
    return reply.page(
      'help_search',
      pageData(request, reply, {
        title: found.q === '' ? 'Search' : `Search: ${found.q}`,
        ...found,
        results: found.results.map((r) => ({ ...shownResult(r, `${base(request)}/${r.discussion.number}`), state: listed(request, r.discussion).state })),
        action: `${base(request)}/search`,
        help: base(request),
      }),
      found.problem ? 400 : 200,
    )
  })

  /** The site's custom fields shown to its customers (issue 72), in their order: asked on the new discussion form, shown on their discussions. */
  const customersFields = async (siteId: number): Promise<Field[]> => (await fastify.fields.list(siteId, { of: 'discussion' })).filter((f) => f.audience === 'customers')

  /** The new discussion form, with what was typed and what is wrong with it (a custom field's problem by its key). */
  async function newForm(request: FastifyRequest, reply: FastifyReply, status = 200, values: Record<string, string> = {}, problems: Record<string, string> = {}, fieldProblems: Record<string, string> = {}, fieldValues: FieldValues = {}) {
    const { site } = request.web
    const asked = await customersFields(site.id)
    return reply.page(
      'help_new',
      pageData(request, reply, {
        title: 'Start a discussion',
        visitor: request.web.user === null,
        categories: (await publicCategories(site.id)).map((c) => ({ id: c.id, name: c.name, selected: String(c.id) === values.category })),
        mayBePublic: site.publicDiscussions,
        values: { title: '', body: '', name: '', email: '', public: '', ...values },
        problems,
        fields: fieldsShown(asked, fieldValues).active.map((f, i) => ({ ...f, required: asked[i]!.required })),
        fieldProblems,
        fileLimits: { count: MESSAGE_LIMITS.files, size: shownSize(fileLimits.fileBytes) },
        help: base(request),
      }),
      status,
    )
  }

  /** A page that says what happened or why not, with the way back to the support site. */
  function notice(request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string) {
    return reply.page('help_notice', pageData(request, reply, { title, message, help: base(request) }), status)
  }

  /** The page of a limit reached: what, and when to try again. */
  function limitPage(request: FastifyRequest, reply: FastifyReply, retryAfter: number, what: string) {
    reply.header('retry-after', String(retryAfter))
    const minutes = Math.ceil(retryAfter / 60)
    return notice(request, reply, 429, 'Please wait a while', `${what} Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`)
  }

  /** A visitor who may not write here: asked to sign in first. */
  const visitorsClosed = (request: FastifyRequest, reply: FastifyReply) =>
    notice(request, reply, 403, 'Sign in to write to us', `${request.web.site.name} takes new discussions from signed-in customers only. Ask for a sign-in link by mail, then start your discussion.`)

  fastify.get('/help/new', page, async (request, reply) => {
    if (request.web.user === null && !request.web.site.visitorDiscussions) return visitorsClosed(request, reply)
    return newForm(request, reply)
  })

  // The form with files, from a signed-in customer only (a visitor's form has no files): read
  // before CSRF runs, which needs its fields; what it uploaded is removed again when it is refused.
  const withFiles = async (request: FastifyRequest) => {
    const { user, site } = request.web
    if (!request.isMultipart() || !user || isStaffRole(user.role)) return
    const { fields, uploads } = await readMultipart(fastify, request, fileLimits, { siteId: site.id, userId: user.id })
    // Several values of a name (a custom field's boxes ticked) stay a list, as a urlencoded form's do.
    request.body = Object.fromEntries([...fields].map(([name, values]) => [name, values.length === 1 ? values[0] : values]))
    request.uploaded = uploads.map((u) => u.id)
  }
  const dropUploads = async (request: FastifyRequest) => {
    if (request.uploaded?.length) await files.discard(request.web.site.id, request.web.user!.id, request.uploaded)
  }
  const withUploads = { bodyLimit: REPLY_FORM_BYTES, preValidation: withFiles, onError: dropUploads, onResponse: dropUploads }

  fastify.post('/help/new', { ...form, ...withUploads }, async (request, reply) => {
    const { site, user } = request.web
    // The form's fields (CSRF has checked there is a form).
    const body = request.body as Record<string, unknown>
    if (user === null && !site.visitorDiscussions) return visitorsClosed(request, reply)
    const values = { title: field(body, 'title'), body: typeof body.body === 'string' ? body.body : '', category: field(body, 'category'), public: body.public === 'yes' ? 'yes' : '', name: field(body, 'name'), email: field(body, 'email') }
    const problems: Record<string, string> = {}
    if (values.title === '') problems.title = 'Give your discussion a title.'
    else if (values.title.length > MAX_TITLE || holdsNul(values.title)) problems.title = `A title holds at most ${MAX_TITLE} characters, and no U+0000 (NUL).`
    const bodyProblem = messageProblem(values.body)
    if (bodyProblem) problems.body = bodyProblem
    const category = (await publicCategories(site.id)).find((c) => String(c.id) === values.category)
    if (!category) problems.category = 'Choose what your discussion is about.'
    if (user === null) {
      const emailWrong = emailProblem(values.email)
      if (emailWrong) problems.email = `Give the address we should answer: ${emailWrong}.`
      if (nameProblem(values.name)) problems.name = 'Give your name: 1 to 100 characters, without U+0000 (NUL).'
    }
    // The fields shown to customers only: a team-only field's name in the form is passed over.
    const given = customerFields(await customersFields(site.id), body)
    if (Object.keys(problems).length > 0 || Object.keys(given.problems).length > 0) {
      await dropUploads(request)
      if (request.uploaded?.length) problems.files = 'Choose the files again too.'
      return newForm(request, reply, 400, values, problems, given.problems, given.shown)
    }
    // Public only when the customer chose it and the site shows public discussions.
    const isPublic = values.public === 'yes' && site.publicDiscussions
    if (user === null) {
      // The field only robots fill (hidden from people and screen readers): answered as a success, nothing kept.
      if (field(body, 'website') !== '') return checkYourMail(request, reply, values.email)
      const pending: PendingDiscussion = { name: values.name, title: values.title, body: values.body, categoryId: category!.id, public: isPublic, fields: given.values }
      const asked = await customerLinks.ask({
        siteId: site.id,
        purpose: 'discussion',
        email: values.email,
        address: request.ip,
        pending,
        mail: (value, siteName) => ({
          subject: `Confirm your message to ${siteName}: ${values.title}`,
          text: [
            `Someone, we hope you, wrote to ${siteName} from this address: "${values.title}".`,
            `To post it, open this link within ${LINK_MINUTES} minutes:`,
            `${base(request)}/link/${value}`,
            'If this was not you, ignore this mail: nothing is posted.',
          ].join('\n\n'),
        }),
      })
      if (asked.kind === 'limited') return limitPage(request, reply, asked.retryAfter, 'Too many messages were asked for from this address or for this email address.')
      return checkYourMail(request, reply, values.email)
    }
    const since = new Date(fastify.clock() - 60 * 60_000)
    if ((await discussions.startedSince(site.id, user.id, since)) >= STARTED_PER_HOUR) {
      await dropUploads(request)
      return limitPage(request, reply, 3600, `You started ${STARTED_PER_HOUR} discussions in the last hour.`)
    }
    const { discussion } = await discussions.create({
      siteId: site.id,
      categoryId: category!.id,
      title: values.title,
      body: values.body,
      public: isPublic,
      via: 'web',
      supporterId: user.id,
      onBehalfOf: { email: user.email },
      uploads: request.uploaded,
      fields: given.values,
    })
    return reply.redirect(`${base(request)}/${discussion.number}`, 303)
  })

  /** What a visitor is told after asking for a link: the same whether or not the address is known. */
  function checkYourMail(request: FastifyRequest, reply: FastifyReply, email: string) {
    return reply.page('help_sent', pageData(request, reply, { title: 'Check your mail', email, minutes: LINK_MINUTES, help: base(request) }))
  }

  fastify.get('/help/sign_in', page, async (request, reply) => {
    if (request.web.user) return reply.redirect(base(request), 303)
    return reply.page('help_sign_in', pageData(request, reply, { title: 'Sign in by mail', email: '', error: null, minutes: LINK_MINUTES, help: base(request) }))
  })

  fastify.post('/help/sign_in', form, async (request, reply) => {
    const body = request.body as Record<string, unknown>
    const email = field(body, 'email')
    const wrong = emailProblem(email)
    if (wrong) return reply.page('help_sign_in', pageData(request, reply, { title: 'Sign in by mail', email, error: `Give the address you wrote to us from: ${wrong}.`, minutes: LINK_MINUTES, help: base(request) }), 400)
    if (field(body, 'website') !== '') return checkYourMail(request, reply, email)
    const asked = await customerLinks.ask({
      siteId: request.web.site.id,
      purpose: 'sign_in',
      email,
      address: request.ip,
      mail: (value, siteName) => ({
        subject: `Sign in to ${siteName}`,
        text: [`To sign in to ${siteName} and see your discussions, open this link within ${LINK_MINUTES} minutes:`, `${base(request)}/sign_in/${value}`, 'It works once. If you did not ask for it, ignore this mail.'].join('\n\n'),
      }),
    })
    if (asked.kind === 'limited') return limitPage(request, reply, asked.retryAfter, 'Too many sign-in links were asked for from this address or for this email address.')
    return checkYourMail(request, reply, email)
  })

  // A mailed link opens a page with a button, and only the button's POST follows it: a mail
  // scanner that opens every link in a mail does not use it up (or post a discussion).
  for (const [path, purpose, words] of [
    ['/help/sign_in/:value', 'sign_in', { title: 'Sign in', button: 'Sign in' }],
    ['/help/link/:value', 'discussion', { title: 'Post your message', button: 'Post my message' }],
  ] as const) {
    fastify.get(path, page, async (request, reply) => {
      return reply.page('help_link', pageData(request, reply, { ...words, action: request.url.split('?')[0], help: base(request) }))
    })
    fastify.post(path, form, async (request, reply) => {
      const { value } = request.params as { value: string }
      const followed = await customerLinks.follow(request.web.site.id, purpose, value)
      if (followed.kind === 'signed_in' || (followed.kind === 'posted' && followed.userId !== null)) {
        await reply.signIn(request, followed.userId!)
        await request.server.securityLog.append({ userId: followed.userId, siteId: request.web.site.id, kind: 'sign_in_succeeded', address: request.ip, actor: 'page', detail: { with: purpose === 'sign_in' ? 'mailed link' : 'confirmation link' } })
      }
      if (followed.kind === 'signed_in') return reply.redirect(base(request), 303)
      if (followed.kind === 'posted') return reply.redirect(`${base(request)}/${followed.number}`, 303)
      const why = followed.kind === 'expired' ? `It was valid for ${LINK_MINUTES} minutes.` : followed.kind === 'used' ? 'It was used already: each link works once.' : 'It is not a link of this site, or it was changed.'
      return notice(request, reply, 410, 'This link no longer works', `${why} ${purpose === 'sign_in' ? 'Ask for a new sign-in link.' : 'Write your message again.'}`)
    })
  }

  /** The discussion of the address when the viewer may read it, or the not-found page (the same for one that exists and is not theirs). */
  async function discussionOf(request: FastifyRequest, reply: FastifyReply) {
    const number = whole((request.params as { number: string }).number)
    try {
      if (number !== undefined) {
        const d = await discussions.get(request.web.site.id, number)
        if (readable(request, d)) return d
      }
    } catch (error) {
      if (!(error instanceof StoreError) || error.code !== 'not_found') throw error
    }
    await notFoundPage(request, reply, {
      title: 'No such discussion',
      message: request.web.user ? 'There is no discussion of yours, nor a public one, with this number.' : 'There is no public discussion with this number. If it is yours, sign in to see it.',
      back: { path: '/help', label: 'Back to support' },
    })
    return undefined
  }

  async function discussionPage(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, status = 200, error: string | null = null, draft = '') {
    // The public conversation only: an internal note never reaches this page.
    const comments = (await discussions.comments(d.id)).filter((c) => !c.internal)
    const extras = await commentExtras(fastify, comments, d.id)
    const own = d.authorId === viewer(request).userId
    return reply.page(
      'help_discussion',
      pageData(request, reply, {
        title: d.title,
        discussion: { number: d.number, title: d.title, solved: d.state === 'resolved', public: d.public, own, href: `${base(request)}/${d.number}` },
        // The values of the fields shown to customers, to its customer only: never a team-only one.
        fields: own ? fieldsShown(await customersFields(d.siteId), valuesOf(d.fields)).active.filter((f) => f.shown !== '') : [],
        comments: comments.map((c) => ({
          number: c.number,
          body: c.body,
          author: c.authorName,
          bySupporter: c.bySupporter,
          when: shownMoment(c.createdAt),
          files: (extras(c).attachments ?? []).filter((a) => ownable(request, a)).map((a) => ({ name: a.name, size: shownSize(a.size), href: `${base(request)}/files/${a.id}`, image: shownInline(a.name, a.contentType) })),
        })),
        error,
        draft,
        // Its customer is asked how the team did, once it is resolved (routes/web/ratings.ts).
        rating: own && request.web.site.satisfactionOn ? ratingLink(fastify.secretBox.digest, urls.siteWeb(request.web.site.permalink), d, fastify.clock()) : null,
        rated: d.rating === 'good' ? 'Good' : d.rating === 'not_good' ? 'Not good' : null,
        ratingComment: d.ratingComment,
        fileLimits: { count: MESSAGE_LIMITS.files, size: shownSize(fileLimits.fileBytes) },
        help: base(request),
      }),
      status,
    )
  }

  fastify.get('/help/:number', page, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (d?.state !== 'merged') return d && discussionPage(request, reply, d)
    // Merged into another (db/stores/merges.ts): there, when the viewer may read that one too; else
    // said, without a word of the other (its customer may be someone else).
    const into = await discussions.current(d.siteId, d.number)
    if (readable(request, into)) return reply.redirect(`${base(request)}/${into.number}`, 307)
    return notice(request, reply, 200, 'This discussion continues elsewhere', 'The team merged it into another discussion about the same thing. You are copied on its replies by mail, and your answers to them reach the team.')
  })

  /** The discussion of a form, when it is the signed-in customer's own: a public one of someone else's is read, not answered. */
  async function ownDiscussion(request: FastifyRequest, reply: FastifyReply) {
    if (request.web.user === null) {
      await notice(request, reply, 403, 'Sign in to answer', 'Only the customer who started a discussion answers it here. Sign in first.')
      return undefined
    }
    const d = await discussionOf(request, reply)
    if (d && d.authorId !== request.web.user.id) {
      await notice(request, reply, 403, 'Not your discussion', 'You can read this public discussion, but only the customer who started it answers it.')
      return undefined
    }
    return d
  }

  /**
   * A change the store refused: the discussion was deleted meanwhile (conflict), so it is no
   * longer the customer's to see; or the files are more than one message carries, said on the page.
   */
  async function change(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, work: () => Promise<unknown>, draft = '') {
    const error = await refusalOf(work)
    if (!error) return true
    if (error.code === 'conflict') {
      // Deleted meanwhile: the not-found page; merged meanwhile (db/stores/merges.ts): its page says where it went.
      const now = await discussionOf(request, reply)
      if (now) await reply.redirect(`${base(request)}/${now.number}`, 303)
    } else await discussionPage(request, reply, d, 413, `That was not sent: ${error.message}. Choose fewer or smaller files, then send it again.`, draft)
    return false
  }

  fastify.post('/help/:number/reply', { ...form, ...withUploads }, async (request, reply) => {
    const d = await ownDiscussion(request, reply)
    if (!d) return (await dropUploads(request), reply)
    const { body } = request.body as { body?: unknown }
    const text = typeof body === 'string' ? body : ''
    const problem = messageProblem(text)
    if (problem) {
      await dropUploads(request)
      return discussionPage(request, reply, d, 400, request.uploaded?.length ? `${problem} Choose the files again too.` : problem, text)
    }
    const user = request.web.user!
    let number = 0
    const sent = await change(request, reply, d, async () => {
      number = (await discussions.reply({ siteId: d.siteId, number: d.number, body: text, internal: false, supporterId: user.id, onBehalfOf: { email: user.email }, via: 'web', uploads: request.uploaded })).comment.number
    }, text)
    if (!sent) await dropUploads(request)
    return sent ? reply.redirect(`${base(request)}/${d.number}#comment-${number}`, 303) : reply
  })

  fastify.post('/help/:number/solved', form, async (request, reply) => {
    const d = await ownDiscussion(request, reply)
    if (!d) return reply
    return (await change(request, reply, d, () => discussions.act(d.siteId, d.number, 'resolve'))) ? reply.redirect(`${base(request)}/${d.number}`, 303) : reply
  })

  // A file of a comment the viewer may read: of a discussion they may read, not of an internal note,
  // and not the message a mail came as, unless the viewer sent it.
  fastify.get('/help/files/:id', page, async (request, reply) => {
    const id = whole((request.params as { id: string }).id)
    const found = id === undefined ? undefined : await files.find(request.web.site.id, id)
    const d = found && !found.internal && ownable(request, found) && found.discussionNumber !== null ? await discussions.get(request.web.site.id, found.discussionNumber) : undefined
    if (!found || !d || !readable(request, d)) {
      return notFoundPage(request, reply, { title: 'No such file', message: 'There is no file with this number that you can see.', back: { path: '/help', label: 'Back to support' } })
    }
    return sendAttachment(files, found, request, reply)
  })
}

export default customerRoutes
