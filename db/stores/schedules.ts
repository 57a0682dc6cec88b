import { and, asc, count, eq } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { hoursProblem, isTimeZone, type Interval, type Schedule } from '../../lib/business-time.ts'
import { holdsNul } from '../../lib/nul.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { namedOncePerSite, StoreError } from './errors.ts'
import { bumpRulesVersion, lockSite } from './sites.ts'

// A site's business hours (issue 68; docs/decisions.md, "Business hours"), one store for both
// engines: a named schedule per team (Berlin, Austin), each the hours of its weekdays in an IANA
// zone and the dates whose hours differ; what lib/business-time.ts computes deadlines over.

/** A site keeps at most this many schedules, and a schedule this many dates of its own (two years of holidays and one-offs, many times over). */
export const MAX_SCHEDULES = 20
export const MAX_DAYS = 400
export const MAX_SCHEDULE_NAME = 100

/** A date whose hours are not its weekday's: a holiday (no hours), or a one-off. */
export interface SpecialDay {
  name: string
  hours: Interval[]
}

export interface ScheduleRow {
  id: number
  siteId: number
  name: string
  timeZone: string
  /** Monday first. */
  week: Interval[][]
  /** By date (YYYY-MM-DD). */
  days: Record<string, SpecialDay>
  createdAt: Date
  updatedAt: Date
}

export interface ScheduleInput {
  name: string
  timeZone: string
  week: Interval[][]
  days: Record<string, SpecialDay>
}

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']

/** A real calendar date, YYYY-MM-DD. */
function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  const date = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text)
}

/** The input checked whole, or a StoreError naming the field. */
export function checkedSchedule(input: Partial<ScheduleInput>): Partial<ScheduleInput> {
  if (input.name !== undefined) {
    const name = input.name.trim()
    if (name === '' || name.length > MAX_SCHEDULE_NAME || holdsNul(name)) throw new StoreError(`must be 1 to ${MAX_SCHEDULE_NAME} characters`, 'invalid', 'name')
    input = { ...input, name }
  }
  if (input.timeZone !== undefined && !isTimeZone(input.timeZone)) throw new StoreError(`"${input.timeZone}" is not a time zone (an IANA name such as Europe/Berlin)`, 'invalid', 'time_zone')
  input.week?.forEach((hours, i) => {
    const problem = hoursProblem(hours)
    if (problem) throw new StoreError(`${WEEKDAYS[i]}: ${problem}`, 'invalid', 'hours')
  })
  if (input.days !== undefined) {
    const dates = Object.keys(input.days)
    if (dates.length > MAX_DAYS) throw new StoreError(`at most ${MAX_DAYS} dates`, 'invalid', 'days')
    for (const date of dates) {
      if (!isDate(date)) throw new StoreError(`"${date}" is not a date (YYYY-MM-DD)`, 'invalid', 'days')
      const { name, hours } = input.days[date]!
      if (name.length > MAX_SCHEDULE_NAME || holdsNul(name)) throw new StoreError(`${date}: a name of at most ${MAX_SCHEDULE_NAME} characters`, 'invalid', 'days')
      const problem = hoursProblem(hours)
      if (problem) throw new StoreError(`${date}: ${problem}`, 'invalid', 'days')
    }
  }
  return input
}

/** A row as the store gives it. */
function scheduleOf(row: Tables['schedules']['$inferSelect']): ScheduleRow {
  return { ...row, week: JSON.parse(row.week) as Interval[][], days: JSON.parse(row.days) as Record<string, SpecialDay> }
}

/** What lib/business-time.ts computes over. */
export function businessSchedule(row: ScheduleRow): Schedule {
  return { timeZone: row.timeZone, week: row.week, days: Object.fromEntries(Object.entries(row.days).map(([date, day]) => [date, day.hours])) }
}

/** What the record of changes says of a schedule: its fields, the dates by count and list. */
const shown = (s: Pick<ScheduleRow, 'name' | 'timeZone' | 'week' | 'days'>) => ({ name: s.name, time_zone: s.timeZone, hours: JSON.stringify(s.week), days: Object.keys(s.days).sort().join(' ') })

