import { businessMinutesBetween, type Schedule } from './business-time.ts'
import { DAY_MS, dayStart } from './clock.ts'

// Reports (issue 69; docs/decisions.md, "Reports"): what a discussion's writes leave behind for
// them, as pure steps, and the reports made of it. Each write that moves a fact (created, the
// team's first public reply, a reply, resolved, reopened, rated) keeps it on the discussion's row
// and adds it to the site's day rows (db/stores/reports.ts), one row a UTC day for the site as a
// whole and one for each supporter, category, channel and tag it was counted under, with the
// times as histograms. A report over a year reads at most a few hundred day rows a group, never a
// discussion or a comment.

/** What a day row counts. */
export const counters = ['created', 'resolved', 'reopened', 'replies', 'firstReplies', 'slaKept', 'slaBreached', 'ratedGood', 'ratedBad'] as const
export type Counter = (typeof counters)[number]

/** The times a day row keeps as histograms: calendar and business minutes to the first reply and to the resolution. */
export const timings = ['firstReply', 'firstReplyBusiness', 'resolution', 'resolutionBusiness'] as const
export type Timing = (typeof timings)[number]

/** What a day row is about: the site as a whole, or one supporter, category, channel or tag. */
export const dimensions = ['all', 'supporter', 'category', 'channel', 'tag', 'field'] as const
export type Dimension = (typeof dimensions)[number]

/** A histogram of minutes: the lower bound of each bucket (bucketOf) and how many fell in it. */
export type Histogram = Record<string, number>

/** Minutes below this are kept exactly; above it, each doubling is cut in SUBBUCKETS. */
export const EXACT_BELOW = 128
const SUBBUCKETS = 64

/**
 * The bucket a time falls in, as its lower bound in minutes: the time itself below EXACT_BELOW
 * (two hours and eight minutes), above it rounded down to one 64th of its power of two, so a
 * reported time is at most 1/64 (1.6%) under the true one, and a year's worth of times has at most
 * 900 buckets.
 */
export function bucketOf(minutes: number): number {
  const m = Math.max(0, Math.floor(minutes))
  if (m < EXACT_BELOW) return m
  const width = 2 ** (Math.floor(Math.log2(m)) - Math.log2(SUBBUCKETS))
  return Math.floor(m / width) * width
}

/** The doublings above EXACT_BELOW a dense histogram has cells for: up to 2^24 minutes (32 years); longer times count in its last cell. */
const DOUBLINGS = 24 - Math.log2(EXACT_BELOW)
/** The cells of a dense histogram (a report's groups add their day rows into one). */
export const CELLS = EXACT_BELOW + DOUBLINGS * SUBBUCKETS

/** The cell of a bucket (bucketOf) in a dense histogram, and back. */
export function cellOf(bucket: number): number {
  if (bucket < EXACT_BELOW) return bucket
  const doubling = Math.floor(Math.log2(bucket))
  return Math.min(CELLS - 1, EXACT_BELOW + (doubling - Math.log2(EXACT_BELOW)) * SUBBUCKETS + Math.floor(bucket / 2 ** (doubling - Math.log2(SUBBUCKETS))) - SUBBUCKETS)
}
export function bucketAt(cell: number): number {
  if (cell < EXACT_BELOW) return cell
  const doubling = Math.floor((cell - EXACT_BELOW) / SUBBUCKETS) + Math.log2(EXACT_BELOW)
  return (SUBBUCKETS + ((cell - EXACT_BELOW) % SUBBUCKETS)) * 2 ** (doubling - Math.log2(SUBBUCKETS))
}

/** A histogram added into dense cells. */
export function addHistogram(cells: Float64Array, histogram: Histogram): void {
  for (const bucket in histogram) cells[cellOf(Number(bucket))]! += histogram[bucket]!
}

/**
 * A histogram's JSON as a day row keeps it (`{"240": 3, "248": 1}`, with or without spaces, as
 * each engine writes it) added into dense cells without making an object of it: its digits are
 * read as bucket, count, bucket, count. A year of rows is most of what a report reads, and this
 * is several times faster than JSON.parse and a walk of the object it makes.
 */
