import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { signedInPerson } from '../fixtures/web.ts'
import { addBusinessMinutes } from '../../lib/business-time.ts'
import { businessSchedule } from '../../db/stores/schedules.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the schedules are rows of the stores, which each engine must keep alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 68, item 1 (the first part): a site's business hours through the API, read by its staff and
// written by its administrators: weekdays in a zone, split shifts, holidays and one-offs; every
// refusal names its field; the sites kept apart; each change in the record; and a deadline
// computed over a stored schedule (lib/business-time.ts).

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })
const nineToSix = [{ from: '09:00', to: '18:00' }]

t.test('an administrator keeps business hours; the staff reads them; every refusal says why', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const call = async (who: typeof ann, method: string, url: string, payload?: unknown) => {
    const answer = await app.inject({ method: method as 'GET', url, headers: payload === undefined ? { ...who.bearer, accept: V1 } : json(who.bearer), ...(payload !== undefined && { payload: payload as object }) })
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json(), location: answer.headers.location }
  }
  const berlin = {
    name: 'Berlin',
    time_zone: 'Europe/Berlin',
    hours: { monday: nineToSix, tuesday: nineToSix, wednesday: nineToSix, thursday: nineToSix, friday: nineToSix },
    days: [{ date: '2026-12-25', name: 'Christmas', hours: [] }, { date: '2026-12-19', name: 'Before Christmas', hours: [{ from: '10:00', to: '14:00' }] }],
  }
  const made = await call(ann, 'POST', '/demo/schedules', berlin)
  t.equal(made.status, 201)
  t.equal(made.location, made.body.href)
  t.match(made.body, {
    name: 'Berlin',
    time_zone: 'Europe/Berlin',
    hours: { monday: nineToSix, friday: nineToSix, saturday: [], sunday: [] },
    days: [{ date: '2026-12-19', name: 'Before Christmas', hours: [{ from: '10:00', to: '14:00' }] }, { date: '2026-12-25', name: 'Christmas', hours: [] }],
  }, 'days in date order, a weekday left out is closed')
  const austin = await call(ann, 'POST', '/demo/schedules', { name: 'Austin', time_zone: 'America/Chicago', hours: { monday: [{ from: '08:00', to: '12:00' }, { from: '13:00', to: '24:00' }] } })
  t.same(austin.body.hours.monday, [{ from: '08:00', to: '12:00' }, { from: '13:00', to: '24:00' }], 'a split shift, to midnight')

  // The staff reads them; only an administrator writes.
  t.same((await call(bob, 'GET', '/demo/schedules')).body.schedules.map((s: { name: string }) => s.name), ['Austin', 'Berlin'])
  t.equal((await call(bob, 'GET', `/demo/schedules/${made.body.id}`)).status, 200)
  t.equal((await call(bob, 'POST', '/demo/schedules', { ...berlin, name: 'Mine' })).status, 403)
  t.equal((await call(bob, 'PATCH', `/demo/schedules/${made.body.id}`, { name: 'Mine' })).status, 403)
  t.equal((await call(bob, 'DELETE', `/demo/schedules/${made.body.id}`)).status, 403)

  // Refusals, each naming its field.
  for (const [what, body, field, status] of [
    ['an unknown zone', { ...berlin, name: 'X', time_zone: 'Mars/Olympus_Mons' }, 'time_zone', 400],
    ['overlapping intervals', { ...berlin, name: 'X', hours: { monday: [{ from: '09:00', to: '13:00' }, { from: '12:00', to: '18:00' }] } }, 'hours', 400],
    ['an interval ending before it starts', { ...berlin, name: 'X', hours: { monday: [{ from: '18:00', to: '09:00' }] } }, 'hours', 400],
    ['a time that is none', { ...berlin, name: 'X', hours: { monday: [{ from: '25:00', to: '26:00' }] } }, 'hours.monday.0.from', 400],
    ['a date that is none', { ...berlin, name: 'X', days: [{ date: '2026-02-30', hours: [] }] }, 'days', 400],
    ['a date twice', { ...berlin, name: 'X', days: [{ date: '2026-12-24', hours: [] }, { date: '2026-12-24', hours: [] }] }, 'days', 400],
    ['an unknown weekday', { ...berlin, name: 'X', hours: { funday: nineToSix } }, 'hours', 400],
    ['a name taken', berlin, 'name', 409],
  ] as const) {
    const refused = await call(ann, 'POST', '/demo/schedules', body)
    t.equal(refused.status, status, what)
    t.match(JSON.stringify(refused.body), field, `${what}: names ${field}`)
  }
  t.equal((await call(ann, 'GET', '/demo/schedules')).body.schedules.length, 2, 'nothing of a refusal kept')

  const changed = await call(ann, 'PATCH', `/demo/schedules/${made.body.id}`, { days: [{ date: '2026-03-09', name: 'A day off', hours: [] }] })
  t.equal(changed.status, 200)
  t.same(changed.body.days, [{ date: '2026-03-09', name: 'A day off', hours: [] }], 'the dates replaced whole')
  t.equal((await call(ann, 'PATCH', `/demo/schedules/${made.body.id}`, {})).status, 400, 'a change names something')
  t.equal((await call(ann, 'PATCH', `/demo/schedules/${made.body.id}`, { name: 'Austin' })).status, 409)
  t.equal((await call(ann, 'PATCH', '/demo/schedules/999999', { name: 'Y' })).status, 404)

  // A deadline over the stored schedule: Friday 17:55 in Berlin, four business hours, Monday off.
  const stored = (await app.schedules.find(ann.site.id, made.body.id))!
  t.same(addBusinessMinutes(businessSchedule(stored), new Date('2026-03-06T16:55:00Z'), 240), new Date('2026-03-10T11:55:00Z'), 'Tuesday 12:55')

  // Another site's administrator sees and touches none of ours.
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  await app.users.setAdministrator(otto.site.id, otto.user.id, true)
  t.same((await call(otto, 'GET', '/other/schedules')).body.schedules, [])
  t.equal((await call(otto, 'GET', `/other/schedules/${made.body.id}`)).status, 404)
  t.equal((await call(otto, 'DELETE', `/other/schedules/${made.body.id}`)).status, 404)

  t.equal((await call(ann, 'DELETE', `/demo/schedules/${austin.body.id}`)).status, 204)
  t.equal((await call(ann, 'GET', `/demo/schedules/${austin.body.id}`)).status, 404)
  const record = (await call(ann, 'GET', '/demo/audit_log?action=schedule')).body.entries as Array<{ action: string; target: string; detail: Record<string, unknown> }>
  t.same(record.map((e) => [e.action, e.target]).reverse(), [['schedule.created', 'Berlin'], ['schedule.created', 'Austin'], ['schedule.changed', 'Berlin'], ['schedule.removed', 'Austin']])
  t.same(record[1]!.detail, { before: { days: '2026-12-19 2026-12-25' }, after: { days: '2026-03-09' } })

  // At most 20 a site.
  for (let i = 0; i < 19; i++) await app.schedules.add(ann.site.id, { name: `Team ${i}`, timeZone: 'UTC', week: [[], [], [], [], [], [], []], days: {} })
  t.equal((await call(ann, 'POST', '/demo/schedules', { ...berlin, name: 'One more' })).status, 429)
})