export function createScheduleStore(port: StorePort, clock: Clock) {
  const { db, tables: { schedules } } = port
  const mine = (siteId: number, id: number) => and(eq(schedules.siteId, siteId), eq(schedules.id, port.wide(id)))
  const notFound = (id: number) => new StoreError(`there is no schedule ${id} on this site`, 'not_found', 'schedule')

  return {
    /** The site's schedules, by name. */
    async list(siteId: number): Promise<ScheduleRow[]> {
      return (await db.select().from(schedules).where(eq(schedules.siteId, siteId)).orderBy(port.folded(schedules.name), asc(schedules.id))).map(scheduleOf)
    },

    async find(siteId: number, id: number): Promise<ScheduleRow | undefined> {
      const [row] = await db.select().from(schedules).where(mine(siteId, id))
      return row && scheduleOf(row)
    },

    /** A new schedule; at most MAX_SCHEDULES a site (counted under the site's lock). */
    async add(siteId: number, input: ScheduleInput, by?: Actor): Promise<ScheduleRow> {
      const checked = checkedSchedule(input) as ScheduleInput
      return namedOncePerSite('a schedule', checked.name, () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const [{ n }] = await tx.db.select({ n: count() }).from(schedules).where(eq(schedules.siteId, siteId))
          if (Number(n) >= MAX_SCHEDULES) throw new StoreError(`a site keeps at most ${MAX_SCHEDULES} schedules; remove one first`, 'limit')
          const at = new Date(clock())
          const [row] = await tx.db
            .insert(schedules)
            .values({ siteId, name: checked.name, timeZone: checked.timeZone, week: JSON.stringify(checked.week), days: JSON.stringify(checked.days), createdAt: at, updatedAt: at })
            .returning()
          await recordChange(tx, clock, by, siteId, 'schedule.created', checked.name, { time_zone: checked.timeZone, dates: Object.keys(checked.days).length })
          return scheduleOf(row!)
        }),
      )
    },

    /** Changes what is given; a StoreError for a schedule of another site or none. */
    async update(siteId: number, id: number, input: Partial<ScheduleInput>, by?: Actor): Promise<ScheduleRow> {
      const checked = checkedSchedule(input)
      return namedOncePerSite('a schedule', checked.name, () =>
        port.atomic(async (tx) => {
          const [found] = await tx.locked(tx.db.select().from(schedules).where(mine(siteId, id)))
          if (!found) throw notFound(id)
          const before = scheduleOf(found)
          const [row] = await tx.db
            .update(schedules)
            .set({
              ...(checked.name !== undefined && { name: checked.name }),
              ...(checked.timeZone !== undefined && { timeZone: checked.timeZone }),
              ...(checked.week !== undefined && { week: JSON.stringify(checked.week) }),
              ...(checked.days !== undefined && { days: JSON.stringify(checked.days) }),
              updatedAt: new Date(clock()),
            })
            .where(mine(siteId, id))
            .returning()
          const after = scheduleOf(row!)
          // The SLA policies counting in these hours read them again (db/stores/sla.ts, policiesOf).
          await bumpRulesVersion(tx, siteId)
          const difference = changedFields(shown(before), shown(after))
          if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'schedule.changed', before.name, difference)
          return after
        }),
      )
    },

    async remove(siteId: number, id: number, by?: Actor): Promise<void> {
      await port.atomic(async (tx) => {
        const { slaPolicies } = tx.tables
        const using = await tx.db.select({ name: slaPolicies.name }).from(slaPolicies).where(and(eq(slaPolicies.siteId, siteId), eq(slaPolicies.scheduleId, tx.wide(id))))
        if (using.length > 0) throw new StoreError(`SLA policies count in these hours (${using.map((p) => `"${p.name}"`).join(', ')}); give them other hours first`, 'conflict', 'schedule')
        const [gone] = await tx.db.delete(schedules).where(mine(siteId, id)).returning({ name: schedules.name })
        if (!gone) throw notFound(id)
        await recordChange(tx, clock, by, siteId, 'schedule.removed', gone.name)
      })
    },
  }
}

export type ScheduleStore = ReturnType<typeof createScheduleStore>
