import t, { type Test } from 'tap'
import { newTestApp, rawRows, sharedDatabase, supporterWithToken, testClock } from '../fixtures/app.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { TEST_ENGINE } from '../fixtures/postgres.ts'

// Engines: both: a rule runs in the transaction of the write that starts it (its row locks, the
// counts, the change feed), and a rule on time is claimed by a unique index across processes;
// each engine must keep them alike.
// Issue 70: rules on events (a mail about an invoice tagged and given to billing's round robin),
// rules on time (a discussion waiting on its customer reminded, then resolved, each once, across
// two processes and a restart), the depth limit (two rules that feed each other), the dry run
// (its list is what the rule then does), and a macro that replies, tags and resolves at once.

const DAY = 24 * 60 * 60 * 1000

async function rulesDesk(t: Test) {
  const desk = await mailDesk(t)
  const { app, ann } = desk
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = ann.bearer) => {
    const answer = await app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) })
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json() }
  }
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const dan = await supporterWithToken(app, { email: 'dan@example.test' })
  const billing = (await call('POST', '/demo/categories', { name: 'Billing', public: false, round_robin: true })).body
  return { ...desk, call, bob, dan, billing }
}

t.test('a mail about an invoice is tagged and given to billing in turn, in the transaction that takes it', async (t) => {
  const { app, ann, bob, dan, billing, send, call } = await rulesDesk(t)
  const rule = await call('POST', '/demo/rules', {
    name: 'Invoices to billing',
    events: ['created'],
    conditions: { channels: ['mail'], words: ['invoice'] },
    actions: [{ type: 'add_tags', tags: ['billing'] }, { type: 'set_category', category: billing.id }, { type: 'set_owner', owner: 'round_robin' }],
  })
  t.equal(rule.status, 201)
  t.match(rule.body, { name: 'Invoices to billing', position: 1, enabled: true, events: ['created'], after_minutes: null })

  await send({ subject: 'Invoice 2026-11 is wrong', messageId: '<i1@customer.example>', text: 'Please check.' })
  await send({ subject: 'Where is my INVOICE?', messageId: '<i2@customer.example>', text: 'Thanks.' })
  await send({ subject: 'Printer', messageId: '<p1@customer.example>', text: 'Nothing about invoices here.' })
  await send({ subject: 'Hello', messageId: '<p2@customer.example>', text: 'My invoice is late.' })
  const shown = async (n: number) => (await call('GET', `/demo/discussions/${n}`)).body
  const [one, two, three, four] = await Promise.all([1, 2, 3, 4].map(shown))
  t.match(one, { tags: ['billing'], category_href: new RegExp(`/categories/${billing.id}$`) })
  t.match(two, { tags: ['billing'], category_href: new RegExp(`/categories/${billing.id}$`) }, 'any case')
  t.match(three, { tags: [], assignee: null }, '"invoices" is not the word "invoice"')
  t.match(four, { tags: ['billing'] }, 'the word in the message')
  t.same([one, two, four].map((d) => d.assignee?.id), [ann, bob, dan].map((s) => s.user.id), 'each supporter in turn')

  // Its history, the record of changes, and the feed of the write.
  const history = (await call('GET', '/demo/discussions/1/rule_firings')).body
  t.match(history.firings, [{ rule: { id: rule.body.id }, name: 'Invoices to billing', trigger: 'created', actions: rule.body.actions }])
  t.same((await call('GET', '/demo/discussions/3/rule_firings')).body.firings, [])
  const record = (await call('GET', '/demo/audit_log?action=rule')).body
  t.match(record.entries.map((e: { action: string; actor: { name: string; via: string } }) => [e.action, e.actor.name, e.actor.via]), [
    ['rule.fired', 'rule "Invoices to billing"', 'rule'],
    ['rule.fired', 'rule "Invoices to billing"', 'rule'],
    ['rule.fired', 'rule "Invoices to billing"', 'rule'],
    ['rule.created', 'ann@example.test', 'api'],
  ])

  // Off: the next one is left alone.
  t.equal((await call('PATCH', `/demo/rules/${rule.body.id}`, { enabled: false })).status, 200)
  await send({ subject: 'Invoice again', messageId: '<i3@customer.example>', text: 'Hm.' })
  t.match(await shown(5), { tags: [], assignee: null })
  t.equal(Number((await rawRows(app, 'select count(*) as n from rule_firings'))[0]!.n), 3)
})

