import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { desk, main } from '../fixtures/customer-desk.ts'
import { makeMultipass } from '../fixtures/credentials.ts'
import { webClient } from '../fixtures/web.ts'

// Engines: both: the values are written with the discussion in one transaction, by the customer's
// form and by the link a visitor follows, and each engine must keep them alike.
// Issue 72, custom fields on the customer's side (routes/web/customers.ts, routes/web/field-form.ts;
// docs/decisions.md, "Custom fields"): the fields shown to customers are asked on the new discussion
// form (a required one must be given, each checked by its kind, named when wrong) and shown to the
// discussion's own customer; a field of the team's is never asked, taken, shown, mailed or found.

async function fieldDesk(t: Parameters<typeof desk>[0]) {
  const made = await desk(t)
  const boss = await supporterWithToken(made.app, { email: 'boss@example.test' })
  await made.app.users.setAdministrator(made.ann.site.id, boss.user.id, true)
  const admin = (method: 'POST' | 'PATCH', url: string, payload: object) => made.app.inject({ method, url, headers: boss.bearer, payload })
  const add = async (field: object) => {
    const res = await admin('POST', '/demo/fields', field)
    if (res.statusCode !== 201) throw new Error(`field refused: ${res.statusCode} ${res.body}`)
    return res.json() as { id: number }
  }
  const plan = await add({ key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'], audience: 'customers', required: true })
  await add({ key: 'order_number', name: 'Order number', kind: 'text' })
  await add({ key: 'renewal', name: 'Renewal date', kind: 'date', audience: 'customers' })
  await add({ key: 'products', name: 'Products', kind: 'choices', choices: ['Desk', 'Chat', 'Mail'], audience: 'customers' })
  const fieldsOf = async (number: number) => JSON.parse((await made.app.discussions.get(made.ann.site.id, number)).fields) as Record<string, unknown>
  return { ...made, admin, plan, fieldsOf }
}

t.test("a customer's new discussion asks the fields shown to customers: a required one must be given, each checked by its kind", async (t) => {
  const { app, ann, general, knownCustomer, fieldsOf, admin, plan } = await fieldDesk(t)
  const carol = await knownCustomer('carol@customer.example', 'Carol')
  const form = main((await carol.get('/demo/help/new')).body)
  t.match(form, /<label for="new-field-plan">Plan \(required\)<\/label>\s*<select id="new-field-plan" name="f\.plan" required/, 'a required choice, marked and required')
  t.match(form, /name="f\.renewal" type="date"/)
  t.match(form, /<legend>Products<\/legend>/)
  t.notMatch(form, /order_number|Order number/, "a field of the team's is not asked")

  const base = { category: String(general.id), title: 'Upgrade', body: 'Please upgrade me.' }
  const missing = await carol.postFiles('/demo/help/new', { ...base, 'f.renewal': '2027-02-30' })
  t.equal(missing.statusCode, 400)
  t.match(main(missing.body), /Please look at what is marked below/)
  t.match(main(missing.body), /<p class="field-error" id="new-field-plan-error">Plan is required\.<\/p>/)
  t.match(main(missing.body), /aria-invalid="true" aria-describedby="new-field-renewal-error" value="2027-02-30"/, 'what she wrote, shown again and marked')
  t.match(main(missing.body), /Renewal date must be a date, YYYY-MM-DD\./)
  t.match(main(missing.body), /value="Please upgrade me\.|>Please upgrade me\.</, 'her message kept')
  const wrongChoice = await carol.postFiles('/demo/help/new', { ...base, 'f.plan': 'Gold' })
  t.equal(wrongChoice.statusCode, 400)
  t.match(main(wrongChoice.body), /Plan must be one of Basic, Pro\./)
  t.equal((await app.discussions.list({ siteId: ann.site.id, state: 'live', sort: 'activity', offset: 0, limit: 10 })).total, 0, 'nothing made by a refusal')

  // Several boxes ticked, a file along, and the team's field slipped in by hand: that one is passed over.
  const sent = await carol.postFiles('/demo/help/new', { ...base, 'f.plan': 'Pro', 'f.renewal': '2027-01-31', 'f.products': ['Mail', 'Desk'], 'f.order_number': 'FORGED', file: { name: 'a.txt', bytes: Buffer.from('x'), type: 'text/plain' } })
  t.equal(sent.statusCode, 303, sent.body)
  t.same(await fieldsOf(1), { plan: 'Pro', products: ['Desk', 'Mail'], renewal: '2027-01-31' }, "kept as the API keeps them; the team's field not taken from her")
  t.equal((await app.inject({ url: '/demo/discussions?field.plan=Pro', headers: ann.bearer })).json().total, 1, 'found by the filter')

  // Required no longer: the form without it is taken.
  t.equal((await admin('PATCH', `/demo/fields/${plan.id}`, { required: false })).statusCode, 200)
  await carol.get('/demo/help/new')
  t.equal((await carol.postFiles('/demo/help/new', { ...base, title: 'Second' })).statusCode, 303)
  t.same(await fieldsOf(2), {}, 'no value, none kept')
})

t.test("a visitor's values wait, sealed, for the link; a field no longer asked of customers by then is left out", async (t) => {
  const { app, mails, linkIn, follow, general, admin, fieldsOf } = await fieldDesk(t)
  const renewal = (await (await app.inject({ url: '/demo/fields', headers: (await supporterWithToken(app, { email: 'sam@example.test' })).bearer })).json()).fields.find((f: { key: string }) => f.key === 'renewal')
  const visitor = webClient(app)
  t.match(main((await visitor.get('/demo/help/new')).body), /name="f\.plan"/, 'asked of a visitor too')
  const base = { category: String(general.id), title: 'Printer on fire', body: 'It smokes.', name: 'Vic', email: 'vic@customer.example' }
  const refused = await visitor.post('/demo/help/new', base)
  t.equal(refused.statusCode, 400)
  t.match(refused.body, /Plan is required\./)
  t.same(await mails(), [], 'no link mailed for a refused form')
  t.equal((await visitor.post('/demo/help/new', { ...base, 'f.plan': 'Basic', 'f.renewal': '2027-03-01' })).statusCode, 200)
  const [mail] = await mails()
  t.notMatch(mail!.text, /Basic|2027-03-01/, 'the confirmation mail carries no value')
  // Before the link is followed, the renewal date becomes the team's own.
  t.equal((await admin('PATCH', `/demo/fields/${renewal.id}`, { audience: 'team' })).statusCode, 200)
  t.equal((await follow(visitor, linkIn(mail!.text)!)).statusCode, 303)
  t.same(await fieldsOf(1), { plan: 'Basic' }, 'posted with what is still asked of customers')
})

t.test("a field of the team's never reaches a customer: not on her page, in her mail, in her search, nor through the API with her multipass", async (t) => {
  const { app, ann, api, mails, knownCustomer, general } = await fieldDesk(t)
  const carol = await knownCustomer('carol@customer.example', 'Carol')
  await carol.get('/demo/help/new')
  t.equal((await carol.post('/demo/help/new', { category: String(general.id), title: 'Refund', body: 'For my order.', 'f.plan': 'Pro', public: 'yes' })).statusCode, 303)
  const put = await app.inject({ method: 'PUT', url: '/demo/discussions/1', headers: ann.bearer, payload: { fields: { order_number: 'TEAM-ONLY-7731' } } })
  t.equal(put.statusCode, 200, put.body)
  t.same(put.json().fields, { order_number: 'TEAM-ONLY-7731', plan: 'Pro' }, 'the team sees both')

  const own = main((await carol.get('/demo/help/1')).body)
  t.match(own, /<dt>Plan<\/dt><dd data-field="plan">Pro<\/dd>/, 'her page shows the field shown to customers')
  t.notMatch(own, /TEAM-ONLY-7731|Order number|order_number/, "and nothing of the team's field")

  await api('POST', '/demo/discussions/1/comments', { body: 'Refunded.' })
  const [reply] = await mails()
  t.same(reply!.envelope, ['carol@customer.example'])
  t.notMatch(`${reply!.subject}\n${reply!.text}\n${reply!.html ?? ''}`, /TEAM-ONLY-7731/, 'the reply mailed to her carries no value of the team')

  t.notMatch(main((await carol.get(`/demo/help/search?q=${encodeURIComponent('order_number:TEAM-ONLY-7731')}`)).body), /Refund/, 'her search cannot find it by the value')
  t.match(main((await carol.get(`/demo/help/search?q=${encodeURIComponent('plan:Pro')}`)).body), /Refund/, 'by the field shown to her it can')

  // Dave reads her public discussion, and sees neither value: they are hers and the team's.
  const dave = await knownCustomer('dave@customer.example', 'Dave')
  const theirs = main((await dave.get('/demo/help/1')).body)
  t.match(theirs, /Refund/)
  t.notMatch(theirs, /data-field|TEAM-ONLY-7731/, "another customer sees no value of hers")
  // Nor can he find her discussion by a value of hers, though he reads it: a field finds among his own only.
  t.match(main((await dave.get(`/demo/help/search?q=${encodeURIComponent('refund')}`)).body), /Refund/, 'her public discussion is found by its words')
  for (const q of ['plan:Pro', 'refund plan:Pro', 'plan:Basic']) t.notMatch(main((await dave.get(`/demo/help/search?q=${encodeURIComponent(q)}`)).body), /Refund/, `${q}: not by her plan`)
  t.notMatch(main((await webClient(app).get(`/demo/help/search?q=${encodeURIComponent('plan:Pro')}`)).body), /Refund/, 'nor a visitor')

  const site = (await app.sites.find('demo'))!
  const multipass = makeMultipass({ email: 'carol@customer.example', expires: new Date(Date.now() + 3_600_000).toISOString() }, site.multipassKey, 'demo')
  for (const url of ['/demo/discussions/1', '/demo/discussions?field.order_number=TEAM-ONLY-7731', `/demo/search?q=order_number:TEAM-ONLY-7731`]) {
    const res = await app.inject({ url, headers: { 'x-multipass': multipass } })
    t.equal(res.statusCode, 403, url)
    t.notMatch(res.body, /TEAM-ONLY-7731|Refund/, `${url}: the API answers her nothing of it`)
  }
})