export function addHistogramJson(cells: Float64Array, json: string): void {
  let value = -1
  let bucket = -1
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i)
    if (code >= 48 && code <= 57) {
      value = (value < 0 ? 0 : value * 10) + (code - 48)
      continue
    }
    if (value < 0) continue
    if (bucket < 0) bucket = value
    else {
      cells[cellOf(bucket)]! += value
      bucket = -1
    }
    value = -1
  }
}

/**
 * The nearest-rank percentiles (each p in 1..100) of dense cells: the smallest time at least p% of
 * the times are at or under, as its bucket's lower bound; null for none. The median is the 50th
 * (of an even count, the lower of the middle two).
 */
export function percentiles(cells: Float64Array, ps: readonly number[]): Array<number | null> {
  let total = 0
  for (const n of cells) total += n
  return ps.map((p) => {
    if (total === 0) return null
    const rank = Math.max(1, Math.ceil((p / 100) * total))
    let seen = 0
    for (let cell = 0; cell < CELLS; cell++) {
      seen += cells[cell]!
      if (seen >= rank) return bucketAt(cell)
    }
    /* c8 ignore next */
    return null
  })
}

/** One nearest-rank percentile of a histogram (percentiles). */
export function percentile(histogram: Histogram, p: number): number | null {
  const cells = new Float64Array(CELLS)
  addHistogram(cells, histogram)
  return percentiles(cells, [p])[0]!
}

/** The facts a discussion's row keeps for the reports (db/schema: firstReplyAt to ratedAt). */
export interface ReportFacts {
  firstReplyAt: Date | null
  firstReplyMinutes: number | null
  firstReplyBusiness: number | null
  resolvedAt: Date | null
  /** Its owner when it was last resolved (null: nobody owned it). */
  resolvedById: number | null
  resolutionMinutes: number | null
  resolutionBusiness: number | null
  reopens: number
  /** The team's public replies (the opening post of a discussion a supporter started is not one). */
  teamReplies: number
}

export const noFacts: ReportFacts = {
  firstReplyAt: null,
  firstReplyMinutes: null,
  firstReplyBusiness: null,
  resolvedAt: null,
  resolvedById: null,
  resolutionMinutes: null,
  resolutionBusiness: null,
  reopens: 0,
  teamReplies: 0,
}

/** What a tally is counted under: the supporter, category, channel and tags of the moment it happened. */
export interface TallyKeys {
  supporterId: number | null
  categoryId: number
  channel: string
  tags: readonly string[]
  /** Its values of the fields with few values (choice, choices, yes/no), each `key=value` (lib/fields.ts reportedValues). */
  fields?: readonly string[]
}

/** What one write adds to the day rows of one set of keys. */
export interface Tally {
  day: string
  keys: TallyKeys
  counts: Partial<Record<Counter, number>>
  /** The bucket (bucketOf) of each time the write measured. */
  times: Partial<Record<Timing, number>>
}

/** The (dimension, key) pairs of the day rows a tally adds to. */
export function rowsOf(keys: TallyKeys): Array<[Dimension, string]> {
  return [['all', ''], ['supporter', keys.supporterId === null ? '' : String(keys.supporterId)], ['category', String(keys.categoryId)], ['channel', keys.channel], ...keys.tags.map((tag): [Dimension, string] => ['tag', tag]), ...(keys.fields ?? []).map((value): [Dimension, string] => ['field', value])]
}

/** The UTC day of a moment, YYYY-MM-DD: what day rows are kept by. */
export const dayOf = (at: Date) => at.toISOString().slice(0, 10)

/**
 * The month row a day also counts in: `M` and its month (M2026-11), which no range of days
 * (YYYY-MM-DD) ever takes in. A report over months of days reads the whole months' rows and the
 * days at its edges: about 12 and 60 rows a group for a year, instead of 365.
 */
export const monthRowOf = (day: string) => `M${day.slice(0, 7)}`

