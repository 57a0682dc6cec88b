import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { addBusinessMinutes } from '../../lib/business-time.ts'
import { businessSchedule } from '../../db/stores/schedules.ts'

// Engines: both: the schedules are rows of the stores, which each engine must keep alike.
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
