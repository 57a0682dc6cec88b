import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { daysText, parseDays, parseWeek, weekText } from '../../lib/business-time.ts'
import { publicHolidays } from '../../lib/holidays.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { actorOf } from '../actor.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/hours: the site's business hours for its administrators (issue 68;
// docs/decisions.md, "Business hours"), as the API's /<site>/schedules and `schedule add` have
// them: each schedule with its zone, its week and how many dates of its own; a new one written as
// the command line takes it (mon-fri 09:00-18:00; sat 10:00-14:00), a country's holidays prefilled.

const NOTICES: Record<string, string> = { added: 'The business hours are added.', removed: 'The business hours are removed.', dates: 'The dates are saved.' }
const STATUS: Record<string, number> = { conflict: 409, not_found: 404, invalid: 400, limit: 429 }

const adminHoursRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, schedules } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/hours`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/hours')] }
  const field = (request: FastifyRequest, name: string) => {
    const value = (request.body as Record<string, unknown> | undefined)?.[name]
    return typeof value === 'string' ? value.trim() : ''
  }

  async function hoursPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const rows = (await schedules.list(request.web.site.id)).map((s) => ({
      id: s.id,
      name: s.name,
      timeZone: s.timeZone,
      week: weekText(s.week, ', '),
      dates: Object.keys(s.days).length,
      daysText: daysText(s.days),
    }))
    const done = (request.query as { done?: unknown }).done
    const values = { name: '', zone: '', hours: 'mon-fri 09:00-18:00', holidays: '' }
    return reply.page('admin_hours', pageData(request, reply, { title: 'Business hours', rows, values, notice: NOTICES[String(done)] ?? null, error: null, ...extra }), status)
  }

  fastify.get('/admin/hours', { preHandler: requireAdministrator }, (request, reply) => hoursPage(request, reply))

  fastify.post('/admin/hours', action, async (request, reply) => {
    const values = { name: field(request, 'name'), zone: field(request, 'zone'), hours: field(request, 'hours'), holidays: field(request, 'holidays') }
    const refused = (error: string, status = 400) => hoursPage(request, reply, status, { values, error })
    const week = parseWeek(values.hours)
    if (typeof week === 'string') return refused(`The hours: ${week}.`)
    const days = values.holidays === '' ? {} : await publicHolidays(values.holidays, fastify.clock())
    if (!days) return refused(`The holidays: "${values.holidays}" is not a country (DE) or region (DE-BE) the calendars know.`)
    const error = await refusalOf(() => schedules.add(request.web.site.id, { name: values.name, timeZone: values.zone, week, days }, actorOf(request)), ['invalid', 'conflict', 'limit'])
    if (error) return refused(sentence(error.code === 'invalid' ? `The ${error.field === 'time_zone' ? 'time zone' : error.field} ${error.message}` : error.message), STATUS[error.code])
    return reply.redirect(`${base(request)}?done=added`, 303)
  })

  // The dates of a schedule (holidays prefilled from a calendar, one-offs), edited as lines and saved whole.
  fastify.post('/admin/hours/:id/days', action, async (request, reply) => {
    const id = wholeNumber((request.params as { id: string }).id, 10) ?? 0
    const days = parseDays(field(request, 'days'))
    if (typeof days === 'string') return hoursPage(request, reply, 400, { error: sentence(`The dates: ${days}`) })
    const error = await refusalOf(() => schedules.update(request.web.site.id, id, { days }, actorOf(request)), ['invalid', 'not_found'])
    if (error) return hoursPage(request, reply, STATUS[error.code], { error: error.code === 'not_found' ? 'This site has no such business hours.' : sentence(`The dates: ${error.message}`) })
    return reply.redirect(`${base(request)}?done=dates`, 303)
  })

  fastify.post('/admin/hours/:id/remove', action, async (request, reply) => {
    const id = wholeNumber((request.params as { id: string }).id, 10) ?? 0
    const error = await refusalOf(() => schedules.remove(request.web.site.id, id, actorOf(request)), ['not_found'])
    if (error) return hoursPage(request, reply, 404, { error: 'This site has no such business hours.' })
    return reply.redirect(`${base(request)}?done=removed`, 303)
  })
}

export default adminHoursRoutes
