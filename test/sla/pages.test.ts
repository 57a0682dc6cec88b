import t from 'tap'
import { buildTestApp, testClock } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { addCategory } from '../fixtures/discussions.ts'
import { signedInPerson } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Issue 68: Administration -> SLA policies (add, move up, remove; each refusal said on the page;
// administrators only), the queue's due column, its order by due time and its breached filter, and
// the command line's `sla add|list|remove`.

const MONDAY_0900_BERLIN = Date.parse('2026-12-07T08:00:00Z')
const MINUTE = 60_000

t.test('Administration -> SLA policies: add, move up, remove; refusals said; administrators only', async (t) => {
  const { app } = await buildTestApp(t, { clock: testClock(MONDAY_0900_BERLIN) })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  const billing = await addCategory(app, ann.site.id, 'Billing')
  await ann.web.get('/demo/admin/sla')
  t.match((await ann.web.get('/demo/admin/sla')).body, /None yet: no discussion has a due time\./)

  const added = await ann.web.post('/demo/admin/sla', { name: 'Billing by mail', categories: String(billing.id), channels: 'mail', first_reply: '240', resolution: '960', warn: '15' })
  t.equal(added.headers.location, 'https://help.example.test/demo/admin/sla?done=added')
  t.equal((await ann.web.post('/demo/admin/sla', { name: 'VIP', domains: 'vip.test, @big.test', tags: 'vip', first_reply: '30', warn: '0' })).statusCode, 303)
  const page = (await ann.web.get('/demo/admin/sla?done=added')).body
  t.match(page, /The policy is added\./)
  t.match(page, /data-policy="Billing by mail"[\s\S]*?category Billing, by mail[\s\S]*?Around the clock[\s\S]*?4 h[\s\S]*?16 h[\s\S]*?15 min before/)
  t.match(page, /data-policy="VIP"[\s\S]*?tagged vip, from vip\.test or big\.test[\s\S]*?30 min[\s\S]*?none/)

  for (const [form, status, words] of [
    [{ name: 'X' }, 400, /The first reply a policy promises something/],
    [{ name: 'X', first_reply: 'soon' }, 400, /The first reply must be whole minutes from 1 to 525600, or null/],
    [{ name: 'X', first_reply: '5', domains: 'not a domain!' }, 400, /The domains &quot;not&quot; is not a domain/],
    [{ name: 'X', first_reply: '5', schedule: '999' }, 400, /The hours 999 is not a schedule of this site/],
    [{ name: 'X', first_reply: '5', warn: '5000' }, 400, /The warning must be whole minutes from 0/],
    [{ name: 'VIP', first_reply: '5' }, 409, /This site has an SLA policy named &quot;VIP&quot; already/],
    [{ name: 'X', first_reply: '5', categories: 'billing' }, 400, /The categories 0 is not a category id/],
    [{ name: 'X', first_reply: '5', schedule: 'berlin' }, 400, /The hours 0 is not a schedule of this site/],
  ] as const) {
    const refused = await ann.web.post('/demo/admin/sla', form)
    t.equal(refused.statusCode, status, JSON.stringify(form))
    t.match(refused.body, words)
  }
  t.equal((await bob.web.get('/demo/admin/sla')).statusCode, 403, 'a supporter sees none')
  t.equal((await bob.web.post('/demo/admin/sla', { name: 'Mine', first_reply: '5' })).statusCode, 403)

  const [, vip] = await app.slaPolicies.list(ann.site.id)
  t.equal((await ann.web.post(`/demo/admin/sla/${vip!.id}/up`, {})).headers.location, 'https://help.example.test/demo/admin/sla?done=moved')
  t.same((await app.slaPolicies.list(ann.site.id)).map((p) => p.name), ['VIP', 'Billing by mail'])
  t.equal((await ann.web.post('/demo/admin/sla/999999/up', {})).statusCode, 404)
  t.equal((await ann.web.post('/demo/admin/sla/first/remove', {})).statusCode, 404, 'an id that is none')
  t.equal((await ann.web.post('/demo/admin/sla/999999/remove', {})).statusCode, 404)
  t.equal((await ann.web.post(`/demo/admin/sla/${vip!.id}/remove`, {})).headers.location, 'https://help.example.test/demo/admin/sla?done=removed')
  t.same((await app.slaPolicies.list(ann.site.id)).map((p) => `${p.position} ${p.name}`), ['1 Billing by mail'])
  const record = (await app.securityLog.changes({ siteId: ann.site.id, limit: 10 })).map((e) => [e.action, e.actor, e.via])
  t.same(record.slice(0, 3), [['sla_policy.removed', 'ann@example.test', 'page'], ['sla_policy.changed', 'ann@example.test', 'page'], ['sla_policy.created', 'ann@example.test', 'page']])
})

t.test('the queue: a due column with its marks, the order by due time, the breached only', async (t) => {
  const clock = testClock(MONDAY_0900_BERLIN)
  const { app } = await buildTestApp(t, { clock })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const general = await addCategory(app, ann.site.id, 'General')
  await app.slaPolicies.add(ann.site.id, { name: 'Fast', conditions: { categories: [], tags: ['fast'], domains: [], channels: [] }, scheduleId: null, targets: { firstReply: 30, nextReply: null, resolution: null }, warnBefore: 10 })
  await app.slaPolicies.add(ann.site.id, { name: 'Slow', conditions: { categories: [], tags: [], domains: [], channels: [] }, scheduleId: null, targets: { firstReply: 240, nextReply: null, resolution: null }, warnBefore: 10 })
  const write = async (title: string) => (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title, body: 'Help.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.test' }, via: 'api' })).discussion
  const slow = await write('Slow one')
  const fast = await write('Fast one')
  await app.discussions.update(ann.site.id, fast.number, { tags: ['fast'] })

  const byActivity = (await ann.web.get('/demo/discussions')).body
  t.match(byActivity, /by last activity/)
  t.match(byActivity, new RegExp(`data-discussion="${fast.number}"[\\s\\S]*?data-due>2026-12-07 08:30 UTC <span class="badge waiting" data-due-soon>Due soon`), 'due within the hour: marked')
  t.match(byActivity, new RegExp(`data-discussion="${slow.number}"[\\s\\S]*?data-due>2026-12-07 12:00 UTC</td>`), 'due later: no mark')
  const byDue = (await ann.web.get('/demo/discussions?sort=due')).body
  t.match(byDue, /the soonest due first/)
  t.ok(byDue.indexOf(`data-discussion="${fast.number}"`) < byDue.indexOf(`data-discussion="${slow.number}"`), 'the soonest first')
  t.match((await ann.web.get('/demo/discussions?state=resolved&sort=due')).body, /by last activity/, 'resolved discussions have no due time: by activity')

  clock.advance(31 * MINUTE)
  await app.slaAlerts.tellDue()
  const breached = (await ann.web.get('/demo/discussions?sla=breached')).body
  t.match(breached, /1 breached discussion, by last activity/)
  t.match(breached, new RegExp(`data-discussion="${fast.number}"[\\s\\S]*?data-breached>SLA breached`))
  t.notMatch(breached, new RegExp(`data-discussion="${slow.number}"`))

  // Each discussion's page says its policy, what is due when, and what it broke.
  t.match((await ann.web.get(`/demo/discussions/${fast.number}`)).body, /data-sla>Fast: First reply due 2026-12-07 08:30 UTC <span class="badge warn" data-breached>Breached: first reply<\/span>/)
  t.match((await ann.web.get(`/demo/discussions/${slow.number}`)).body, /data-sla>Slow: First reply due 2026-12-07 12:00 UTC<\/dd>/)
  await app.discussions.reply({ siteId: ann.site.id, number: slow.number, body: 'On it.', internal: false, supporterId: ann.user.id, via: 'web' })
  t.match((await ann.web.get(`/demo/discussions/${slow.number}`)).body, /data-sla>Slow: nothing due \(waiting on the customer, or done\)<\/dd>/)
  const own = (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Ours', body: 'A note.', supporterId: ann.user.id, via: 'web' })).discussion
  t.match((await ann.web.get(`/demo/discussions/${own.number}`)).body, /data-sla>Slow: nothing due/, 'chosen, nothing owed')
  await app.slaPolicies.remove(ann.site.id, (await app.slaPolicies.list(ann.site.id))[1]!.id)
  t.notMatch((await ann.web.get(`/demo/discussions/${own.number}`)).body, /data-sla/, 'no policy: nothing said')
})

