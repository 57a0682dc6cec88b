import t, { type Test } from 'tap'
import { rawRows, supporterWithToken, testClock } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the facts and the day rows are written by every write in its transaction, by an
// upsert whose JSON each engine writes its own way; each engine must count alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 69, items 1 and 2: twenty discussions made, answered and resolved at known times give the
// counts, medians and 90th percentiles expected, in calendar and business minutes, by day, by
// supporter, by category, as JSON and as CSV; the SLA kept and breached; the sites kept apart.

const MINUTE = 60_000
// Monday 2 November 2026, 16:30 UTC: 17:30 in Berlin, half an hour before the team's hours end.
const MONDAY_1730_BERLIN = Date.parse('2026-11-02T16:30:00Z')
const TUESDAY_0900_BERLIN = Date.parse('2026-11-03T08:00:00Z')
const nineToSix = [{ from: '09:00', to: '18:00' }]
const WEEKDAYS = { monday: nineToSix, tuesday: nineToSix, wednesday: nineToSix, thursday: nineToSix, friday: nineToSix }

async function reportApp(t: Test) {
  const made = await discussionApp(t, { clock: testClock(MONDAY_1730_BERLIN) })
  const bob = await supporterWithToken(made.app, { email: 'bob@example.test' })
  await made.app.users.setAdministrator(made.ann.site.id, made.ann.user.id, true)
  const call = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown, headers: Record<string, string> = made.ann.bearer) => {
    const answer = await made.api(method, url, payload, headers)
    return { status: answer.statusCode, body: /json/.test(String(answer.headers['content-type'])) ? answer.json() : answer.body, headers: answer.headers }
  }
  return { ...made, bob, call }
}

/**
 * Twenty customers' discussions made at 17:30 in Berlin, the first five in Problems; discussion i
 * answered 6i minutes later (by Ann when i is odd, Bob when even), owned by Ann (1 to 10) or Bob
 * (11 to 20), and resolved the next morning 3i minutes after 09:00; the last one reopened after.
 */
async function twentyDiscussions(t: Test) {
  const made = await reportApp(t)
  const { clock, call, create, ann, bob, problems, questions } = made
  const berlin = (await call('POST', '/demo/schedules', { name: 'Berlin', time_zone: 'Europe/Berlin', hours: WEEKDAYS })).body
  t.equal((await call('POST', '/demo/sla_policies', { name: 'Fast', schedule_id: berlin.id, first_reply_minutes: 20 })).status, 201)
  const numbers: number[] = []
  for (let i = 1; i <= 20; i++) {
    const d = await create({ author_email: `customer${i}@customer.test` }, i <= 5 ? problems.id : questions.id)
    numbers.push(d.number)
    t.equal((await call('PUT', `/demo/discussions/${d.number}`, { assignee: i <= 10 ? ann.user.id : bob.user.id })).status, 200)
  }
  for (let i = 1; i <= 20; i++) {
    clock.advance(MONDAY_1730_BERLIN + 6 * i * MINUTE - clock())
    const answer = await call('POST', `/demo/discussions/${numbers[i - 1]}/comments`, { body: 'We are on it.' }, i % 2 === 1 ? ann.bearer : bob.bearer)
    t.equal(answer.status, 201)
  }
  for (let i = 1; i <= 20; i++) {
    clock.advance(TUESDAY_0900_BERLIN + 3 * i * MINUTE - clock())
    t.equal((await call('POST', `/demo/discussions/${numbers[i - 1]}/resolve`)).status, 200)
  }
  clock.advance(TUESDAY_0900_BERLIN + 2 * 60 * MINUTE - clock())
  const reopened = await call('POST', `/demo/discussions/${numbers[19]}/unresolve`)
  t.same([reopened.status, reopened.body.state], [200, 'open'])
  return { ...made, numbers }
}

