import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { MAX_FIELDS } from '../../lib/fields.ts'
import { personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the fields and their values are rows written with the discussion in one transaction, and filtered by an index, which each engine must do alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// A site's custom fields (issue 72; db/stores/fields.ts; docs/decisions.md, "Custom fields"):
// defined by administrators, given values on discussions through the API, each kind checked.

async function fieldsApp(t: Parameters<typeof discussionApp>[0]) {
  const made = await discussionApp(t)
  const boss = await supporterWithToken(made.app, { email: 'boss@example.test' })
  await made.app.users.setAdministrator(made.ann.site.id, boss.user.id, true)
  const admin = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => made.api(method, url, payload, boss.bearer)
  const add = async (field: object) => {
    const res = await admin('POST', '/demo/fields', field)
    if (res.statusCode !== 201) throw new Error(`field refused: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  return { ...made, boss, admin, add }
}

t.test('administrators define fields; the team reads them; values of each kind are set, shown, cleared, and refused when wrong', async (t) => {
  const { api, add, create } = await fieldsApp(t)
  const order = await add({ key: 'order_number', name: 'Order number', kind: 'text' })
  t.match(order, { key: 'order_number', name: 'Order number', kind: 'text', audience: 'team', required: false, choices: [], position: 1, removed_at: null, href: `https://api.example.test/demo/fields/${order.id}` })
  await add({ key: 'seats', name: 'Seats', kind: 'number' })
  await add({ key: 'renewal', name: 'Renewal', kind: 'date', audience: 'customers', required: true })
  await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  await add({ key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat', 'Mail'] })
  await add({ key: 'vip', name: 'VIP', kind: 'yes_no' })
  await add({ key: 'crm', name: 'CRM record', kind: 'link' })
  t.same((await api('GET', '/demo/fields')).json().fields.map((f: { key: string; position: number }) => [f.key, f.position]), [['order_number', 1], ['seats', 2], ['renewal', 3], ['plan', 4], ['products', 5], ['vip', 6], ['crm', 7]], 'any supporter reads them, in order')

  const given = { order_number: ' A-1002 ', seats: 12, renewal: '2027-01-31', plan: 'Pro', products: ['Mail', 'Desk'], vip: true, crm: 'https://crm.example/c/7' }
  const d = await create({ title: 'Invoice', fields: given })
  t.same(d.fields, { crm: 'https://crm.example/c/7', order_number: 'A-1002', plan: 'Pro', products: ['Desk', 'Mail'], renewal: '2027-01-31', seats: 12, vip: true }, 'given on create, kept canonical')
  const changed = await api('PUT', `/demo/discussions/${d.number}`, { fields: { seats: 15, vip: null, products: [] } })
  t.equal(changed.statusCode, 200, changed.body)
  t.same(changed.json().fields, { crm: 'https://crm.example/c/7', order_number: 'A-1002', plan: 'Pro', renewal: '2027-01-31', seats: 15 }, 'changed one, cleared two (null, and no choice), the rest kept')
  const version = (await api('GET', `/demo/discussions/${d.number}`)).headers.etag
  t.equal((await api('PUT', `/demo/discussions/${d.number}`, { fields: { seats: 15 } })).statusCode, 200)
  t.equal((await api('GET', `/demo/discussions/${d.number}`)).headers.etag, version, 'the same value again changes nothing')

  const refusals: Array<[object, string, RegExp]> = [
    [{ seats: '15' }, 'fields.seats', /number/],
    [{ renewal: '2027-02-30' }, 'fields.renewal', /YYYY-MM-DD/],
    [{ plan: 'Gold' }, 'fields.plan', /one of Basic, Pro/],
    [{ products: ['Desk', 'Fax'] }, 'fields.products', /list of Desk, Chat, Mail/],
    [{ vip: 'yes' }, 'fields.vip', /true or false/],
    [{ crm: 'javascript:alert(1)' }, 'fields.crm', /http/],
    [{ order_number: '   ' }, 'fields.order_number', /blank/],
    [{ colour: 'red' }, 'fields.colour', /not a field of this site/],
  ]
  for (const [fields, field, problem] of refusals) {
    const res = await api('PUT', `/demo/discussions/${d.number}`, { fields })
    t.equal(res.statusCode, 400, JSON.stringify(fields))
    t.match(res.json().fields, [{ field, problem }])
  }
  t.equal((await api('PUT', `/demo/discussions/${d.number}`, { fields: { 'Bad Key': 1 } })).statusCode, 400, 'a key that cannot be one')
  t.equal((await api('POST', '/demo/categories/1/discussions', { title: 'x', body: 'y', fields: { seats: 'many' } })).statusCode, 400, 'refused on create too')
  t.equal((await api('GET', '/demo/discussions')).json().total, 1, 'and nothing made')
  t.same((await api('GET', `/demo/discussions/${d.number}`)).json().fields.seats, 15, 'nothing changed by a refusal')
  const none = Object.fromEntries(Object.keys(given).map((key) => [key, null]))
  t.same((await api('PUT', `/demo/discussions/${d.number}`, { fields: none })).json().fields, {}, 'every one cleared')
  t.equal((await api('GET', '/demo/discussions?field.seats=15')).json().total, 0, 'and found by none')
})

t.test('a field is changed, removed (its values stay readable, its key its own), and only administrators write them', async (t) => {
  const { app, api, admin, add, create } = await fieldsApp(t)
  const plan = await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  const d = await create({ fields: { plan: 'Pro' } })
  const renamed = await admin('PATCH', `/demo/fields/${plan.id}`, { name: 'Subscription', choices: ['Basic', 'Pro', 'Enterprise'], audience: 'customers' })
  t.match(renamed.json(), { key: 'plan', name: 'Subscription', kind: 'choice', audience: 'customers', choices: ['Basic', 'Pro', 'Enterprise'] })
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, { kind: 'text' })).statusCode, 400, 'its kind stays')
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, { choices: ['A', 'A'] })).statusCode, 400)
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, {})).statusCode, 400, 'something to change')
  t.match((await admin('PATCH', `/demo/fields/${plan.id}`, { required: true })).json(), { name: 'Subscription', required: true, choices: ['Basic', 'Pro', 'Enterprise'] }, 'one thing changed, the rest kept')
  t.match((await api('GET', `/demo/fields/${plan.id}`)).json(), { key: 'plan', required: true }, 'one field, read by a supporter')
  t.equal((await admin('POST', '/demo/fields', { key: 'plan', name: 'Again', kind: 'text' })).statusCode, 409, 'a key once')
  t.equal((await admin('POST', '/demo/fields', { key: 'Plan', name: 'x', kind: 'text' })).statusCode, 400)
  t.equal((await admin('POST', '/demo/fields', { key: 'size', name: 'x', kind: 'choice' })).statusCode, 400, 'a choice needs its choices')
  t.equal((await admin('POST', '/demo/fields', { key: 'size', name: 'x', kind: 'colour' })).statusCode, 400)

  const supporter = await api('POST', '/demo/fields', { key: 'mine', name: 'Mine', kind: 'text' })
  t.equal(supporter.statusCode, 403, 'a supporter reads them, does not write them')
  t.equal((await api('DELETE', `/demo/fields/${plan.id}`)).statusCode, 403)
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  await app.users.setAdministrator(other.site.id, other.user.id, true)
  t.equal((await app.inject({ method: 'GET', url: `/other/fields/${plan.id}`, headers: other.bearer })).statusCode, 404, "another site's administrator does not see it")
  t.equal((await app.inject({ method: 'DELETE', url: `/other/fields/${plan.id}`, headers: other.bearer })).statusCode, 404, 'nor removes it')
  t.equal((await app.inject({ method: 'GET', url: '/other/fields', headers: other.bearer })).json().fields.length, 0)

  t.equal((await admin('DELETE', `/demo/fields/${plan.id}`)).statusCode, 204)
  t.equal((await admin('DELETE', `/demo/fields/${plan.id}`)).statusCode, 404, 'removed once')
  t.same((await api('GET', '/demo/fields')).json().fields, [], 'no longer listed')
  t.match((await api('GET', '/demo/fields?removed=true')).json().fields, [{ key: 'plan', removed_at: /Z$/ }], 'but kept')
  t.same((await api('GET', `/demo/discussions/${d.number}`)).json().fields, { plan: 'Pro' }, 'its values stay readable')
  t.match((await api('PUT', `/demo/discussions/${d.number}`, { fields: { plan: 'Basic' } })).json(), { fields: [{ field: 'fields.plan', problem: /not a field/ }] }, 'and take no new one')
  t.equal((await admin('POST', '/demo/fields', { key: 'plan', name: 'Plan', kind: 'text' })).statusCode, 409, 'its key stays its own')
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, { name: 'Back' })).statusCode, 404)
  t.equal((await api('GET', '/demo/fields/999')).statusCode, 404)

  for (let i = 1; i < MAX_FIELDS; i++) await add({ key: `f${i}`, name: `F${i}`, kind: 'yes_no' })
  t.equal((await admin('POST', '/demo/fields', { key: 'last', name: 'Last', kind: 'text' })).statusCode, 201, `${MAX_FIELDS} fields`)
  const over = await admin('POST', '/demo/fields', { key: 'over', name: 'Over', kind: 'text' })
  t.equal(over.statusCode, 429, `not ${MAX_FIELDS + 1}`)
  t.match(over.json().message, `at most ${MAX_FIELDS} fields`)
})

