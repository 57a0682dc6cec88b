import type { DateTime } from 'luxon'
import { dateTime } from './packages.ts'

// Business time (issue 68; docs/decisions.md, "Business hours"): a team's working hours per weekday
// in an IANA time zone, several intervals a day (split shifts), and dates whose hours differ (a
// holiday: none; a one-off: others). Written once, here, for every deadline the service computes.
// The zone's rules (summer time, half-hour zones, a day that starts at 01:00) are luxon's: a local
// time a clock change skips is taken at the moment after the gap, one it repeats at its first.

/** Minutes from local midnight: [start, end), 0 <= start < end <= 1440. */
export type Interval = readonly [number, number]

export interface Schedule {
  timeZone: string
  /** Monday first, as ISO numbers its days: week[0] is Monday, week[6] Sunday. */
  week: ReadonlyArray<ReadonlyArray<Interval>>
  /** Dates (YYYY-MM-DD, local) whose hours are not the weekday's: [] for a day off. */
  days: Readonly<Record<string, ReadonlyArray<Interval>>>
}

/** How far ahead a deadline is looked for: a schedule with no hours in ten years has none. */
export const HORIZON_DAYS = 3660
const MINUTE_MS = 60_000

/** The instant of `minute` minutes after local midnight of `day` (1440: the next day's midnight). */
function instant(day: DateTime, minute: number): number {
  if (minute === 1440) return day.plus({ days: 1 }).startOf('day').toMillis()
  return day.set({ hour: Math.floor(minute / 60), minute: minute % 60, second: 0, millisecond: 0 }).toMillis()
}

/** The open intervals of one local day, as instants in order. */
function openOn(schedule: Schedule, day: DateTime): Array<[number, number]> {
  const hours = schedule.days[day.toISODate()!] ?? schedule.week[day.weekday - 1]!
  return hours.map(([start, end]) => [instant(day, start), instant(day, end)])
}

/** The local day of an instant in the schedule's zone. */
const dayOf = (schedule: Schedule, at: number) => dateTime().fromMillis(at, { zone: schedule.timeZone }).startOf('day')

/**
 * The moment `minutes` business minutes after `from`; `from` itself for none; null when the
 * schedule has not that many in HORIZON_DAYS. A deadline falls inside business hours, never at a
 * closing time when the next opening would do (it ends the interval that uses its last minute).
 */
export function addBusinessMinutes(schedule: Schedule, from: Date, minutes: number): Date | null {
  if (minutes <= 0) return from
  const start = from.getTime()
  let left = minutes * MINUTE_MS
  let day = dayOf(schedule, start)
  for (let i = 0; i < HORIZON_DAYS; i++, day = day.plus({ days: 1 })) {
    for (const [open, close] of openOn(schedule, day)) {
      const begin = Math.max(open, start)
      if (close <= begin) continue
      if (left <= close - begin) return new Date(begin + left)
      left -= close - begin
    }
  }
  return null
}

/** The business minutes between two moments (0 when `to` is not after `from`), whole minutes down. */
export function businessMinutesBetween(schedule: Schedule, from: Date, to: Date): number {
  const start = from.getTime()
  const end = to.getTime()
  let total = 0
  for (let day = dayOf(schedule, start); day.toMillis() < end; day = day.plus({ days: 1 })) {
    for (const [open, close] of openOn(schedule, day)) total += Math.max(0, Math.min(close, end) - Math.max(open, start))
  }
  return Math.floor(total / MINUTE_MS)
}

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  return zone.length <= 64 && dateTime().now().setZone(zone).isValid
}

/** What is wrong with a day's hours, or null: whole minutes, each start before its end, in order, not overlapping, at most 8. */
export function hoursProblem(hours: ReadonlyArray<Interval>): string | null {
  if (hours.length > 8) return 'at most 8 intervals a day'
  let last = 0
  for (const [start, end] of hours) {
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > 1440) return 'each time between 00:00 and 24:00'
    if (start >= end) return 'each interval must end after it starts'
    if (start < last) return 'intervals must be in order and not overlap'
    last = end
  }
  return null
}