t.test('twenty discussions: the counts, medians and 90th percentiles, in calendar and business minutes', async (t) => {
  const { app, call, ann, bob, questions, problems, numbers } = await twentyDiscussions(t)
  const range = 'from=2026-11-01&to=2026-11-04'

  const volume = (await call('GET', `/demo/reports/volume?${range}`)).body
  t.same(volume.columns, ['created', 'resolved', 'reopened', 'replies'])
  t.same(
    volume.lines.map((l: Record<string, unknown>) => [l.key, l.created, l.resolved, l.reopened, l.replies]),
    [
      ['2026-11-01', 0, 0, 0, 0],
      ['2026-11-02', 20, 0, 0, 20],
      ['2026-11-03', 0, 20, 1, 0],
      ['2026-11-04', 0, 0, 0, 0],
    ],
    'every day of the range, the empty ones too',
  )
  t.match(volume.total, { key: '', label: 'Total', created: 20, resolved: 20, reopened: 1, replies: 20 })

  // First replies 6, 12, ... 120 minutes after; the team's hours ended 30 minutes after each was made.
  const first = (await call('GET', `/demo/reports/first_reply?${range}`)).body
  t.same(first.total, { key: '', label: 'Total', count: 20, median_minutes: 60, p90_minutes: 108, median_business_minutes: 30, p90_business_minutes: 30 })

  // Resolved the next day at 09:00 + 3i in Berlin: 930 + 3i minutes of the clock, 30 + 3i of business.
  // Above 128 minutes a time is kept to 1/64 of its power of two (lib/reports.ts bucketOf): 8 minutes from 512 to 1023.
  const resolution = (await call('GET', `/demo/reports/resolution?${range}`)).body
  t.same(resolution.total, { key: '', label: 'Total', count: 20, median_minutes: 960, p90_minutes: 984, median_business_minutes: 60, p90_business_minutes: 84 })

  const bySupporter = (await call('GET', `/demo/reports/resolution?${range}&by=supporter`)).body
  t.same(
    bySupporter.lines.map((l: Record<string, unknown>) => [l.key, l.label, l.count, l.median_minutes, l.median_business_minutes, l.p90_business_minutes]),
    [
      // Ann owned 1 to 10: the 5th is 945 minutes (in the bucket of 944), 45 of business; the 9th, 57.
      [String(ann.user.id), 'ann', 10, 944, 45, 57],
      // Bob owned 11 to 20: the 15th is 975 (in 968), 75 of business; the 19th, 87.
      [String(bob.user.id), 'bob', 10, 968, 75, 87],
    ],
  )
  // November read whole from its month rows, the days around it from theirs: the same figures.
  const wide = (await call('GET', '/demo/reports/resolution?from=2026-10-15&to=2026-12-10&by=supporter')).body
  t.same(wide.lines, bySupporter.lines, 'a whole month and the days around it: the same lines')
  t.same(wide.total, resolution.total)
  const byMonth = (await call('GET', '/demo/reports/volume?from=2026-10-15&to=2026-12-10&by=month')).body
  t.same(byMonth.lines.map((l: Record<string, unknown>) => [l.key, l.created, l.resolved]), [['2026-10-01', 0, 0], ['2026-11-01', 20, 20], ['2026-12-01', 0, 0]])
  const repliesBySupporter = (await call('GET', `/demo/reports/first_reply?${range}&by=supporter`)).body
  t.same(
    repliesBySupporter.lines.map((l: Record<string, unknown>) => [l.label, l.count, l.median_minutes, l.p90_minutes]),
    [
      // The first replies are counted under who wrote them: Ann the odd ones (6, 18, ... 114), Bob the even (12, 24, ... 120).
      ['ann', 10, 54, 102],
      ['bob', 10, 60, 108],
    ],
  )
  const byCategory = (await call('GET', `/demo/reports/volume?${range}&by=category`)).body
  t.same(byCategory.lines.map((l: Record<string, unknown>) => [l.key, l.label, l.created]), [[String(questions.id), 'Questions', 15], [String(problems.id), 'Problems', 5]])
  const byChannel = (await call('GET', `/demo/reports/volume?${range}&by=channel`)).body
  t.same(byChannel.lines.map((l: Record<string, unknown>) => [l.key, l.label, l.created]), [['api', 'API', 20]])

  // The policy promised a first reply within 20 business minutes: kept by the first three (6, 12, 18).
  const sla = (await call('GET', `/demo/reports/sla?${range}`)).body
  t.match(sla.total, { kept: 3, breached: 17, kept_percent: 15 })

  const week = (await call('GET', `/demo/reports/volume?${range}&by=week`)).body
  t.same(week.lines.map((l: Record<string, unknown>) => [l.key, l.created, l.resolved]), [['2026-10-26', 0, 0], ['2026-11-02', 20, 20]], 'weeks from Monday')

  // The facts each discussion keeps, which the day rows are made of again by a rebuild.
  const facts = await rawRows(app, `select number, first_reply_minutes, first_reply_business, resolution_minutes, resolution_business, resolved_by_id, reopens, team_replies from discussions where number in (${numbers[0]}, ${numbers[19]}) order by number`)
  t.same(facts.map((f) => Object.values(f).map(Number)), [
    [numbers[0], 6, 6, 933, 33, ann.user.id, 0, 1],
    [numbers[19], 120, 30, 990, 90, bob.user.id, 1, 1],
  ])
  const before = await rawRows(app, "select dimension, day, key, created, resolved, first_replies, first_reply, resolution_business from report_days order by dimension, day, key")
  t.equal(await app.reports.rebuild(ann.site.id, 7), 20, 'the rebuild reads every discussion, a page at a time')
  const after = (await call('GET', `/demo/reports/resolution?${range}&by=supporter`)).body
  t.same(after.lines, bySupporter.lines, 'made again from the facts, the resolutions are the same')
  t.not(before.length, 0)
})

