import { and, asc, eq, gt, gte, inArray, lt, lte, sql, type SQL } from '../drizzle.ts'
import { DAY_MS, dayStart, type Clock } from '../../lib/clock.ts'
import { fromOf, siteMailbox, type OutboxMail } from './outbox.ts'
import { lastly, type StorePort } from '../port.ts'
import { addToBucket, bucketOf, counters, dayOf, dayRowId, figuresOf, groupOf, monthsAndDays, periodOf, periodRowsOf, reportLines, shownMinutes, tallyRows, timings, timingsOf, type ReportBy, type Group, type Counter, type DayRow, type Dimension, type Histogram, type ReportLine, type ReportName, type Tally, type Timing } from '../../lib/reports.ts'
import { tagList } from '../../lib/team-queue.ts'
import { reportedValues } from '../../lib/fields.ts'
import { StoreError } from './errors.ts'
import { reportedFieldsIn, reportedKeysIn, valuesOf } from './fields.ts'
import { enabledUser } from './staff.ts'

// The reports' day rows (issue 69; lib/reports.ts; docs/decisions.md, "Reports"): what each write
// that moves a discussion's facts adds to them, in its own transaction, by one atomic upsert of all
// the rows it counts in (the site's, its supporter's, its category's, its channel's and each of its
// tags'), and one of their times' buckets, kept apart until a fold adds them to the rows'
// histograms (docs/decisions.md, "A report's times added apart, folded in later"); and what a
// report reads of them.

/** A timing as report_times names it: by the day rows' column of its histogram (first_reply_business). */
const timingName = (port: StorePort, t: Timing): string => port.tables.reportDays[t].name

/** The upsert of `n` day (or month) rows' counts, each by its day, dimension and key, all with the same counts (prepared once per `n`). */
function addStatement(port: StorePort, n: number) {
  const { reportDays } = port.tables
  const p = sql.placeholder
  return port.prepared(`report_days_add_${n}`, (db) => {
    const shared = { siteId: p('siteId'), ...Object.fromEntries(counters.map((c) => [c, p(c)])) }
    const rows = Array.from({ length: n }, (_, i) => ({ ...shared, day: p(`y${i}`), dimension: p(`d${i}`), key: p(`k${i}`) }))
    const added = (c: Counter) => sql`${reportDays[c]} + ${sql.raw(`excluded.${reportDays[c].name}`)}`
    return db
      .insert(reportDays)
      .values(rows as never)
      .onConflictDoUpdate({ target: [reportDays.siteId, reportDays.dimension, reportDays.day, reportDays.key], set: Object.fromEntries(counters.map((c) => [c, added(c)])) })
      .prepare(`report_days_add_${n}`)
  })
}

/** The upsert of `n` buckets' rows of report_times, one more in each (prepared once per `n`). */
function addTimesStatement(port: StorePort, n: number) {
  const { reportTimes } = port.tables
  const p = sql.placeholder
  return port.prepared(`report_times_add_${n}`, (db) =>
    db
      .insert(reportTimes)
      .values(Array.from({ length: n }, (_, i) => ({ siteId: p('siteId'), day: p(`y${i}`), dimension: p(`d${i}`), key: p(`k${i}`), timing: p(`t${i}`), bucket: p(`b${i}`), count: 1 })) as never)
      .onConflictDoUpdate({ target: [reportTimes.siteId, reportTimes.dimension, reportTimes.day, reportTimes.key, reportTimes.timing, reportTimes.bucket], set: { count: sql`${reportTimes.count} + 1` } })
      .prepare(`report_times_add_${n}`),
  )
}

/**
 * Adds a write's tallies to the site's day and month rows, in the transaction of `port`: their
 * counts, and one more in the bucket of each time measured, a row of its own (report_times) until
 * foldTimes adds it to its row's histogram.
 */