/** The rows of days and months a tally adds to: (period, dimension, key). */
export function periodRowsOf(tally: Pick<Tally, 'day' | 'keys'>): Array<[string, Dimension, string]> {
  return [tally.day, monthRowOf(tally.day)].flatMap((period) => rowsOf(tally.keys).map(([dimension, key]): [string, Dimension, string] => [period, dimension, key]))
}

/** A day (or month) row as tallies add up to it, before it is written. */
export interface PendingRow {
  day: string
  dimension: Dimension
  key: string
  counts: Partial<Record<Counter, number>>
  times: Partial<Record<Timing, Histogram>>
}

/** A day (or month) row's identity in a map: its day, dimension and key. */
export const dayRowId = (row: { day: string; dimension: string; key: string }): string => `${row.day}\u0000${row.dimension}\u0000${row.key}`

/** `n` more in a histogram's bucket. */
export function addToBucket(histogram: Histogram, bucket: number, n: number): void {
  histogram[bucket] = (histogram[bucket] ?? 0) + n
}

/** Tallies added up into the rows they count in (a rebuild, the bench's year): `add` each, then `rows`. */
export function tallyRows() {
  const rows = new Map<string, PendingRow>()
  return {
    add(tally: Tally): void {
      for (const [day, dimension, key] of periodRowsOf(tally)) {
        const id = dayRowId({ day, dimension, key })
        let row = rows.get(id)
        if (!row) rows.set(id, (row = { day, dimension, key, counts: {}, times: {} }))
        for (const [c, n] of Object.entries(tally.counts) as Array<[Counter, number]>) row.counts[c] = (row.counts[c] ?? 0) + n
        for (const [t, bucket] of Object.entries(tally.times) as Array<[Timing, number]>) addToBucket((row.times[t] ??= {}), bucket, 1)
      }
    },
    rows: () => [...rows.values()],
  }
}

/**
 * How a report over days reads: whole months (their month rows) and the days before and after
 * them; all days when no whole month is in the range.
 */
export function monthsAndDays(from: string, to: string): { months: [string, string] | null; days: Array<[string, string]> } {
  const start = dayStart(from)!
  const end = dayStart(to)!
  const firstOfMonth = (at: number) => Date.UTC(new Date(at).getUTCFullYear(), new Date(at).getUTCMonth(), 1)
  const nextMonth = (at: number) => Date.UTC(new Date(at).getUTCFullYear(), new Date(at).getUTCMonth() + 1, 1)
  const first = firstOfMonth(start) === start ? start : nextMonth(start)
  const afterLast = firstOfMonth(end + DAY_MS)
  if (first >= afterLast) return { months: null, days: [[from, to]] }
  const day = (at: number) => new Date(at).toISOString().slice(0, 10)
  const days: Array<[string, string]> = []
  if (start < first) days.push([from, day(first - DAY_MS)])
  if (afterLast <= end) days.push([day(afterLast), to])
  return { months: [monthRowOf(day(first)), monthRowOf(day(afterLast - DAY_MS))], days }
}

const minutesBetween = (from: Date, to: Date) => Math.max(0, Math.floor((to.getTime() - from.getTime()) / 60_000))

/** What a write of a discussion did, as the reports see it. */
export interface ReportWrite {
  /** The facts before the write; null: it creates the discussion. */
  before: (ReportFacts & { state: string }) | null
  /** The discussion after the write. */
  after: { state: string; assigneeId: number | null; categoryId: number; channel: string; tags: readonly string[]; reportedFields?: readonly string[]; createdAt: Date }
  /** A comment the write adds (a reply), with its author. */
  comment?: { bySupporter: boolean; internal: boolean; authorId: number }
  /** The SLA after the write: whether a policy chooses it, and what it broke. */
  sla: { policyId: number | null; breached: string }
  /** The hours business minutes count in (its SLA policy's; null: around the clock). */
  schedule: Schedule | null
  at: Date
}

const open = (state: string) => state === 'new' || state === 'open'

/**
 * The facts after a write, and what it adds to the day rows: a discussion created (not one that
 * arrives as spam), the team's public reply (the first one with its times, counted under who
 * wrote it), resolved (from new or open, with its times and whether its SLA held, counted under its
 * owner), reopened (resolved, then new or open again).
 */
