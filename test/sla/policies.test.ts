import t, { type Test } from 'tap'
import { newTestApp, rawRows, sharedDatabase, supporterWithToken, testClock } from '../fixtures/app.ts'
import { addCategory, discussionApp } from '../fixtures/discussions.ts'

// Engines: both: the clocks are columns every write moves in its transaction, and the alerts are
// told under a row lock; each engine must keep them alike.
// Issue 68, items 2 to 4: SLA policies through the API; each discussion's clocks in business time
// (the example of the issue: Friday 17:55 in Berlin, four business hours, due Monday 12:55, or
// Tuesday when Monday is a holiday); the clock paused while the discussion waits on its customer;
// a warning and a breach each told once (webhook events and a mail); the listing by due time and
// the breached ones; the sites kept apart.

const FRIDAY_1755_BERLIN = Date.parse('2026-12-04T16:55:00Z')
const MINUTE = 60_000
const nineToSix = [{ from: '09:00', to: '18:00' }]
const WEEKDAYS = { monday: nineToSix, tuesday: nineToSix, wednesday: nineToSix, thursday: nineToSix, friday: nineToSix }

async function slaApp(t: Test, start = FRIDAY_1755_BERLIN) {
  const made = await discussionApp(t, { clock: testClock(start) })
  await made.app.users.setAdministrator(made.ann.site.id, made.ann.user.id, true)
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers = made.ann.bearer) => {
    const answer = await made.api(method, url, payload, headers)
    return { status: answer.statusCode, body: answer.body === '' || !/json/.test(String(answer.headers['content-type'])) ? null : answer.json() }
  }
  const berlin = (await call('POST', '/demo/schedules', { name: 'Berlin', time_zone: 'Europe/Berlin', hours: WEEKDAYS })).body
  /** A customer's new discussion (by the API on their behalf). */
  const customerWrites = async (body: Record<string, unknown> = {}, categoryId = made.questions.id) => made.create({ author_email: 'carol@customer.test', ...body }, categoryId)
  const reply = async (number: number, body: Record<string, unknown>) => {
    const answer = await call('POST', `/demo/discussions/${number}/comments`, { body: 'Words.', ...body })
    t.equal(answer.status, 201, 'the reply is taken')
    return (await call('GET', `/demo/discussions/${number}`)).body
  }
  /** The webhook events and the SLA mails queued, by type and subject. */
  const told = async () => {
    const rows = await rawRows(made.app, "select kind, payload from outbox where kind in ('webhook', 'notification') order by id")
    return rows.map((r) => (r.kind === 'webhook' ? `event ${JSON.parse(String(r.payload)).type}` : `mail ${JSON.parse(String(r.payload)).subject}`)).filter((what) => /sla|due soon|missed/.test(what))
  }
  return { ...made, call, berlin, customerWrites, reply, told }
}

t.test('Friday 17:55 in Berlin with four business hours to a first reply: due Monday 12:55, Tuesday when Monday is a holiday', async (t) => {
  const { call, berlin, customerWrites } = await slaApp(t)
  const policy = await call('POST', '/demo/sla_policies', { name: 'Standard', schedule_id: berlin.id, first_reply_minutes: 240, next_reply_minutes: 120, resolution_minutes: 960 })
  t.equal(policy.status, 201)
  t.match(policy.body, { name: 'Standard', position: 1, schedule: { id: berlin.id }, first_reply_minutes: 240, warn_minutes: 30, conditions: { categories: [], tags: [], domains: [], channels: [] } })

  const first = await customerWrites()
  t.same(first.sla, {
    policy: { id: policy.body.id, href: `https://api.example.test/demo/sla_policies/${policy.body.id}` },
    first_reply_due_at: '2026-12-07T11:55:00Z',
    next_reply_due_at: null,
    // 960 minutes: 5 on Friday, 540 on Monday, 415 on Tuesday.
    resolution_due_at: '2026-12-08T14:55:00Z',
    breached: [],
  }, 'due Monday 12:55 in Berlin (11:55 UTC); resolved by Tuesday 15:55')

  t.equal((await call('PATCH', `/demo/schedules/${berlin.id}`, { days: [{ date: '2026-12-07', name: 'A holiday', hours: [] }] })).status, 200)
  const second = await customerWrites()
  t.equal(second.sla.first_reply_due_at, '2026-12-08T11:55:00Z', 'a Monday holiday: due Tuesday 12:55')

  // A supporter's own discussion owes nobody an answer: no clock runs until a customer writes.
  const own = await call('POST', `/demo/categories/${(await call('GET', '/demo/categories')).body.categories[0].id}/discussions`, { title: 'Ours', body: 'A note to a customer.' })
  t.same({ ...own.body.sla, policy: null }, { policy: null, first_reply_due_at: null, next_reply_due_at: null, resolution_due_at: null, breached: [] })
})

