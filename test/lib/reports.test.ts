import fc from 'fast-check'
import t from 'tap'
import { createSecretBox } from '../../lib/secret-box.ts'
import { claimedBy, holdsToken, ratingLink, ratingToken } from '../../lib/rating-link.ts'
import { addHistogram, addHistogramJson, bucketAt, bucketOf, cellOf, CELLS, csvField, EXACT_BELOW, monthsAndDays, periodRowsOf, groupOf, percentile, periodOf, periodsBetween, reportLines, reportQuery, reportStep, rowsOf, shownMinutes, toCsv, type DayRow, type ReportWrite } from '../../lib/reports.ts'
import { columnChart, niceCeiling } from '../../lib/svg-chart.ts'
import { negotiateCsv } from '../../lib/accept.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 69's pure parts: the histograms' buckets within 1/64 of every time, the nearest-rank
// percentile against a sort, the periods, what each write adds, the CSV (no formula), the query,
// the rating link's token, and the chart's escaping.

t.test('a bucket is the time itself below 128 minutes, and at most 1/64 under it above; each its own cell', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2_000_000 }), (m) => {
      const b = bucketOf(m)
      if (bucketAt(cellOf(b)) !== b || cellOf(b) >= CELLS) return false
      if (m < EXACT_BELOW) return b === m
      return b <= m && m - b <= m / 64 && bucketOf(b) === b
    }),
  )
  t.same([cellOf(127), cellOf(128), cellOf(130), cellOf(254), cellOf(256)], [127, 128, 129, 191, 192], 'cells in order, none skipped')
  t.equal(cellOf(bucketOf(2 ** 30)), CELLS - 1, 'past 32 years: the last cell')
  t.same([bucketOf(127), bucketOf(128), bucketOf(129), bucketOf(130), bucketOf(945), bucketOf(960)], [127, 128, 128, 130, 944, 960])
})

t.test('the nearest-rank percentile of a histogram is the sorted times\' rank ceil(p·n), as its bucket', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 200 }), fc.integer({ min: 1, max: 100 }), (times, p) => {
      const histogram: Record<string, number> = {}
      for (const m of times) histogram[bucketOf(m)] = (histogram[bucketOf(m)] ?? 0) + 1
      const sorted = [...times].sort((a, b) => a - b)
      return percentile(histogram, p) === bucketOf(sorted[Math.ceil((p / 100) * times.length) - 1]!)
    }),
  )
  t.equal(percentile({}, 50), null, 'none: null')
  t.equal(percentile({ 5: 0 }, 50), null, 'a bucket emptied (a rating taken back) counts nothing')
  t.equal(percentile({ 1: 1, 2: 1, 3: 1, 4: 1 }, 50), 2, 'an even count: the lower middle')
})

t.test("a histogram's JSON read into cells as JSON.parse would, spaces or none", async (t) => {
  const scannedAsParsed = () => fc.assert(
    fc.property(fc.dictionary(fc.integer({ min: 0, max: 1_000_000 }).map((m) => String(bucketOf(m))), fc.integer({ min: 1, max: 100_000 })), fc.boolean(), (histogram, spaced) => {
      const parsed = new Float64Array(CELLS)
      addHistogram(parsed, histogram)
      const scanned = new Float64Array(CELLS)
      addHistogramJson(scanned, spaced ? JSON.stringify(histogram).replaceAll(':', ': ').replaceAll(',', ', ') : JSON.stringify(histogram))
      return parsed.every((n, i) => scanned[i] === n)
    }),
  )
  t.doesNotThrow(scannedAsParsed, 'the same cells for every histogram drawn')
  const cells = new Float64Array(CELLS)
  addHistogramJson(cells, '{"5": 2, "130": 1}')
  t.same([cells[5], cells[cellOf(130)]], [2, 1], 'as PostgreSQL writes it')
})