t.test('waiting on the customer for 7 days: reminded, then resolved 3 days later, each once, across two processes and a restart', async (t) => {
  const database = await sharedDatabase(t)
  const clock = testClock(Date.parse('2026-12-07T09:00:00Z'))
  const first = await newTestApp(t, { clock, config: database })
  await first.app.ready()
  const ann = await supporterWithToken(first.app, { email: 'ann@example.test' })
  await first.app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const call = async (app: typeof first.app, method: 'GET' | 'POST', url: string, payload?: object) => {
    const answer = await app.inject({ method, url, headers: ann.bearer, ...(payload && { payload }) })
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json() }
  }
  const general = await first.app.categories.add(ann.site.id, 'General', true)
  const reminder = (await call(first.app, 'POST', '/demo/saved_replies', { title: 'Still there?', body: 'Hello {{customer.first_name}}, is this still a problem?' })).body
  const waiting = { states: ['open'], awaiting: 'customer' }
  t.equal((await call(first.app, 'POST', '/demo/rules', { name: 'Remind', after_minutes: 7 * 24 * 60, since: 'last_comment', conditions: { ...waiting, no_tags: ['reminded'] }, actions: [{ type: 'send_reply', saved_reply: reminder.id }, { type: 'add_tags', tags: ['reminded'] }] })).status, 201)
  t.equal((await call(first.app, 'POST', '/demo/rules', { name: 'Close', after_minutes: 3 * 24 * 60, since: 'last_comment', conditions: { ...waiting, tags: ['reminded'] }, actions: [{ type: 'set_state', state: 'resolved' }] })).status, 201)

  // Two discussions the team answered; a third whose customer answered back (the team owes it).
  for (const title of ['One', 'Two', 'Three']) {
    t.equal((await call(first.app, 'POST', `/demo/categories/${general.id}/discussions`, { title, body: 'Help.', author_email: 'carol@customer.test', author_name: 'Carol Customer' })).status, 201)
  }
  for (const n of [1, 2, 3]) await call(first.app, 'POST', `/demo/discussions/${n}/comments`, { body: 'Try this.' })
  clock.advance(DAY)
  await call(first.app, 'POST', '/demo/discussions/3/comments', { body: 'Did not help.', author_email: 'carol@customer.test' })

  const second = await newTestApp(t, { clock, config: database })
  await second.app.ready()
  // Both at once on PostgreSQL; on SQLite one after the other: two apps of one Node process on one
  // file would block each other's event loop on its write lock, which two processes do not.
  const fire = async () => {
    if (TEST_ENGINE === 'postgres') return Promise.all([first.app.slaAlerts.fireRules(), second.app.slaAlerts.fireRules()])
    return [await first.app.slaAlerts.fireRules(), await second.app.slaAlerts.fireRules()]
  }
  clock.advance(5 * DAY)
  t.same(await fire(), [0, 0], 'six days: nothing yet')
  clock.advance(DAY)
  const fired = await fire()
  t.equal(fired[0] + fired[1], 2, 'seven days: each waiting discussion reminded once, by one process or the other')
  t.same(await fire(), [0, 0], 'not again')
  const shown = async (n: number) => (await call(second.app, 'GET', `/demo/discussions/${n}`)).body
  t.match(await shown(1), { state: 'open', tags: ['reminded'], comments_count: 3 })
  const comments = (await call(second.app, 'GET', '/demo/discussions/1/comments')).body
  t.match(comments.comments.at(-1), { body: 'Hello Carol, is this still a problem?', via: 'rule', author_email: 'ann@example.test' })
  t.match(await shown(3), { state: 'open', tags: [] }, 'the one waiting on the team is left alone')

  // The first process stops; three days pass with no process running; one starts again: late, not lost.
  await first.app.close()
  await second.app.close()
  clock.advance(4 * DAY)
  const third = await newTestApp(t, { clock, config: database })
  await third.app.ready()
  t.equal(await third.app.slaAlerts.fireRules(), 2, 'resolved after the restart')
  t.equal(await third.app.slaAlerts.fireRules(), 0)
  const after = (await call(third.app, 'GET', '/demo/discussions/1')).body
  t.match(after, { state: 'resolved' })
  const history = (await call(third.app, 'GET', '/demo/discussions/1/rule_firings')).body.firings
  t.same(history.map((f: { name: string; trigger: string }) => `${f.name} ${f.trigger}`), ['Remind time', 'Close time'])
})