t.test("a country's public holidays prefilled, on the API and the command line", onSqlite("a country's public holidays worked out before the store, and what a place refuses"), async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const year = new Date(clock()).getUTCFullYear()
  const made = await app.inject({
    method: 'POST',
    url: '/demo/schedules',
    headers: json(ann.bearer),
    payload: { name: 'Berlin', time_zone: 'Europe/Berlin', hours: { monday: nineToSix }, holidays_of: 'DE-BE', days: [{ date: `${year}-12-24`, name: 'Closed early', hours: [{ from: '09:00', to: '12:00' }] }] },
  })
  t.equal(made.statusCode, 201, made.body)
  const days = made.json().days as Array<{ date: string; name: string; hours: unknown[] }>
  t.match(days.find((d) => d.date === `${year}-12-25`), { hours: [] }, 'Christmas Day off')
  t.ok(days.some((d) => d.date === `${year + 1}-01-01`), 'and next year')
  t.ok(days.some((d) => d.date === `${year}-03-08`), "Berlin's own: Women's Day")
  t.same(days.find((d) => d.date === `${year}-12-24`), { date: `${year}-12-24`, name: 'Closed early', hours: [{ from: '09:00', to: '12:00' }] }, 'a day given wins')
  for (const place of ['XX', 'DE-ZZ', 'Germany']) {
    const refused = await app.inject({ method: 'POST', url: '/demo/schedules', headers: json(ann.bearer), payload: { name: place, time_zone: 'UTC', hours: {}, holidays_of: place } })
    t.equal(refused.statusCode, 400, place)
    t.match(refused.body, 'holidays_of')
  }
})

