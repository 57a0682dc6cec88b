import pg from 'pg'
import t, { type Test } from 'tap'
import { parsePostgresAddress } from '../../lib/database-address.ts'
import { databaseAddressOf, rawRows, testClock } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { TEST_ENGINE } from '../fixtures/postgres.ts'
import { until } from '../fixtures/until.ts'

// Engines: both: each engine reads a histogram and the buckets added apart in one statement its own way.
// A write that measures a time adds one to its bucket's row (report_times) rather than rewriting
// its day rows' histograms; a fold adds those rows into the histograms (db/stores/reports.ts
// foldTimes; docs/decisions.md, "A report's times added apart, folded in later"). A report shows the
// same before and after a fold, and a fold that runs while writes do loses none of them.

const MINUTE = 60_000
const MONDAY = Date.parse('2026-11-02T08:00:00Z')
const RANGE = 'from=2026-11-01&to=2026-11-04'

async function timesApp(t: Test, options: Parameters<typeof discussionApp>[1] = {}) {
  const made = await discussionApp(t, { clock: testClock(MONDAY), ...options })
  const { api, ann } = made
  const get = async (url: string) => (await api('GET', url, undefined, ann.bearer)).json()
  const reply = async (number: number) => (await api('POST', `/demo/discussions/${number}/comments`, { body: 'We are on it.' }, ann.bearer)).statusCode
  return { ...made, get, reply }
}

/** The site's buckets not folded yet, and its day row's histogram of first replies, of the whole site that day. */
async function storedTimes(app: Parameters<typeof rawRows>[0]) {
  const apart = await rawRows(app, "select timing, bucket, count from report_times where dimension = 'all' and day = '2026-11-02' order by timing, bucket")
  const [row] = await rawRows(app, "select first_reply from report_days where dimension = 'all' and day = '2026-11-02'")
  return { apart: apart.map((r) => [r.timing, Number(r.bucket), Number(r.count)]), histogram: JSON.parse(String(row!.first_reply)) as Record<string, number> }
}

t.test('a report shows the times added apart, the same once they are folded in', async (t) => {
  const { app, clock, create, get, reply } = await timesApp(t)
  // Three discussions answered 6, 6 and 130 minutes after they were made (130: in the bucket of 130, lib/reports.ts bucketOf).
  const numbers: number[] = []
  for (let i = 0; i < 3; i++) numbers.push((await create({ author_email: `c${i}@customer.test` })).number)
  clock.advance(6 * MINUTE)
  t.equal(await reply(numbers[0]!), 201)
  t.equal(await reply(numbers[1]!), 201)
  clock.advance(124 * MINUTE)
  t.equal(await reply(numbers[2]!), 201)

  const before = await get(`/demo/reports/first_reply?${RANGE}`)
  t.match(before.total, { count: 3, median_minutes: 6, p90_minutes: 130 })
  // By supporter and by month: November's month rows, read whole.
  const bySupporter = await get(`/demo/reports/first_reply?${RANGE}&by=supporter`)
  const byMonth = await get('/demo/reports/first_reply?from=2026-11-01&to=2026-11-30&by=month')
  t.match(byMonth.total, { count: 3, median_minutes: 6, p90_minutes: 130 })
  const apart = await storedTimes(app)
  t.same(apart.apart, [['first_reply', 6, 2], ['first_reply', 130, 1], ['first_reply_business', 6, 2], ['first_reply_business', 130, 1]], 'each bucket a row, counted')
  t.same(apart.histogram, {}, 'the histogram not rewritten by the writes')

  // Two buckets of two timings in the day and the month rows of the site, the supporter, the category and the channel.
  t.equal(await app.reports.foldTimes(), 2 * 2 * 2 * 4, "every bucket's row taken")
  const folded = await storedTimes(app)
  t.same(folded.apart, [], 'taken by the fold')
  t.same(folded.histogram, { 6: 2, 130: 1 })
  t.same(await get(`/demo/reports/first_reply?${RANGE}`), before, 'the same report')
  t.same(await get(`/demo/reports/first_reply?${RANGE}&by=supporter`), bySupporter, 'by supporter')
  t.same(await get('/demo/reports/first_reply?from=2026-11-01&to=2026-11-30&by=month'), byMonth, 'and from the month rows')

  // One more after the fold: the histogram and the bucket's row apart add up.
  const fourth = (await create({ author_email: 'c3@customer.test' })).number
  clock.advance(6 * MINUTE)
  t.equal(await reply(fourth), 201)
  t.match((await get(`/demo/reports/first_reply?${RANGE}`)).total, { count: 4, median_minutes: 6 })
  t.same((await storedTimes(app)).apart, [['first_reply', 6, 1], ['first_reply_business', 6, 1]])
  t.equal(await app.reports.foldTimes(), 2 * 2 * 4)
  t.same((await storedTimes(app)).histogram, { 6: 3, 130: 1 }, 'added to what the histogram had')
  t.equal(await app.reports.foldTimes(), 0, 'nothing left to fold')
})