t.test('a listing filtered by a field: each kind by its own text, with the other filters, paged with the filter kept', async (t) => {
  const { api, add, create, admin } = await fieldsApp(t)
  await add({ key: 'order_number', name: 'Order', kind: 'text' })
  await add({ key: 'seats', name: 'Seats', kind: 'number' })
  await add({ key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat'] })
  await add({ key: 'vip', name: 'VIP', kind: 'yes_no' })
  const plan = await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  const one = await create({ title: 'One', fields: { order_number: 'A-1002', seats: 12, products: ['Desk', 'Chat'], vip: true } })
  const two = await create({ title: 'Two', fields: { order_number: 'A-1003', seats: 12.5, products: ['Chat'], plan: 'Pro' } })
  await create({ title: 'Three' })
  const numbers = async (query: string) => {
    const res = await api('GET', `/demo/discussions?${query}`)
    t.equal(res.statusCode, 200, `${query}: ${res.statusCode === 200 ? '' : res.body}`)
    return (res.json().discussions as Array<{ number: number }>).map((d) => d.number).sort()
  }
  t.same(await numbers('field.order_number=A-1002'), [one.number])
  t.same(await numbers('field.seats=12.0'), [one.number], 'a number by its value')
  t.same(await numbers('field.seats=12.5'), [two.number])
  t.same(await numbers('field.products=Chat'), [one.number, two.number], 'one of several choices')
  t.same(await numbers('field.vip=yes'), [one.number])
  t.same(await numbers('field.plan=Basic'), [])
  t.same(await numbers('field.products=Chat&tag=none-such'), [], 'with a tag')
  t.equal((await api('GET', '/demo/discussions?field.products=Chat')).json().total, 2, 'counted')
  t.same(await numbers('field.products=Chat&user_email=ann@example.test'), [one.number, two.number], 'with an author')
  t.same(await numbers('field.products=Chat&user_email=nobody@example.test'), [])
  t.match((await api('GET', '/demo/discussions/resolved?field.products=Chat')).json(), { total: 0 }, 'within a state')
  t.equal((await api('PUT', `/demo/discussions/${two.number}`, { fields: { products: ['Desk'] } })).statusCode, 200)
  t.same(await numbers('field.products=Chat'), [one.number], 'a changed value is found by its new value only')
  t.same(await numbers('field.products=Desk'), [one.number, two.number])

  for (let i = 0; i < 31; i++) await create({ title: `Many ${i}`, fields: { vip: false } })
  const first = await api('GET', '/demo/discussions?field.vip=false')
  t.match(first.json(), { total: 31 })
  t.match(first.headers.link, /field\.vip=false/, 'the pages keep the filter')

  const refused: Array<[string, string, RegExp]> = [
    ['field.colour=red', 'field.colour', /not a field/],
    ['field.seats=many', 'field.seats', /number/],
    ['field.vip=maybe', 'field.vip', /true or false/],
    ['field.plan=Gold', 'field.plan', /one of Basic, Pro/],
    ['field.seats=1&field.vip=true', 'field.vip', /one field/],
    ['field.seats=1&field.seats=2', 'field.seats', /once/],
  ]
  for (const [query, field, problem] of refused) {
    const res = await api('GET', `/demo/discussions?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(res.json().fields, [{ field, problem }], query)
  }
  t.equal((await admin('DELETE', `/demo/fields/${plan.id}`)).statusCode, 204)
  t.equal((await api('GET', '/demo/discussions?field.plan=Pro')).statusCode, 400, 'a removed field filters nothing')
})

t.test("the search filters by a field's key; a customer's search knows only the fields shown to customers", async (t) => {
  const { app, api, add, create } = await fieldsApp(t)
  await add({ key: 'order_number', name: 'Order', kind: 'text' })
  await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'], audience: 'customers' })
  const carol = await personWithPassword(app, { role: 'customer', email: 'carol@example.test' })
  const one = await create({ title: 'Invoice wrong', body: 'The invoice total is wrong.', fields: { order_number: 'A-1002', plan: 'Pro' }, author_email: 'carol@example.test' })
  await create({ title: 'Invoice late', body: 'The invoice is late.', fields: { order_number: 'A-1003', plan: 'Basic' } })
  const found = async (q: string) => {
    const res = await api('GET', `/demo/search?q=${encodeURIComponent(q)}`)
    t.equal(res.statusCode, 200, `${q}: ${res.statusCode === 200 ? '' : res.body}`)
    return (res.json().results as Array<{ discussion: { number: number } }>).map((r) => r.discussion.number)
  }
  t.same(await found('order_number:A-1002'), [one.number], 'a field alone')
  t.same(await found('invoice plan:Pro'), [one.number], 'with words')
  t.same(await found('invoice plan:"Basic" order_number:A-1002'), [], 'several, all of them')
  // A date field by a range, as after: and before: are written.
  await add({ key: 'renewal', name: 'Renewal', kind: 'date' })
  const [jan, feb, mar] = [await create({ title: 'Renew A', fields: { renewal: '2026-01-31' } }), await create({ title: 'Renew B', fields: { renewal: '2026-02-01' } }), await create({ title: 'Renew C', fields: { renewal: '2026-03-31' } })]
  t.same((await found('renewal:>2026-01-31')).sort(), [feb.number, mar.number], 'after a day: not that day')
  t.same((await found('renewal:>=2026-01-31')).sort(), [jan.number, feb.number, mar.number])
  t.same(await found('renewal:<2026-02-01'), [jan.number])
  t.same((await found('renewal:2026-02-01..2026-03-31')).sort(), [feb.number, mar.number], 'both ends included')
  t.same(await found('renew renewal:2026-01-31'), [jan.number], 'one day, with words')
  const backwards = await api('GET', `/demo/search?q=${encodeURIComponent('renewal:2026-03-01..2026-01-01')}`)
  t.equal(backwards.statusCode, 400)
  t.match(backwards.json().fields, [{ field: 'q', problem: 'gives renewal:2026-03-01..2026-01-01, and the field renewal is a range that ends (2026-01-01) before it starts (2026-03-01)' }])
  const bad = await api('GET', `/demo/search?q=${encodeURIComponent('plan:Gold')}`)
  t.equal(bad.statusCode, 400)
  t.match(bad.json().fields, [{ field: 'q', problem: 'gives plan:Gold, and the field plan must be one of Basic, Pro' }])

  const customer = webClient(app)
  await customer.signIn(carol.email, carol.password)
  const page = async (q: string) => (await customer.get(`/demo/help/search?q=${encodeURIComponent(q)}`)).body
  t.match(await page('invoice plan:Pro'), /Invoice wrong/, 'her own, by a field shown to customers')
  t.notMatch(await page('invoice plan:Basic'), /Invoice wrong/)
  t.notMatch(await page('order_number:A-1002'), /Invoice wrong/, "a field of the team's is words to her: nothing found by its value")
})

t.test('on the discussion page: the values shown, a form by kind, a wrong value refused with the field named; a collaborator gets no form', onSqlite("the discussion page's words and forms"), async (t) => {
  const { app, add, create, admin, ann } = await fieldsApp(t)
  const siteId = ann.site.id
  await add({ key: 'order_number', name: 'Order number', kind: 'text' })
  await add({ key: 'seats', name: 'Seats', kind: 'number' })
  await add({ key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat'] })
  await add({ key: 'vip', name: 'VIP', kind: 'yes_no' })
  const old = await add({ key: 'legacy', name: 'Legacy', kind: 'text' })
  const d = await create({ title: 'Fields', fields: { order_number: 'A-1002', legacy: 'kept' } })
  t.equal((await admin('DELETE', `/demo/fields/${old.id}`)).statusCode, 204)
  const { web } = await signedInPerson(app)
  const page = (await web.get(`/demo/discussions/${d.number}`)).body
  t.match(page, /<dt>Order number<\/dt><dd data-field="order_number">A-1002<\/dd>/)
  t.match(page, /data-field="legacy">kept</, "a removed field's value, still shown")
  t.match(page, /name="f\.seats" type="number"/)
  t.match(page, /type="checkbox" name="f\.products" value="Chat"/)

  const saved = await web.post(`/demo/discussions/${d.number}/fields`, { 'f.order_number': 'A-1003', 'f.seats': '12', 'f.vip': 'yes', 'f.products': 'Chat' })
  t.equal(saved.statusCode, 303)
  t.match(saved.headers.location, /\?done=fields$/)
  t.same((await app.discussions.get(siteId, d.number)).fields, JSON.stringify({ legacy: 'kept', order_number: 'A-1003', products: ['Chat'], seats: 12, vip: true }))
  const wrong = await web.post(`/demo/discussions/${d.number}/fields`, { 'f.order_number': 'A-1003', 'f.seats': 'twelve' })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, /That was not done: seats must be a number/)
  const cleared = await web.post(`/demo/discussions/${d.number}/fields`, { 'f.order_number': '', 'f.seats': '12' })
  t.equal(cleared.statusCode, 303)
  t.same(JSON.parse((await app.discussions.get(siteId, d.number)).fields), { legacy: 'kept', seats: 12 }, 'an empty box clears, no box ticked clears')

  const cleo = await signedInPerson(app, { email: 'cleo@example.test' })
  await app.users.setStaffRole(siteId, cleo.user.id, 'collaborator')
  t.notMatch((await cleo.web.get(`/demo/discussions/${d.number}`)).body, /data-fields-form/, 'a collaborator writes notes only')
  t.equal((await cleo.web.post(`/demo/discussions/${d.number}/fields`, { 'f.seats': '1' })).statusCode, 403)
})

t.test('a rule on a field: its conditions by value, its action setting values; refused when it names what is not there', async (t) => {
  const { app, api, admin, add, create } = await fieldsApp(t)
  await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  const vip = await add({ key: 'vip', name: 'VIP', kind: 'yes_no' })
  const rule = async (body: object) => admin('POST', '/demo/rules', body)
  t.equal((await rule({ name: 'Pro plans', events: ['created'], conditions: { fields: { plan: ['Pro'] } }, actions: [{ type: 'add_tags', tags: ['pro'] }] })).statusCode, 201)
  t.equal((await rule({ name: 'Urgent is VIP', events: ['created'], conditions: { words: ['urgent'] }, actions: [{ type: 'set_fields', fields: { vip: true } }, { type: 'add_tags', tags: ['urgent'] }] })).statusCode, 201)
  const pro = await create({ title: 'Urgent: invoice', fields: { plan: 'Pro' } })
  t.match(pro, { tags: ['pro', 'urgent'], fields: { plan: 'Pro', vip: true } }, 'both rules fired on create: one on the value, one setting one')
  t.match(await create({ title: 'Invoice', fields: { plan: 'Basic' } }), { tags: [], fields: { plan: 'Basic' } }, 'another value: nothing')
  t.same((await api('GET', '/demo/discussions?field.vip=true')).json().discussions.map((d: { number: number }) => d.number), [pro.number], "a rule's values are found as any")
  const { web } = await signedInPerson(app, { administrator: true })
  const page = (await web.get('/demo/admin/rules')).body
  t.match(page, /data-if>plan Pro</, "the rules' page says the condition")
  t.match(page, /data-does>set vip to true, tag urgent</, 'and the action')

  const refused: Array<[object, string]> = [
    [{ conditions: { fields: { colour: ['red'] } } }, 'conditions.fields.colour'],
    [{ conditions: { fields: { plan: ['Gold'] } } }, 'conditions.fields.plan'],
    [{ actions: [{ type: 'set_fields', fields: { vip: 'yes' } }] }, 'actions[0].fields.vip'],
    [{ actions: [{ type: 'set_fields', fields: { colour: 'red' } }] }, 'actions[0].fields.colour'],
  ]
  for (const [body, field] of refused) {
    const res = await rule({ name: 'Wrong', events: ['created'], actions: [{ type: 'add_tags', tags: ['x'] }], ...body })
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(res.json().fields, [{ field }])
  }
  // On a field changed: a plan moved to Pro is tagged; a change of another kind, or the same value again, starts nothing.
  t.equal((await rule({ name: 'Upgraded', events: ['fields_changed'], conditions: { fields: { plan: ['Pro'] } }, actions: [{ type: 'add_tags', tags: ['upgraded'] }] })).statusCode, 201)
  const basic = await create({ title: 'Plans', fields: { plan: 'Basic' } })
  t.same((await api('PUT', `/demo/discussions/${basic.number}`, { title: 'Plans and prices' })).json().tags, [], 'a title changed: no field changed')
  t.same((await api('PUT', `/demo/discussions/${basic.number}`, { fields: { plan: 'Basic' } })).json().tags, [], 'the same value again: no change')
  t.same((await api('PUT', `/demo/discussions/${basic.number}`, { fields: { plan: 'Pro' } })).json().tags, ['upgraded'], 'moved to Pro: the rule on a field changed fired')
  t.match((await web.get('/demo/admin/rules')).body, /<option value="fields_changed">Its custom fields change<\/option>|value="fields_changed"[^>]*> ?Its custom fields change/, 'offered on the page')

  t.equal((await admin('DELETE', `/demo/fields/${vip.id}`)).statusCode, 204)
  t.match(await create({ title: 'Urgent again' }), { tags: ['urgent'], fields: {} }, 'a field removed since: that action left out, the others done')
})

t.test('Administration -> Fields: add each kind, change, remove; each refusal said on the page; administrators of this site only', onSqlite("the administration page's words and forms"), async (t) => {
  const { app, api } = await fieldsApp(t)
  const boss = await signedInPerson(app, { administrator: true, email: 'chief@example.test' })
  await boss.web.get('/demo/admin/fields')
  const added = await boss.web.post('/demo/admin/fields', { name: 'Plan', key: 'plan', kind: 'choice', audience: 'customers', required: 'yes', choices: 'Basic\r\n\r\n Pro \n' })
  t.equal(added.headers.location, 'https://help.example.test/demo/admin/fields?done=added')
  t.match((await api('GET', '/demo/fields')).json().fields, [{ key: 'plan', name: 'Plan', kind: 'choice', audience: 'customers', required: true, choices: ['Basic', 'Pro'] }], 'one choice a line, blank lines passed over')
  t.equal((await boss.web.post('/demo/admin/fields', { name: 'Order', key: 'order_number', kind: 'text', choices: 'ignored' })).statusCode, 303, "a kind without choices takes none of the box's")
  const page = (await boss.web.get('/demo/admin/fields?done=added')).body
  t.match(page, /The field is added\./)
  t.match(page, /data-field-row="plan"[\s\S]*?<code>plan<\/code> · One choice[\s\S]*?<textarea id="choices-\d+" name="choices" rows="3">Basic\nPro<\/textarea>/)
  t.match(page, /aria-current="page">Fields</)

  const plan = (await api('GET', '/demo/fields')).json().fields[0]
  const order = (await api('GET', '/demo/fields')).json().fields[1]
  const refused = [
    ['/demo/admin/fields', { name: 'Plan again', key: 'plan', kind: 'text' }, 409, /The field&#39;s key is &quot;plan&quot;, which a field of this site has/],
    ['/demo/admin/fields', { name: 'Bad', key: 'Bad Key', kind: 'text' }, 400, /The field&#39;s key must be lower-case letters/],
    ['/demo/admin/fields', { name: 'Odd', key: 'odd', kind: 'colour' }, 400, /kind must be one of text, number, date, choice, choices, yes_no, link/],
    ['/demo/admin/fields', { name: 'Tier', key: 'tier', kind: 'choice', choices: '' }, 400, /The field&#39;s choices must be 1 to 100/],
    ['/demo/admin/fields', { name: 'State', key: 'state', kind: 'text' }, 400, /is a filter of the search/],
    [`/demo/admin/fields/${plan.id}`, { name: ' ' }, 400, /The field&#39;s name must be 1 to 100 characters/],
    [`/demo/admin/fields/${plan.id}`, { name: 'Plan', choices: 'A\nA' }, 400, /must each be given once/],
    ['/demo/admin/fields/999999', { name: 'Gone' }, 404, /there is no field 999999 on this site/],
  ] as const
  for (const [path, form, status, words] of refused) {
    const answer = await boss.web.post(path, form)
    t.equal(answer.statusCode, status, `${path} ${JSON.stringify(form)}`)
    t.match(answer.body, words)
  }
  t.equal((await api('GET', '/demo/fields')).json().fields.length, 2, 'nothing made by a refusal')

  t.equal((await boss.web.post(`/demo/admin/fields/${plan.id}`, { name: 'Subscription', audience: 'team', choices: 'Basic\nPro\nEnterprise' })).statusCode, 303)
  t.match((await api('GET', `/demo/fields/${plan.id}`)).json(), { key: 'plan', kind: 'choice', name: 'Subscription', audience: 'team', required: false, choices: ['Basic', 'Pro', 'Enterprise'] }, 'changed on its row, unticked is not required')
  t.equal((await boss.web.post(`/demo/admin/fields/${order.id}`, { remove: 'yes' })).headers.location, 'https://help.example.test/demo/admin/fields?done=removed')
  const after = (await boss.web.get('/demo/admin/fields')).body
  t.match(after, /data-removed-field="order_number"><code>order_number<\/code> · Order · Text/, 'listed as removed')
  t.notMatch(after, /data-field-row="order_number"/)
  t.match((await api('GET', `/demo/fields/${order.id}`)).json(), { removed_at: String })

  // A supporter, and another site's administrator, are kept out.
  const sam = await signedInPerson(app, { email: 'sam@example.test' })
  t.equal((await sam.web.get('/demo/admin/fields')).statusCode, 403)
  await sam.web.get('/demo/discussions')
  t.equal((await sam.web.post('/demo/admin/fields', { name: 'X', key: 'x', kind: 'text' })).statusCode, 403)
  const other = await signedInPerson(app, { administrator: true, site: 'other', email: 'olga@example.test' })
  await other.web.get('/other/admin/fields')
  t.equal((await other.web.post(`/other/admin/fields/${plan.id}`, { remove: 'yes' })).statusCode, 404, "another site's field is none of hers")
  t.equal((await api('GET', `/demo/fields/${plan.id}`)).json().removed_at, null)
})

t.test("fields of customers: each customer's own, read and set through /customers/<id> and the discussion page, never a discussion's, never shown to the customer", async (t) => {
  const { app, api, admin, add, create, ann } = await fieldsApp(t)
  await add({ key: 'order_number', name: 'Order number', kind: 'text' })
  await add({ key: 'company', name: 'Company', kind: 'text', of: 'customer' })
  await add({ key: 'size', name: 'Company size', kind: 'choice', choices: ['Small', 'Large'], of: 'customer' })
  for (const [body, field, problem] of [
    [{ key: 'vip', name: 'VIP', kind: 'yes_no', of: 'customer', audience: 'customers' }, 'audience', /the team's for a field of customers/],
    [{ key: 'vip', name: 'VIP', kind: 'yes_no', of: 'customer', required: true }, 'required', /never asked/],
    [{ key: 'vip', name: 'VIP', kind: 'yes_no', of: 'ticket' }, 'of', /./],
  ] as const) {
    const refused = await admin('POST', '/demo/fields', body)
    t.equal(refused.statusCode, 400, JSON.stringify(body))
    t.match(refused.json().fields, [{ field, problem }])
  }
  t.same((await api('GET', '/demo/fields?of=customer')).json().fields.map((f: { key: string; of: string }) => [f.key, f.of]), [['company', 'customer'], ['size', 'customer']], 'listed by what they are kept on')
  t.same((await api('GET', '/demo/fields?of=discussion')).json().fields.map((f: { key: string }) => f.key), ['order_number'])

  const carol = await personWithPassword(app, { role: 'customer', email: 'carol@example.test' })
  const one = await create({ title: 'First', author_email: 'carol@example.test' })
  const two = await create({ title: 'Second', author_email: 'carol@example.test' })
  const carolId = (await app.users.find('carol@example.test'))!.id
  t.match((await api('GET', `/demo/customers/${carolId}`)).json(), { id: carolId, email: 'carol@example.test', fields: {}, discussions_href: `https://api.example.test/demo/discussions?user_id=${carolId}`, href: `https://api.example.test/demo/customers/${carolId}` })
  const set = await api('PUT', `/demo/customers/${carolId}`, { fields: { company: ' Acme ', size: 'Large' } })
  t.equal(set.statusCode, 200, set.body)
  t.same(set.json().fields, { company: 'Acme', size: 'Large' }, 'kept as a discussion keeps its values')
  t.same((await api('PUT', `/demo/customers/${carolId}`, { fields: { size: null } })).json().fields, { company: 'Acme' }, 'one cleared, the other kept')
  for (const [fields, field, problem] of [
    [{ size: 'Huge' }, 'fields.size', /one of Small, Large/],
    [{ order_number: 'A-1' }, 'fields.order_number', /not a field of this site's customers/],
  ] as const) {
    const res = await api('PUT', `/demo/customers/${carolId}`, { fields })
    t.equal(res.statusCode, 400)
    t.match(res.json().fields, [{ field, problem }])
  }
  const onDiscussion = await api('PUT', `/demo/discussions/${one.number}`, { fields: { company: 'Acme' } })
  t.equal(onDiscussion.statusCode, 400, "a customer's field is no discussion's")
  t.match(onDiscussion.json().fields, [{ field: 'fields.company', problem: /not a field of this site's discussions/ }])
  t.equal((await api('PUT', `/demo/customers/${carolId}`, {})).statusCode, 400, 'fields are needed')
  t.equal((await api('GET', `/demo/customers/${ann.user.id}`)).statusCode, 404, 'a supporter is no customer')
  t.equal((await api('GET', '/demo/customers/999999')).statusCode, 404)
  const olga = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  t.equal((await api('GET', `/other/customers/${carolId}`, undefined, olga.bearer)).statusCode, 404, "another site's supporter: she is none of its customers")
  t.equal((await api('PUT', `/other/customers/${carolId}`, { fields: { company: 'Evil' } }, olga.bearer)).statusCode, 404)
  t.equal((await api('GET', `/demo/customers/${carolId}`, undefined, olga.bearer)).statusCode, 401, "nor may she read this site's")

  // The discussion page: the customer's values among the facts, a form of their own; both discussions of hers say the same.
  const { web } = await signedInPerson(app)
  const page = (await web.get(`/demo/discussions/${one.number}`)).body
  t.match(page, /<dt>Company <span class="muted">\(customer\)<\/span><\/dt><dd data-customer-field="company">Acme<\/dd>/)
  t.match(page, /data-customer-fields-form[\s\S]*?name="f\.size"/)
  const saved = await web.post(`/demo/discussions/${one.number}/customer_fields`, { 'f.company': 'Acme GmbH', 'f.size': 'Small' })
  t.match(saved.headers.location, /\?done=customer_fields$/)
  t.match((await web.get(`/demo/discussions/${two.number}`)).body, /data-customer-field="size">Small</, "her other discussion shows the same: the values are hers")
  t.equal((await web.post(`/demo/discussions/${one.number}/customer_fields`, { 'f.size': 'Huge' })).statusCode, 400)
  const staffStarted = await create({ title: 'Ours' })
  t.notMatch((await web.get(`/demo/discussions/${staffStarted.number}`)).body, /data-customer-fields-form/, 'a discussion the team started has no customer to describe')
  const record = (await admin('GET', '/demo/audit_log?action=customer.fields_changed')).json()
  t.match(record.entries, [{ action: 'customer.fields_changed', target: 'carol@example.test', detail: { before: { company: 'Acme', size: null }, after: { company: 'Acme GmbH', size: 'Small' } } }], 'each change a line of the record, the newest first')

  // Never shown to her.
  const customer = webClient(app)
  await customer.signIn(carol.email, carol.password)
  t.notMatch((await customer.get(`/demo/help/${one.number}`)).body, /Acme|Company/, 'the team\'s record of her is the team\'s')
})

t.test("the queue's columns: each supporter chooses the fields shown, their own choice only", async (t) => {
  const { app, add, create, admin } = await fieldsApp(t)
  await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  const seats = await add({ key: 'seats', name: 'Seats', kind: 'number' })
  await add({ key: 'company', name: 'Company', kind: 'text', of: 'customer' })
  await create({ title: 'Upgrade', fields: { plan: 'Pro', seats: 12 } })
  await create({ title: 'Question' })
  const ann = await signedInPerson(app, { email: 'ann.page@example.test' })
  const bob = await signedInPerson(app, { email: 'bob.page@example.test' })
  const queue = await ann.web.get('/demo/discussions?state=live')
  t.match(queue.body, /<summary>Columns<\/summary>[\s\S]*?value="plan"[\s\S]*?value="seats"/, 'the fields of discussions offered')
  t.notMatch(queue.body, /name="column" value="company"/, "a customer's field is no column of discussions")
  t.notMatch(queue.body, /<th scope="col" data-column=/, 'none shown until chosen')

  const chosen = await ann.web.post('/demo/discussions/columns', { column: 'seats', back: '?state=live' })
  t.equal(chosen.headers.location, 'https://help.example.test/demo/discussions?state=live', 'back to the queue as it was')
  const elsewhere = await ann.web.request('POST', '/demo/discussions/columns', `_csrf=${encodeURIComponent(ann.web.field('_csrf'))}&column=plan&column=seats&column=nothing&back=https%3A%2F%2Fevil.example%2F`)
  t.equal(elsewhere.headers.location, 'https://help.example.test/demo/discussions', 'a back that is no query of the queue leads to the queue')
  const after = (await ann.web.get('/demo/discussions?state=live')).body
  t.match(after, /<th scope="col" data-column="plan">Plan<\/th><th scope="col" data-column="seats">Seats<\/th><\/tr>/, "in the site's order; an unknown key passed over")
  t.match(after, /data-discussion="1">[\s\S]*?<td data-label="Plan" data-field="plan">Pro<\/td><td data-label="Seats" data-field="seats">12<\/td>/)
  t.match(after, /data-discussion="2">[\s\S]*?data-field="plan">—</, 'a dash where there is no value')
  t.notMatch((await bob.web.get('/demo/discussions?state=live')).body, /data-column=/, "Bob's queue is his own")
  t.equal((await ann.web.request('POST', '/demo/discussions/columns', 'column=plan')).statusCode, 403, 'no CSRF token')
  t.match((await ann.web.get('/demo/discussions?state=live')).body, /data-column="plan">Plan<\/th><th scope="col" data-column="seats">/, 'and no change')
  // A collaborator chooses theirs too: their own account's choice, not a change of the discussions.
  const cleo = await signedInPerson(app, { email: 'cleo.page@example.test' })
  await app.users.setStaffRole(ann.site.id, cleo.user.id, 'collaborator')
  await cleo.web.get('/demo/discussions')
  t.equal((await cleo.web.post('/demo/discussions/columns', { column: 'plan' })).statusCode, 303)
  t.match((await cleo.web.get('/demo/discussions')).body, /data-column="plan"/)

  // A field removed leaves the columns.
  t.equal((await admin('DELETE', `/demo/fields/${seats.id}`)).statusCode, 204)
  t.notMatch((await ann.web.get('/demo/discussions?state=live')).body, /data-column="seats"/)
})

t.test('a macro sets custom fields: given through the API, checked when saved, applied with its reply, kept when its form is saved', async (t) => {
  const { app, api, admin, add, create } = await fieldsApp(t)
  await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })
  const wrong = await admin('POST', '/demo/saved_replies', { title: 'Upgrade', body: 'Done.', actions: [{ type: 'set_fields', fields: { plan: 'Gold' } }] })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.json().fields, [{ field: 'actions[0].fields.plan', problem: /one of Basic, Pro/ }])
  const macro = await admin('POST', '/demo/saved_replies', { title: 'Upgrade', body: 'You are on Pro now.', actions: [{ type: 'set_fields', fields: { plan: 'Pro' } }, { type: 'add_tags', tags: ['upgraded'] }] })
  t.equal(macro.statusCode, 201, macro.body)
  const d = await create({ fields: { plan: 'Basic' } })
  const applied = await api('POST', `/demo/discussions/${d.number}/apply_macro`, { macro: macro.json().id })
  t.match(applied.json(), { fields: { plan: 'Pro' }, tags: ['upgraded'], comments_count: 2 }, 'replied, then set and tagged')

  // Its form on Administration -> Queue says what it sets, and saving the form keeps it.
  const { web } = await signedInPerson(app, { administrator: true })
  const page = (await web.get('/demo/admin/queue')).body
  t.match(page, /data-macro-fields>It also sets custom fields: set plan to Pro/)
  t.equal((await web.post(`/demo/admin/queue/replies/${macro.json().id}`, { title: 'Upgrade to Pro', body: 'You are on Pro now.', add_tags: 'upgraded, pro' })).statusCode, 303)
  t.same((await admin('GET', `/demo/saved_replies/${macro.json().id}`)).json().actions, [{ type: 'add_tags', tags: ['pro', 'upgraded'] }, { type: 'set_fields', fields: { plan: 'Pro' } }])
  // Its choice taken away since: the form still saves, that value left out.
  const plan = (await admin('GET', '/demo/fields')).json().fields[0]
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, { choices: ['Basic', 'Enterprise'] })).statusCode, 200)
  await web.get('/demo/admin/queue')
  t.equal((await web.post(`/demo/admin/queue/replies/${macro.json().id}`, { title: 'Upgrade', body: 'Upgraded.' })).statusCode, 303)
  t.same((await admin('GET', `/demo/saved_replies/${macro.json().id}`)).json().actions, [], 'what the fields no longer take is left out, not a reason to refuse the form')
})