export function reportStep(write: ReportWrite): { facts: ReportFacts; tallies: Tally[] } {
  const { after, at, comment } = write
  const facts = Object.fromEntries(Object.keys(noFacts).map((name) => [name, (write.before ?? noFacts)[name as keyof ReportFacts]])) as unknown as ReportFacts
  const day = dayOf(at)
  const keys: TallyKeys = { supporterId: after.assigneeId, categoryId: after.categoryId, channel: after.channel, tags: after.tags, fields: after.reportedFields ?? [] }
  const business = (to: Date) => (write.schedule ? businessMinutesBetween(write.schedule, after.createdAt, to) : minutesBetween(after.createdAt, to))
  const tallies: Tally[] = []
  if (write.before === null) {
    if (after.state !== 'spam') tallies.push({ day, keys, counts: { created: 1 }, times: {} })
    return { facts, tallies }
  }
  if (comment?.bySupporter && !comment.internal) {
    facts.teamReplies += 1
    const tally: Tally = { day, keys: { ...keys, supporterId: comment.authorId }, counts: { replies: 1 }, times: {} }
    if (facts.firstReplyAt === null) {
      facts.firstReplyAt = at
      facts.firstReplyMinutes = minutesBetween(after.createdAt, at)
      facts.firstReplyBusiness = business(at)
      tally.counts.firstReplies = 1
      tally.times = { firstReply: bucketOf(facts.firstReplyMinutes), firstReplyBusiness: bucketOf(facts.firstReplyBusiness) }
    }
    tallies.push(tally)
  }
  const was = write.before.state
  if (after.state === 'resolved' && open(was)) {
    facts.resolvedAt = at
    facts.resolvedById = after.assigneeId
    facts.resolutionMinutes = minutesBetween(after.createdAt, at)
    facts.resolutionBusiness = business(at)
    const counts: Tally['counts'] = { resolved: 1 }
    if (write.sla.policyId !== null) counts[write.sla.breached === '' ? 'slaKept' : 'slaBreached'] = 1
    tallies.push({ day, keys, counts, times: { resolution: bucketOf(facts.resolutionMinutes), resolutionBusiness: bucketOf(facts.resolutionBusiness) } })
  } else if (was === 'resolved' && open(after.state)) {
    facts.reopens += 1
    tallies.push({ day, keys, counts: { reopened: 1 }, times: {} })
  }
  return { facts, tallies }
}

/** Satisfaction: good or not good (`bad` in the API's words it is `not_good`). */
export const ratings = ['good', 'not_good'] as const
export type Rating = (typeof ratings)[number]

/** How long after its resolution a discussion may be rated, and the rating changed. */
export const RATING_DAYS = 7

// ---- The reports, made of day rows ----

/** The reports there are, each with what it says. */
export const reports = {
  volume: 'Discussions created, resolved and reopened, and the team\u2019s replies',
  first_reply: 'Time to the team\u2019s first reply: median and 90th percentile, in calendar and business minutes',
  resolution: 'Time from creation to resolution: median and 90th percentile, in calendar and business minutes',
  sla: 'Discussions resolved under an SLA policy: kept and breached',
  satisfaction: 'Customers\u2019 ratings of resolved discussions: good and not good',
} as const
export type ReportName = keyof typeof reports
export const reportNames = Object.keys(reports) as ReportName[]

/** The histograms each report reads (the others' columns are not read at all). */
export const timingsOf: Record<ReportName, readonly Timing[]> = {
  volume: [],
  first_reply: ['firstReply', 'firstReplyBusiness'],
  resolution: ['resolution', 'resolutionBusiness'],
  sla: [],
  satisfaction: [],
}

/** How a report is broken down: by period (day, week from Monday, month) or by a dimension. */
export const breakdowns = ['day', 'week', 'month', 'supporter', 'category', 'channel', 'tag'] as const
export type Breakdown = (typeof breakdowns)[number]
/** What a report is broken down by: a breakdown, or a custom field's values (`field.<key>`: one choice, several, yes/no). */
export type ReportBy = Breakdown | `field.${string}`
const FIELD_BY = /^field\.[a-z][a-z0-9_]{0,39}$/

