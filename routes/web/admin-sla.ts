import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { SlaPolicyInput } from '../../db/stores/sla-policies.ts'
import { slaChannels, type SlaChannel } from '../../lib/sla.ts'
import { splitTags } from '../../lib/team-queue.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { actorOf } from '../actor.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/sla: the site's SLA policies for its administrators (issue 68; docs/decisions.md,
// "SLA policies"), as the API's /<site>/sla_policies and `sla add` have them: in order, each with
// what it chooses, the hours it counts in and its targets; a new one added at the end, one moved
// up the order, one removed.

const NOTICES: Record<string, string> = { added: 'The policy is added.', removed: 'The policy is removed; the discussions it chose have no due times now.', moved: 'The policy is moved up.' }
const STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400, limit: 429 }
const CHANNEL_NAMES: Record<SlaChannel, string> = { mail: 'Mail', web: 'The support site', api: 'The API' }
const FIELD_NAMES: Record<string, string> = { first_reply_minutes: 'first reply', next_reply_minutes: 'next reply', resolution_minutes: 'resolution', warn_minutes: 'warning', schedule_id: 'hours' }

/** Minutes as a person reads them: 4 h, 1 h 30 min, 45 min. */
function duration(minutes: number | null): string {
  if (minutes === null) return '—'
  const h = Math.floor(minutes / 60)
  const m = minutes % 60
  return [h > 0 ? `${h} h` : '', m > 0 ? `${m} min` : ''].filter(Boolean).join(' ')
}

const adminSlaRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, slaPolicies, schedules, categories } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/sla`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/sla')] }
  const body = (request: FastifyRequest) => Object(request.body) as Record<string, unknown>
  const field = (request: FastifyRequest, name: string) => {
    const value = body(request)[name]
    return typeof value === 'string' ? value.trim() : ''
  }
  /** A form field that may hold several values (checkboxes, a multiple select). */
  const fields = (request: FastifyRequest, name: string) => [body(request)[name]].flat().filter((v): v is string => typeof v === 'string')

  async function slaPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const siteId = request.web.site.id
    const [policies, hours, all] = await Promise.all([slaPolicies.list(siteId), schedules.list(siteId), categories.list(siteId, 0, -1)])
    const hoursName = new Map(hours.map((s) => [s.id, s.name]))
    const categoryName = new Map(all.categories.map((c) => [c.id, c.name]))
    const rows = policies.map((p) => ({
      id: p.id,
      position: p.position,
      name: p.name,
      chooses: [
        // A category removed hands its place in the policies to the one its discussions went to (db/stores/sla-policies.ts).
        p.conditions.categories.length > 0 ? `category ${p.conditions.categories.map((id) => categoryName.get(id)!).join(' or ')}` : '',
        p.conditions.tags.length > 0 ? `tagged ${p.conditions.tags.join(' or ')}` : '',
        p.conditions.domains.length > 0 ? `from ${p.conditions.domains.join(' or ')}` : '',
        p.conditions.channels.length > 0 ? `by ${p.conditions.channels.map((c) => CHANNEL_NAMES[c].toLowerCase()).join(' or ')}` : '',
      ].filter(Boolean).join(', ') || 'every discussion',
      // A schedule a policy counts in is not removed (db/stores/schedules.ts).
      hours: p.scheduleId === null ? 'Around the clock' : hoursName.get(p.scheduleId)!,
      firstReply: duration(p.targets.firstReply),
      nextReply: duration(p.targets.nextReply),
      resolution: duration(p.targets.resolution),
      warn: p.warnBefore === 0 ? 'none' : `${duration(p.warnBefore)} before`,
    }))
    const done = (request.query as { done?: unknown }).done
    const values = { name: '', schedule: '', categories: [] as string[], tags: '', domains: '', channels: [] as string[], firstReply: '', nextReply: '', resolution: '', warn: '30' }
    return reply.page(
      'admin_sla',
      pageData(request, reply, {
        title: 'SLA policies',
        rows,
        schedules: hours.map((s) => ({ id: String(s.id), name: s.name })),
        categories: all.categories.map((c) => ({ id: String(c.id), name: c.name })),
        channels: slaChannels.map((c) => ({ value: c, label: CHANNEL_NAMES[c] })),
        values,
        notice: NOTICES[String(done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/admin/sla', { preHandler: requireAdministrator }, (request, reply) => slaPage(request, reply))

  fastify.post('/admin/sla', action, async (request, reply) => {
    const values = {
      name: field(request, 'name'),
      schedule: field(request, 'schedule'),
      categories: fields(request, 'categories'),
      tags: field(request, 'tags'),
      domains: field(request, 'domains'),
      channels: fields(request, 'channels'),
      firstReply: field(request, 'first_reply'),
      nextReply: field(request, 'next_reply'),
      resolution: field(request, 'resolution'),
      warn: field(request, 'warn'),
    }
    const refused = (error: string, status = 400) => slaPage(request, reply, status, { values, error })
    /** Minutes from a field: empty is none (null); anything but a whole number is refused by the store's rule (NaN). */
    const minutes = (text: string) => (text === '' ? null : /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN)
    const input: SlaPolicyInput = {
      name: values.name,
      conditions: {
        categories: values.categories.map((id) => wholeNumber(id, 10) ?? 0),
        tags: splitTags(values.tags),
        domains: values.domains.split(/[,\s]+/u).filter(Boolean),
        channels: values.channels as SlaChannel[],
      },
      scheduleId: values.schedule === '' ? null : (wholeNumber(values.schedule, 10) ?? 0),
      targets: { firstReply: minutes(values.firstReply), nextReply: minutes(values.nextReply), resolution: minutes(values.resolution) },
      warnBefore: minutes(values.warn) ?? 0,
    }
    const error = await refusalOf(() => slaPolicies.add(request.web.site.id, input, actorOf(request)), ['invalid', 'conflict', 'limit'])
    if (error) return refused(sentence(error.code === 'invalid' ? `The ${FIELD_NAMES[error.field!] ?? error.field} ${error.message}` : error.message), STATUS[error.code])
    return reply.redirect(`${base(request)}?done=added`, 303)
  })

  const byId = (request: FastifyRequest) => wholeNumber((request.params as { id: string }).id, 10) ?? 0

  fastify.post('/admin/sla/:id/up', action, async (request, reply) => {
    const found = await slaPolicies.find(request.web.site.id, byId(request))
    if (!found) return slaPage(request, reply, 404, { error: 'This site has no such policy.' })
    await slaPolicies.update(request.web.site.id, found.id, { position: Math.max(1, found.position - 1) }, actorOf(request))
    return reply.redirect(`${base(request)}?done=moved`, 303)
  })

  fastify.post('/admin/sla/:id/remove', action, async (request, reply) => {
    const error = await refusalOf(() => slaPolicies.remove(request.web.site.id, byId(request), actorOf(request)), ['not_found'])
    if (error) return slaPage(request, reply, 404, { error: 'This site has no such policy.' })
    return reply.redirect(`${base(request)}?done=removed`, 303)
  })
}

export default adminSlaRoutes
