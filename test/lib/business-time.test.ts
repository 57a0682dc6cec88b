import fc from 'fast-check'
import t from 'tap'
import { addBusinessMinutes, businessMinutesBetween, clockOf, daysText, weekText, hoursProblem, isTimeZone, minutesOf, parseDays, parseWeek, type Interval, type Schedule } from '../../lib/business-time.ts'

// Engines: one: pure arithmetic, no database.
// Issue 68, item 5: business time written once (lib/business-time.ts), checked on the issue's
// example and against an oracle that walks the minutes one by one, reading each one's wall-clock
// time in the zone through Intl (not the library the code uses): across summer-time changes,
// midnight, holidays, split shifts and zones with half and quarter hours.

const weekdays = (hours: Interval[]): Interval[][] => [hours, hours, hours, hours, hours, [], []]
const berlin: Schedule = { timeZone: 'Europe/Berlin', week: weekdays([[9 * 60, 18 * 60]]), days: {} }
const at = (iso: string) => new Date(iso)

t.test("the issue's example: Friday 17:55 in Berlin, four business hours", async (t) => {
  const friday = at('2026-03-06T16:55:00Z') // 17:55 in Berlin (UTC+1)
  t.same(addBusinessMinutes(berlin, friday, 240), at('2026-03-09T11:55:00Z'), 'Monday 12:55')
  const holiday = { ...berlin, days: { '2026-03-09': [] } }
  t.same(addBusinessMinutes(holiday, friday, 240), at('2026-03-10T11:55:00Z'), 'a Monday holiday: Tuesday 12:55')
  t.equal(businessMinutesBetween(berlin, friday, at('2026-03-09T11:55:00Z')), 240, 'and back')
  t.equal(businessMinutesBetween(holiday, friday, at('2026-03-09T11:55:00Z')), 5, 'the holiday counts nothing')
  t.same(addBusinessMinutes(berlin, friday, 0), friday, 'no minutes: the moment itself')
  t.same(addBusinessMinutes(berlin, friday, 5), at('2026-03-06T17:00:00Z'), 'the last minute ends at the closing time')
  t.equal(businessMinutesBetween(berlin, friday, friday), 0)
  t.equal(businessMinutesBetween(berlin, at('2026-03-09T12:00:00Z'), friday), 0, 'backwards: none')
  t.equal(addBusinessMinutes({ ...berlin, week: weekdays([]) }, friday, 1), null, 'a schedule without hours has no deadline')
  // A one-off: the Saturday before Christmas, open 10:00-14:00.
  const oneOff = { ...berlin, days: { '2026-12-19': [[600, 840]] as Interval[] } }
  t.same(addBusinessMinutes(oneOff, at('2026-12-18T16:30:00Z'), 60), at('2026-12-19T09:30:00Z'), 'Friday 17:30 + 60: Saturday 10:30')
})

t.test('summer time: a day of 23 hours and one of 25, for a team open all day and night', async (t) => {
  const always: Schedule = { timeZone: 'Europe/Berlin', week: Array.from({ length: 7 }, () => [[0, 1440]] as Interval[]), days: {} }
  t.equal(businessMinutesBetween(always, at('2026-03-28T23:00:00Z'), at('2026-03-29T22:00:00Z')), 23 * 60, 'the last Sunday of March')
  t.equal(businessMinutesBetween(always, at('2026-10-24T22:00:00Z'), at('2026-10-25T23:00:00Z')), 25 * 60, 'the last Sunday of October')
  t.same(addBusinessMinutes(always, at('2026-03-29T00:30:00Z'), 60), at('2026-03-29T01:30:00Z'), 'elapsed time across the change')
})

t.test('the rules of a day: times, intervals, zones', async (t) => {
  t.equal(minutesOf('09:30'), 570)
  t.equal(minutesOf('24:00'), 1440)
  for (const bad of ['24:01', '9:30', '25:00', '12:60', '', '12:00 ']) t.equal(minutesOf(bad), undefined, bad)
  t.equal(clockOf(570), '09:30')
  t.equal(clockOf(1440), '24:00')
  t.equal(hoursProblem([[540, 720], [780, 1080]]), null, 'a split shift')
  t.equal(hoursProblem([]), null, 'a day off')
  t.equal(hoursProblem([[600, 540]]), 'each interval must end after it starts')
  t.equal(hoursProblem([[540, 720], [700, 1080]]), 'intervals must be in order and not overlap')
  t.equal(hoursProblem([[-1, 60]]), 'each time between 00:00 and 24:00')
  t.equal(hoursProblem([[0.5, 60]]), 'each time between 00:00 and 24:00')
  t.equal(hoursProblem(Array.from({ length: 9 }, (_, i) => [i * 10, i * 10 + 5] as Interval)), 'at most 8 intervals a day')
  t.ok(isTimeZone('Asia/Kathmandu'))
  t.notOk(isTimeZone('Mars/Olympus_Mons'))
  t.notOk(isTimeZone('x'.repeat(65)))
})