t.test('two rules that feed each other fire once each; a chain of rules stops at the depth limit; the write commits', async (t) => {
  const { app, ann, call, send } = await rulesDesk(t)
  const ping = await call('POST', '/demo/rules', { name: 'Ping', events: ['tags_changed', 'created'], conditions: { no_tags: ['ping'], words: ['loop'] }, actions: [{ type: 'add_tags', tags: ['ping'] }, { type: 'remove_tags', tags: ['pong'] }] })
  const pong = await call('POST', '/demo/rules', { name: 'Pong', events: ['tags_changed'], conditions: { tags: ['ping'] }, actions: [{ type: 'add_tags', tags: ['pong'] }, { type: 'remove_tags', tags: ['ping'] }] })
  t.same([ping.status, pong.status], [201, 201])
  await send({ subject: 'Loop', messageId: '<loop@customer.example>', text: 'Go.' })
  const history = async (n: number) => ((await call('GET', `/demo/discussions/${n}/rule_firings`)).body.firings as Array<{ name: string; trigger: string }>).map((f) => `${f.name} ${f.trigger}`)
  t.same(await history(1), ['Ping created', 'Pong tags_changed'], 'each once in the write, then no more')
  t.match((await call('GET', '/demo/discussions/1')).body, { tags: ['pong'] })

  // A chain of four: each rule's change starts the next; the fourth is one depth too deep. (Put in
  // the order D, C, B, A: a rule later in the order than the one firing would see the chain's
  // change on the same event, at the same depth.)
  const link = (name: string, after: string | null, tag: string) => call('POST', '/demo/rules', { name, events: after === null ? ['created'] : ['tags_changed'], conditions: after === null ? { words: ['chain'] } : { tags: [after], no_tags: [tag] }, actions: [{ type: 'add_tags', tags: [tag] }] })
  for (const [name, after, tag] of [['D', 'c', 'd'], ['C', 'b', 'c'], ['B', 'a', 'b'], ['A', null, 'a']] as const) t.equal((await link(name, after, tag)).status, 201)
  await send({ subject: 'Chain', messageId: '<chain@customer.example>', text: 'Go.' })
  t.same(await history(2), ['A created', 'B tags_changed', 'C tags_changed'], 'three depths, then no more')
  t.match((await call('GET', '/demo/discussions/2')).body, { tags: ['a', 'b', 'c'] })
  // By hand, the next write starts the chain afresh: D is one depth down from a person's change.
  t.equal((await app.inject({ method: 'PUT', url: '/demo/discussions/2', headers: ann.bearer, payload: { tags: ['a', 'b', 'c', 'x'] } })).statusCode, 200)
  t.same((await history(2)).at(-1), 'D tags_changed')
})

