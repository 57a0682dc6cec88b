import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { clockOf, minutesOf, type Interval } from '../../lib/business-time.ts'
import type { ScheduleInput, ScheduleRow, SpecialDay } from '../../db/stores/schedules.ts'
import { MAX_DAYS, MAX_SCHEDULE_NAME } from '../../db/stores/schedules.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { publicHolidays } from '../../lib/holidays.ts'
import { actorOf } from '../actor.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly, answeredAsDiscussions } from './administrators-only.ts'

// A site's business hours through the API (issue 68; docs/decisions.md, "Business hours"): read by
// its support staff, written by its administrators. Times are a local "HH:MM" in the schedule's
// zone; a weekday left out or given [] is closed.

const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const

const Clock = Type.String({ pattern: '^([01][0-9]|2[0-4]):[0-5][0-9]$', description: 'A local time, HH:MM (24:00: midnight at the end of the day).', errorMessage: { pattern: 'must be a time HH:MM' } })
const Hours = Type.Array(Type.Object({ from: Clock, to: Clock }, { additionalProperties: false }), { maxItems: 8, description: 'The open intervals of the day, in order (a split shift has two).' })
const Week = Type.Object(Object.fromEntries(WEEKDAYS.map((day) => [day, Type.Optional(Hours)])) as Record<(typeof WEEKDAYS)[number], ReturnType<typeof Type.Optional<typeof Hours>>>, {
  additionalProperties: false,
  description: 'The hours of each weekday; a day left out is closed.',
})
const Day = Type.Object(
  {
    date: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A local date, YYYY-MM-DD.', errorMessage: { pattern: 'must be a date YYYY-MM-DD' } }),
    name: Type.Optional(Type.String({ maxLength: MAX_SCHEDULE_NAME, description: 'What it is: "Christmas", "Inventory day".' })),
    hours: Hours,
  },
  { additionalProperties: false },
)
const Days = Type.Array(Day, { maxItems: MAX_DAYS, description: 'Dates whose hours are not their weekday\'s: a holiday has no hours ([]), a one-off its own.' })
const Name = Type.String({ minLength: 1, maxLength: MAX_SCHEDULE_NAME, pattern: '\\S', errorMessage: { pattern: 'must not be blank' } })
const Zone = Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone: Europe/Berlin, America/Chicago.' })

export const ScheduleResource = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  time_zone: Type.String(),
  hours: Type.Object(Object.fromEntries(WEEKDAYS.map((day) => [day, Hours])) as Record<(typeof WEEKDAYS)[number], typeof Hours>),
  days: Type.Array(Type.Object({ date: Type.String(), name: Type.String(), hours: Hours }), { description: 'In date order.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  href: Type.String({ format: 'uri' }),
})
export const ScheduleListing = Type.Object({ schedules: Type.Array(ScheduleResource) })
const HolidaysOf = Type.String({
  pattern: '^[A-Za-z]{2}(-[A-Za-z0-9]{1,3})?$',
  description: "Prefill days off with a country's public holidays (ISO 3166: DE) or a region's (DE-BE), this year and next; the days given win over them.",
  errorMessage: { pattern: 'must be a country code (DE) or a region (DE-BE)' },
})
export const NewSchedule = Type.Object({ name: Name, time_zone: Zone, hours: Week, days: Type.Optional(Days), holidays_of: Type.Optional(HolidaysOf) }, { additionalProperties: false })
export const ScheduleChange = Type.Object({ name: Type.Optional(Name), time_zone: Type.Optional(Zone), hours: Type.Optional(Week), days: Type.Optional(Days) }, { additionalProperties: false, minProperties: 1 })
const ScheduleParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The schedule id.' }) })
const tags = ['business hours']
const errors = { 400: InvalidRequestBody, 404: ErrorBody }

/** The API's intervals as minutes (the schema has checked their form; the store checks their order). */
const intervals = (hours: Static<typeof Hours>): Interval[] => hours.map(({ from, to }) => [minutesOf(from)!, minutesOf(to)!])
const shownHours = (hours: Interval[]) => hours.map(([from, to]) => ({ from: clockOf(from), to: clockOf(to) }))