// The oracle: each whole minute from `from`, open when its wall-clock time in the zone (read by
// Intl) falls in that local date's hours.
const walls = new Map<string, Intl.DateTimeFormat>()
function wall(zone: string, ms: number): { date: string; weekday: number; minute: number } {
  let format = walls.get(zone)
  if (!format) walls.set(zone, (format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', weekday: 'short' })))
  const parts = Object.fromEntries(format.formatToParts(ms).map((p) => [p.type, p.value]))
  return { date: `${parts.year}-${parts.month}-${parts.day}`, weekday: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(parts.weekday!), minute: Number(parts.hour) * 60 + Number(parts.minute) }
}
function openAt(schedule: Schedule, ms: number): boolean {
  const { date, weekday, minute } = wall(schedule.timeZone, ms)
  const hours = schedule.days[date] ?? schedule.week[weekday]!
  return hours.some(([start, end]) => minute >= start && minute < end)
}

// Office hours between 06:00 and 22:00, so no boundary falls in the hour a clock change skips or
// repeats (01:00-03:00 in these zones): there wall-clock time and elapsed time part, and the code's
// rule is elapsed time (the summer-time test above).
const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Adelaide', 'Asia/Kathmandu', 'America/St_Johns']
const dayHours = fc
  .uniqueArray(fc.integer({ min: 24, max: 88 }), { minLength: 0, maxLength: 6 })
  .map((quarters) => quarters.sort((a, b) => a - b))
  .map((q) => {
    const hours: Interval[] = []
    for (let i = 0; i + 1 < q.length; i += 2) hours.push([q[i]! * 15, q[i + 1]! * 15])
    return hours
  })
// Around the changes of March and October (both hemispheres), and any day of the year.
const moments = fc.oneof(
  fc.integer({ min: Date.UTC(2026, 2, 26), max: Date.UTC(2026, 3, 8) }),
  fc.integer({ min: Date.UTC(2026, 9, 22), max: Date.UTC(2026, 10, 4) }),
  fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 28) }),
).map((ms) => ms - (ms % 60_000))
const schedules = fc.record({
  timeZone: fc.constantFrom(...ZONES),
  week: fc.array(dayHours, { minLength: 7, maxLength: 7 }),
  holidays: fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 3 }),
})

t.test('against the oracle: business minutes between two moments, and the deadline they give', async (t) => {
  fc.assert(
    fc.property(schedules, moments, fc.integer({ min: 0, max: 3 * 1440 }), ({ timeZone, week, holidays }, from, span) => {
      // Holidays: whole days off, near `from`.
      const days: Record<string, Interval[]> = {}
      for (const n of holidays) days[wall(timeZone, from + n * 86_400_000).date] = []
      const schedule: Schedule = { timeZone, week, days }
      let open = 0
      for (let ms = from; ms < from + span * 60_000; ms += 60_000) if (openAt(schedule, ms)) open++
      if (businessMinutesBetween(schedule, new Date(from), new Date(from + span * 60_000)) !== open) return false
      if (open === 0) return true
      // The deadline of `open` minutes is the end of the last open minute counted.
      let last = from + span * 60_000 - 60_000
      while (!openAt(schedule, last)) last -= 60_000
      return addBusinessMinutes(schedule, new Date(from), open)?.getTime() === last + 60_000
    }),
    { numRuns: 150 },
  )
  t.pass('150 schedules in six zones, around both changes of the year')
})

t.test("a schedule's dates as lines and back, whatever their names and hours", async (t) => {
  const word = fc.stringMatching(/^[\p{L}\p{N}'.-]{1,12}$/u)
  const days = fc.dictionary(
    fc.date({ min: new Date(Date.UTC(2026, 0, 1)), max: new Date(Date.UTC(2030, 11, 31)), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
    fc.record({ name: fc.array(word, { maxLength: 4 }).map((words) => words.join(' ')), hours: dayHours }),
    { maxKeys: 12 },
  )
  fc.assert(
    fc.property(days, (written) => {
      const read = parseDays(daysText(written))
      t.same(read, written)
      return typeof read !== 'string'
    }),
    { numRuns: 100 },
  )
  t.equal(parseDays('2026-12-24'), '"2026-12-24": a date (YYYY-MM-DD), its hours (09:00-14:00, or closed), then a name if you like')
  t.equal(parseDays('24.12.2026 closed'), '"24.12.2026 closed": a date (YYYY-MM-DD), its hours (09:00-14:00, or closed), then a name if you like')
  t.equal(parseDays('2026-12-24 10:00-09:00'), '"2026-12-24 10:00-09:00": each interval must end after it starts')
  t.equal(weekText([[], [], [], [], [], [], []]), 'closed', 'a week of no hours')
  t.equal(parseWeek('mon closed; tue 09:00-10:00').toString(), [[], [[540, 600]], [], [], [], [], []].toString(), 'closed reads as no hours in a week too')
})
