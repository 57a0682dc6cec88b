import multipart from '@fastify/multipart'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Action } from '../../db/stores/discussion-states.ts'
import type { DiscussionRow } from '../../db/stores/discussion-listing.ts'
import { StoreError } from '../../db/stores/errors.ts'
import type { Delivery } from '../../db/stores/outbox.ts'
import { senderPattern } from '../../db/stores/senders.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import type { CommentVia, DiscussionState } from '../../db/values.ts'
import { shownMoment } from '../../lib/clock.ts'
import { MESSAGE_LIMITS, shownInline, shownSize, type FileLimits } from '../../lib/files.ts'
import { fillSavedReply, splitTags, tagList } from '../../lib/team-queue.ts'
import { dueTimes, promiseNames } from '../../lib/sla.ts'
import { clockOf } from '../../db/stores/sla.ts'
import { readMultipart, sendAttachment } from '../api/files.ts'
import type { CommentExtras } from '../api/discussions/views.ts'
import { commentExtras } from '../api/discussions/context.ts'
import { actionNamesOf } from '../api/rules.ts'
import { describeAction } from '../../lib/rules.ts'
import type { RuleFiring } from '../../db/stores/rules.ts'
import { actorOf } from '../actor.ts'
import { mergeTarget } from '../../lib/merge-target.ts'
import { TRIGGER_NAMES } from './admin-rules.ts'
import { messageProblem, notFoundPage, refusalOf, pageData, requireSupporter } from './pages.ts'
import { PAGE, REPLY_FORM_BYTES, TABS, whole } from './queue.ts'
import { MAX_TITLE } from '../api/discussions/schemas.ts'
import { REPLYING_BEAT_MS } from '../../plugins/presence.ts'
import { valuesOf } from '../../db/stores/fields.ts'
import { fieldsGiven, fieldsShown } from './field-form.ts'

// A discussion's page in the queue (docs/decisions.md, "The queue on the web" and "The team's
// queue"): {site_url}/discussions/<number>, its conversation, the reply form (public or internal,
// a saved reply inserted without JavaScript, Send and resolve), a macro applied in one click and
// the rules applied to it (issue 70), its owner, tags and actions. Every action is a form with
// CSRF protection calling the store the API calls, then back to the page with a message
// (`?done=`): one rule, two doors.

/** How a comment came, as its byline says it. */
const VIA: Record<CommentVia, string> = { api: ', through the API', mcp: ', by an assistant (MCP)', web: ', on the web', email: ', by mail', rule: ', by a rule' }

/** The message shown after an action, by the `done` it came back with. */
const DONE: Record<string, string> = {
  sent: 'Your reply was sent.',
  noted: 'Your internal note was added.',
  'sent-resolved': 'Your reply was sent and the discussion resolved.',
  resolve: 'The discussion is resolved.',
  unresolve: 'The discussion is open again.',
  delete: 'The discussion is deleted. Restore brings it back.',
  restore: 'The discussion is restored.',
  spam: 'The discussion is marked spam: out of the queue. Not spam brings it back.',
  not_spam: 'The discussion is back in the queue, and its sender is allowed: their mail is never taken for spam.',
  blocked: 'The sender is blocked: their new mail goes to spam from now on.',
  moved: 'The discussion moved to its new category.',
  assigned: 'Its owner is changed.',
  tagged: 'Its tags are saved.',
  copied: 'They are copied on its replies from now on.',
  uncopied: 'They are no longer copied on its replies.',
  macro: 'The macro is applied: its reply is sent and its actions done.',
  fields: 'Its fields are saved.',
  customer_fields: "The customer's fields are saved.",
  merged: 'The discussion is merged into this one: its comments are below, marked with where they were written. Undo puts it back for a day.',
  unmerged: 'The merge is undone: the discussion is back as it was, with its comments.',
  split: 'This discussion was split off: its first comments are marked with where they were written, and a note there points here.',
}

/** What the page shows on top of the discussion: a refusal, the words of a confirmation, a kept draft. */
interface Shown {
  status?: number
  error?: string | null
  draft?: string
  internal?: boolean
  /** The comments the sender had seen: a reply is sent only when nobody else wrote since (or on a second click). */
  seen?: number
}