t.test('the clocks pause while the discussion waits on its customer, and resume when the customer writes', async (t) => {
  const { app, clock, call, customerWrites, reply } = await slaApp(t, Date.parse('2026-12-07T08:00:00Z')) // Monday 09:00 in Berlin
  const policy = (await call('POST', '/demo/sla_policies', { name: 'Around the clock', first_reply_minutes: 60, next_reply_minutes: 30, resolution_minutes: 600 })).body
  t.equal(policy.schedule, null, 'no schedule: minutes of the clock')
  const d = await customerWrites()
  t.equal(d.sla.resolution_due_at, '2026-12-07T18:00:00Z')

  clock.advance(20 * MINUTE)
  const answered = await reply(d.number, {})
  t.same([answered.state, answered.sla.first_reply_due_at, answered.sla.next_reply_due_at, answered.sla.resolution_due_at], ['open', null, null, null], 'the team answered and left it open: nothing runs')

  // An internal note moves no clock.
  clock.advance(2 * 60 * MINUTE)
  t.equal((await reply(d.number, { internal: true })).sla.resolution_due_at, null)

  // Two days later the customer answers: the resolution's clock goes on from its 20 minutes.
  clock.advance(2 * 24 * 60 * MINUTE)
  const back = await reply(d.number, { author_email: 'carol@customer.test' })
  const now = clock()
  t.equal(back.sla.next_reply_due_at, new Date(now + 30 * MINUTE).toISOString().replace('.000', ''), 'the next reply is due 30 minutes after the customer wrote')
  t.equal(back.sla.resolution_due_at, new Date(now + 580 * MINUTE).toISOString().replace('.000', ''), '580 minutes left of 600')
  t.equal(back.sla.first_reply_due_at, null, 'the first reply was given')

  // Resolved: stopped; the breached list is empty, as every promise was kept.
  clock.advance(10 * MINUTE)
  const resolved = (await call('POST', `/demo/discussions/${d.number}/resolve`)).body
  t.same([resolved.sla.next_reply_due_at, resolved.sla.resolution_due_at, resolved.sla.breached], [null, null, []])
  t.equal((await app.slaAlerts.tellDue()), 0, 'nothing to tell')
})

