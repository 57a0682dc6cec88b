import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { actorOf } from '../actor.ts'
import type { StoreError } from '../../db/stores/errors.ts'
import { MAX_SAVED_BODY, MAX_SAVED_TITLE } from '../../db/stores/saved-replies.ts'
import { actionNamesFrom, describeAction, type FieldAction } from '../../lib/rules.ts'
import { stillTaken } from '../../lib/fields.ts'
import { shapeOf } from '../../db/stores/fields.ts'
import { placeholderNames } from '../../lib/team-queue.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { fieldActionsOf, formOf } from './admin-rules.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/queue: how the site's queue is worked, for its administrators (docs/decisions.md,
// "The team's queue"): the saved replies every supporter chooses from, and the categories whose new
// discussions are given to the supporters in turn. The API's /<site>/saved_replies and PATCH
// /<site>/categories/<id> do the same. A saved reply given actions here is a macro (issue 70):
// applied from a discussion's page, it replies and does them in one click.

const NOTICES: Record<string, string> = {
  added: 'The saved reply is added: it is offered in every reply form.',
  changed: 'The saved reply is changed.',
  removed: 'The saved reply is removed.',
  turns: 'The categories given in turn are saved.',
}

/** A refusal's status, and how its field is named on the page. */
const STATUS: Partial<Record<StoreError['code'], number>> = { conflict: 409, not_found: 404, limit: 429, invalid: 400, too_large: 413 }
const FIELDS: Record<string, string> = { title: 'The title', body: 'The text', 'actions[]': 'An action' }

/**
 * A macro's actions as its form shows them: each field once (the form's actions, routes/web/admin-rules.ts
 * fieldActionsOf, give each once; tags added or removed by several actions, through the API, are
 * shown together, which is what they do together).
 */
function macroValuesOf(actions: FieldAction[]) {
  const values = { set_category: '', set_owner: '', add_tags: [] as string[], remove_tags: [] as string[], set_state: '' }
  const fields: string[] = []
  for (const a of actions) {
    if (a.type === 'set_category') values.set_category = String(a.category)
    else if (a.type === 'set_owner') values.set_owner = String(a.owner)
    else if (a.type === 'set_state') values.set_state = a.state
    // Custom fields are set through the API (a value of each kind is no box of this form): said, and kept when the form is saved.
    else if (a.type === 'set_fields') fields.push(describeAction(a, actionNamesFrom([], [], [])))
    else values[a.type].push(...a.tags)
  }
  return { ...values, add_tags: values.add_tags.join(', '), remove_tags: values.remove_tags.join(', '), fields: fields.join('; ') }
}

const adminQueueRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, savedReplies, categories, users } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/queue`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator] }
  const field = (body: unknown, name: string) => {
    const value = (body as Record<string, unknown> | undefined)?.[name]
    return typeof value === 'string' ? value : ''
  }

  async function queuePage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const [replies, { categories: all }, staff] = await Promise.all([savedReplies.list(site.id), categories.list(site.id, 0, -1), users.staffOf(site.id)])
    const done = (request.query as { done?: unknown }).done
    return reply.page(
      'admin_queue',
      pageData(request, reply, {
        title: 'Queue',
        replies: replies.map((r) => ({ ...r, macro: macroValuesOf(JSON.parse(r.actions) as FieldAction[]) })),
        categories: all,
        staff,
        placeholders: placeholderNames,
        limits: { title: MAX_SAVED_TITLE, body: MAX_SAVED_BODY },
        values: { title: '', body: '' },
        notice: NOTICES[String(done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  /** Runs a change of a saved reply; a refusal of the store is the page again with it, and what was typed. */
  async function saved(request: FastifyRequest, reply: FastifyReply, done: string, work: () => Promise<unknown>) {
    const error = await refusalOf(work, ['invalid', 'not_found', 'limit'])
    if (!error) return reply.redirect(`${base(request)}?done=${done}`, 303)
    const words = [FIELDS[String(error.field).replace(/\[\d+\]$/, '[]')], error.message].filter(Boolean).join(' ')
    return queuePage(request, reply, STATUS[error.code], { error: sentence(words), values: { title: field(request.body, 'title'), body: field(request.body, 'body') } })
  }

  fastify.get('/admin/queue', { preHandler: requireAdministrator }, (request, reply) => queuePage(request, reply))

  fastify.post('/admin/queue/replies', action, (request, reply) =>
    saved(request, reply, 'added', () => savedReplies.add(request.web.site.id, { title: field(request.body, 'title'), body: field(request.body, 'body') }, actorOf(request))),
  )

  fastify.post('/admin/queue/replies/:id', action, (request, reply) => {
    // Not a number: no saved reply has it (0).
    const id = wholeNumber((request.params as { id: string }).id, 12) ?? 0
    const siteId = request.web.site.id
    if (field(request.body, 'remove') === 'yes') return saved(request, reply, 'removed', () => savedReplies.remove(siteId, id, actorOf(request)))
    return saved(request, reply, 'changed', async () => {
      // The custom fields it sets (given through the API) stay: the form has no boxes for them.
      // (Those the site's fields take still: a field removed or a choice taken away since is left out, not a reason to refuse the form.)
      const [before, defined] = await Promise.all([savedReplies.list(siteId).then((all) => all.find((r) => r.id === id)), fastify.fields.list(siteId, { of: 'discussion' })])
      const setsFields = (before ? (JSON.parse(before.actions) as FieldAction[]) : []).flatMap((a) => {
        if (a.type !== 'set_fields') return []
        const fields = stillTaken(defined.map(shapeOf), a.fields)
        return Object.keys(fields).length > 0 ? [{ ...a, fields }] : []
      })
      const changes = { title: field(request.body, 'title'), body: field(request.body, 'body'), actions: [...fieldActionsOf(formOf(request.body)), ...setsFields] }
      return savedReplies.update(siteId, id, changes, actorOf(request))
    })
  })

  // One checkbox per category: those ticked are given in turn, the others not.
  fastify.post('/admin/queue/turns', action, async (request, reply) => {
    const ticked = new Set(Object.entries(request.body as Record<string, unknown>).filter(([name, value]) => name.startsWith('turn-') && value === 'yes').map(([name]) => name.slice(5)))
    const site = request.web.site
    for (const category of (await categories.list(site.id, 0, -1)).categories) {
      const on = ticked.has(String(category.id))
      if (on !== category.roundRobin) await categories.change(site.id, category.id, { roundRobin: on }, actorOf(request))
    }
    return reply.redirect(`${base(request)}?done=turns`, 303)
  })
}

export default adminQueueRoutes