const discussionRoutes: FastifyPluginAsync<{ fileLimits: FileLimits }> = async (fastify, { fileLimits }) => {
  const { discussions, categories, files, mailboxes, merges, rules, savedReplies, senders, urls, users } = fastify
  // The reply form takes files (multipart/form-data), in this scope only.
  await fastify.register(multipart)
  const base = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)
  const supporters = { ...PAGE, preHandler: requireSupporter }
  const forms = { ...PAGE, preHandler: [fastify.csrfProtection, requireSupporter] }

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

  /** The next discussion of the queue's first tab (what needs an answer), after this one was resolved. */
  async function nextToDo(request: FastifyRequest, d: DiscussionRow) {
    const { discussions: rows } = await discussions.list({ siteId: d.siteId, state: TABS[0].scope, sort: 'activity', offset: 0, limit: 2 })
    const next = rows.find((r) => r.number !== d.number)
    return next ? { number: next.number, title: next.title, href: `${base(request)}/discussions/${next.number}` } : null
  }

  async function discussionPage(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, shown: Shown = {}) {
    const { site, user } = request.web
    const query = request.query as { done?: unknown; saved_reply?: unknown }
    const [all, comments, staff, saved, copied, policy, firings, mergedHere, siteFields, customer] = await Promise.all([
      categories.list(site.id, 0, -1),
      discussions.comments(d.id),
      users.staffOf(site.id),
      savedReplies.list(site.id),
      mailboxes.participants(d.id),
      d.slaPolicyId === null ? undefined : fastify.slaPolicies.find(site.id, d.slaPolicyId),
      rules.firings(d.id),
      merges.mergesInto(d.id),
      // The site's fields, of discussions and of customers, read once.
      fastify.fields.list(site.id),
      // Its customer, with the team's record of them: the author, when a customer of the site.
      fastify.fields.customer(site.id, d.authorId),
    ])
    const defined = siteFields.filter((f) => f.of === 'discussion')
    const ofCustomers = siteFields.filter((f) => f.of === 'customer')
    // What the API shows beside each comment, read as the API reads it.
    const extras = await commentExtras(fastify, comments, d.id)
    // A saved reply chosen (a GET, so it works without JavaScript): its text, filled in, is the draft.
    const chosen = saved.find((r) => r.id === whole(query.saved_reply))
    const draft = shown.draft ?? (chosen ? fillSavedReply(chosen.body, { customerName: d.authorName, supporterName: user!.name, siteName: site.name, number: d.number }) : '')
    const done = typeof query.done === 'string' ? DONE[query.done] : undefined
    return reply.page(
      'discussion',
      pageData(request, reply, {
        title: d.title,
        discussion: {
          number: d.number,
          title: d.title,
          state: d.state,
          public: d.public,
          category: all.categories.find((c) => c.id === d.categoryId)!.name,
          author: d.authorName,
          authorEmail: d.authorEmail,
          created: shownMoment(d.createdAt),
          owner: d.assigneeName,
          mine: d.assigneeId === user!.id,
          tags: tagList(d.tags).map((tag) => ({ tag, href: `${base(request)}/discussions?tag=${encodeURIComponent(tag)}` })),
          href: `${base(request)}/discussions/${d.number}`,
          sla: policy ? slaFacts(policy.name, d) : null,
        },
        comments: comments.map((c) => ({
          ...pageExtras(extras(c), base(request), fastify.mailAttachBytes),
          number: c.number,
          body: c.body,
          internal: c.internal,
          authorId: c.authorId,
          author: c.authorName,
          authorEmail: c.authorEmail,
          bySupporter: c.bySupporter,
          via: c.via === 'email' && extras(c).mail?.mailbox ? `, by mail to ${extras(c).mail!.mailbox}` : VIA[c.via],
          when: shownMoment(c.createdAt),
          movedFrom: c.movedFrom === null ? null : { number: c.movedFrom, comment: c.movedFromNumber },
        })),
        // The discussions merged into this one; the last may be undone for a day (db/stores/merges.ts).
        merges: mergedHere.map((m) => ({ number: m.fromNumber, title: m.fromTitle, comments: m.comments, when: shownMoment(m.createdAt), undoable: m.undoable })),
        mergeable: d.state !== 'deleted' && d.state !== 'spam',
        // Its custom fields (issue 72): each with its value, shown and set by kind.
        fields: fieldsShown(defined, valuesOf(d.fields)),
        customerFields: customer && ofCustomers.length > 0 ? fieldsShown(ofCustomers, customer.fields) : null,
        splitFrom: d.splitFrom === null ? null : { number: d.splitFrom, href: `${base(request)}/discussions/${d.splitFrom}` },
        participants: copied.map((p) => ({ email: p.email, name: p.name, how: p.addedBy === 'mail' ? "copied on the customer's mail" : 'added by the team' })),
        categories: all.categories.map((c) => ({ id: c.id, name: c.name, selected: c.id === d.categoryId })),
        staff: staff.map((s) => ({ id: s.id, name: s.name, selected: s.id === d.assigneeId })),
        savedReplies: saved.map((r) => ({ id: r.id, title: r.title, selected: r === chosen })),
        // The saved replies with actions: the macros.
        macros: saved.filter((r) => r.actions !== '[]').map((r) => ({ id: r.id, title: r.title })),
        firings: await firingsShown(site.id, firings),
        actions: actionsFor(d.state),
        // A spam discussion's sender, blocked in one click by an administrator (the sender rules are theirs).
        block: d.state === 'spam' && user!.administrator ? blockChoices(d.authorEmail) : null,
        // A collaborator writes internal notes only: the page offers nothing else (routes/web/pages.ts).
        notesOnly: user!.collaborator,
        queue: `${base(request)}/discussions`,
        error: shown.error ?? null,
        done: done ?? null,
        next: query.done === 'resolve' || query.done === 'sent-resolved' ? await nextToDo(request, d) : null,
        draft,
        internal: shown.internal ?? false,
        seen: shown.seen ?? d.commentsCount,
        fileLimits: { count: MESSAGE_LIMITS.files, size: shownSize(fileLimits.fileBytes) },
        live: `${base(request)}/live`,
        presenceEvery: REPLYING_BEAT_MS,
      }),
      shown.status ?? 200,
    )
  }

  /** The rules applied to the discussion, oldest first: who, why, when, what (the names read only when there are some). */
  async function firingsShown(siteId: number, firings: RuleFiring[]) {
    if (firings.length === 0) return []
    const names = await actionNamesOf(fastify, siteId)
    return firings.map((f) => ({ name: f.ruleName, why: TRIGGER_NAMES[f.trigger as keyof typeof TRIGGER_NAMES], when: shownMoment(f.at), did: f.actions.map((a) => describeAction(a, names)).join(', ') }))
  }

  fastify.get('/discussions/:number', supporters, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (d?.state !== 'merged') return d && discussionPage(request, reply, d)
    // A merged discussion's page is the one it went into (db/stores/merges.ts), for as long as it is merged.
    const into = await discussions.current(d.siteId, d.number)
    return reply.redirect(`${base(request)}/discussions/${into.number}`, 307)
  })

  /**
   * Runs a change of the page's discussion. A discussion changed by someone else meanwhile (deleted
   * while a reply was being written, say) refuses the change in the store: the page is shown again
   * as it is now, `409`, with what was typed still in the form, as the API answers 409.
   */
  async function change(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, work: () => Promise<unknown>, kept: Shown = {}) {
    const error = await refusalOf(work, ['invalid'])
    if (!error) return true
    // A discussion is never removed from its site (deleting it is a state), so it is read again.
    const now = await discussions.get(d.siteId, d.number)
    if (error.code === 'invalid') await discussionPage(request, reply, now, { ...kept, status: 400, error: `That was not done: ${error.field === 'assignee' ? 'the owner ' : error.field === 'customer' ? 'its author ' : error.field?.startsWith('fields.') ? `${error.field.slice('fields.'.length)} ` : ''}${error.message}.` })
    else if (error.code === 'too_large') await discussionPage(request, reply, now, { ...kept, status: 413, error: `That was not sent: ${error.message}. Choose fewer or smaller files, then send it again.` })
    else await discussionPage(request, reply, now, { ...kept, status: 409, error: `That was not done: ${error.message}. Someone changed the discussion since the page was shown.` })
    return false
  }

  /** After a change: back to the discussion with its message, where a reload shows it again without sending the form twice. */
  const back = (request: FastifyRequest, reply: FastifyReply, number: number, done: string, anchor = '') =>
    reply.redirect(`${base(request)}/discussions/${number}?done=${done}${anchor}`, 303)

  /** Runs a change of the page's discussion (`change`), then back to it with the message `done`. */
  async function changed(request: FastifyRequest, reply: FastifyReply, d: DiscussionRow, work: () => Promise<unknown>, done: string) {
    return (await change(request, reply, d, work)) ? back(request, reply, d.number, done) : reply
  }

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

  /** Who wrote on the discussion after comment `seen`, other than the sender: their names, or none. */
  async function othersSince(d: DiscussionRow, seen: number, me: number): Promise<string[]> {
    if (seen >= d.commentsCount) return []
    const newer = await discussions.comments(d.id, seen, d.commentsCount - seen)
    return [...new Set(newer.filter((c) => c.authorId !== me).map((c) => c.authorName))]
  }

  // A reply may be as long as the API takes (MAX_BODY characters), which a form encodes in up to
  // nine bytes each: more than the pages' usual 64 KiB.
  // Dropped before a refusal is sent (onError), and after any answer that did not take them (a
  // redirect to add a second factor first, say): only uploads no comment carries are removed.
  // A collaborator's internal note (routes/web/pages.ts, requireSupporter).
  const note = { notesOnly: (body: unknown) => (body as { internal?: unknown } | undefined)?.internal === 'yes' }
  fastify.post('/discussions/:number/reply', { ...forms, config: note, bodyLimit: REPLY_FORM_BYTES, preValidation: replyWithFiles, onError: dropUploads, onResponse: dropUploads }, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return (await dropUploads(request), reply)
    // The form's fields (CSRF has checked there is a form).
    const body = request.body as { body?: unknown; internal?: unknown; then?: unknown; seen?: unknown }
    const text = typeof body.body === 'string' ? body.body : ''
    const internal = body.internal === 'yes'
    const problem = messageProblem(text)
    if (problem) {
      await dropUploads(request)
      return discussionPage(request, reply, d, { status: 400, error: request.uploaded?.length ? `${problem} Choose the files again too.` : problem, internal })
    }
    // Someone else wrote since the page was loaded: the reply waits for a second click, the page
    // now showing what they wrote (and `seen` moved on, so the next click sends).
    const others = await othersSince(d, Number(whole(body.seen) ?? d.commentsCount), request.web.user!.id)
    if (others.length > 0) {
      await dropUploads(request)
      return discussionPage(request, reply, d, { status: 409, error: `${others.join(', ')} wrote since you opened this page: read it above. Your reply was not sent yet: send it again to send it as it is (its files, if it had any, chosen again).`, draft: text, internal })
    }
    const resolve = body.then === 'resolve' && !internal
    let number = 0
    const sent = await change(request, reply, d, async () => {
      const input = { siteId: d.siteId, number: d.number, body: text, internal, resolve, supporterId: request.web.user!.id, via: 'web' as const, uploads: request.uploaded }
      number = (await discussions.reply(input)).comment.number
    }, { draft: text, internal })
    if (!sent) await dropUploads(request)
    return sent ? back(request, reply, d.number, resolve ? 'sent-resolved' : internal ? 'noted' : 'sent', `#comment-${number}`) : reply
  })

  fastify.post('/discussions/:number/act', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const { action, confirmed } = request.body as { action?: unknown; confirmed?: unknown }
    if (!actionsFor(d.state).some((a) => a.action === action)) {
      return discussionPage(request, reply, d, { status: 409, error: 'That cannot be done to the discussion as it is now. It may have changed since the page was shown.' })
    }
    // Deleting asks first: the page that asks posts the same form, confirmed.
    if (action === 'delete' && confirmed !== 'yes') {
      return reply.page('confirm_delete', pageData(request, reply, { title: `Delete “${d.title}”?`, discussion: { number: d.number, title: d.title, href: `${base(request)}/discussions/${d.number}` } }))
    }
    return changed(request, reply, d, () => discussions.act(d.siteId, d.number, action as Action, undefined, actorOf(request)), action as string)
  })

  // Merging into another discussion of the site, named by its number or address (lib/merge-target.ts):
  // then to that one's page, where the comments are now.
  fastify.post('/discussions/:number/merge', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const into = (request.body as { into?: unknown } | undefined)?.into
    const target = typeof into === 'string' ? mergeTarget(into, [`${base(request)}/discussions`, urls.discussions(request.web.site.permalink)]) : { problem: 'is missing' }
    if ('problem' in target) return discussionPage(request, reply, d, { status: 400, error: `That was not done: the discussion to merge into ${target.problem}. Give its number (#12) or its address.` })
    return (await change(request, reply, d, () => merges.merge(d.siteId, d.number, target.number, actorOf(request)))) ? back(request, reply, target.number, 'merged') : reply
  })

  // A new discussion of one comment (and those after it, when ticked): then to its page.
  fastify.post('/discussions/:number/split', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const body = (request.body ?? {}) as { comment?: unknown; following?: unknown; title?: unknown }
    const comment = whole(body.comment)
    if (comment === undefined) return discussionPage(request, reply, d, { status: 400, error: 'That was not done: give the number of the comment the new discussion starts with.' })
    const title = typeof body.title === 'string' && body.title.trim() !== '' ? body.title.trim().slice(0, MAX_TITLE) : undefined
    let made: DiscussionRow | undefined
    const split = () => merges.split(d.siteId, d.number, { comment, following: body.following === 'yes', title }, request.web.user!.id, 'web', actorOf(request)).then((m) => void (made = m))
    return (await change(request, reply, d, split)) ? back(request, reply, made!.number, 'split') : reply
  })

  // Undoing the last merge into the page's discussion: the discussion merged is back (its own page).
  fastify.post('/discussions/:number/unmerge', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const from = whole((request.body as { from?: unknown } | undefined)?.from)
    if (from === undefined) return discussionPage(request, reply, d, { status: 400, error: 'That was not done: say which merge to undo.' })
    return (await change(request, reply, d, () => merges.unmerge(d.siteId, from, actorOf(request)))) ? back(request, reply, from, 'unmerged') : reply
  })

  fastify.post('/discussions/:number/category', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const categoryId = whole((request.body as { category?: unknown } | undefined)?.category)
    const category = categoryId === undefined ? undefined : await categories.find(d.siteId, categoryId)
    if (!category) return discussionPage(request, reply, d, { status: 400, error: 'Choose one of the categories of this site.' })
    return changed(request, reply, d, () => discussions.update(d.siteId, d.number, { categoryId: category.id }), 'moved')
  })

  // The owner: one of the site's supporters (`me` for the one signed in), or nobody (`none`).
  fastify.post('/discussions/:number/assign', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const to = (request.body as { to?: unknown } | undefined)?.to
    const me = request.web.user!
    const assigneeId = to === 'me' ? me.id : to === 'none' ? null : whole(to)
    if (assigneeId === undefined) return discussionPage(request, reply, d, { status: 400, error: 'Choose a supporter of this site, or nobody.' })
    return changed(request, reply, d, () => discussions.update(d.siteId, d.number, { assigneeId, actor: me }), 'assigned')
  })

  // Participants: copied on its public replies by mail (db/stores/mail.ts), added and removed here as by the API.
  fastify.post('/discussions/:number/participants', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const { email, remove } = (request.body ?? {}) as { email?: unknown; remove?: unknown }
    if (typeof email !== 'string' || email.trim() === '') return discussionPage(request, reply, d, { status: 400, error: 'Write the address of the person to copy.' })
    if (remove === 'yes') return changed(request, reply, d, () => mailboxes.removeParticipant(d.id, email), 'uncopied')
    return changed(request, reply, d, () => mailboxes.addParticipants(d, [{ email: email.slice(0, 254) }], 'team', true), 'copied')
  })

  // Its custom fields, as the form sends them (fieldsGiven): the API's PUT of `fields`.
  fastify.post('/discussions/:number/fields', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const given = fieldsGiven(await fastify.fields.list(d.siteId, { of: 'discussion' }), (request.body ?? {}) as Record<string, unknown>)
    return changed(request, reply, d, () => discussions.update(d.siteId, d.number, { fields: given }), 'fields')
  })

  // Its customer's fields (of: customer), as the form sends them: the API's PUT /<site>/customers/<id>.
  fastify.post('/discussions/:number/customer_fields', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const given = fieldsGiven(await fastify.fields.list(d.siteId, { of: 'customer' }), (request.body ?? {}) as Record<string, unknown>)
    return changed(request, reply, d, async () => {
      if (!(await fastify.fields.setCustomerValues(d.siteId, d.authorId, given, actorOf(request)))) throw new StoreError('is no customer of this site: the discussion was started by its team', 'invalid', 'customer')
    }, 'customer_fields')
  })

  fastify.post('/discussions/:number/tags', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    // No field (or not text) is no tags.
    const tags = splitTags(String((request.body as { tags?: unknown }).tags ?? ''))
    return changed(request, reply, d, () => discussions.update(d.siteId, d.number, { tags }), 'tagged')
  })

  // A macro (a saved reply with actions): its text as the supporter's reply, then its actions, in one go, as the API's apply_macro.
  fastify.post('/discussions/:number/macro', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    const macro = await savedReplies.find(d.siteId, whole((request.body as { macro?: unknown }).macro) ?? 0)
    if (!macro) return discussionPage(request, reply, d, { status: 400, error: 'Choose one of the macros of this site.' })
    return changed(request, reply, d, () => rules.applyMacro(d.siteId, d.number, macro.id, request.web.user!, { via: 'web' }), 'macro')
  })

  // Blocking a spam discussion's sender, its address or its whole domain: the administrators' (the
  // API's sender rules are theirs too), from the spam notice of the page.
  fastify.post('/discussions/:number/block', forms, async (request, reply) => {
    const d = await discussionOf(request, reply)
    if (!d) return reply
    if (!request.web.user!.administrator) return discussionPage(request, reply, d, { status: 403, error: `Only the administrators of ${request.web.site.name} block senders.` })
    const choices = blockChoices(d.authorEmail)
    const { sender } = request.body as { sender?: unknown }
    const pattern = sender === 'address' || sender === 'domain' ? choices[sender] : undefined
    if (d.state !== 'spam' || pattern === undefined) {
      return discussionPage(request, reply, d, { status: 409, error: 'That cannot be done to the discussion as it is now. It may have changed since the page was shown.' })
    }
    return changed(request, reply, d, () => senders.set(d.siteId, pattern, 'block'), 'blocked')
  })
}