t.test('a warning before the due time and the breach at it, each told once, however often the loop runs', async (t) => {
  const { app, clock, call, customerWrites, reply, told } = await slaApp(t, Date.parse('2026-12-07T08:00:00Z'))
  await app.sites.setPolicy((await app.sites.find('demo'))!.id, { newDiscussionsToTeam: true })
  await call('POST', '/demo/webhooks', { url: 'https://hooks.example.test/in', events: ['sla.warning', 'sla.breached'] })
  await call('POST', '/demo/sla_policies', { name: 'Fast', first_reply_minutes: 60, warn_minutes: 15 })
  const d = await customerWrites()

  clock.advance(44 * MINUTE)
  t.equal(await app.slaAlerts.tellDue(), 0, '16 minutes before: nothing yet')
  clock.advance(1 * MINUTE)
  t.equal(await app.slaAlerts.tellDue(), 1, '15 minutes before: the warning')
  t.equal(await app.slaAlerts.tellDue(), 0, 'told once')
  const warned = (await call('GET', `/demo/discussions/${d.number}`)).body
  t.same(warned.sla.breached, [], 'a warning breaches nothing')

  clock.advance(15 * MINUTE)
  t.equal(await app.slaAlerts.tellDue(), 1, 'at the due time: the breach')
  t.equal(await app.slaAlerts.tellDue(), 0, 'told once')
  const breached = (await call('GET', `/demo/discussions/${d.number}`)).body
  t.same(breached.sla.breached, ['first_reply'], 'the API shows it breached')
  t.ok(breached.sla.first_reply_due_at, 'the clock still runs: the team still owes the reply')
  t.same(await told(), [
    'event sla.warning',
    `mail [Site demo] #${d.number} is due soon (first reply): A question`,
    'event sla.breached',
    `mail [Site demo] #${d.number} missed its first reply: A question`,
  ])
  const [event] = (await rawRows(app, "select payload from outbox where kind = 'webhook' order by id desc")).map((r) => JSON.parse(String(r.payload)))
  t.match(event.data, { number: d.number, alert: { kind: 'first_reply', due_at: '2026-12-07T09:00:00Z' }, sla: { breached: ['first_reply'] } }, 'the event carries the discussion and which promise was due when')

  // The late reply stops the clock; the breach, told already, is not told again.
  clock.advance(5 * MINUTE)
  const late = await reply(d.number, {})
  t.same([late.sla.first_reply_due_at, late.sla.breached], [null, ['first_reply']])
  t.equal((await told()).length, 4, 'nothing more told')
})

t.test('a reply after the due time that no loop saw is a breach, told by the reply itself', async (t) => {
  const { clock, call, customerWrites, reply, told } = await slaApp(t, Date.parse('2026-12-07T08:00:00Z'))
  await call('POST', '/demo/webhooks', { url: 'https://hooks.example.test/in', events: ['sla.breached'] })
  await call('POST', '/demo/sla_policies', { name: 'Fast', first_reply_minutes: 60, warn_minutes: 0 })
  const d = await customerWrites()
  clock.advance(90 * MINUTE)
  const late = await reply(d.number, {})
  t.same(late.sla.breached, ['first_reply'])
  t.same(await told(), ['event sla.breached'], 'told once, by the write (the team hears of no new discussion here: no mail)')
})

