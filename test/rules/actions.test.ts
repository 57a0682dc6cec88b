import t, { type Test } from 'tap'
import { rawRows, rawStatement, supporterWithToken, testClock } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'

// Engines: both: each action is a write of the stores (a note, a reply, a change, spam, the outbox)
// in the transaction of its cause, and a rule on time's scan and claim are statements of each engine.
// Issue 70: every action a rule has, what it leaves out when its target went since it was saved,
// rules on time in business hours and in pages, and a rule's changes by PATCH.

const MINUTE = 60_000

async function ruledApp(t: Test, start?: number) {
  const made = await discussionApp(t, start === undefined ? {} : { clock: testClock(start) })
  const { app, ann } = made
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => {
    const answer = await made.api(method, url, payload)
    return { status: answer.statusCode, body: answer.body === '' ? null : answer.json() }
  }
  const addRule = async (rule: object) => {
    const added = await call('POST', '/demo/rules', rule)
    t.equal(added.status, 201, `rule ${(rule as { name: string }).name} added`)
    return added.body as { id: number }
  }
  const customerWrites = (title: string, body = 'Help.', categoryId = made.questions.id) => made.create({ title, body, author_email: 'carol@customer.test', author_name: 'Carol' }, categoryId)
  return { ...made, call, addRule, customerWrites }
}

t.test("every action of a rule on events: note, saved reply, notices, webhook, owner, spam; and what goes when its target goes", async (t) => {
  const { app, ann, call, addRule, customerWrites, problems } = await ruledApp(t)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const dan = await supporterWithToken(app, { email: 'dan@example.test' })
  await app.webhooks.add(ann.site.id, { url: 'https://hooks.example.test/in', events: ['rule.fired'] })
  const thanks = await app.savedReplies.add(ann.site.id, { title: 'Thanks', body: 'Thanks, {{customer.first_name}}, from {{supporter.name}} of {{site.name}}.' })
  await addRule({
    name: 'Everything',
    events: ['created'],
    conditions: { words: ['everything'] },
    actions: [
      { type: 'set_owner', owner: bob.user.id },
      { type: 'add_note', body: 'Looked at by a rule.' },
      { type: 'send_reply', saved_reply: thanks.id },
      { type: 'notify', to: 'owner' },
      { type: 'notify', to: dan.user.id },
      { type: 'notify', to: 'team' },
      { type: 'webhook' },
    ],
  })
  const d = await customerWrites('Everything at once')
  t.match(d, { assignee: { id: bob.user.id }, comments_count: 3, state: 'open' }, 'the answer shows what the rule did')
  const comments = (await call('GET', `/demo/discussions/${d.number}/comments`)).body.comments
  t.match(comments.slice(1), [
    { body: 'Looked at by a rule.', internal: true, via: 'rule', author_email: ann.user.email },
    { body: `Thanks, Carol, from ${ann.user.name} of Site demo.`, internal: false, via: 'rule' },
  ])
  const notices = (await rawRows(app, "select payload from outbox where kind = 'notification'")).map((r) => JSON.parse(String(r.payload)) as { to: string; text: string })
  const byRule = notices.filter((n) => n.text.includes('The rule "Everything"')).map((n) => n.to).sort()
  t.same(byRule, [bob.user.email, dan.user.email], 'its owner (Bob) and Dan; the team is nobody here (the site tells nobody of new discussions)')
  const hooks = (await rawRows(app, "select payload from outbox where kind = 'webhook'")).map((r) => JSON.parse(String(r.payload)) as { type: string; data: { rule: { name: string }; assignee: { id: number } } })
  t.match(hooks, [{ type: 'rule.fired', data: { rule: { name: 'Everything' }, assignee: { id: bob.user.id } } }])

  // Gone since saved: the category (removed), the supporter (left), the saved reply (removed), the
  // rule's author (an account gone): those actions are left out, the others done.
  await addRule({ name: 'Elsewhere', events: ['created'], conditions: { words: ['elsewhere'] }, actions: [{ type: 'set_category', category: problems.id }, { type: 'set_owner', owner: 'round_robin' }, { type: 'add_tags', tags: ['moved'] }] })
  await addRule({ name: 'To Dan', events: ['created'], conditions: { words: ['elsewhere'] }, actions: [{ type: 'set_owner', owner: dan.user.id }, { type: 'send_reply', saved_reply: thanks.id }] })
  await addRule({ name: 'Noted', events: ['created'], conditions: { words: ['elsewhere'] }, actions: [{ type: 'add_note', body: 'By a ghost.' }, { type: 'add_tags', tags: ['noted'] }] })
  t.equal((await call('DELETE', `/demo/categories/${problems.id}`)).status, 204)
  await app.users.removeStaff(ann.site.id, dan.user.id)
  await app.savedReplies.remove(ann.site.id, thanks.id)
  await rawStatement(app, "update rules set author_id = null where name = 'Noted'", [])
  const moved = await customerWrites('Take it elsewhere')
  t.match(moved, { tags: ['moved', 'noted'], category_href: new RegExp(`/categories/${moved.category_href.split('/').pop()}$`), comments_count: 1 }, 'tagged; no reply, no note')
  t.notMatch(moved.category_href, new RegExp(`/categories/${problems.id}$`), 'not moved into the removed category')
  t.not(moved.assignee?.id, dan.user.id, 'not given to Dan, who left')
  const history = (await call('GET', `/demo/discussions/${moved.number}/rule_firings`)).body.firings.map((f: { name: string }) => f.name)
  t.same(history, ['Elsewhere', 'To Dan', 'Noted'], 'each fired, and says so')

  // Spam: the rules after it look no further.
  await addRule({ name: 'Casino', position: 1, events: ['created'], conditions: { words: ['casino'] }, actions: [{ type: 'mark_spam' }] })
  await addRule({ name: 'After spam', events: ['created'], conditions: { words: ['casino'] }, actions: [{ type: 'add_tags', tags: ['never'] }] })
  const spam = await customerWrites('Casino bonus')
  t.match(spam, { state: 'spam', tags: [] })
  t.same((await call('GET', `/demo/discussions/${spam.number}/rule_firings`)).body.firings.map((f: { name: string }) => f.name), ['Casino'])
})