/** What a spam discussion's page offers to block: its customer's address, and their domain when it is one a rule may name (not a top-level domain alone). */
export function blockChoices(email: string): { address?: string; domain?: string } {
  const valid = (given: string) => {
    try {
      return senderPattern(given)
    } catch {
      return undefined
    }
  }
  const address = valid(email)
  const domain = address && valid(address.slice(address.lastIndexOf('@') + 1))
  return { ...(address && { address }), ...(domain && { domain }) }
}

/** A comment's files, mail and sender verdict as its page shows them. */
/** What the page says of a discussion's SLA: its policy, each running clock's due time, what it broke (lib/sla.ts). */
function slaFacts(policy: string, d: DiscussionRow) {
  const clock = clockOf(d)
  return {
    policy,
    due: dueTimes(clock).map(([kind, at]) => `${promiseNames[kind][0]!.toUpperCase()}${promiseNames[kind].slice(1)} due ${shownMoment(at)}`),
    breached: clock.breached.map((kind) => promiseNames[kind]),
  }
}

function pageExtras({ attachments = [], delivery, mail }: CommentExtras, base: string, attachBytes: number) {
  // The sender's rule (plugins/mail/sender.ts): past the limit, a reply's files go as links.
  const linked = attachments.reduce((sum, a) => sum + a.size, 0) > attachBytes
  return {
    files: attachments.map((a) => ({ name: a.name, size: shownSize(a.size), href: `${base}/files/${a.id}`, image: shownInline(a.name, a.contentType) })),
    delivery: delivery ? `${deliveryLine(delivery)}${linked ? `; its files as links, more than a mail carries (${shownSize(attachBytes)})` : ''}` : null,
    notVerified: mail?.verified === false,
    spamReason: mail?.spamReason ?? null,
  }
}

/** How a reply's mail is doing, as its byline says it. */
function deliveryLine(delivery: Delivery): string {
  const state = delivery.state === 'failed' ? `failed (${delivery.lastError})` : delivery.state === 'queued' && delivery.lastError ? `queued, to be tried again (${delivery.lastError})` : delivery.state
  return `Mailed to ${delivery.to}${delivery.cc.length > 0 ? `, copying ${delivery.cc.join(', ')}` : ''}: ${state}`
}

/** The actions a discussion in this state offers on its page, as buttons. */
export function actionsFor(state: DiscussionState): Array<{ action: Action; label: string; danger?: boolean }> {
  if (state === 'deleted') return [{ action: 'restore', label: 'Restore' }]
  const remove = { action: 'delete' as const, label: 'Delete…', danger: true }
  // Spam is neither resolved nor open: "Not spam" brings it back (and allows its sender), or it goes.
  if (state === 'spam') return [{ action: 'not_spam', label: 'Not spam' }, remove]
  const resolve = state === 'resolved' ? { action: 'unresolve' as const, label: 'Unresolve' } : { action: 'resolve' as const, label: 'Resolve' }
  return [resolve, { action: 'spam', label: 'Spam' }, remove]
}

export default discussionRoutes