t.test('policies choose by category, tag, domain and channel, in order; the listing by due time and the breached ones', async (t) => {
  const { app, clock, call, customerWrites, questions, problems } = await slaApp(t, Date.parse('2026-12-07T08:00:00Z'))
  const vip = (await call('POST', '/demo/sla_policies', { name: 'VIP', conditions: { domains: ['vip.test'] }, first_reply_minutes: 30 })).body
  const problemsFirst = (await call('POST', '/demo/sla_policies', { name: 'Problems', conditions: { categories: [problems.id], channels: ['api'] }, first_reply_minutes: 120 })).body
  const urgent = (await call('POST', '/demo/sla_policies', { name: 'Urgent', conditions: { tags: ['urgent'] }, first_reply_minutes: 10, position: 1 })).body
  t.same((await call('GET', '/demo/sla_policies')).body.sla_policies.map((p: { name: string; position: number }) => `${p.position} ${p.name}`), ['1 Urgent', '2 VIP', '3 Problems'], 'a position puts it in its place')

  const plain = await customerWrites({ title: 'Plain' })
  t.equal(plain.sla, null, 'no policy chooses a question of another domain')
  const fromVip = await customerWrites({ title: 'From VIP', author_email: 'dan@eu.vip.test' })
  t.equal(fromVip.sla.policy.id, vip.id, 'a subdomain of the domain')
  const problem = await customerWrites({ title: 'A problem' }, problems.id)
  t.equal(problem.sla.policy.id, problemsFirst.id)

  // A tag added later chooses again: Urgent comes first, from the discussion's start.
  const patched = await call('PUT', `/demo/discussions/${problem.number}`, { tags: ['urgent'] })
  t.equal(patched.status, 200, JSON.stringify(patched.body))
  const tagged = patched.body
  t.equal(tagged.sla.policy.id, urgent.id)
  t.equal(tagged.sla.first_reply_due_at, '2026-12-07T08:10:00Z')

  // By due time: the soonest first; those with no clock last.
  const byDue = (await call('GET', '/demo/discussions?sort=due')).body
  t.same(byDue.discussions.map((d: { title: string }) => d.title), ['A problem', 'From VIP', 'Plain'])
  t.equal(byDue.total, 3)
  t.equal((await call('GET', '/demo/discussions/resolved?sort=due')).status, 400, 'a resolved discussion has no due time')
  t.equal((await call('GET', `/demo/categories/${questions.id}/discussions?sort=due`)).body.discussions[0].title, 'From VIP')

  clock.advance(20 * MINUTE)
  await app.slaAlerts.tellDue()
  const breached = (await call('GET', '/demo/discussions?sla=breached')).body
  t.same(breached.discussions.map((d: { title: string }) => d.title), ['A problem'])
  t.equal(breached.total, 1)
  t.equal((await call('GET', '/demo/discussions?sla=late')).status, 400)
  // The search's query language says it too; a customer's search may not ask it (the team's own business).
  const found = (await call('GET', `/demo/search?q=${encodeURIComponent('sla:breached')}`)).body
  t.same(found.results.map((r: { discussion: { title: string } }) => r.discussion.title), ['A problem'])
  t.equal((await call('GET', `/demo/search?q=${encodeURIComponent('help sla:breached')}`)).body.total, 0, 'with words that are nowhere: nothing')
  const refused = await call('GET', `/demo/search?q=${encodeURIComponent('sla:late')}`)
  t.equal(refused.status, 400)
  t.match(JSON.stringify(refused.body), 'the SLA filter is sla:breached')
  const siteId = (await app.sites.find('demo'))!.id
  await t.rejects(app.discussionSearch.find({ siteId, searcher: { staff: false, userId: null, publicToo: true }, q: 'sla:breached', offset: 0, limit: 30 }), /gives sla:, which only the team may search by/, "a customer's search may not filter by it")

  // Removing a policy stops the clocks of what it chose; what was breached stays said.
  t.equal((await call('DELETE', `/demo/sla_policies/${urgent.id}`)).status, 204)
  const after = (await call('GET', `/demo/discussions/${problem.number}`)).body
  t.equal(after.sla, null, 'no policy any more: its next change may be chosen again')
  t.same((await call('GET', '/demo/sla_policies')).body.sla_policies.map((p: { position: number }) => p.position), [1, 2], 'the order closes up')
})