t.test('the command line: add, list, remove; each refusal a usage error or the store\'s', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['schedule', 'add', 'acme', 'Berlin', '--zone', 'Europe/Berlin', '--hours', 'mon-fri 09:00-18:00'])).code, 0)
  const added = await cli.run(['sla', 'add', 'acme', 'Standard', '--first-reply', '240', '--resolution', '960', '--schedule', '1', '--domains', 'vip.test', '--channels', 'mail,web'])
  t.equal(added.code, 0, added.stderr)
  t.equal(added.stdout, 'SLA policy 1 of acme: 1\t1\tStandard\tdomains vip.test; channels mail,web\tschedule 1\tfirst reply 240 min, resolution 960 min\twarn 30 min before\n')
  t.equal((await cli.run(['sla', 'add', 'acme', 'Urgent', '--first-reply', '15', '--tags', 'urgent', '--position', '1', '--warn', '5'])).code, 0)
  t.match((await cli.run(['sla', 'list', 'acme'])).stdout, /^1\t2\tUrgent\ttags urgent\taround the clock\tfirst reply 15 min\twarn 5 min before\n2\t1\tStandard/)
  for (const [argv, code, words] of [
    [['--first-reply', 'soon'], 2, /--first-reply takes whole minutes/],
    [['--first-reply', '5', '--schedule', 'one'], 2, /--schedule takes ids/],
    [['--first-reply', '5', '--categories', '1,x'], 2, /--categories takes ids/],
    [[], 1, /a policy promises something/],
    [['--first-reply', '5', '--channels', 'fax'], 1, /"fax" is not a channel/],
    [['--first-reply', '5', '--schedule', '9'], 1, /9 is not a schedule of this site/],
  ] as const) {
    const refused = await cli.run(['sla', 'add', 'acme', 'X', ...argv])
    t.equal(refused.code, code, argv.join(' '))
    t.match(refused.stderr, words)
  }
  t.equal((await cli.run(['schedule', 'remove', 'acme', '1'])).code, 1, 'a schedule a policy counts in stays')
  t.equal((await cli.run(['sla', 'remove', 'acme', 'one'])).code, 2)
  t.equal((await cli.run(['sla', 'remove', 'acme', '2'])).stdout, 'SLA policy 2 of acme removed; discussions whose clocks it ran: 0\n')
  t.equal((await cli.run(['sla', 'add', 'acme', 'Everything', '--resolution', '600', '--categories', '1'])).code, 0)
  t.equal((await cli.run(['sla', 'add', 'acme', 'Anything', '--next-reply', '60', '--warn', '0'])).code, 0)
  t.match((await cli.run(['sla', 'list', 'acme'])).stdout, /\tEverything\tcategories 1\taround the clock\tresolution 600 min\twarn 30 min before\n.*\tAnything\tevery discussion\taround the clock\tnext reply 60 min\twarn 0 min before\n/)
  t.match((await cli.run(['audit', 'acme', '--action', 'sla_policy'])).stdout, /the operator\tcli\t-\tsla_policy.removed\tUrgent/)
})