export async function addTallies(port: StorePort, siteId: number, tallies: readonly Tally[]): Promise<void> {
  for (const tally of tallies) {
    const rows = periodRowsOf(tally)
    const params: Record<string, unknown> = { siteId }
    for (const c of counters) params[c] = tally.counts[c] ?? 0
    rows.forEach(([day, dimension, key], i) => Object.assign(params, { [`y${i}`]: day, [`d${i}`]: dimension, [`k${i}`]: key }))
    // Each one of the transaction's last statements, after the site's row and the counts'.
    const add = addStatement(port, rows.length)
    await lastly(port, 'd', () => add.execute(params))
    const times = (Object.entries(tally.times) as Array<[Timing, number]>).flatMap(([t, bucket]) => rows.map((row): [string, string, string, string, number] => [...row, timingName(port, t), bucket]))
    if (times.length === 0) continue
    const timed: Record<string, unknown> = { siteId }
    times.forEach(([day, dimension, key, timing, bucket], i) => Object.assign(timed, { [`y${i}`]: day, [`d${i}`]: dimension, [`k${i}`]: key, [`t${i}`]: timing, [`b${i}`]: bucket }))
    const addTimes = addTimesStatement(port, times.length)
    await lastly(port, 'e', () => addTimes.execute(timed))
  }
}

/** A rating given, changed (`before`: the one it replaces) or taken back, on the day it was first given. */
export async function addRating(port: StorePort, siteId: number, d: { categoryId: number; channel: string; tags: string; fields: string; resolvedById: number | null; assigneeId: number | null }, day: string, before: string | null, after: string): Promise<void> {
  const counts: Partial<Record<Counter, number>> = {}
  const count = (rating: string, by: number) => {
    const counter = rating === 'good' ? 'ratedGood' : 'ratedBad'
    counts[counter] = (counts[counter] ?? 0) + by
  }
  if (before !== null) count(before, -1)
  count(after, 1)
  const keys = { supporterId: d.resolvedById ?? d.assigneeId, categoryId: d.categoryId, channel: d.channel, tags: tagList(d.tags), fields: await reportedFieldsIn(port, siteId, d.fields) }
  await addTallies(port, siteId, [{ day, keys, counts, times: {} }])
}

/**
 * The times a site's writes added apart (report_times) folded into its day rows' histograms, in one
 * transaction: each bucket's row taken and its count added to its row's JSON, many writes' at once,
 * so a histogram is rewritten once a fold rather than once a write. How many buckets' rows were
 * folded. The site's row is taken first (PostgreSQL): a write takes it before its day rows and
 * buckets' rows (db/port.ts, lastly), so none holds one meanwhile, and the two never wait on each
 * other in turn.
 */
export async function foldTimes(port: StorePort, siteId: number): Promise<number> {
  const { reportDays, reportTimes, sites } = port.tables
  const timingOf = new Map(timings.map((t) => [timingName(port, t), t]))
  return port.atomic(async (tx) => {
    if (tx.kind === 'postgres') await tx.db.select({ id: sites.id }).from(sites).where(eq(sites.id, siteId)).for('no key update')
    const taken = await tx.db.delete(reportTimes).where(eq(reportTimes.siteId, siteId)).returning()
    // The rows' histograms now, of the days the buckets were added to, in one read.
    const days = [...new Set(taken.map((time) => time.day))]
    const rows = await tx.db
      .select({ dimension: reportDays.dimension, day: reportDays.day, key: reportDays.key, ...Object.fromEntries(timings.map((t) => [t, reportDays[t]])) } as { dimension: typeof reportDays.dimension; day: typeof reportDays.day; key: typeof reportDays.key } & Record<Timing, typeof reportDays.firstReply>)
      .from(reportDays)
      .where(and(eq(reportDays.siteId, siteId), inArray(reportDays.day, days)))
    const byId = new Map(rows.map((row) => [dayRowId(row), row]))
    // Each row the buckets fall in, with its histograms as the buckets make them.
    const changed = new Map<string, { row: (typeof rows)[number]; times: Partial<Record<Timing, Histogram>> }>()
    for (const time of taken) {
      const id = dayRowId(time)
      const row = byId.get(id)!
      let change = changed.get(id)
      if (!change) changed.set(id, (change = { row, times: {} }))
      const t = timingOf.get(time.timing)!
      addToBucket((change.times[t] ??= JSON.parse(row[t]) as Histogram), time.bucket, time.count)
    }
    for (const { row, times } of changed.values()) {
      const folded = Object.fromEntries(Object.entries(times).map(([t, histogram]) => [t, JSON.stringify(histogram)]))
      await tx.db.update(reportDays).set(folded).where(and(eq(reportDays.siteId, siteId), eq(reportDays.dimension, row.dimension), eq(reportDays.day, row.day), eq(reportDays.key, row.key)))
    }
    return taken.length
  })
}

