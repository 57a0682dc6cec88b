import t, { type Test } from 'tap'
import { buildTestApp, testClock } from '../fixtures/app.ts'
import { addCategory } from '../fixtures/discussions.ts'
import { signedInPerson } from '../fixtures/web.ts'

// Engines: both: a rule added on the page runs in the transaction of the next write, and a macro
// applied from a discussion's page replies and acts in one; each engine must keep them alike.
// Issue 70's pages: Administration -> Rules (add, dry run, switch, remove; each refusal said on
// the page; administrators only; what a rule does in words, its name escaped), a saved reply given
// actions on Administration -> Queue (a macro), applied in one click on a discussion's page, and
// the rules applied to a discussion listed there.

const MINUTE = 60_000
type Person = Awaited<ReturnType<typeof signedInPerson>>

/** Posts a form whose fields may repeat (checkboxes), with the CSRF token of the last page shown. */
const postForm = (person: Person, path: string, fields: Array<[string, string]>) =>
  person.web.request('POST', path, new URLSearchParams([['_csrf', person.web.field('_csrf')], ...fields]).toString())

async function rulesDesk(t: Test) {
  const clock = testClock(Date.parse('2026-12-07T08:00:00Z'))
  const { app } = await buildTestApp(t, { clock })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  const siteId = ann.site.id
  const general = await addCategory(app, siteId, 'General')
  const billing = await addCategory(app, siteId, 'Billing')
  /** A discussion a customer started (through the API, as a supporter on their behalf). */
  const write = async (title: string, body = 'Help.') => (await app.discussions.create({ siteId, categoryId: general.id, title, body, supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.test' }, via: 'api' })).discussion
  return { app, clock, ann, bob, siteId, general, billing, write }
}

t.test('Administration -> Rules: a rule added by the form fires on the next discussion; switched, removed; refusals said; administrators only', async (t) => {
  const { app, ann, bob, siteId, general, billing, write } = await rulesDesk(t)
  t.match((await ann.web.get('/demo/admin/rules')).body, /None yet: nothing happens by itself\./)

  const added = await postForm(ann, '/demo/admin/rules', [
    ['name', 'Invoices to billing'],
    ['events', 'created'],
    ['events', 'customer_replied'],
    ['events', 'not-an-event'],
    ['category', String(general.id)],
    ['words', 'invoice, money back'],
    ['set_category', String(billing.id)],
    ['set_owner', String(bob.user.id)],
    ['add_tags', 'billing'],
    ['add_note', 'Billing: see the invoice.'],
    ['notify', 'team'],
  ])
  t.equal(added.headers.location, 'https://help.example.test/demo/admin/rules?done=added')
  const page = (await ann.web.get('/demo/admin/rules?done=added')).body
  t.match(page, /The rule is added: it runs from now on\./)
  const does = `move to Billing, give to ${bob.user.name}, tag billing, add an internal note, notify the team`
  t.match(page, new RegExp(`data-rule="Invoices to billing"[\\s\\S]*?data-when>A discussion is created or the customer replies<[\\s\\S]*?data-if>in General, mentions “invoice” or “money back”<[\\s\\S]*?data-does>${does}<[\\s\\S]*?data-on>On<`))
  t.match(page, /aria-current="page">Rules<\/a>/, 'the administration menu names it')

  // The next discussion about an invoice: moved, given, tagged, noted, in the write that made it.
  const invoice = await write('My invoice is wrong')
  const now = await app.discussions.get(siteId, invoice.number)
  t.match(now, { categoryId: billing.id, assigneeId: bob.user.id, tags: 'billing' })
  const shown = (await bob.web.get(`/demo/discussions/${invoice.number}`)).body
  t.match(shown, `<h2 id="firings-title">Rules applied</h2>`)
  t.match(shown, `<li data-firing="Invoices to billing"><strong>Invoices to billing</strong>: ${does} <span class="muted">(A discussion is created, 2026-12-07 08:00 UTC)</span></li>`)
  t.match(shown, /, by a rule\s*<span class="badge">Internal note[\s\S]*?Billing: see the invoice\./, 'its note, by a rule')
  t.notMatch((await bob.web.get(`/demo/discussions/${(await write('A printer')).number}`)).body, /Rules applied/, 'no rule applied: nothing said')

  // Off, the next one is left alone; on again.
  const [rule] = await app.rules.list(siteId)
  await ann.web.get('/demo/admin/rules')
  t.equal((await ann.web.post(`/demo/admin/rules/${rule!.id}/switch`, { enabled: 'no' })).headers.location, 'https://help.example.test/demo/admin/rules?done=off')
  t.match((await ann.web.get('/demo/admin/rules?done=off')).body, /The rule is off[\s\S]*?data-on>Off<[\s\S]*?aria-label="Turn on Invoices to billing">Turn on</)
  t.equal((await app.discussions.get(siteId, (await write('Invoice again')).number)).tags, '')
  t.equal((await ann.web.post(`/demo/admin/rules/${rule!.id}/switch`, { enabled: 'yes' })).headers.location, 'https://help.example.test/demo/admin/rules?done=on')
  t.equal((await app.rules.find(siteId, rule!.id))!.enabled, true)

  // Each refusal said on the page, what was typed kept.
  for (const [fields, status, words] of [
    [[['name', 'Nothing starts it'], ['add_tags', 'x']], 400, /role="alert" id="rule-problem">A rule runs on events or after a time: name its events, or after_minutes, not both\./],
    [[['name', 'Both'], ['events', 'created'], ['after_minutes', '60'], ['add_tags', 'x']], 400, /A rule runs on events or after a time/],
    [[['name', 'Invoices to billing'], ['events', 'created'], ['add_tags', 'x']], 409, /The name is &quot;Invoices to billing&quot;, which another rule of this site has\./],
    [[['name', 'Soon'], ['after_minutes', 'soon'], ['add_tags', 'x']], 400, /The minutes must be a whole number from 1 to 525,600\./],
    [[['name', 'Too late'], ['after_minutes', '600000'], ['add_tags', 'x']], 400, /The minutes must be a whole number from 1 to 525,600\./],
    [[['name', 'Any state'], ['after_minutes', '60'], ['add_tags', 'x']], 400, /A rule on time names the states it looks at/],
    [[['name', 'Idle'], ['events', 'created']], 400, /A rule does something: name one action at least\./],
    [[['name', 'Nowhere'], ['events', 'created'], ['set_category', 'billing']], 400, /An action names category 0, which is not a category of this site\./],
    [[['name', 'Bad tag'], ['events', 'created'], ['tags', '-x'], ['add_tags', 'x']], 400, /The tags it has: tag &quot;-x&quot;: &quot;-x&quot; may hold letters/],
  ] as const) {
    await ann.web.get('/demo/admin/rules')
    const refused = await postForm(ann, '/demo/admin/rules', fields as unknown as Array<[string, string]>)
    t.equal(refused.statusCode, status, JSON.stringify(fields))
    t.match(refused.body, words)
    t.match(refused.body, `name="name" type="text" maxlength="100" required value="${fields[0][1]}"`, 'the name kept')
  }
  t.equal((await app.rules.list(siteId)).length, 1, 'none of them saved')

  // Administrators only.
  t.equal((await bob.web.get('/demo/admin/rules')).statusCode, 403, 'a supporter sees none')
  await bob.web.get('/demo/discussions')
  t.equal((await bob.web.post('/demo/admin/rules', { name: 'Mine', events: 'created', add_tags: 'x' })).statusCode, 403)
  t.equal((await bob.web.post('/demo/admin/rules/dry_run', { name: 'Mine', events: 'created', add_tags: 'x' })).statusCode, 403)
  t.equal((await bob.web.post(`/demo/admin/rules/${rule!.id}/remove`, {})).statusCode, 403)

  await ann.web.get('/demo/admin/rules')
  t.equal((await ann.web.post('/demo/admin/rules/first/switch', { enabled: 'no' })).statusCode, 404, 'an id that is none')
  t.equal((await ann.web.post(`/demo/admin/rules/${rule!.id}/remove`, {})).headers.location, 'https://help.example.test/demo/admin/rules?done=removed')
  t.match((await ann.web.get('/demo/admin/rules?done=removed')).body, /The rule is removed; the discussions&#39; history keeps what it did\.[\s\S]*None yet/)
  const gone = await ann.web.post(`/demo/admin/rules/${rule!.id}/remove`, {})
  t.equal(gone.statusCode, 404)
  t.match(gone.body, `There is no rule ${rule!.id} on this site.`)
  t.match((await bob.web.get(`/demo/discussions/${invoice.number}`)).body, /data-firing="Invoices to billing"/, 'its firings stay in the history')
  const record = (await app.securityLog.changes({ siteId, limit: 20 })).filter((e) => e.action.startsWith('rule.') && e.action !== 'rule.fired').map((e) => [e.action, e.actor, e.via])
  t.same(record, [
    ['rule.removed', 'ann@example.test', 'page'],
    ['rule.changed', 'ann@example.test', 'page'],
    ['rule.changed', 'ann@example.test', 'page'],
    ['rule.created', 'ann@example.test', 'page'],
  ])
})

t.test('the dry run shows the discussions a rule would act on and what it would do, and saves nothing', async (t) => {
  const { app, clock, ann, siteId, write } = await rulesDesk(t)
  const one = await write('Refund please', 'I want my money back.')
  await write('A question')
  const three = await write('Another one', 'A REFUND, now.')
  const versions = await Promise.all([1, 2, 3].map(async (n) => (await app.discussions.get(siteId, n)).version))

  await ann.web.get('/demo/admin/rules')
  const tried = await postForm(ann, '/demo/admin/rules/dry_run', [['name', 'Refunds'], ['events', 'created'], ['words', 'refund'], ['add_tags', 'refunds'], ['set_state', 'resolved'], ['set_owner', 'none']])
  t.equal(tried.statusCode, 200)
  t.match(tried.body, /Dry run: nothing was saved or changed[\s\S]*?Of the 3 newest discussions, as they are now, it would act on 2\./)
  t.match(tried.body, new RegExp(`data-match="${three.number}"><a href="https://help.example.test/demo/discussions/${three.number}">#${three.number} Another one</a>: give to nobody, tag refunds, resolve</li>\\s*<li data-match="${one.number}">`))
  t.match(tried.body, /name="name" type="text" maxlength="100" required value="Refunds"/, 'the form kept, to add it as tried')
  t.match(tried.body, /<input type="checkbox" name="events" value="created" checked>/)
  t.same(await app.rules.list(siteId), [], 'no rule saved')
  t.same(await Promise.all([1, 2, 3].map(async (n) => (await app.discussions.get(siteId, n)).version)), versions, 'no discussion changed')

  // A rule on time: due an hour after its creation, in the states it names.
  const early = await postForm(ann, '/demo/admin/rules/dry_run', [['name', 'Stale'], ['after_minutes', '60'], ['since', 'created'], ['business', 'yes'], ['states', 'new'], ['states', 'open'], ['notify', 'owner'], ['webhook', 'yes']])
  t.match(early.body, /it would act on 0\./)
  t.notMatch(early.body, /data-match=/)
  clock.advance(61 * MINUTE)
  const late = await postForm(ann, '/demo/admin/rules/dry_run', [['name', 'Stale'], ['after_minutes', '60'], ['since', 'created'], ['states', 'new'], ['states', 'open'], ['notify', 'owner'], ['webhook', 'yes']])
  t.match(late.body, /it would act on 3\.[\s\S]*?: notify its owner, post a webhook<\/li>/)
  const thanks = await app.savedReplies.add(siteId, { title: 'Thanks', body: 'Thanks.' })
  const rough = await postForm(ann, '/demo/admin/rules/dry_run', [['name', 'Rough'], ['events', 'created'], ['words', 'refund'], ['send_reply', String(thanks.id)], ['notify', String(ann.user.id)], ['mark_spam', 'yes']])
  t.match(rough.body, new RegExp(`it would act on 2\\.[\\s\\S]*?: reply with &quot;Thanks&quot;, notify ${ann.user.name}, mark spam</li>`))
  const refused = await postForm(ann, '/demo/admin/rules/dry_run', [['name', 'Idle'], ['events', 'created']])
  t.equal(refused.statusCode, 400)
  t.match(refused.body, /A rule does something/)
  t.notMatch(refused.body, /data-dry-run/)
  t.same(await app.rules.list(siteId), [], 'still none')
})

t.test("a rule's conditions and actions in words; a hostile name is text", async (t) => {
  const { app, ann, bob, siteId, general, write } = await rulesDesk(t)
  const thanks = await app.savedReplies.add(siteId, { title: 'Thanks', body: 'Thanks, {{customer.name}}.' })
  const hostile = '<img src=x onerror=alert(1)>'
  const by = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  await app.rules.add(siteId, { name: hostile, events: ['created'], conditions: { channels: ['api', 'mail'], owner: 'none' }, actions: [{ type: 'add_tags', tags: ['seen'] }] }, by)
  await app.rules.add(siteId, {
    name: 'Everything',
    afterMinutes: 90,
    business: true,
    since: 'last_comment',
    conditions: { states: ['open', 'resolved'], tags: ['vip', 'gold'], no_tags: ['muted'], owner: [bob.user.id], domains: ['customer.test'], awaiting: 'customer' },
    actions: [{ type: 'send_reply', saved_reply: thanks.id }, { type: 'notify', to: bob.user.id }, { type: 'mark_spam' }, { type: 'remove_tags', tags: ['vip'] }, { type: 'set_owner', owner: 'round_robin' }],
  }, by)
  await app.rules.add(siteId, { name: 'Anyone', events: ['sla_breached', 'tags_changed'], conditions: { owner: 'anyone', awaiting: 'team' }, actions: [{ type: 'set_state', state: 'open' }] }, by)
  await app.rules.add(siteId, { name: 'Plain', events: ['note_added'], actions: [{ type: 'webhook' }] }, by)
  await app.rules.add(siteId, { name: 'Clock', afterMinutes: 30, since: 'created', conditions: { states: ['new'] }, actions: [{ type: 'mark_spam' }] }, by)

  const page = (await ann.web.get('/demo/admin/rules')).body
  t.notMatch(page, /<img src=x/, 'the name is never markup')
  t.match(page, /data-rule="&lt;img src=x onerror=alert\(1\)&gt;"[\s\S]*?<th scope="row">&lt;img src=x onerror=alert\(1\)&gt;<\/th>[\s\S]*?data-if>came by the API or mail, owned by nobody</)
  const everything = `data-when>90 min of business hours after its newest comment</td>\\s*<td data-if>state open or resolved, tagged gold and vip, not tagged muted, owned by ${bob.user.name}, from customer.test, awaiting the customer</td>\\s*<td data-does>reply with &quot;Thanks&quot;, notify ${bob.user.name}, mark spam, untag vip, give to the category&#39;s next in turn<`
  t.match(page, new RegExp(`data-rule="Everything"[\\s\\S]*?${everything}`))
  t.match(page, /data-rule="Anyone"[\s\S]*?data-when>An SLA breach or its tags change<[\s\S]*?data-if>owned by someone, awaiting the team<[\s\S]*?data-does>open again</)
  t.match(page, /data-rule="Plain"[\s\S]*?data-when>An internal note is added<[\s\S]*?data-if>every discussion<[\s\S]*?data-does>post a webhook</)
  t.match(page, /data-rule="Clock"[\s\S]*?data-when>30 min after it was created<[\s\S]*?data-if>state new<[\s\S]*?data-does>mark spam</)

  // Fired on a discussion, its name is text there too.
  const d = await write('Anything')
  const shown = (await ann.web.get(`/demo/discussions/${d.number}`)).body
  t.notMatch(shown, /<img src=x/)
  t.match(shown, /<strong>&lt;img src=x onerror=alert\(1\)&gt;<\/strong>: tag seen/)
  t.ok(general)
})

t.test('a macro: given actions on Administration -> Queue, applied from the discussion page, it replies, tags and resolves', async (t) => {
  const { app, ann, bob, siteId, general, billing, write } = await rulesDesk(t)
  const plain = await app.savedReplies.add(siteId, { title: 'Hello', body: 'Hello {{customer.name}}.' })
  const done = await app.savedReplies.add(siteId, { title: 'Done', body: 'Fixed for you, {{customer.first_name}}. {{supporter.name}}' })
  const d = await write('My printer')
  await app.discussions.update(siteId, d.number, { tags: ['waiting', 'printer'] })

  await ann.web.get('/demo/admin/queue')
  const given = await ann.web.post(`/demo/admin/queue/replies/${done.id}`, {
    title: 'Done',
    body: done.body,
    add_tags: 'answered, fixed',
    remove_tags: 'waiting',
    set_state: 'resolved',
    set_owner: String(bob.user.id),
    set_category: String(billing.id),
  })
  t.equal(given.headers.location, 'https://help.example.test/demo/admin/queue?done=changed')
  t.same(JSON.parse((await app.savedReplies.find(siteId, done.id))!.actions), [
    { type: 'set_category', category: billing.id },
    { type: 'set_owner', owner: bob.user.id },
    { type: 'add_tags', tags: ['answered', 'fixed'] },
    { type: 'remove_tags', tags: ['waiting'] },
    { type: 'set_state', state: 'resolved' },
  ])
  // The form shows them back, so saving it again keeps them.
  const queue = (await ann.web.get('/demo/admin/queue')).body
  const form = queue.split(`data-saved-reply="${done.id}"`)[1]!.split('</form>')[0]!
  t.match(form, /name="add_tags" type="text" maxlength="500" value="answered, fixed"/)
  t.match(form, /name="remove_tags" type="text" maxlength="500" value="waiting"/)
  t.match(form, /<option value="resolved" selected>Resolve<\/option>/)
  t.match(form, new RegExp(`<option value="${bob.user.id}" selected>`))
  t.match(form, new RegExp(`<option value="${billing.id}" selected>Billing</option>`))
  const refused = await ann.web.post(`/demo/admin/queue/replies/${done.id}`, { title: 'Done', body: done.body, set_owner: '999999' })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, /role="alert">An action is 999999, who is not support staff of this site\./)
  await ann.web.get('/demo/admin/queue')
  t.equal((await ann.web.post(`/demo/admin/queue/replies/${plain.id}`, { title: 'Hello', body: plain.body, set_owner: 'round_robin' })).statusCode, 303)
  t.match((await ann.web.get('/demo/admin/queue')).body, /<option value="round_robin" selected>/)
  await ann.web.get('/demo/admin/queue')
  t.equal((await ann.web.post(`/demo/admin/queue/replies/${plain.id}`, { title: 'Hello', body: plain.body })).statusCode, 303, 'none chosen: a saved reply again')
  t.equal((await app.savedReplies.find(siteId, plain.id))!.actions, '[]')

  // Bob's page offers the macros only: the saved replies with actions.
  const page = (await bob.web.get(`/demo/discussions/${d.number}`)).body
  const offered = page.split('data-macro>')[1]!.split('</form>')[0]!
  t.match(offered, new RegExp(`<option value="${done.id}">Done</option>`))
  t.notMatch(offered, /Hello/)
  t.notMatch(page, /Rules applied/, 'no rule applied yet')
  const applied = await bob.web.post(`/demo/discussions/${d.number}/macro`, { macro: String(done.id) })
  t.equal(applied.headers.location, `https://help.example.test/demo/discussions/${d.number}?done=macro`)
  const after = await app.discussions.get(siteId, d.number)
  t.match(after, { state: 'resolved', tags: 'answered fixed printer', assigneeId: bob.user.id, categoryId: billing.id })
  const comments = await app.discussions.comments(after.id)
  t.match(comments.at(-1), { body: `Fixed for you, carol. ${bob.user.name}`, internal: false, authorId: bob.user.id, via: 'web' })
  t.match((await bob.web.get(`/demo/discussions/${d.number}?done=macro`)).body, /data-done>The macro is applied: its reply is sent and its actions done\./)

  await bob.web.get(`/demo/discussions/${d.number}`)
  const unknown = await bob.web.post(`/demo/discussions/${d.number}/macro`, { macro: '999999' })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.body, /Choose one of the macros of this site\./)
  await bob.web.get(`/demo/discussions/${d.number}`)
  t.equal((await bob.web.post(`/demo/discussions/${d.number}/macro`, { macro: 'done' })).statusCode, 400, 'not a number: no such macro')
  t.equal((await bob.web.post('/demo/discussions/999999/macro', { macro: String(done.id) })).statusCode, 404)
  // Its category gone since: the macro is refused, nothing done, the page says so.
  await app.discussions.removeCategory(siteId, billing.id, general.id)
  const other = await write('Another printer')
  await bob.web.get(`/demo/discussions/${other.number}`)
  const stale = await bob.web.post(`/demo/discussions/${other.number}/macro`, { macro: String(done.id) })
  t.equal(stale.statusCode, 400)
  t.match(stale.body, /That was not done: /)
  t.equal((await app.discussions.comments((await app.discussions.get(siteId, other.number)).id)).length, 1, 'not even its reply')
})