t.test('the dry run lists what the rule then does, and writes nothing', async (t) => {
  const { app, clock, call, send, billing, bob } = await rulesDesk(t)
  await send({ subject: 'Invoice 1', messageId: '<d1@customer.example>', text: 'x' })
  await send({ subject: 'Other', messageId: '<d2@customer.example>', text: 'x' })
  await send({ subject: 'Invoice 3', messageId: '<d3@customer.example>', text: 'x' })
  const rule = { name: 'Unowned invoices', after_minutes: 60, since: 'created', conditions: { states: ['new'], owner: 'none', words: ['invoice'] }, actions: [{ type: 'set_category', category: billing.id }, { type: 'notify', to: bob.user.id }] }
  const early = await call('POST', '/demo/rules/dry_run', rule)
  t.same(early.body, { looked_at: 3, matches: [] }, 'not an hour yet')
  clock.advance(61 * 60_000)
  const dry = await call('POST', '/demo/rules/dry_run', rule)
  t.equal(dry.status, 200)
  t.same(dry.body.matches.map((m: { number: number; would: string[] }) => [m.number, m.would]), [[3, ['move to Billing', 'notify bob']], [1, ['move to Billing', 'notify bob']]])
  t.same((await call('GET', '/demo/rules')).body.rules, [], 'nothing saved')
  t.equal(Number((await rawRows(app, 'select count(*) as n from rule_firings'))[0]!.n), 0)

  t.equal((await call('POST', '/demo/rules', rule)).status, 201)
  t.equal(await app.slaAlerts.fireRules(), 2)
  const firedOn = await rawRows(app, 'select d.number from rule_firings f join discussions d on d.id = f.discussion_id order by d.number desc')
  t.same(firedOn.map((r) => Number(r.number)), dry.body.matches.map((m: { number: number }) => m.number), 'the same discussions')
  const notices = (await rawRows(app, "select payload from outbox where kind = 'notification'")).map((r) => JSON.parse(String(r.payload)) as { to: string; text: string })
  t.same(notices.filter((n) => /The rule "Unowned invoices"/.test(n.text)).map((n) => n.to), ['bob@example.test', 'bob@example.test'], 'Bob told of each')
})

t.test('a macro replies, tags and resolves at once, as the supporter who applies it', async (t) => {
  const { app, call, send, bob } = await rulesDesk(t)
  await send({ subject: 'Refund', messageId: '<m1@customer.example>', text: 'Please.' })
  const macro = await call('POST', '/demo/macros', { title: 'Refund done', body: 'Dear {{customer.first_name}}, refunded by {{supporter.name}}.', actions: [{ type: 'add_tags', tags: ['refund'] }, { type: 'set_state', state: 'resolved' }, { type: 'set_owner', owner: bob.user.id }] })
  t.equal(macro.status, 201)
  t.match(macro.body, { href: /\/demo\/macros\/\d+$/, actions: [{ type: 'add_tags' }, { type: 'set_state' }, { type: 'set_owner' }] })
  t.match((await call('GET', '/demo/saved_replies')).body.saved_replies, [{ title: 'Refund done', actions: macro.body.actions }], 'the same row, a saved reply with actions')

  const applied = await call('POST', '/demo/discussions/1/apply_macro', { macro: macro.body.id }, bob.bearer)
  t.equal(applied.status, 200)
  t.match(applied.body, { state: 'resolved', tags: ['refund'], assignee: { id: bob.user.id }, comments_count: 2 })
  const last = (await call('GET', '/demo/discussions/1/comments')).body.comments.at(-1)
  t.match(last, { body: 'Dear Carol, refunded by bob.', author_email: 'bob@example.test', internal: false })
  t.equal(Number((await rawRows(app, "select count(*) as n from outbox where kind = 'reply_mail'"))[0]!.n), 1, 'the reply is mailed to the customer')

  // An unknown macro, another site's, a deleted discussion: refused, nothing written.
  t.equal((await call('POST', '/demo/discussions/1/apply_macro', { macro: 999 })).status, 404)
  const other = await supporterWithToken(app, { site: 'other' })
  t.equal((await call('POST', '/other/discussions/1/apply_macro', { macro: macro.body.id }, other.bearer)).status, 404)
  t.equal((await call('POST', '/demo/discussions/1/apply_macro', { macro: 'x' })).status, 400)
})