/**
 * A day row's histogram of one timing as a report reads it: its JSON (bucket to count) followed by
 * the buckets added since it was last folded (report_times), as `bucket:count,` pairs. lib/reports.ts
 * reads a histogram's digits as bucket, count, bucket, count (addHistogramJson), so both add up.
 * One statement with the day rows: the fold's commit falls before or after it, never between.
 */
function histogramOf(port: StorePort, t: Timing): SQL<string> {
  const { reportDays, reportTimes: times } = port.tables
  const of = sql`${times.siteId} = ${reportDays.siteId} and ${times.dimension} = ${reportDays.dimension} and ${times.day} = ${reportDays.day} and ${times.key} = ${reportDays.key} and ${times.timing} = ${sql.raw(`'${timingName(port, t)}'`)}`
  // Each pair ends with its comma, as a JSON's last count ends with its brace: the reader adds a pair at its end.
  const pairs = port.kind === 'sqlite' ? sql`group_concat(${times.bucket} || ':' || ${times.count} || ',', '')` : sql`string_agg(${times.bucket} || ':' || ${times.count} || ',', '')`
  return sql<string>`${reportDays[t]} || coalesce((select ${pairs} from ${times} where ${of}), '')`
}

/**
 * The day rows of one dimension of a site, from one day to another (both included), in order of
 * day, with the histograms `wanted` (the others empty, their columns not read: a year of a
 * histogram is most of what a row weighs).
 */
export async function dayRows(port: StorePort, siteId: number, dimension: Dimension, from: string, to: string, wanted: readonly Timing[] = timings): Promise<DayRow[]> {
  const { reportDays } = port.tables
  const p = sql.placeholder
  // The histograms by their place in `timings`: their names would make it longer than a name may be (db/port.ts).
  const name = `report_days_read_${wanted.map((t) => timings.indexOf(t)).join('')}`
  const read = port.prepared(name, (db) =>
    db
      .select({
        day: reportDays.day,
        key: reportDays.key,
        ...Object.fromEntries(counters.map((c) => [c, reportDays[c]])),
        ...Object.fromEntries(wanted.map((t) => [t, histogramOf(port, t)])),
      } as unknown as { day: typeof reportDays.day })
      .from(reportDays)
      .where(and(eq(reportDays.siteId, p('siteId')), eq(reportDays.dimension, p('dimension')), gte(reportDays.day, p('from')), lte(reportDays.day, p('to'))))
      .orderBy(asc(reportDays.day))
      .prepare(name),
  )
  const rows = (await read.execute({ siteId, dimension, from, to })) as Array<Record<string, string | number>>
  return rows.map((row) => ({
    day: row.day as string,
    key: row.key as string,
    counts: Object.fromEntries(counters.map((c) => [c, row[c]])) as Record<Counter, number>,
    times: Object.fromEntries(timings.map((t) => [t, wanted.includes(t) ? (row[t] as string) : '{}'])) as Record<Timing, string>,
  }))
}

/**
 * The rows of one dimension over a range of days, read as whole months' rows and the days at the
 * edges (lib/reports.ts monthsAndDays); a month row as if it were its first day.
 */
async function monthRows(port: StorePort, siteId: number, dimension: Dimension, from: string, to: string, wanted: readonly Timing[]): Promise<DayRow[]> {
  const { months, days } = monthsAndDays(from, to)
  const read: DayRow[] = []
  for (const [first, last] of days) read.push(...(await dayRows(port, siteId, dimension, first, last, wanted)))
  if (months) for (const row of await dayRows(port, siteId, dimension, months[0], months[1], wanted)) read.push({ ...row, day: `${row.day.slice(1)}-01` })
  return read
}

/** How a channel is named on the pages and in the CSV. */
const CHANNEL_NAMES: Record<string, string> = { mail: 'Mail', web: 'Support site', api: 'API' }