t.test('a fold while replies are written loses none of their times', async (t) => {
  const { app, clock, create, get, reply } = await timesApp(t)
  const numbers: number[] = []
  for (let i = 0; i < 24; i++) numbers.push((await create({ author_email: `c${i}@customer.test` })).number)
  clock.advance(6 * MINUTE)
  // The replies at once, and folds among them: each reply's buckets are folded or left apart, never lost or counted twice.
  const folds: Array<Promise<number>> = []
  const replies = numbers.map(async (number, i) => {
    if (i % 4 === 0) folds.push(app.reports.foldTimes())
    return reply(number)
  })
  t.same(await Promise.all(replies), numbers.map(() => 201))
  await Promise.all(folds)
  t.match((await get(`/demo/reports/first_reply?${RANGE}`)).total, { count: 24, median_minutes: 6, p90_minutes: 6 })
  await app.reports.foldTimes()
  t.same(await storedTimes(app), { apart: [], histogram: { 6: 24 } })
})

t.test("a fold waits for a write that holds the site's row, and the two never wait on each other in turn", { skip: TEST_ENGINE === 'postgres' ? false : 'PostgreSQL: concurrent writers' }, async (t) => {
  const { app, clock, create, reply } = await timesApp(t)
  const number = (await create({ author_email: 'c@customer.test' })).number
  clock.advance(6 * MINUTE)
  t.equal(await reply(number), 201)
  // A write of the site under way, as a reply's last statements take them (db/port.ts lastly): the
  // site's row, then a day row; its bucket's row next, once the fold is waiting.
  const { connectionString, schema } = parsePostgresAddress(databaseAddressOf(app))
  const writer = new pg.Client({ connectionString, options: `-c search_path=${schema}` })
  await writer.connect()
  t.teardown(() => writer.end())
  await writer.query('BEGIN')
  await writer.query("UPDATE sites SET version = version + 1 WHERE permalink = 'demo'")
  await writer.query("UPDATE report_days SET replies = replies + 1 WHERE dimension = 'all' AND day = '2026-11-02'")
  let settled = false
  const fold = app.reports.foldTimes().finally(() => (settled = true))
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.notOk(settled, 'the fold waits for the site\'s row')
  await writer.query("UPDATE report_times SET count = count + 1 WHERE dimension = 'all' AND day = '2026-11-02' AND timing = 'first_reply'")
  await writer.query('COMMIT')
  t.equal(await fold, 2 * 2 * 4, 'then folds, the write\'s bucket with the others')
  t.same(await storedTimes(app), { apart: [], histogram: { 6: 2 } })
})

t.test('the server folds by itself every so often, and says when it cannot', async (t) => {
  const lines: string[] = []
  const { app, clock, create, reply } = await timesApp(t, { reportTimes: { everyMs: 50 }, logStream: { write: (line) => void lines.push(line) } })
  const number = (await create({ author_email: 'c@customer.test' })).number
  clock.advance(6 * MINUTE)
  t.equal(await reply(number), 201)
  t.same(await until('the fold of the loop', async () => { const stored = await storedTimes(app); return stored.apart.length === 0 && stored }), { apart: [], histogram: { 6: 1 } })
  app.reports.foldTimes = async () => {
    throw new Error('the database is away')
  }
  const said = await until('the failure said', () => lines.find((line) => line.includes("could not fold the reports' times")))
  t.match(JSON.parse(said), { level: 40, err: { message: 'the database is away' } }, 'a failure said, the loop going on')
})