t.test('administrators write policies, the staff reads them, every refusal names its field, and the sites stay apart', async (t) => {
  const { app, ann, call, berlin, questions } = await slaApp(t)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const made = (await call('POST', '/demo/sla_policies', { name: 'Standard', first_reply_minutes: 60 })).body
  t.equal((await call('GET', '/demo/sla_policies', undefined, bob.bearer)).status, 200, 'the staff reads')
  t.equal((await call('POST', '/demo/sla_policies', { name: 'Mine', first_reply_minutes: 5 }, bob.bearer)).status, 403, 'only an administrator writes')
  t.equal((await call('DELETE', `/demo/sla_policies/${made.id}`, undefined, bob.bearer)).status, 403)

  // Another site's administrator names this site's things: refused, and sees none of them.
  const eve = await supporterWithToken(app, { site: 'other', email: 'eve@example.test' })
  await app.users.setAdministrator(eve.site.id, eve.user.id, true)
  const theirs = await addCategory(app, eve.site.id, 'Theirs')
  t.same((await call('GET', '/other/sla_policies', undefined, eve.bearer)).body.sla_policies, [])
  t.equal((await call('GET', `/other/sla_policies/${made.id}`, undefined, eve.bearer)).status, 404)
  t.equal((await call('PATCH', `/other/sla_policies/${made.id}`, { name: 'Taken' }, eve.bearer)).status, 404)
  t.equal((await call('DELETE', `/other/sla_policies/${made.id}`, undefined, eve.bearer)).status, 404)
  t.equal((await call('GET', '/demo/sla_policies', undefined, eve.bearer)).status, 401)
  for (const [what, body, field] of [
    ["another site's schedule", { name: 'X', first_reply_minutes: 5, schedule_id: berlin.id }, 'schedule_id'],
    ["this site's category on another site", { name: 'X', first_reply_minutes: 5, conditions: { categories: [questions.id] } }, 'categories'],
  ] as const) {
    const answer = await call('POST', '/other/sla_policies', body, eve.bearer)
    t.equal(answer.status, 400, what)
    t.match(JSON.stringify(answer.body), field, `${what}: names ${field}`)
  }
  t.equal((await call('POST', '/other/sla_policies', { name: 'Theirs', first_reply_minutes: 5, conditions: { categories: [theirs.id] } }, eve.bearer)).status, 201, 'its own category')

  for (const [what, body, field, status] of [
    ['no target', { name: 'X' }, 'first_reply_minutes', 400],
    ['a target of no minutes', { name: 'X', first_reply_minutes: 0 }, 'first_reply_minutes', 400],
    ['a target past a year', { name: 'X', resolution_minutes: 600_000 }, 'resolution_minutes', 400],
    ['a fraction', { name: 'X', next_reply_minutes: 1.5 }, 'next_reply_minutes', 400],
    ['a warning past a day', { name: 'X', first_reply_minutes: 5, warn_minutes: 2000 }, 'warn_minutes', 400],
    ['a domain that is none', { name: 'X', first_reply_minutes: 5, conditions: { domains: ['not a domain'] } }, 'domains', 400],
    ['a tag that is none', { name: 'X', first_reply_minutes: 5, conditions: { tags: ['a tag!'] } }, 'tags', 400],
    ['an unknown channel', { name: 'X', first_reply_minutes: 5, conditions: { channels: ['fax'] } }, 'conditions.channels.0', 400],
    ['an unknown condition', { name: 'X', first_reply_minutes: 5, conditions: { planet: ['mars'] } }, 'conditions', 400],
    ['a blank name', { name: '  ', first_reply_minutes: 5 }, 'name', 400],
    ['a name taken', { name: 'Standard', first_reply_minutes: 5 }, 'name', 409],
  ] as const) {
    const answer = await call('POST', '/demo/sla_policies', body)
    t.equal(answer.status, status, what)
    t.match(JSON.stringify(answer.body), field, `${what}: names ${field}`)
  }
  t.equal((await call('PATCH', `/demo/sla_policies/${made.id}`, { first_reply_minutes: null })).status, 400, 'a change that leaves no target')
  t.equal((await call('GET', '/demo/sla_policies/999')).status, 404)

  // A schedule some policy counts in is not removed.
  await call('PATCH', `/demo/sla_policies/${made.id}`, { schedule_id: berlin.id })
  const removal = await call('DELETE', `/demo/schedules/${berlin.id}`)
  t.equal(removal.status, 409)
  t.match(removal.body.message ?? removal.body.error, /Standard/)

  // Each change is in the record.
  const record = (await call('GET', '/demo/audit_log?action=sla_policy')).body
  t.same(record.entries.map((e: { action: string }) => e.action), ['sla_policy.changed', 'sla_policy.created'])
  t.equal(ann.site.permalink, 'demo')
})