/** A report as the API, the CSV and the page show it. */
export interface Report {
  name: ReportName
  by: ReportBy
  from: string
  to: string
  /** One per period of the range, or one per group found (the most active first). */
  lines: ReportLine[]
  /** The site's, over the whole range. */
  total: ReportLine
}

/** The reports over the day rows of the sites; the weekly digest (`sendDigests`) mails them. */
export function createReportStore(port: StorePort, clock: Clock, siteWeb: (permalink: string) => string) {
  const { categories, users, fields: fieldsTable } = port.tables

  /** What each key of a dimension is called: a supporter's name, a category's, a channel's; a period and a tag as they are. */
  async function labels(siteId: number, by: ReportBy, keys: string[]): Promise<Map<string, string>> {
    const ids = keys.filter((k) => k !== '').map(Number)
    if (by === 'supporter') {
      const found = ids.length === 0 ? [] : await port.db.select({ id: users.id, name: users.name }).from(users).where(inArray(users.id, ids))
      return new Map([['', 'Nobody'], ...found.map((u): [string, string] => [String(u.id), u.name])])
    }
    if (by === 'category') {
      const found = ids.length === 0 ? [] : await port.db.select({ id: categories.id, name: categories.name }).from(categories).where(and(eq(categories.siteId, siteId), inArray(categories.id, ids)))
      return new Map(found.map((c): [string, string] => [String(c.id), c.name]))
    }
    if (by === 'channel') return new Map(Object.entries(CHANNEL_NAMES))
    if (by.startsWith('field.')) {
      // Yes and no for a yes/no field; a choice is named as it is (even one written "true").
      const [field] = await port.db.select({ kind: fieldsTable.kind }).from(fieldsTable).where(and(eq(fieldsTable.siteId, siteId), eq(fieldsTable.key, by.slice('field.'.length))))
      return field?.kind === 'yes_no' ? new Map([['true', 'Yes'], ['false', 'No']]) : new Map()
    }
    return new Map()
  }

  /** The rows of one field's values (`key=value` of the field dimension), each keyed by its value; refused for a key that is no reported field. */
  async function fieldRows(siteId: number, key: string, from: string, to: string, name: ReportName): Promise<DayRow[]> {
    if (!(await reportedKeysIn(port, siteId)).has(key)) throw new StoreError(`names ${key}, which is no field of this site's discussions of one choice, several choices or yes/no`, 'invalid', 'by')
    const prefix = `${key}=`
    return (await monthRows(port, siteId, 'field', from, to, timingsOf[name])).filter((row) => row.key.startsWith(prefix)).map((row) => ({ ...row, key: row.key.slice(prefix.length) }))
  }

  return {
    /** A report of the site over the days from `from` to `to` (both included, UTC), broken down `by`. */
    async report(siteId: number, name: ReportName, by: ReportBy, from: string, to: string): Promise<Report> {
      // By day or week, the site's day rows; by month or a group, whole months' rows and the days at the edges.
      const byDays = by === 'day' || by === 'week'
      const site = byDays ? await dayRows(port, siteId, 'all', from, to, timingsOf[name]) : await monthRows(port, siteId, 'all', from, to, timingsOf[name])
      const rows = byDays || by === 'month' ? site : by.startsWith('field.') ? await fieldRows(siteId, by.slice('field.'.length), from, to, name) : await monthRows(port, siteId, by as Dimension, from, to, timingsOf[name])
      const lines = reportLines(name, by, { from, to }, rows)
      const named = await labels(siteId, by, lines.map((l) => l.key))
      const label = (key: string) => named.get(key) ?? (by === 'supporter' ? `Person ${key} (gone)` : by === 'category' ? `Category ${key} (removed)` : key)
      return {
        name,
        by,
        from,
        to,
        lines: lines.map(({ key, group }) => ({ key, label: label(key), ...figuresOf(name, group) })),
        total: { key: '', label: 'Total', ...figuresOf(name, groupOf(site)) },
      }
    },

    /**
     * The weekly digest (docs/decisions.md, "Reports"): once the week has turned (Monday, UTC),
     * each site whose digest of the week just ended was not sent is claimed by one process (its
     * `digest_week` moved, in the transaction that queues the mails), and its administrators who
     * asked for it are mailed the week's figures against the week before. How many sites were told.
     */
    async sendDigests(): Promise<number> {
      const { memberships, outbox, sites } = port.tables
      const now = new Date(clock())
      const thisWeek = periodOf(dayOf(now), 'week')
      const lastWeek = new Date(dayStart(thisWeek)! - 7 * DAY_MS).toISOString().slice(0, 10)
      const weekBefore = new Date(dayStart(thisWeek)! - 14 * DAY_MS).toISOString().slice(0, 10)
      const due = await port.db.select({ id: sites.id, name: sites.name, permalink: sites.permalink }).from(sites).where(lt(sites.digestWeek, thisWeek))
      let told = 0
      for (const site of due) {
        const weekOf = async (monday: string) => groupOf(await dayRows(port, site.id, 'all', monday, new Date(dayStart(monday)! + 6 * DAY_MS).toISOString().slice(0, 10)))
        const text = digestText(site.name, lastWeek, await weekOf(lastWeek), await weekOf(weekBefore), `${siteWeb(site.permalink)}/reports?by=week`)
        told += await port.atomic(async (tx) => {
          const claimed = await tx.db.update(sites).set({ digestWeek: thisWeek }).where(and(eq(sites.id, site.id), lt(sites.digestWeek, thisWeek))).returning({ id: sites.id })
          if (claimed.length === 0) return 0
          const readers = await tx.db
            .select({ email: users.email })
            .from(memberships)
            .innerJoin(users, eq(users.id, memberships.userId))
            .where(and(eq(memberships.siteId, site.id), eq(memberships.administrator, true), eq(memberships.notifyDigest, true), enabledUser(users)))
          if (readers.length === 0) return 0
          const { mailbox } = await siteMailbox(tx, site.id)
          const mail = (to: string): OutboxMail => ({ to, subject: `[${site.name}] The week of ${lastWeek}`, text, ...(mailbox && { from: fromOf(site.name, mailbox.address), mailboxId: mailbox.id }), automatic: true })
          await tx.db.insert(outbox).values(readers.map((r) => ({ siteId: site.id, kind: 'notification' as const, payload: JSON.stringify(mail(r.email)), nextAttemptAt: now, createdAt: now })))
          return 1
        })
      }
      return told
    },

    /** Every site's times added apart folded into its day rows (foldTimes): how many buckets' rows were. */
    async foldTimes(): Promise<number> {
      const due = await port.db.selectDistinct({ siteId: port.tables.reportTimes.siteId }).from(port.tables.reportTimes)
      let folded = 0
      for (const { siteId } of due) folded += await foldTimes(port, siteId)
      return folded
    },

    /**
     * The site's day and month rows made again from its discussions' facts (after an upgrade, or a copy made
     * without them): each discussion counted as created on its day, first replied and resolved on
     * the days of its first reply and last resolution, under its owner now, and its rating. What the
     * facts do not keep (each reply, each reopening, an earlier resolution) is not counted again.
     * How many discussions were read.
     */
    async rebuild(siteId: number, batch = 2000): Promise<number> {
      const { discussions, reportDays, reportTimes } = port.tables
      const rows = tallyRows()
      const add = rows.add
      // The fields a report is broken down by, read once for the site.
      const reported = await reportedKeysIn(port, siteId)
      let read = 0
      for (let after = 0; ; ) {
        const page = await port.db
          .select({
            id: discussions.id,
            state: discussions.state,
            stateBefore: discussions.stateBeforeDelete,
            createdAt: discussions.createdAt,
            assigneeId: discussions.assigneeId,
            categoryId: discussions.categoryId,
            channel: discussions.channel,
            tags: discussions.tags,
            fields: discussions.fields,
            firstReplyAt: discussions.firstReplyAt,
            firstReplyMinutes: discussions.firstReplyMinutes,
            firstReplyBusiness: discussions.firstReplyBusiness,
            resolvedAt: discussions.resolvedAt,
            resolvedById: discussions.resolvedById,
            resolutionMinutes: discussions.resolutionMinutes,
            resolutionBusiness: discussions.resolutionBusiness,
            slaPolicyId: discussions.slaPolicyId,
            slaBreached: discussions.slaBreached,
            rating: discussions.rating,
            ratedAt: discussions.ratedAt,
          })
          .from(discussions)
          .where(and(eq(discussions.siteId, siteId), gt(discussions.id, after)))
          .orderBy(asc(discussions.id))
          .limit(batch)
        if (page.length === 0) break
        after = page[page.length - 1]!.id
        read += page.length
        for (const d of page) {
          const keys = { supporterId: d.assigneeId, categoryId: d.categoryId, channel: d.channel, tags: tagList(d.tags), fields: d.fields === '{}' ? [] : reportedValues(valuesOf(d.fields), reported) }
          if (d.state !== 'spam' && d.stateBefore === null) add({ day: dayOf(d.createdAt), keys, counts: { created: 1 }, times: {} })
          // The minutes are written with the moment, both of them (lib/reports.ts reportStep).
          if (d.firstReplyAt) {
            add({ day: dayOf(d.firstReplyAt), keys, counts: { firstReplies: 1 }, times: { firstReply: bucketOf(d.firstReplyMinutes!), firstReplyBusiness: bucketOf(d.firstReplyBusiness!) } })
          }
          if (d.resolvedAt) {
            const sla: Partial<Record<Counter, number>> = d.slaPolicyId === null ? {} : d.slaBreached === '' ? { slaKept: 1 } : { slaBreached: 1 }
            add({ day: dayOf(d.resolvedAt), keys: { ...keys, supporterId: d.resolvedById }, counts: { resolved: 1, ...sla }, times: { resolution: bucketOf(d.resolutionMinutes!), resolutionBusiness: bucketOf(d.resolutionBusiness!) } })
          }
          if (d.rating && d.ratedAt) add({ day: dayOf(d.ratedAt), keys: { ...keys, supporterId: d.resolvedById ?? d.assigneeId }, counts: d.rating === 'good' ? { ratedGood: 1 } : { ratedBad: 1 }, times: {} })
        }
      }
      const values = rows.rows().map((row) => ({
        siteId,
        dimension: row.dimension,
        day: row.day,
        key: row.key,
        ...row.counts,
        ...Object.fromEntries(Object.entries(row.times).map(([t, h]) => [t, JSON.stringify(h)])),
      }))
      await port.atomic(async (tx) => {
        // The times not folded yet go with their rows.
        await tx.db.delete(reportTimes).where(eq(reportTimes.siteId, siteId))
        await tx.db.delete(reportDays).where(eq(reportDays.siteId, siteId))
        for (let i = 0; i < values.length; i += 500) await tx.db.insert(reportDays).values(values.slice(i, i + 500))
      })
      return read
    },
  }
}