t.test('the command line: add with hours and holidays, list, remove; each refusal a usage error', onSqlite("the schedule commands' output and their usage errors"), async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  const added = await cli.run(['schedule', 'add', 'acme', 'Berlin', '--zone', 'Europe/Berlin', '--hours', 'mon-fri 09:00-12:00,13:00-18:00; sat 10:00-14:00', '--holidays', 'DE'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^schedule 1 of acme: 1\tBerlin\tEurope\/Berlin\tmon 09:00-12:00,13:00-18:00; tue 09:00-12:00,13:00-18:00; wed .*; sat 10:00-14:00\t\d+ dates\n$/)
  t.equal((await cli.run(['schedule', 'add', 'acme', 'Austin', '--zone', 'America/Chicago', '--hours', 'mon 08:00-17:00'])).code, 0)
  t.match((await cli.run(['schedule', 'list', 'acme'])).stdout, /^2\tAustin\tAmerica\/Chicago\tmon 08:00-17:00\t0 dates\n1\tBerlin/)
  for (const [argv, words] of [
    [['--zone', 'UTC'], /--zone and --hours are needed/],
    [['--zone', 'UTC', '--hours', 'someday 09:00-10:00'], /days are mon, tue/],
    [['--zone', 'UTC', '--hours', 'mon 9-10'], /hours are HH:MM-HH:MM/],
    [['--zone', 'UTC', '--hours', 'mon'], /days, then their hours/],
    [['--zone', 'UTC', '--hours', 'fri-mon 09:00-10:00'], /a range of them/],
    [['--zone', 'UTC', '--hours', 'mon 10:00-09:00'], /each interval must end after it starts/],
    [['--zone', 'UTC', '--hours', 'mon 09:00-10:00', '--holidays', 'XX'], /not a country \(DE\) or region/],
    [['--zone', 'UTC', '--hours', 'mon 09:00-10:00', '--holidays', 'Germany'], /not a country \(DE\) or region/],
    [['--zone', 'UTC', '--hours', 'mon 09:00-10:00', '--holidays', 'DE-ZZ'], /not a country \(DE\) or region/],
  ] as const) {
    const refused = await cli.run(['schedule', 'add', 'acme', 'X', ...argv])
    t.equal(refused.code, 2, argv.join(' '))
    t.match(refused.stderr, words)
  }
  t.equal((await cli.run(['schedule', 'add', 'acme', 'X', '--zone', 'Mars/X', '--hours', 'mon 09:00-10:00'])).code, 1, 'an unknown zone: refused by the store')
  t.equal((await cli.run(['schedule', 'remove', 'acme', 'one'])).code, 2)
  t.equal((await cli.run(['schedule', 'remove', 'acme', '2'])).code, 0)
  t.notMatch((await cli.run(['schedule', 'list', 'acme'])).stdout, /Austin/)
  t.match((await cli.run(['audit', 'acme', '--action', 'schedule'])).stdout, /the operator\tcli\t-\tschedule.removed\tAustin/)
})