t.test('the store refuses what the API cannot send, keeps twenty a site, and follows a category removed', async (t) => {
  const { app, ann, call, questions, problems } = await slaApp(t)
  const siteId = ann.site.id
  const any = { categories: [], tags: [], domains: [], channels: [] }
  const good = { name: 'P', conditions: any, scheduleId: null, targets: { firstReply: 60, nextReply: null, resolution: null }, warnBefore: 30 }
  for (const [what, input, field] of [
    ['a name too long', { ...good, name: 'x'.repeat(101) }, 'name'],
    ['a name holding U+0000', { ...good, name: 'a\u0000b' }, 'name'],
    ['51 tags', { ...good, conditions: { ...any, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) } }, 'tags'],
    ['a category id that is none', { ...good, conditions: { ...any, categories: [0] } }, 'categories'],
  ] as const) {
    await t.rejects(app.slaPolicies.add(siteId, input as typeof good), { code: 'invalid', field }, what)
  }
  await t.rejects(app.slaPolicies.update(siteId, 999_999, { name: 'X' }), { code: 'not_found' })
  const made = await app.slaPolicies.add(siteId, { ...good, conditions: { ...any, categories: [problems.id, questions.id] } })
  t.match((await call('GET', `/demo/sla_policies/${made.id}`)).body, { id: made.id, name: 'P', conditions: { categories: [problems.id, questions.id] } })
  for (let i = 2; i <= 20; i++) await app.slaPolicies.add(siteId, { ...good, name: `P${i}` })
  await t.rejects(app.slaPolicies.add(siteId, { ...good, name: 'P21' }), { code: 'limit' }, 'twenty a site')

  // Problems removed into Questions: the policy chooses by Questions alone; Questions removed too would leave it choosing by none.
  await app.discussions.removeCategory(siteId, problems.id, questions.id)
  t.same((await app.slaPolicies.find(siteId, made.id))!.conditions.categories, [questions.id])
  const other = await app.categories.add(siteId, 'Other', false)
  await t.rejects(app.discussions.removeCategory(siteId, questions.id, null), { code: 'conflict', message: /the SLA policy "P" chooses by this category alone/ })
  await app.discussions.removeCategory(siteId, questions.id, other.id)
  t.same((await app.slaPolicies.find(siteId, made.id))!.conditions.categories, [other.id], 'or by the one it moved into')
})

t.test('two looks for the same alerts at once tell each once', async (t) => {
  const { app, clock, call, customerWrites } = await slaApp(t, Date.parse('2026-12-07T08:00:00Z'))
  await call('POST', '/demo/sla_policies', { name: 'Fast', first_reply_minutes: 10, warn_minutes: 0 })
  for (let i = 0; i < 5; i++) await customerWrites()
  clock.advance(11 * MINUTE)
  const [one, two] = await Promise.all([app.discussions.tellAlerts(), app.discussions.tellAlerts()])
  t.equal(one.alerts + two.alerts, 5, 'five breaches between them')
  // Each reads what is due when it starts: a look that starts after the other told one reads fewer (seen on a loaded machine).
  t.ok(one.discussions <= 5 && two.discussions <= 5 && one.discussions + two.discussions >= 5, `each looked at what it read as due (${one.discussions} and ${two.discussions})`)
})

t.test('a change keeps what it does not name, and two changes at once keep each other', async (t) => {
  const { call, questions } = await slaApp(t)
  const made = (await call('POST', '/demo/sla_policies', { name: 'P', conditions: { categories: [questions.id], channels: ['mail'] }, first_reply_minutes: 60, resolution_minutes: 600 })).body
  const [tags, domains] = await Promise.all([
    call('PATCH', `/demo/sla_policies/${made.id}`, { conditions: { tags: ['vip'] }, next_reply_minutes: 30 }),
    call('PATCH', `/demo/sla_policies/${made.id}`, { conditions: { domains: ['big.example'] }, first_reply_minutes: 45 }),
  ])
  t.same([tags.status, domains.status], [200, 200])
  const after = (await call('GET', `/demo/sla_policies/${made.id}`)).body
  t.same(after.conditions, { categories: [questions.id], tags: ['vip'], domains: ['big.example'], channels: ['mail'] }, 'every condition kept')
  t.same([after.first_reply_minutes, after.next_reply_minutes, after.resolution_minutes], [45, 30, 600], 'every target kept')
  t.equal((await call('PATCH', `/demo/sla_policies/${made.id}`, { conditions: { categories: [] } })).body.conditions.categories.length, 0, 'an empty list: any category')
  t.equal((await call('PATCH', '/demo/sla_policies/999', { name: 'X' })).status, 404)
})