t.test('Administration -> Business hours: the dates of a schedule edited as lines, refusals said', async (t) => {
  const { app } = await buildTestApp(t, { clock: testClock(MONDAY_0900_BERLIN) })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const berlin = await app.schedules.add(ann.site.id, { name: 'Berlin', timeZone: 'Europe/Berlin', week: [[[540, 1080]], [], [], [], [], [], []], days: { '2026-12-25': { name: 'Christmas Day', hours: [] } } })
  const page = (await ann.web.get('/demo/admin/hours')).body
  t.match(page, /<textarea id="days-\d+" name="days"[^>]*>2026-12-25 closed Christmas Day<\/textarea>/, 'the dates as lines')
  const saved = await ann.web.post(`/demo/admin/hours/${berlin.id}/days`, { days: '2026-12-25 closed Christmas Day\r\n\r\n2026-12-24 09:00-12:00,13:00-14:00 Christmas Eve\n2026-12-31 closed' })
  t.equal(saved.headers.location, 'https://help.example.test/demo/admin/hours?done=dates')
  t.same((await app.schedules.find(ann.site.id, berlin.id))!.days, {
    '2026-12-24': { name: 'Christmas Eve', hours: [[540, 720], [780, 840]] },
    '2026-12-25': { name: 'Christmas Day', hours: [] },
    '2026-12-31': { name: '', hours: [] },
  })
  for (const [days, status, words] of [
    ['Christmas', 400, /The dates: &quot;Christmas&quot;: a date \(YYYY-MM-DD\), its hours/],
    ['2026-12-24 9-14 Eve', 400, /The dates: &quot;2026-12-24 9-14 Eve&quot;: &quot;9-14&quot;: hours are HH:MM-HH:MM/],
    ['2026-12-24 14:00-09:00', 400, /each interval must end after it starts/],
    ['2026-12-24 closed\n2026-12-24 closed', 400, /2026-12-24 is given twice/],
    ['2026-02-30 closed', 400, /The dates: &quot;2026-02-30&quot; is not a date/],
  ] as const) {
    const refused = await ann.web.post(`/demo/admin/hours/${berlin.id}/days`, { days })
    t.equal(refused.statusCode, status, days)
    t.match(refused.body, words)
  }
  t.equal((await ann.web.post('/demo/admin/hours/999999/days', { days: '' })).statusCode, 404)
  t.equal((await ann.web.post('/demo/admin/hours/berlin/days', { days: '' })).statusCode, 404, 'an id that is none')
  t.equal((await ann.web.post('/demo/admin/hours/berlin/remove', {})).statusCode, 404)
  t.equal((await ann.web.post(`/demo/admin/hours/${berlin.id}/days`, { days: '' })).statusCode, 303, 'no dates at all: the weekdays only')
  t.same((await app.schedules.find(ann.site.id, berlin.id))!.days, {})
  t.same((await app.securityLog.changes({ siteId: ann.site.id, limit: 10 })).map((e) => e.action), ['schedule.changed', 'schedule.changed'])
})