t.test('periods: days, weeks from Monday, months, every one of a range', async (t) => {
  t.equal(periodOf('2026-11-08', 'week'), '2026-11-02', 'a Sunday is in the week of the Monday before')
  t.equal(periodOf('2026-11-02', 'week'), '2026-11-02')
  t.equal(periodOf('2026-11-30', 'month'), '2026-11-01')
  t.same(periodsBetween('2026-10-30', '2026-11-02', 'day'), ['2026-10-30', '2026-10-31', '2026-11-01', '2026-11-02'])
  t.same(periodsBetween('2026-10-30', '2026-11-10', 'week'), ['2026-10-26', '2026-11-02', '2026-11-09'])
  t.same(periodsBetween('2026-12-31', '2027-01-01', 'month'), ['2026-12-01', '2027-01-01'])
})

t.test('what each write adds: created, the first reply under who wrote it, resolved under the owner, reopened', async (t) => {
  const created = new Date('2026-11-02T10:00:00Z')
  const after = { state: 'new', assigneeId: 7, categoryId: 3, channel: 'mail', tags: ['billing'], reportedFields: ['plan=Pro'], createdAt: created }
  const base: ReportWrite = { before: null, after, sla: { policyId: null, breached: '' }, schedule: null, at: created }
  t.same(reportStep(base).tallies, [{ day: '2026-11-02', keys: { supporterId: 7, categoryId: 3, channel: 'mail', tags: ['billing'], fields: ['plan=Pro'] }, counts: { created: 1 }, times: {} }])
  t.same(reportStep({ ...base, after: { ...after, state: 'spam' } }).tallies, [], 'spam arriving is not counted as created')

  const noFacts = reportStep(base).facts
  const at = new Date('2026-11-02T12:30:00Z')
  const reply = reportStep({ ...base, before: { ...noFacts, state: 'new' }, after: { ...after, state: 'open' }, comment: { bySupporter: true, internal: false, authorId: 9 }, at })
  t.same(reply.tallies, [{ day: '2026-11-02', keys: { supporterId: 9, categoryId: 3, channel: 'mail', tags: ['billing'], fields: ['plan=Pro'] }, counts: { replies: 1, firstReplies: 1 }, times: { firstReply: 150, firstReplyBusiness: 150 } }])
  t.match(reply.facts, { firstReplyMinutes: 150, teamReplies: 1 })
  t.notOk('state' in reply.facts, 'the facts never carry a state (they are spread over the row)')
  const second = reportStep({ ...base, before: { ...reply.facts, state: 'open' }, after: { ...after, state: 'open' }, comment: { bySupporter: true, internal: false, authorId: 9 }, at })
  t.same(second.tallies[0]!.counts, { replies: 1 }, 'a second reply is a reply, not a first one')
  t.same(reportStep({ ...base, before: { ...reply.facts, state: 'open' }, after: { ...after, state: 'open' }, comment: { bySupporter: true, internal: true, authorId: 9 }, at }).tallies, [], 'an internal note counts nothing')
  t.same(reportStep({ ...base, before: { ...reply.facts, state: 'open' }, after: { ...after, state: 'open' }, comment: { bySupporter: false, internal: false, authorId: 1 }, at }).tallies, [], "a customer's message counts nothing")

  const resolved = reportStep({ ...base, before: { ...reply.facts, state: 'open' }, after: { ...after, state: 'resolved' }, sla: { policyId: 1, breached: 'first_reply' }, at: new Date('2026-11-03T10:00:00Z') })
  t.same(resolved.tallies[0]!.counts, { resolved: 1, slaBreached: 1 })
  t.match(resolved.facts, { resolvedById: 7, resolutionMinutes: 1440 })
  t.same(reportStep({ ...base, before: { ...resolved.facts, state: 'resolved' }, after: { ...after, state: 'open' }, at }).tallies[0]!.counts, { reopened: 1 })
  t.same(reportStep({ ...base, before: { ...resolved.facts, state: 'deleted' }, after: { ...after, state: 'resolved' }, at }).tallies, [], 'a restore to resolved is no resolution')
  t.same(rowsOf({ supporterId: null, categoryId: 3, channel: 'web', tags: ['a', 'b'] }), [['all', ''], ['supporter', ''], ['category', '3'], ['channel', 'web'], ['tag', 'a'], ['tag', 'b']])
  t.same(rowsOf({ supporterId: 1, categoryId: 3, channel: 'web', tags: [], fields: ['plan=Pro', 'vip=true'] }).slice(4), [['field', 'plan=Pro'], ['field', 'vip=true']], 'a row for each value of a field reported by')
})