t.test('rules on the other events: a reply of each side, a note, a change of state, category or owner, an SLA warning', async (t) => {
  const { call, addRule, customerWrites, problems, ann } = await ruledApp(t)
  const tagOn = (event: string) => addRule({ name: event, events: [event], actions: [{ type: 'add_tags', tags: [event.replace('_', '-')] }] })
  for (const event of ['customer_replied', 'team_replied', 'note_added', 'state_changed', 'category_changed', 'owner_changed']) await tagOn(event)
  const d = await customerWrites('Events')
  const tags = async () => (await call('GET', `/demo/discussions/${d.number}`)).body.tags as string[]
  await call('POST', `/demo/discussions/${d.number}/comments`, { body: 'Answer.' })
  t.same(await tags(), ['state-changed', 'team-replied'], 'the team replied, which opened it')
  await call('POST', `/demo/discussions/${d.number}/comments`, { body: 'More.', author_email: 'carol@customer.test' })
  await call('POST', `/demo/discussions/${d.number}/comments`, { body: 'Psst.', internal: true })
  await call('POST', `/demo/discussions/${d.number}/change_category?to=${problems.id}`)
  await call('POST', `/demo/discussions/${d.number}/assign?to=${ann.user.id}`)
  t.same(await tags(), ['category-changed', 'customer-replied', 'note-added', 'owner-changed', 'state-changed', 'team-replied'])
})

t.test('a rule on an SLA breach runs in the alerts loop\'s transaction, once', async (t) => {
  const { app, call, addRule, customerWrites, clock } = await ruledApp(t)
  t.equal((await call('POST', '/demo/sla_policies', { name: 'Fast', first_reply_minutes: 60, warn_minutes: 0 })).status, 201)
  await addRule({ name: 'Breached', events: ['sla_breached', 'sla_warning'], actions: [{ type: 'add_tags', tags: ['late'] }, { type: 'set_owner', owner: 'round_robin' }] })
  const d = await customerWrites('Slow')
  clock.advance(61 * MINUTE)
  t.equal(await app.slaAlerts.tellDue(), 1)
  t.match((await call('GET', `/demo/discussions/${d.number}`)).body, { tags: ['late'], assignee: { id: Number } })
  t.equal(await app.slaAlerts.tellDue(), 0)
  t.same((await call('GET', `/demo/discussions/${d.number}/rule_firings`)).body.firings.map((f: { trigger: string }) => f.trigger), ['sla_breached'])
})

