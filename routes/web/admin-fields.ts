import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { FieldChange, FieldInput } from '../../db/stores/fields.ts'
import { fieldAudiences, fieldKinds, type FieldAudience, type FieldKind, type FieldSubject } from '../../lib/fields.ts'
import { actorOf } from '../actor.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/fields: the site's custom fields for its administrators (issue 72;
// docs/decisions.md, "Custom fields"), as the API's /<site>/fields has them: each changed on its
// row (name, audience, required, choices; its key and kind stay), removed (its values stay
// readable), and a new one added below; the removed ones listed last, for what they were.

const NOTICES: Record<string, string> = {
  added: 'The field is added.',
  changed: 'The field is changed.',
  removed: 'The field is removed; the values given stay on their discussions.',
}
const STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400, limit: 409 }
const KIND_NAMES: Record<FieldKind, string> = { text: 'Text', number: 'Number', date: 'Date', choice: 'One choice', choices: 'Several choices', yes_no: 'Yes or no', link: 'Link' }

/** The choices box: one a line, blank lines passed over. */
const choicesOf = (text: string) => text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '')

const adminFieldRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, fields } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/fields`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/fields')] }
  const form = (request: FastifyRequest) => (request.body ?? {}) as Record<string, unknown>
  const text = (value: unknown) => (typeof value === 'string' ? value : '')
  const empty = { key: '', name: '', kind: 'text', audience: 'team', required: '', choices: '', of: 'discussion' }

  async function fieldsPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const all = await fields.list(request.web.site.id, { removed: true })
    const row = (f: (typeof all)[number]) => ({ ...f, kindName: KIND_NAMES[f.kind], ofCustomers: f.of === 'customer', choicesText: (JSON.parse(f.choices) as string[]).join('\n'), chosen: f.kind === 'choice' || f.kind === 'choices' })
    const done = (request.query as { done?: unknown }).done
    return reply.page(
      'admin_fields',
      pageData(request, reply, {
        title: 'Fields',
        rows: all.filter((f) => f.removedAt === null).map(row),
        removed: all.filter((f) => f.removedAt !== null).map(row),
        kinds: fieldKinds.map((kind) => ({ kind, name: KIND_NAMES[kind] })),
        values: empty,
        notice: NOTICES[String(done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  /** Runs a change; a refusal of the store is the page again, saying why. */
  async function changed(request: FastifyRequest, reply: FastifyReply, done: string, work: () => Promise<unknown>, values = empty) {
    const error = await refusalOf(work, ['invalid', 'not_found', 'conflict', 'limit'])
    if (!error) return reply.redirect(`${base(request)}?done=${done}`, 303)
    const what = error.field ? `The field's ${error.field}` : 'That'
    return fieldsPage(request, reply, STATUS[error.code]!, { error: sentence(`${what} ${error.message}`), values })
  }

  const audienceOf = (value: unknown): FieldAudience => (fieldAudiences as readonly string[]).includes(text(value)) ? (text(value) as FieldAudience) : 'team'

  fastify.get('/admin/fields', { preHandler: requireAdministrator }, (request, reply) => fieldsPage(request, reply))

  fastify.post('/admin/fields', action, async (request, reply) => {
    const body = form(request)
    const values = { key: text(body.key).trim(), name: text(body.name), kind: text(body.kind), audience: audienceOf(body.audience), required: body.required === 'yes' ? 'yes' : '', choices: text(body.choices), of: body.of === 'customer' ? 'customer' : 'discussion' }
    if (!(fieldKinds as readonly string[]).includes(values.kind)) return fieldsPage(request, reply, 400, { error: `The field's kind must be one of ${fieldKinds.join(', ')}.`, values })
    const kind = values.kind as FieldKind
    const input: FieldInput = { key: values.key, name: values.name, kind, audience: values.audience, required: values.required === 'yes', choices: kind === 'choice' || kind === 'choices' ? choicesOf(values.choices) : [], of: values.of as FieldSubject }
    return changed(request, reply, 'added', () => fields.add(request.web.site.id, input, actorOf(request)), values)
  })

  fastify.post('/admin/fields/:id', action, async (request, reply) => {
    const id = wholeNumber((request.params as { id: string }).id, 10) ?? 0
    const body = form(request)
    if (body.remove === 'yes') return changed(request, reply, 'removed', () => fields.remove(request.web.site.id, id, actorOf(request)))
    const change: FieldChange = { name: text(body.name), audience: audienceOf(body.audience), required: body.required === 'yes' }
    // Only a field with choices has the box; a field without keeps none.
    if (typeof body.choices === 'string') change.choices = choicesOf(body.choices)
    return changed(request, reply, 'changed', () => fields.update(request.web.site.id, id, change, actorOf(request)))
  })
}

export default adminFieldRoutes