/** The body's fields as the store takes them. */
function inputOf(body: Partial<Static<typeof NewSchedule>>): Partial<ScheduleInput> {
  const days: Record<string, SpecialDay> = {}
  for (const day of body.days ?? []) {
    if (days[day.date]) throw new StoreError(`${day.date} is given twice`, 'invalid', 'days')
    days[day.date] = { name: day.name ?? '', hours: intervals(day.hours) }
  }
  return {
    ...(body.name !== undefined && { name: body.name }),
    ...(body.time_zone !== undefined && { timeZone: body.time_zone }),
    ...(body.hours !== undefined && { week: WEEKDAYS.map((day) => intervals(body.hours![day] ?? [])) }),
    ...(body.days !== undefined && { days }),
  }
}

function view(base: string, s: ScheduleRow): Static<typeof ScheduleResource> {
  return {
    id: s.id,
    name: s.name,
    time_zone: s.timeZone,
    hours: Object.fromEntries(WEEKDAYS.map((day, i) => [day, shownHours(s.week[i]!)])) as Static<typeof ScheduleResource>['hours'],
    days: Object.keys(s.days)
      .sort()
      .map((date) => ({ date, name: s.days[date]!.name, hours: shownHours(s.days[date]!.hours) })),
    created_at: moment(s.createdAt),
    updated_at: moment(s.updatedAt),
    href: `${base}/schedules/${s.id}`,
  }
}

const readRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.get('/:site/schedules', { schema: { tags, operationId: 'listSchedules', summary: "The site's business hours, by name", params: SiteParams, response: { 200: ScheduleListing, ...errors } } }, async (request) => {
    const { site } = request.auth!
    return { schedules: (await fastify.schedules.list(site.id)).map((s) => view(base(site.permalink), s)) }
  })
  fastify.get('/:site/schedules/:id', { schema: { tags, operationId: 'getSchedule', summary: 'One schedule of business hours', params: ScheduleParams, response: { 200: ScheduleResource, ...errors } } }, async (request) => {
    const { site } = request.auth!
    const found = await fastify.schedules.find(site.id, request.params.id)
    if (!found) throw notFound(`there is no schedule ${request.params.id} on this site`)
    return view(base(site.permalink), found)
  })
}

const writeRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its business hours')
  const base = (permalink: string) => fastify.urls.site(permalink)
  fastify.post(
    '/:site/schedules',
    { schema: { tags, operationId: 'addSchedule', summary: 'New business hours (administrators)', params: SiteParams, body: NewSchedule, response: { 201: ScheduleResource, ...errors, 409: ErrorBody, 415: ErrorBody, 429: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const input = { days: {}, ...inputOf(request.body) } as ScheduleInput
      if (request.body.holidays_of !== undefined) {
        const holidays = await publicHolidays(request.body.holidays_of, fastify.clock())
        if (!holidays) throw new StoreError(`"${request.body.holidays_of}" is not a country or region the holiday calendars know`, 'invalid', 'holidays_of')
        input.days = { ...holidays, ...input.days }
      }
      const made = await fastify.schedules.add(site.id, input, actorOf(request))
      const resource = view(base(site.permalink), made)
      return reply.code(201).header('location', resource.href).send(resource)
    },
  )
  fastify.patch(
    '/:site/schedules/:id',
    { schema: { tags, operationId: 'changeSchedule', summary: 'Change its name, zone, hours or dates (administrators)', params: ScheduleParams, body: ScheduleChange, response: { 200: ScheduleResource, ...errors, 409: ErrorBody, 415: ErrorBody } } },
    async (request) => {
      const { site } = request.auth!
      return view(base(site.permalink), await fastify.schedules.update(site.id, request.params.id, inputOf(request.body), actorOf(request)))
    },
  )
  fastify.delete(
    '/:site/schedules/:id',
    { schema: { tags, operationId: 'removeSchedule', summary: 'Remove business hours (administrators)', params: ScheduleParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await fastify.schedules.remove(request.auth!.site.id, request.params.id, actorOf(request))
      return reply.code(204).send(null)
    },
  )
}

/** GET for the support staff; POST, PATCH and DELETE for the administrators. */
const scheduleRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  await fastify.register(readRoutes)
  await fastify.register(writeRoutes)
}

export default scheduleRoutes