t.test("the store's own checks, whatever door calls it", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const siteId = ann.site.id
  const week = [[], [], [], [], [], [], []] as Array<Array<[number, number]>>
  const good = { name: 'Team', timeZone: 'UTC', week, days: {} }
  for (const [what, input, field] of [
    ['a blank name', { ...good, name: '  ' }, 'name'],
    ['a name too long', { ...good, name: 'x'.repeat(101) }, 'name'],
    ['not a date', { ...good, days: { tomorrow: { name: '', hours: [] } } }, 'days'],
    ['a date that is none', { ...good, days: { '2026-13-01': { name: '', hours: [] } } }, 'days'],
    ["a day's name too long", { ...good, days: { '2026-12-24': { name: 'x'.repeat(101), hours: [] } } }, 'days'],
    ["a day's hours overlapping", { ...good, days: { '2026-12-24': { name: '', hours: [[60, 120], [90, 150]] } } }, 'days'],
    ['too many dates', { ...good, days: Object.fromEntries(Array.from({ length: 401 }, (_, i) => [new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10), { name: '', hours: [] }])) }, 'days'],
  ] as const) {
    await t.rejects(app.schedules.add(siteId, input as typeof good), { code: 'invalid', field }, what)
  }
  const made = await app.schedules.add(siteId, good)
  await t.rejects(app.schedules.update(siteId, made.id, { timeZone: 'Nowhere/Land' }), { code: 'invalid', field: 'time_zone' })
  await t.rejects(app.schedules.remove(siteId, 999_999), { code: 'not_found' })
  t.match(await app.schedules.update(siteId, made.id, { timeZone: 'Asia/Kathmandu', week: [[[0, 1440]], [], [], [], [], [], []] }), { timeZone: 'Asia/Kathmandu', week: [[[0, 1440]], [], [], [], [], [], []] })
  t.same(await app.securityLog.changes({ siteId, limit: 10 }), [], 'a store call without an actor records nothing')
})

t.test('Administration -> Business hours: add with holidays, remove; each refusal said on the page; administrators only', onSqlite("the business hours page's words, forms and refusals"), async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  await ann.web.get('/demo/admin/hours')
  t.match((await ann.web.get('/demo/admin/hours')).body, /None yet\./)
  const added = await ann.web.post('/demo/admin/hours', { name: 'Berlin', zone: 'Europe/Berlin', hours: 'mon-fri 09:00-12:00,13:00-18:00', holidays: 'DE-BE' })
  t.equal(added.headers.location, 'https://help.example.test/demo/admin/hours?done=added')
  const page = await ann.web.get('/demo/admin/hours?done=added')
  t.match(page.body, /The business hours are added\./)
  t.match(page.body, /data-schedule="Berlin"[\s\S]*?Europe\/Berlin[\s\S]*?mon 09:00-12:00, 13:00-18:00; tue/)
  t.match((await app.schedules.list(ann.site.id))[0], { name: 'Berlin', timeZone: 'Europe/Berlin' })
  t.ok(Object.keys((await app.schedules.list(ann.site.id))[0]!.days).length > 15, 'two years of Berlin public holidays')
  for (const [form, status, words] of [
    [{ name: 'X', zone: 'UTC', hours: 'someday 09:00-10:00' }, 400, /The hours: &quot;someday&quot;: days are mon/],
    [{ name: 'X', zone: 'UTC', hours: 'mon 09:00-10:00', holidays: 'XX' }, 400, /The holidays: &quot;XX&quot; is not a country/],
    [{ name: 'X', zone: 'Mars/Olympus_Mons', hours: 'mon 09:00-10:00' }, 400, /The time zone &quot;Mars\/Olympus_Mons&quot; is not a time zone/],
    [{ name: ' ', zone: 'UTC', hours: '' }, 400, /The name must be 1 to 100 characters/],
    [{ name: 'Berlin', zone: 'UTC', hours: '' }, 409, /This site has a schedule named &quot;Berlin&quot; already/],
  ] as const) {
    const refused = await ann.web.post('/demo/admin/hours', form)
    t.equal(refused.statusCode, status, JSON.stringify(form))
    t.match(refused.body, words)
  }
  t.equal((await bob.web.get('/demo/admin/hours')).statusCode, 403, 'a supporter sees none')
  t.equal((await bob.web.post('/demo/admin/hours', { name: 'Mine', zone: 'UTC', hours: '' })).statusCode, 403)
  const id = (await app.schedules.list(ann.site.id))[0]!.id
  t.equal((await ann.web.post('/demo/admin/hours/999999/remove', {})).statusCode, 404)
  t.equal((await ann.web.post(`/demo/admin/hours/${id}/remove`, {})).headers.location, 'https://help.example.test/demo/admin/hours?done=removed')
  t.same(await app.schedules.list(ann.site.id), [])
  const record = (await app.securityLog.changes({ siteId: ann.site.id, limit: 10 })).map((e) => [e.action, e.actor, e.via])
  t.same(record, [['schedule.removed', 'ann@example.test', 'page'], ['schedule.created', 'ann@example.test', 'page']])
})