t.test('lines: every period, groups by what they count, the most first', async (t) => {
  const row = (day: string, key: string, counts: Partial<DayRow['counts']>): DayRow => ({ day, key, counts: { ...groupOf([]).counts, ...counts }, times: { firstReply: '{}', firstReplyBusiness: '{}', resolution: '{}', resolutionBusiness: '{}' } })
  const rows = [row('2026-11-02', 'a', { created: 1 }), row('2026-11-03', 'b', { created: 2, resolved: 1 }), row('2026-11-03', 'c', { ratedGood: 1 })]
  t.same(reportLines('volume', 'day', { from: '2026-11-01', to: '2026-11-03' }, rows).map((l) => [l.key, l.group.counts.created]), [['2026-11-01', 0], ['2026-11-02', 1], ['2026-11-03', 2]])
  t.same(reportLines('volume', 'tag', { from: '2026-11-01', to: '2026-11-03' }, rows).map((l) => l.key), ['b', 'a'], 'c counted nothing of the volume')
})

t.test('CSV: quoted where it must be, and a field a spreadsheet would run as a formula made text', async (t) => {
  t.equal(csvField('=HYPERLINK("http://evil")'), `"'=HYPERLINK(""http://evil"")"`)
  t.equal(csvField('+1'), "'+1")
  t.equal(csvField('-2'), "'-2")
  t.equal(csvField(-2), '-2', 'a number is a number')
  t.equal(csvField('@SUM(A1)'), "'@SUM(A1)")
  t.equal(csvField('a,b'), '"a,b"')
  t.equal(csvField(null), '')
  t.equal(toCsv(['key', 'n'], [{ key: 'x\ny', label: '', n: 1 }]), 'key,n\r\n"x\ny",1\r\n')
})

t.test('the query: defaults, and what it refuses', async (t) => {
  t.same(reportQuery({}, '2026-11-30'), { from: '2026-11-01', to: '2026-11-30', by: 'day' })
  t.same(reportQuery({ from: '2025-11-30', to: '2026-11-30', by: 'week' }, '2026-12-01'), { from: '2025-11-30', to: '2026-11-30', by: 'week' })
  t.match(reportQuery({ from: '2024-11-29', to: '2026-11-30' }, '2026-11-30'), { field: 'from' })
  t.match(reportQuery({ to: '2026-13-01' }, '2026-11-30'), { field: 'to' })
  t.match(reportQuery({ by: 'constructor' }, '2026-11-30'), { field: 'by' })
})

t.test('Accept for a report: CSV when text/csv is named, or text/* is all it takes', async (t) => {
  t.equal(negotiateCsv(undefined), 'application/json')
  t.equal(negotiateCsv('text/csv'), 'csv')
  t.equal(negotiateCsv('application/json, text/csv;q=0.1'), 'csv')
  t.equal(negotiateCsv('text/*'), 'csv')
  t.equal(negotiateCsv('text/*, application/json'), 'application/json')
  t.equal(negotiateCsv('text/csv;q=0'), null)
  t.equal(negotiateCsv('text/csv;q=2'), null, 'a quality that is none')
  t.equal(negotiateCsv('text/html'), null)
})