t.test('rules are written by administrators only, checked against their site, and kept apart from other sites', async (t) => {
  const { app, call, bob, billing } = await rulesDesk(t)
  const good = { name: 'Tag', events: ['created'], actions: [{ type: 'add_tags', tags: ['x'] }] }
  t.equal((await call('POST', '/demo/rules', good, bob.bearer)).status, 403, 'a supporter may not')
  t.equal((await call('GET', '/demo/rules', undefined, bob.bearer)).status, 200, 'but may read them')
  const other = await supporterWithToken(app, { site: 'other' })
  await app.users.setAdministrator(other.site.id, other.user.id, true)
  const theirs = await call('POST', '/other/rules', { ...good, actions: [{ type: 'set_category', category: billing.id }] }, other.bearer)
  t.equal(theirs.status, 400, "another site's category")
  t.match(theirs.body, { message: /not a category of this site/ })
  const mine = (await call('POST', '/demo/rules', good)).body
  t.match((await call('GET', `/demo/rules/${mine.id}`, undefined, bob.bearer)).body, { id: mine.id, name: 'Tag', href: `https://api.example.test/demo/rules/${mine.id}` })
  t.equal((await call('GET', `/other/rules/${mine.id}`, undefined, other.bearer)).status, 404, "another site's rule is not found")
  t.equal((await call('PATCH', `/other/rules/${mine.id}`, { enabled: false }, other.bearer)).status, 404)
  t.equal((await call('DELETE', `/other/rules/${mine.id}`, undefined, other.bearer)).status, 404)

  const refused: Array<[string, object]> = [
    ['neither events nor time', { name: 'A', actions: good.actions }],
    ['both', { name: 'B', events: ['created'], after_minutes: 5, conditions: { states: ['new'] }, actions: good.actions }],
    ['a rule on time without states', { name: 'C', after_minutes: 5, actions: good.actions }],
    ['no action', { name: 'D', events: ['created'], actions: [] }],
    ['an unknown action', { name: 'E', events: ['created'], actions: [{ type: 'delete_everything' }] }],
    ['an unknown event', { name: 'F', events: ['exploded'], actions: good.actions }],
    ['a tag that cannot be one', { name: 'G', events: ['created'], actions: [{ type: 'add_tags', tags: ['<b>'] }] }],
    ['a saved reply of nobody', { name: 'H', events: ['created'], actions: [{ type: 'send_reply', saved_reply: 12345 }] }],
    ['a customer as owner', { name: 'I', events: ['created'], actions: [{ type: 'set_owner', owner: other.user.id }] }],
    ['a blank name', { name: '  ', events: ['created'], actions: good.actions }],
  ]
  for (const [what, body] of refused) t.equal((await call('POST', '/demo/rules', body)).status, 400, what)
  t.equal((await call('POST', '/demo/rules', good)).status, 409, 'a name taken')
  t.same((await call('GET', '/demo/rules')).body.rules.map((r: { name: string }) => r.name), ['Tag'])

  // The order: a new rule put first moves the others down.
  const first = (await call('POST', '/demo/rules', { ...good, name: 'First', position: 1 })).body
  t.same((await call('GET', '/demo/rules')).body.rules.map((r: { name: string; position: number }) => `${r.position} ${r.name}`), ['1 First', '2 Tag'])
  t.equal((await call('PATCH', `/demo/rules/${first.id}`, { position: 5 })).status, 200)
  t.same((await call('GET', '/demo/rules')).body.rules.map((r: { name: string; position: number }) => `${r.position} ${r.name}`), ['1 Tag', '2 First'])
  t.equal((await call('DELETE', `/demo/rules/${mine.id}`)).status, 204)
  t.same((await call('GET', '/demo/rules')).body.rules.map((r: { name: string; position: number }) => `${r.position} ${r.name}`), ['1 First'])
})