/** The digest's text: the week's figures against the week before's, and where the reports are. */
export function digestText(siteName: string, week: string, now: Group, before: Group, reportsHref: string): string {
  const line = (name: string, value: (g: Group) => number | null, shown: (n: number | null) => string) => {
    const [a, b] = [value(now), value(before)]
    const change = a !== null && b !== null && a !== b ? ` (${a > b ? '+' : '−'}${shown(Math.abs(a - b))})` : ''
    return `${name}: ${shown(a)}${change}; the week before: ${shown(b)}`
  }
  const count = (n: number | null) => String(n)
  const percent = (n: number | null) => (n === null ? '—' : `${n}%`)
  const figure = (report: ReportName, column: string) => (g: Group) => figuresOf(report, g)[column] ?? null
  return [
    `${siteName}, the week of ${week} (Monday to Sunday, UTC), against the week before:`,
    '',
    line('New discussions', figure('volume', 'created'), count),
    line('Resolved', figure('volume', 'resolved'), count),
    line('Reopened', figure('volume', 'reopened'), count),
    line('Median first reply', figure('first_reply', 'median_minutes'), shownMinutes),
    line('Median first reply, business hours', figure('first_reply', 'median_business_minutes'), shownMinutes),
    line('Median resolution', figure('resolution', 'median_minutes'), shownMinutes),
    line('SLA kept', figure('sla', 'kept_percent'), percent),
    line('Rated good', figure('satisfaction', 'good_percent'), percent),
    '',
    `The reports, week by week: ${reportsHref}`,
    'You are mailed this because you asked for it on your profile; untick it there to stop.',
  ].join('\n')
}

export type ReportStore = ReturnType<typeof createReportStore>