t.test("a warning told marks the discussion due soon in the queue, and moves the site's version for its live pages", async (t) => {
  const clock = testClock(MONDAY_0900_BERLIN)
  const { app } = await buildTestApp(t, { clock })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const general = await addCategory(app, ann.site.id, 'General')
  await app.slaPolicies.add(ann.site.id, { name: 'Early warning', conditions: { categories: [], tags: [], domains: [], channels: [] }, scheduleId: null, targets: { firstReply: 240, nextReply: null, resolution: null }, warnBefore: 180 })
  const { discussion } = await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Slowly', body: 'Help.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.test' }, via: 'api' })
  const row = async () => (await ann.web.get('/demo/discussions')).body.split(`data-discussion="${discussion.number}"`)[1]!.split('</tr>')[0]!
  t.notMatch(await row(), /data-due-soon/, 'due in four hours: no mark')
  clock.advance(61 * MINUTE)
  const before = (await app.sites.find('demo'))!.version
  t.equal(await app.slaAlerts.tellDue(), 1, 'the warning, three hours before')
  t.ok((await app.sites.find('demo'))!.version > before, "the site's version moved")
  t.equal((await app.discussions.get(ann.site.id, discussion.number)).version, discussion.version, 'the discussion shows nothing new: its version stays')
  t.match(await row(), /data-due-soon>Due soon/, 'due in three hours, warned of: marked')
})

t.test('the alerts loop runs by itself every SERVICE_SLA_ALERT_SECONDS, and says when it cannot', async (t) => {
  const lines: string[] = []
  const clock = testClock(MONDAY_0900_BERLIN)
  const { app } = await buildTestApp(t, { clock, config: { slaAlertSeconds: 1 }, logStream: { write: (line) => void lines.push(line) } })
  const ann = await signedInPerson(app, { email: 'ann@example.test' })
  const general = await addCategory(app, ann.site.id, 'General')
  await app.slaPolicies.add(ann.site.id, { name: 'Fast', conditions: { categories: [], tags: [], domains: [], channels: [] }, scheduleId: null, targets: { firstReply: 5, nextReply: null, resolution: null }, warnBefore: 0 })
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Late', body: 'Help.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.test' }, via: 'api' })
  // A rule on time (issue 70) fires in the same loop.
  await app.rules.add(ann.site.id, { name: 'Tag the waiting', afterMinutes: 5, since: 'created', conditions: { states: ['new'] }, actions: [{ type: 'add_tags', tags: ['waiting'] }] }, { id: ann.user.id, name: ann.user.email, via: 'api' })
  clock.advance(6 * MINUTE)
  const until = async (words: string) => {
    for (let i = 0; i < 100 && !lines.some((line) => line.includes(words)); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    return lines.find((line) => line.includes(words))
  }
  t.match(JSON.parse((await until('SLA warnings and breaches told'))!), { sla_alerts: 1 }, 'told by the loop itself')
  t.match(JSON.parse((await until('rules on time fired'))!), { rules_fired: 1 }, 'and the rule fired by it')
  app.discussions.tellAlerts = async () => {
    throw new Error('the database is away')
  }
  app.rules.runDue = async () => {
    throw new Error('the rules are away')
  }
  t.match(JSON.parse((await until('could not tell the SLA warnings and breaches'))!), { level: 40, err: { message: 'the database is away' } }, 'a failure said, the loop going on')
  t.match(JSON.parse((await until('could not fire the rules on time'))!), { level: 40, err: { message: 'the rules are away' } }, 'the rules too, after the alerts')
})