/** The longest range a report covers: two years, so this year stands beside the last. */
export const MAX_REPORT_DAYS = 731

/** A day row as read for a report. */
export interface DayRow {
  day: string
  key: string
  counts: Record<Counter, number>
  /** Each histogram's JSON as the row keeps it ('{}' for one not read). */
  times: Record<Timing, string>
}

/** The start of the period a day falls in. */
export function periodOf(day: string, by: 'day' | 'week' | 'month'): string {
  if (by === 'day') return day
  if (by === 'month') return `${day.slice(0, 7)}-01`
  const at = dayStart(day)!
  const weekday = (new Date(at).getUTCDay() + 6) % 7
  return new Date(at - weekday * DAY_MS).toISOString().slice(0, 10)
}

/** Every period from the one of `from` to the one of `to`, in order. */
export function periodsBetween(from: string, to: string, by: 'day' | 'week' | 'month'): string[] {
  const periods: string[] = []
  for (let at = dayStart(from)!; at <= dayStart(to)!; at += DAY_MS) {
    const period = periodOf(new Date(at).toISOString().slice(0, 10), by)
    if (periods[periods.length - 1] !== period) periods.push(period)
  }
  return periods
}

/** The day rows of one group added together, the times in dense cells (cellOf). */
export interface Group {
  counts: Record<Counter, number>
  times: Record<Timing, Float64Array>
}

/** No times yet: a group's cells are made when a row brings times (a report of counts makes none). */
const NO_TIMES = new Float64Array(CELLS)

export const emptyGroup = (): Group => ({
  counts: Object.fromEntries(counters.map((c) => [c, 0])) as Record<Counter, number>,
  times: Object.fromEntries(timings.map((t) => [t, NO_TIMES])) as Record<Timing, Float64Array>,
})

function addTo(group: Group, row: Pick<DayRow, 'counts' | 'times'>): void {
  for (const c of counters) group.counts[c] += row.counts[c]
  for (const t of timings) {
    if (row.times[t] === '{}') continue
    if (group.times[t] === NO_TIMES) group.times[t] = new Float64Array(CELLS)
    addHistogramJson(group.times[t], row.times[t])
  }
}

/** A report's figures of one group: counts, shares in percent and times in minutes (null: none to measure). */
export type Figures = Record<string, number | null>
/** A report's line: one period or one group, as the API, the CSV and the page show it. */
export type ReportLine = { key: string; label: string; [figure: string]: string | number | null }

const share = (part: number, whole: number) => (whole === 0 ? null : Math.round((part / whole) * 1000) / 10)

/** A report's figures of one group. */
export function figuresOf(name: ReportName, g: Group): Figures {
  const timesOf = (calendar: Timing, business: Timing, count: number) => {
    const [median, p90] = percentiles(g.times[calendar], [50, 90])
    const [businessMedian, businessP90] = percentiles(g.times[business], [50, 90])
    return { count, median_minutes: median!, p90_minutes: p90!, median_business_minutes: businessMedian!, p90_business_minutes: businessP90! }
  }
  const c = g.counts
  switch (name) {
    case 'volume':
      return { created: c.created, resolved: c.resolved, reopened: c.reopened, replies: c.replies }
    case 'first_reply':
      return timesOf('firstReply', 'firstReplyBusiness', c.firstReplies)
    case 'resolution':
      return timesOf('resolution', 'resolutionBusiness', c.resolved)
    case 'sla':
      return { kept: c.slaKept, breached: c.slaBreached, kept_percent: share(c.slaKept, c.slaKept + c.slaBreached) }
    case 'satisfaction':
      return { good: c.ratedGood, not_good: c.ratedBad, good_percent: share(c.ratedGood, c.ratedGood + c.ratedBad) }
  }
}

/** The columns of a report's lines after `key` and `label`, in order (the CSV's header). */
export const columnsOf = (name: ReportName): string[] => Object.keys(figuresOf(name, emptyGroup()))