/** "09:30" as minutes from midnight (24:00 is 1440); undefined for anything else. */
export function minutesOf(text: string): number | undefined {
  const match = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(text)
  if (!match) return undefined
  const minutes = Number(match[1]) * 60 + Number(match[2])
  return minutes <= 1440 ? minutes : undefined
}

/** Minutes from midnight as "HH:MM". */
export function clockOf(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`
}

const DAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']

/** A week's hours as words, day by day (`mon 09:00-12:00,13:00-18:00; sat 10:00-14:00`), `closed` for none; `between` joins a day's intervals. */
export function weekText(week: ReadonlyArray<ReadonlyArray<Interval>>, between = ','): string {
  const days = week.map((hours, i) => (hours.length === 0 ? null : `${DAY_NAMES[i]} ${hoursText(hours).replaceAll(',', between)}`)).filter(Boolean)
  return days.join('; ') || 'closed'
}

/** A day's intervals as words: 09:00-12:00,13:00-18:00, or closed. */
const hoursText = (hours: ReadonlyArray<Interval>) => (hours.length === 0 ? 'closed' : hours.map(([a, b]) => `${clockOf(a)}-${clockOf(b)}`).join(','))

/** Intervals written 09:00-12:00,13:00-18:00 (or `closed`), or what is wrong. */
function parseHours(text: string): Interval[] | string {
  if (text.toLowerCase() === 'closed') return []
  const intervals: Interval[] = []
  for (const span of text.split(',')) {
    const [start, end] = span.split('-').map(minutesOf)
    if (start === undefined || end === undefined) return `"${span}": hours are HH:MM-HH:MM`
    intervals.push([start, end])
  }
  return hoursProblem(intervals) ?? intervals
}

/** The dates of a schedule as lines a person edits: `2026-12-24 09:00-14:00 Christmas Eve`, `2026-12-25 closed Christmas Day`, in date order. */
export function daysText(days: Readonly<Record<string, { name: string; hours: ReadonlyArray<Interval> }>>): string {
  return Object.keys(days)
    .sort()
    .map((date) => `${date} ${hoursText(days[date]!.hours)}${days[date]!.name ? ` ${days[date]!.name}` : ''}`)
    .join('\n')
}

/** daysText's lines read back (blank lines aside): the dates with their names and hours, or what is wrong with which line. */
export function parseDays(text: string): Record<string, { name: string; hours: Interval[] }> | string {
  const days: Record<string, { name: string; hours: Interval[] }> = {}
  for (const line of text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean)) {
    const [date, hours, ...name] = line.split(/\s+/)
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date!) || hours === undefined) return `"${line}": a date (YYYY-MM-DD), its hours (09:00-14:00, or closed), then a name if you like`
    if (days[date!]) return `${date} is given twice`
    const intervals = parseHours(hours)
    if (typeof intervals === 'string') return `"${line}": ${intervals}`
    days[date!] = { name: name.join(' '), hours: intervals }
  }
  return days
}

/**
 * A week's hours written as the command line takes them: `mon-fri 09:00-18:00; sat 10:00-12:00,13:00-14:00`
 * (days or ranges of days, then intervals; a day not named is closed); the week (Monday first), or
 * what is wrong.
 */
export function parseWeek(text: string): Interval[][] | string {
  const week: Interval[][] = [[], [], [], [], [], [], []]
  for (const part of text.split(';').map((p) => p.trim()).filter(Boolean)) {
    const [days, hours, ...rest] = part.split(/\s+/)
    if (!hours || rest.length > 0) return `"${part}": days, then their hours (mon-fri 09:00-18:00)`
    const [first, last = first] = days!.toLowerCase().split('-')
    const from = DAY_NAMES.indexOf(first!)
    const to = DAY_NAMES.indexOf(last!)
    if (from < 0 || to < from) return `"${days}": days are mon, tue, wed, thu, fri, sat, sun, or a range of them (mon-fri)`
    const intervals = parseHours(hours)
    if (typeof intervals === 'string') return intervals.startsWith('"') ? intervals : `"${part}": ${intervals}`
    for (let day = from; day <= to; day++) week[day] = intervals
  }
  return week
}