t.test('a rule on time in business hours, over pages of candidates; changed by PATCH between events and time', async (t) => {
  // Friday 17:00 in Berlin; the team works 9 to 18 on weekdays.
  const { app, call, addRule, customerWrites, clock, questions, problems } = await ruledApp(t, Date.parse('2026-12-04T16:00:00Z'))
  const nineToSix = [{ from: '09:00', to: '18:00' }]
  const berlin = (await call('POST', '/demo/schedules', { name: 'Berlin', time_zone: 'Europe/Berlin', hours: { monday: nineToSix, tuesday: nineToSix, wednesday: nineToSix, thursday: nineToSix, friday: nineToSix } })).body
  t.equal((await call('POST', '/demo/sla_policies', { name: 'Questions', schedule_id: berlin.id, first_reply_minutes: 480, conditions: { categories: [questions.id] } })).status, 201)
  const rule = await addRule({ name: 'Unowned', after_minutes: 120, business: true, since: 'created', conditions: { states: ['new'], owner: 'none' }, actions: [{ type: 'add_tags', tags: ['late'] }] })
  for (const title of ['One', 'Two', 'Three']) await customerWrites(title)
  // Under no policy (another category): counted around the clock.
  await customerWrites('Four', 'Help.', problems.id)
  clock.advance(3 * 60 * MINUTE)
  t.equal(await app.rules.runDue(1), 1, 'three hours by the clock, one of business: only the one under no policy (read a page of one at a time)')
  clock.advance(2 * 24 * 60 * MINUTE + 14 * 60 * MINUTE)
  t.equal(await app.rules.runDue(1), 3, 'Monday 10:00: two business hours, each of the three in its own page')
  t.equal(await app.rules.runDue(1), 0)

  // From time to events and back; its place and switch; each told in the record of changes.
  const changed = await call('PATCH', `/demo/rules/${rule.id}`, { events: ['created'] })
  t.match(changed.body, { events: ['created'], after_minutes: null })
  const back = await call('PATCH', `/demo/rules/${rule.id}`, { after_minutes: 30, position: 1, enabled: false })
  t.match(back.body, { events: [], after_minutes: 30, enabled: false, position: 1 })
  t.equal((await call('PATCH', `/demo/rules/${rule.id}`, { name: 'Renamed' })).status, 200)
  const record = (await call('GET', '/demo/audit_log?action=rule.changed')).body.entries
  t.equal(record.length, 3)
  t.equal((await call('PATCH', `/demo/rules/${rule.id}`, { after_minutes: 5, conditions: {} })).status, 400, 'a rule on time without states')
  t.equal((await call('PATCH', '/demo/rules/999', { name: 'X' })).status, 404)
  t.equal((await call('DELETE', '/demo/rules/999')).status, 404)
})

t.test('the dry run of a rule on events reads the opening post; conditions name only what is the site\'s', async (t) => {
  const { call, customerWrites, ann, app } = await ruledApp(t)
  await customerWrites('Hello', 'My invoice is wrong.')
  await customerWrites('Hi', 'Nothing here.')
  const dry = await call('POST', '/demo/rules/dry_run', { name: 'x', events: ['created'], conditions: { words: ['invoice'], tags: ['VIP'] }, actions: [{ type: 'add_tags', tags: ['billing'] }] })
  t.same(dry.body.matches, [], 'not tagged vip')
  const found = await call('POST', '/demo/rules/dry_run', { name: 'x', events: ['created'], conditions: { words: ['invoice'] }, actions: [{ type: 'add_tags', tags: ['billing'] }] })
  t.match(found.body, { looked_at: 2, matches: [{ number: 1, title: 'Hello', would: ['tag billing'] }] })
  const other = await supporterWithToken(app, { site: 'other' })
  const refusals: Array<[object, RegExp]> = [
    [{ categories: [999] }, /not a category of this site/],
    [{ owner: [other.user.id] }, /./],
    [{ words: ['\u0000'] }, /U\+0000/],
    [{ no_tags: ['<b>'] }, /may hold letters/],
  ]
  for (const [conditions, problem] of refusals) {
    const refused = await call('POST', '/demo/rules/dry_run', { name: 'x', events: ['created'], conditions, actions: [{ type: 'webhook' }] })
    t.equal(refused.status, 400, JSON.stringify(conditions))
    t.match(refused.body.message, problem)
  }
  const note = await call('POST', '/demo/rules', { name: 'n', events: ['created'], actions: [{ type: 'add_note', body: 'a\u0000b' }] })
  t.equal(note.status, 400, 'a note with U+0000')
  const notify = await call('POST', '/demo/rules', { name: 'n', events: ['created'], actions: [{ type: 'notify', to: other.user.id }] })
  t.equal(notify.status, 400, 'notify someone who is not staff here')
  void ann
})