t.test("the rating link's token: its own discussion and resolution only", async (t) => {
  const box = createSecretBox('k'.repeat(40))
  const tag = { siteId: 1, discussionId: 10, number: 3, resolvedAt: Date.parse('2026-11-02T10:00:00Z') }
  const token = ratingToken(box.digest, tag)
  t.same(claimedBy(token), { number: 3, resolvedAt: tag.resolvedAt })
  t.ok(holdsToken(box.digest, token, tag))
  for (const other of [{ ...tag, siteId: 2 }, { ...tag, discussionId: 11 }, { ...tag, number: 4 }, { ...tag, resolvedAt: tag.resolvedAt + 1 }]) t.notOk(holdsToken(box.digest, token, other))
  t.notOk(holdsToken(createSecretBox('j'.repeat(40)).digest, token, tag), 'another server key')
  t.equal(claimedBy(`${token}x`), undefined)
  t.equal(claimedBy('zzzzzzzzzzz-1-' + '0'.repeat(32)), undefined, 'a number past what is safe')
  const d = { siteId: 1, id: 10, number: 3, state: 'resolved', resolvedAt: new Date(tag.resolvedAt) }
  t.equal(ratingLink(box.digest, 'https://help.example', d, tag.resolvedAt), `https://help.example/help/rate/${token}`)
  t.equal(ratingLink(box.digest, 'https://help.example', d, tag.resolvedAt + 8 * 86_400_000), null, 'eight days later')
  t.equal(ratingLink(box.digest, 'https://help.example', { ...d, state: 'open' }, tag.resolvedAt), null)
})

t.test('the chart: a round top, every text escaped, a description of its figures', async (t) => {
  t.same([niceCeiling(0), niceCeiling(3), niceCeiling(7), niceCeiling(20), niceCeiling(21), niceCeiling(0.3)], [1, 5, 10, 20, 50, 0.5])
  const svg = columnChart({ id: 'c', title: 'A <b>title</b>', unit: 'x', labels: ['<script>alert(1)</script>', 'b'], series: [{ name: 'S"1', values: [2, null] }] })
  t.notMatch(svg, /<script>|<b>/)
  t.match(svg, /&#60;script&#62;/)
  t.match(svg, /<desc id="c-desc">2 columns, &#60;script&#62;alert\(1\)&#60;\/script&#62; to b\. S&#34;1: from 2 to 2 x\.<\/desc>/)
  t.match(columnChart({ id: 'e', title: 'Empty', unit: 'x', labels: ['a'], series: [{ name: 'S', values: [null] }] }), /S: none/)
  t.match(columnChart({ id: 'n', title: 'Nothing', unit: 'x', labels: [], series: [] }), /<desc id="n-desc">0 columns,  to \. \.<\/desc>/)
  t.same([0, 45, 60, 200, 1440, 3000].map(shownMinutes), ['0 min', '45 min', '1 h', '3 h 20 min', '1 d', '2 d 2 h'])
})

t.test('months and days: whole months read as their rows, the edges as days', async (t) => {
  t.same(monthsAndDays('2025-12-04', '2026-12-03'), { months: ['M2026-01', 'M2026-11'], days: [['2025-12-04', '2025-12-31'], ['2026-12-01', '2026-12-03']] })
  t.same(monthsAndDays('2026-01-01', '2026-12-31'), { months: ['M2026-01', 'M2026-12'], days: [] }, 'whole months only')
  t.same(monthsAndDays('2026-02-01', '2026-02-28'), { months: ['M2026-02', 'M2026-02'], days: [] }, 'one whole month')
  t.same(monthsAndDays('2026-02-02', '2026-03-30'), { months: null, days: [['2026-02-02', '2026-03-30']] }, 'no whole month: days')
  t.same(periodRowsOf({ day: '2026-11-05', keys: { supporterId: null, categoryId: 1, channel: 'mail', tags: [] } }).map((r) => r.join(' ')), [
    '2026-11-05 all ', '2026-11-05 supporter ', '2026-11-05 category 1', '2026-11-05 channel mail',
    'M2026-11 all ', 'M2026-11 supporter ', 'M2026-11 category 1', 'M2026-11 channel mail',
  ])
  t.ok('M2026-11' > '2026-12-31', 'a month row is in no range of days')
})