/**
 * The lines of a report from its day rows: one per period (every period of the range, empty ones
 * too, so a chart has no gaps) or one per group found (the most active first).
 */
export function reportLines(name: ReportName, by: ReportBy, range: { from: string; to: string }, rows: readonly DayRow[]): Array<{ key: string; group: Group }> {
  const groups = new Map<string, Group>()
  const period = by === 'day' || by === 'week' || by === 'month' ? by : null
  if (period) for (const p of periodsBetween(range.from, range.to, period)) groups.set(p, emptyGroup())
  for (const row of rows) {
    const key = period ? periodOf(row.day, period) : row.key
    let group = groups.get(key)
    if (!group) groups.set(key, (group = emptyGroup()))
    addTo(group, row)
  }
  const lines = [...groups].map(([key, group]) => ({ key, group }))
  if (period) return lines
  // A group is in a report for what it counts there (a supporter who resolved none is not in the resolutions').
  return lines.filter((l) => weight(name, l.group) > 0).sort((a, b) => weight(name, b.group) - weight(name, a.group) || a.key.localeCompare(b.key))
}

/**
 * The rows added together: the total of a report, from the site's own rows (a tag's rows count a
 * discussion under each of its tags, so their sum is not the site's).
 */
export function groupOf(rows: ReadonlyArray<Pick<DayRow, 'counts' | 'times'>>): Group {
  const total = emptyGroup()
  for (const row of rows) addTo(total, row)
  return total
}

/** What orders a report's groups: how much each counts in it. */
function weight(name: ReportName, g: Group): number {
  const c = g.counts
  return { volume: c.created + c.resolved + c.replies, first_reply: c.firstReplies, resolution: c.resolved, sla: c.slaKept + c.slaBreached, satisfaction: c.ratedGood + c.ratedBad }[name]
}

/** A CSV field (RFC 4180), with a leading =, +, - or @ made text so a spreadsheet runs no formula. */
export function csvField(value: string | number | null): string {
  if (value === null) return ''
  let text = String(value)
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** Lines as CSV, a header first. */
export function toCsv(columns: readonly string[], lines: readonly ReportLine[]): string {
  return [columns, ...lines.map((line) => columns.map((c) => line[c] ?? null))].map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n'
}

/** A report's range and breakdown as asked (the API's query, the page's form), or what is wrong with it and where. */
export function reportQuery(asked: { from?: string; to?: string; by?: string }, today: string): { from: string; to: string; by: ReportBy } | { problem: string; field: string } {
  const to = asked.to || today
  if (dayStart(to) === undefined) return { problem: 'must be a day, YYYY-MM-DD', field: 'to' }
  const from = asked.from || new Date(dayStart(to)! - 29 * DAY_MS).toISOString().slice(0, 10)
  if (dayStart(from) === undefined) return { problem: 'must be a day, YYYY-MM-DD', field: 'from' }
  if (from > to) return { problem: 'must not be after `to`', field: 'from' }
  if ((dayStart(to)! - dayStart(from)!) / DAY_MS + 1 > MAX_REPORT_DAYS) return { problem: `must be at most ${MAX_REPORT_DAYS} days before \`to\``, field: 'from' }
  const by = asked.by || 'day'
  if (!(breakdowns as readonly string[]).includes(by) && !FIELD_BY.test(by)) return { problem: `must be one of ${breakdowns.join(', ')}, or field.<key> (a custom field of one choice, several or yes/no)`, field: 'by' }
  return { from, to, by: by as ReportBy }
}

/** Minutes as a person reads them: 2 d 4 h, 3 h 20 min, 45 min. */
export function shownMinutes(minutes: number | null): string {
  if (minutes === null) return '—'
  const d = Math.floor(minutes / 1440)
  const h = Math.floor((minutes % 1440) / 60)
  const m = minutes % 60
  return [d > 0 ? `${d} d` : '', h > 0 ? `${h} h` : '', m > 0 && d === 0 ? `${m} min` : ''].filter(Boolean).join(' ') || '0 min'
}