t.test('a report as CSV, and what a report refuses', onSqlite('a report as CSV, its headers, and what a report refuses'), async (t) => {
  const { call, ann, api } = await twentyDiscussions(t)
  const csv = await api('GET', '/demo/reports/resolution?from=2026-11-02&to=2026-11-03', undefined, { ...ann.bearer, accept: 'text/csv' })
  t.equal(csv.statusCode, 200)
  t.match(csv.headers['content-type'], /^text\/csv; charset=utf-8/)
  t.match(csv.headers['content-disposition'], 'attachment; filename="demo-resolution-by-day-2026-11-02-2026-11-03.csv"')
  t.equal(
    csv.body,
    'key,label,count,median_minutes,p90_minutes,median_business_minutes,p90_business_minutes\r\n' +
      '2026-11-02,2026-11-02,0,,,,\r\n' +
      '2026-11-03,2026-11-03,20,960,984,60,84\r\n' +
      ',Total,20,960,984,60,84\r\n',
  )
  const list = (await call('GET', '/demo/reports')).body
  t.same(list.reports.map((r: { name: string }) => r.name), ['volume', 'first_reply', 'resolution', 'sla', 'satisfaction'])
  t.equal(list.reports[0].href, 'https://api.example.test/demo/reports/volume')

  const refused = async (query: string, field: string) => {
    const answer = await call('GET', `/demo/reports/volume?${query}`)
    t.equal(answer.status, 400, query)
    t.equal(answer.body.fields[0].field, field, query)
  }
  await refused('from=2026-02-30', 'from')
  await refused('to=yesterday', 'to')
  await refused('from=2026-11-05&to=2026-11-04', 'from')
  await refused('from=2023-01-01&to=2026-11-04', 'from')
  await refused('by=hour', 'by')
  t.equal((await call('GET', '/demo/reports/happiness')).status, 404)
  t.equal((await api('GET', '/demo/reports/volume', undefined, { ...ann.bearer, accept: 'text/html' })).statusCode, 406)
  t.equal((await api('GET', '/demo/reports/volume', undefined, { ...ann.bearer, accept: 'text/csv;q=0.5, application/json' })).headers['content-type'], 'text/csv; charset=utf-8', 'a client that names CSV gets it')
})

t.test("another site's supporter reads nothing of this site's reports", async (t) => {
  const { app, call } = await twentyDiscussions(t)
  const mallory = await supporterWithToken(app, { site: 'other', email: 'mallory@other.test' })
  const crossing = await call('GET', '/demo/reports/volume?from=2026-11-01&to=2026-11-04', undefined, mallory.bearer)
  t.equal(crossing.status, 401, 'a token of another site is not taken here')
  t.notMatch(JSON.stringify(crossing.body), /created/)
  const own = (await call('GET', '/other/reports/volume?from=2026-11-01&to=2026-11-04', undefined, mallory.bearer)).body
  t.equal(own.total.created, 0, 'its own site counts none of them')
  const rows = await rawRows(app, 'select count(*) as n from report_days where site_id = (select id from sites where permalink = \'other\')')
  t.equal(Number(rows[0].n), 0)
})