t.test("a policy or its hours changed by another process: this one's next create and reply apply them", async (t) => {
  // What a process keeps of a site's policies (db/stores/sla.ts, policiesOf, on PostgreSQL) is the
  // site's rules' version's; every change of them by the other process moves that version.
  const database = await sharedDatabase(t)
  const clock = testClock(FRIDAY_1755_BERLIN)
  const first = await newTestApp(t, { clock, config: database })
  await first.app.ready()
  const ann = await supporterWithToken(first.app, { email: 'ann@example.test' })
  await first.app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const questions = await addCategory(first.app, ann.site.id, 'Questions', true)
  const billing = await addCategory(first.app, ann.site.id, 'Billing', true)
  const call = async (app: typeof first.app, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const answer = await app.inject({ method, url, headers: ann.bearer, ...(payload && { payload }) })
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json() }
  }
  const create = async (categoryId = questions.id) => (await call(first.app, 'POST', `/demo/categories/${categoryId}/discussions`, { title: 'Help', body: 'Words.', author_email: 'carol@customer.test' })).body
  const second = await newTestApp(t, { clock, config: database })
  await second.app.ready()
  t.equal((await create()).sla, null, 'no policy yet')

  const berlin = (await call(second.app, 'POST', '/demo/schedules', { name: 'Berlin', time_zone: 'Europe/Berlin', hours: WEEKDAYS })).body
  const policy = (await call(second.app, 'POST', '/demo/sla_policies', { name: 'Standard', schedule_id: berlin.id, first_reply_minutes: 240, resolution_minutes: 960 })).body
  t.equal((await create()).sla.first_reply_due_at, '2026-12-07T11:55:00Z', "the other's new policy: Monday 12:55 in Berlin")
  const replied = await create()
  t.equal((await call(second.app, 'PATCH', `/demo/schedules/${berlin.id}`, { days: [{ date: '2026-12-07', name: 'A holiday', hours: [] }] })).status, 200)
  t.equal((await create()).sla.first_reply_due_at, '2026-12-08T11:55:00Z', "the other's holiday: due Tuesday 12:55")
  t.equal((await call(second.app, 'PATCH', `/demo/sla_policies/${policy.id}`, { first_reply_minutes: 60 })).status, 200)
  t.equal((await create()).sla.first_reply_due_at, '2026-12-08T08:55:00Z', "the other's target: five minutes on Friday, 55 on Tuesday")
  t.equal((await call(second.app, 'PATCH', `/demo/sla_policies/${policy.id}`, { resolution_minutes: 60 })).status, 200)
  t.equal((await call(first.app, 'POST', `/demo/discussions/${replied.number}/comments`, { body: 'Looking.', author_email: 'carol@customer.test' })).status, 201)
  t.equal((await call(first.app, 'GET', `/demo/discussions/${replied.number}`)).body.sla.resolution_due_at, '2026-12-08T08:55:00Z', "a reply applies the other's resolution target")

  // A first policy that chooses Billing; Billing removed into Questions by the other: it chooses Questions.
  const quick = (await call(second.app, 'POST', '/demo/sla_policies', { name: 'Billing', position: 1, conditions: { categories: [billing.id] }, first_reply_minutes: 30 })).body
  t.equal((await create(billing.id)).sla.policy.id, quick.id, 'Billing chosen in Billing')
  t.equal((await create()).sla.policy.id, policy.id, 'and not in Questions')
  t.equal((await call(second.app, 'DELETE', `/demo/categories/${billing.id}?into=${questions.id}`)).status, 204)
  t.equal((await create()).sla.policy.id, quick.id, 'Billing removed into Questions: its policy now chooses Questions')
  t.equal((await call(second.app, 'DELETE', `/demo/sla_policies/${quick.id}`)).status, 204)
  t.equal((await create()).sla.policy.id, policy.id, "the other removed it: Standard again")
})