t.test('two runs at once fire a rule once; rules on time by their last change, by category and owner; the most rules a site keeps', async (t) => {
  const { app, ann, call, addRule, customerWrites, clock, questions } = await ruledApp(t)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await addRule({ name: 'Idle unowned', after_minutes: 60, since: 'updated', conditions: { states: ['new'], categories: [questions.id], owner: 'none' }, actions: [{ type: 'notify', to: bob.user.id }] })
  await addRule({ name: 'Idle owned', after_minutes: 60, since: 'updated', conditions: { states: ['open'], owner: 'anyone' }, actions: [{ type: 'notify', to: 'owner' }] })
  const first = await customerWrites('Unowned')
  const second = await customerWrites('Owned')
  await call('POST', `/demo/discussions/${second.number}/assign?to=${bob.user.id}`)
  await call('POST', `/demo/discussions/${second.number}/comments`, { body: 'On it.' })
  clock.advance(61 * MINUTE)
  // Both scan before either writes: the second finds each firing claimed by the unique index.
  const runs = await Promise.all([app.rules.runDue(), app.rules.runDue()])
  t.equal(runs[0] + runs[1], 2, 'two firings in all, each once')
  const fired = await rawRows(app, 'select rule_name, discussion_id from rule_firings order by rule_name')
  t.same(fired.map((r) => String(r.rule_name)), ['Idle owned', 'Idle unowned'])
  void first

  // The most rules a site keeps; a name the store is given as the API would refuse it.
  const actor = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  const plain = { events: ['created' as const], actions: [{ type: 'add_tags' as const, tags: ['x'] }] }
  await t.rejects(app.rules.add(ann.site.id, { ...plain, name: 'a\u0000b' }, actor), { code: 'invalid', field: 'name' })
  // Changed by the operator (the command line: no account), a rule keeps the author who signs its writes.
  const renamed = await app.rules.update(ann.site.id, (await app.rules.add(ann.site.id, { ...plain, name: 'Signed' }, actor)).id, { name: 'Signed still' }, { id: null, name: 'the operator', via: 'cli' })
  t.match(renamed, { name: 'Signed still', authorId: ann.user.id })
  await app.rules.remove(ann.site.id, renamed.id, actor)
  for (let i = 3; i <= 100; i++) await app.rules.add(ann.site.id, { ...plain, name: `Rule ${i}` }, actor)
  const over = await call('POST', '/demo/rules', { ...plain, name: 'One too many' })
  t.equal(over.status, 429)
  t.match(over.body.message, /at most 100 rules/)
  t.equal((await call('GET', '/demo/rules/999')).status, 404)
})

t.test('a macro that opens a discussion again, and one whose category went: refused, nothing done', async (t) => {
  const { app, ann, call, customerWrites, problems } = await ruledApp(t)
  const reopen = await app.savedReplies.add(ann.site.id, { title: 'Reopen', body: 'Looking again.', actions: [{ type: 'set_state', state: 'open' }] })
  const move = await app.savedReplies.add(ann.site.id, { title: 'Move', body: 'Moving it.', actions: [{ type: 'set_category', category: problems.id }, { type: 'set_owner', owner: 'round_robin' }] })
  const tooMany = Array.from({ length: 21 }, () => ({ type: 'add_tags' as const, tags: ['x'] }))
  await t.rejects(app.savedReplies.add(ann.site.id, { title: 'Busy', body: 'x', actions: tooMany }), { code: 'invalid', field: 'actions' }, 'at most 20 actions, in the store too')
  const d = await customerWrites('Again')
  await call('POST', `/demo/discussions/${d.number}/resolve`)
  t.match((await call('POST', `/demo/discussions/${d.number}/apply_macro`, { macro: reopen.id })).body, { state: 'open', comments_count: 2 })
  t.match((await call('POST', `/demo/discussions/${d.number}/apply_macro`, { macro: move.id })).body, { category_href: new RegExp(`/categories/${problems.id}$`), assignee: { id: ann.user.id } }, "moved, and given to the category's next in turn")
  t.equal((await call('DELETE', `/demo/categories/${problems.id}?into=${d.category_href.split('/').pop()}`)).status, 204)
  const refused = await call('POST', `/demo/discussions/${d.number}/apply_macro`, { macro: move.id })
  t.equal(refused.status, 400)
  t.match(refused.body.message, /not a category of this site any more/)
  t.equal((await call('GET', `/demo/discussions/${d.number}`)).body.comments_count, 3, 'its reply undone with it')
})