t.test('the weekly digest: once a week, to the administrators who asked, however many processes look', async (t) => {
  const { app, clock, ann, bob } = await twentyDiscussions(t)
  await app.users.setNotifications(ann.site.id, ann.user.id, { newDiscussions: false, owned: true, digest: true })
  // Bob asked too, but is no administrator: the digest is the administrators'.
  await app.users.setNotifications(ann.site.id, bob.user.id, { newDiscussions: false, owned: true, digest: true })
  const digests = async () => (await rawRows(app, "select payload from outbox where kind = 'notification' order by id")).map((r) => JSON.parse(String(r.payload))).filter((m) => /The week of/.test(m.subject))

  clock.advance(Date.parse('2026-11-09T07:00:00Z') - clock())
  const [first, second] = await Promise.all([app.reportDigest.sendDue(), app.reportDigest.sendDue()])
  t.equal(first + second, 1, 'two processes at once: the week is claimed by one')
  t.equal(await app.reportDigest.sendDue(), 0, 'and not again that week')
  const [mail, ...more] = await digests()
  t.same(more, [])
  t.equal(mail.to, 'ann@example.test')
  t.equal(mail.subject, '[Site demo] The week of 2026-11-02')
  t.match(mail.text, /^Site demo, the week of 2026-11-02 \(Monday to Sunday, UTC\), against the week before:\n\nNew discussions: 20 \(\+20\); the week before: 0\nResolved: 20 \(\+20\); the week before: 0\nReopened: 1 \(\+1\); the week before: 0\nMedian first reply: 1 h; the week before: —\n/)
  t.match(mail.text, /SLA kept: 15%; the week before: —\n/)
  t.match(mail.text, /The reports, week by week: https:\/\/help\.example\.test\/demo\/reports\?by=week/)

  clock.advance(7 * 24 * 60 * MINUTE)
  t.equal(await app.reportDigest.sendDue(), 1, 'the next week, the next digest')
  t.match((await digests())[1].text, /New discussions: 0 \(−20\); the week before: 20/)
})

t.test('a report by a custom field: a line per value (each choice of several, yes and no), counted as the value stood when it happened; the rebuild agrees', async (t) => {
  const { app, call, create, ann, clock } = await reportApp(t)
  for (const field of [
    { key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] },
    { key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat'] },
    { key: 'vip', name: 'VIP', kind: 'yes_no' },
    { key: 'order_number', name: 'Order number', kind: 'text' },
  ]) t.equal((await call('POST', '/demo/fields', field)).status, 201)
  const basic = await create({ fields: { plan: 'Basic', products: ['Desk', 'Chat'], vip: true, order_number: 'A-1' } })
  const pro = await create({ fields: { plan: 'Pro', products: ['Chat'] } })
  const none = await create({})
  clock.advance(60 * MINUTE)
  // Replied while Basic; then moved to Pro and resolved: each counted under the value of its moment.
  t.equal((await call('POST', `/demo/discussions/${basic.number}/comments`, { body: 'On it.' })).status, 201)
  t.equal((await call('PUT', `/demo/discussions/${basic.number}`, { fields: { plan: 'Pro' } })).status, 200)
  for (const d of [basic, pro, none]) t.equal((await call('POST', `/demo/discussions/${d.number}/resolve`)).status, 200)
  const lines = async (name: string, by: string) => {
    const answer = await call('GET', `/demo/reports/${name}?from=2026-11-02&to=2026-11-02&by=${by}`)
    t.equal(answer.status, 200, `${name} by ${by}`)
    return (answer.body.lines as Array<{ key: string; label: string; created?: number; resolved?: number; count?: number }>).map((l) => [l.key, l.label, l.created ?? l.count, l.resolved ?? null])
  }
  t.same(await lines('volume', 'field.plan'), [['Pro', 'Pro', 1, 2], ['Basic', 'Basic', 1, 0]], 'made Basic and Pro; both resolved as Pro; the one without a plan in no line')
  t.same(await lines('volume', 'field.products'), [['Chat', 'Chat', 2, 2], ['Desk', 'Desk', 1, 1]], 'a discussion under each of its choices')
  t.same(await lines('volume', 'field.vip'), [['true', 'Yes', 1, 1]])
  t.same(await lines('first_reply', 'field.plan'), [['Basic', 'Basic', 1, null]], 'its first reply while it was Basic')
  const total = (await call('GET', '/demo/reports/volume?from=2026-11-02&to=2026-11-02&by=field.plan')).body.total
  t.match(total, { created: 3, resolved: 3 }, "the total is the site's, not the lines' sum")

  for (const by of ['field.order_number', 'field.colour', 'field.Plan']) {
    const refused = await call('GET', `/demo/reports/volume?by=${by}`)
    t.equal(refused.status, 400, by)
    t.equal(refused.body.fields[0].field, 'by', by)
  }
  const csv = await app.inject({ url: '/demo/reports/volume?from=2026-11-02&to=2026-11-02&by=field.vip', headers: { ...ann.bearer, accept: 'text/csv' } })
  t.match(csv.body, /^key,label,created,/)
  t.match(csv.body, /\r\ntrue,Yes,1,/)

  // Made again from the discussions' facts: created and resolved under the values they have now.
  t.equal(await app.reports.rebuild(ann.site.id), 3)
  t.same(await lines('volume', 'field.plan'), [['Pro', 'Pro', 2, 2]], 'after a rebuild, each under its value now')
})
