import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { desk } from '../fixtures/customer-desk.ts'
import { until } from '../fixtures/until.ts'
import { unzip } from '../fixtures/zip.ts'
import { webClient as webClientOf } from '../fixtures/web.ts'

// Engines: both: the export reads every table a customer is in, which each engine must answer alike.
// Issue 74, item 1: an administrator exports everything the site holds of one customer as a ZIP:
// exactly their own (another customer's reply in a shared public discussion is named, not copied;
// no internal note), their files and kept mails; found by their address; each export a line of the
// record of changes. Outsiders (a supporter, another site's administrator) are refused.

t.test("an administrator exports a customer's data: exactly their own, and their files and mails", async (t) => {
  const { app, ann, general, send, api } = await desk(t)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  // Carol writes by mail, with a file; Ann replies, and leaves a note among the team.
  await send({ subject: 'Printer on fire', text: 'It smokes since Monday.', messageId: '<carol-1@customer.example>', attachments: [{ filename: 'smoke.txt', content: 'a photo of smoke, in words' }, { filename: '../../etc/passwd\u202e.txt', content: 'hostile name' }] })
  const [first] = await until('the mail taken in', async () => (await api('GET', '/demo/discussions')).json().discussions)
  t.equal((await api('POST', `/demo/discussions/${first.number}/comments`, { body: 'Unplug it, please.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${first.number}/comments`, { body: 'Carol again. Keep calm.', internal: true })).statusCode, 201)
  // Dave's public discussion, where the team copies Carol; and another of Dave's she is not on.
  const daves = await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Scanner jams', body: 'Dave here: my scanner jams.', author_email: 'dave@customer.example', author_name: 'Dave' })
  t.equal(daves.statusCode, 201, daves.body)
  t.equal((await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Dave alone', body: 'Only Dave.', author_email: 'dave@customer.example', author_name: 'Dave' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${daves.json().number}/participants`, { email: 'Carol@Customer.example' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${daves.json().number}/comments`, { body: 'Carol had this too: blow on it.' })).statusCode, 201)

  const found = await api('GET', '/demo/customers?email=CAROL@customer.example')
  t.equal(found.statusCode, 200)
  const [carolFound] = found.json().customers
  t.match(carolFound, { email: 'carol@customer.example', name: 'Carol Customer' })
  t.same((await api('GET', '/demo/customers?email=nobody@example.test')).json(), { customers: [] })

  const exported = await api('POST', `/demo/customers/${carolFound.id}/export`)
  t.equal(exported.statusCode, 200, exported.body.slice(0, 200))
  t.equal(exported.headers['content-type'], 'application/zip')
  t.equal(exported.headers['content-disposition'], `attachment; filename="demo-customer-${carolFound.id}.zip"`)
  const zip = await unzip(exported.rawPayload)
  const names = [...zip.keys()].sort()
  // A file name a stranger chose never leaves its folder in the ZIP, nor carries a control of direction.
  for (const name of names) t.match(name, /^(README\.txt|customer\.json|discussions\/\d+\.json|files\/\d+-[^/\\\u202e]+)$/, name)
  t.same(names.filter((n) => !n.startsWith('files/')), ['README.txt', 'customer.json', `discussions/${first.number}.json`, `discussions/${daves.json().number}.json`])
  const customerJson = JSON.parse(zip.get('customer.json')!.toString())
  t.match(customerJson, { site: 'Site demo', account: { id: carolFound.id, name: 'Carol Customer', email: 'carol@customer.example' }, discussions: [first.number, daves.json().number] })
  t.match(customerJson.mails, [{ message_id: 'carol-1@customer.example', sender: 'carol@customer.example', discussion: first.number }])

  const own = JSON.parse(zip.get(`discussions/${first.number}.json`)!.toString())
  t.match(own, { number: first.number, title: 'Printer on fire', role: 'started' })
  t.same(own.comments.map((c: { from: string }) => c.from), ['you', 'support'], 'her message and the reply; the note is not there')
  t.match(own.comments[0].body, /It smokes since Monday/)
  t.notMatch(zip.get(`discussions/${first.number}.json`)!.toString(), /Keep calm/, 'no internal note')
  const sent = own.comments[0].attachments as Array<{ name: string; file: string }>
  const smoke = sent.find((a) => a.name === 'smoke.txt')!
  t.equal(zip.get(smoke.file)?.toString(), 'a photo of smoke, in words', 'her file, byte for byte')
  t.ok(sent.some((a) => zip.get(a.file)?.toString().includes('Message-ID: <carol-1@customer.example>')), 'her mail as it came')

  const shared = JSON.parse(zip.get(`discussions/${daves.json().number}.json`)!.toString())
  t.equal(shared.role, 'copied')
  t.same(shared.comments.map((c: { from: string; name: string; body: string | null }) => [c.from, c.name, c.body]), [['another customer', 'Dave', null], ['support', ann.user.name, 'Carol had this too: blow on it.']], "Dave's text is named, not copied")
  t.notMatch(exported.rawPayload.toString('latin1'), /my scanner jams|Only Dave/, "nothing of Dave's text anywhere in the ZIP")

  const [line] = await app.securityLog.changes({ siteId: ann.site.id, action: 'customer.exported', limit: 1 })
  t.match(line, { target: 'carol@customer.example', actorId: ann.user.id, via: 'api' })

  // Her rating of a resolved discussion is hers too.
  const resolved = await api('POST', `/demo/discussions/${first.number}/resolve`, {})
  t.equal(resolved.statusCode, 200)
  await app.discussions.rate(ann.site.id, first.number, new Date(resolved.json().last_updated_at ?? Date.now()).getTime(), 'good', 'Quick!')
  const rated = JSON.parse((await unzip((await api('POST', `/demo/customers/${carolFound.id}/export`)).rawPayload)).get(`discussions/${first.number}.json`)!.toString())
  t.match(rated.rating, { rating: 'good', comment: 'Quick!' })
  // A customer with nothing on the site yet: an export of their account alone.
  const erin = await app.users.insert({ email: 'erin@customer.example', name: 'Erin' }, null)
  await app.users.addStaff(ann.site.id, erin.id)
  await app.users.removeStaff(ann.site.id, erin.id)
  const alone = await unzip((await api('POST', `/demo/customers/${erin.id}/export`)).rawPayload)
  t.same([...alone.keys()].sort(), ['README.txt', 'customer.json'])
  t.same(JSON.parse(alone.get('customer.json')!.toString()).discussions, [])

  // Outsiders: a supporter of the site, another site's administrator, a member of the staff, an unknown id.
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  t.equal((await app.inject({ method: 'POST', url: `/demo/customers/${carolFound.id}/export`, headers: bob.bearer })).statusCode, 403)
  const olga = await supporterWithToken(app, { site: 'other', email: 'olga@other.example' })
  await app.users.setAdministrator(olga.site.id, olga.user.id, true)
  t.equal((await app.inject({ method: 'POST', url: `/other/customers/${carolFound.id}/export`, headers: olga.bearer })).statusCode, 404, "not a customer of Olga's site")
  t.equal((await app.inject({ method: 'GET', url: '/other/customers?email=carol@customer.example', headers: olga.bearer })).json().customers.length, 0)
  t.equal((await api('POST', `/demo/customers/${bob.user.id}/export`)).statusCode, 404, 'a member of the staff is no customer')
  t.equal((await api('POST', '/demo/customers/99999/export')).statusCode, 404)
  t.equal((await api('GET', '/demo/customers')).statusCode, 400, 'an address is asked for')
})

t.test('a customer downloads a copy of their own data from the support site, by a link mailed to them', async (t) => {
  const { app, ann, api, general, mails, customer, clock } = await desk(t)
  t.equal((await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'My order', body: 'Where is order 12?', author_email: 'carol@customer.example', author_name: 'Carol' })).statusCode, 201)
  t.equal((await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'Dave asks', body: 'Dave wonders.', author_email: 'dave@customer.example', author_name: 'Dave' })).statusCode, 201)
  await mails()
  const carol = await customer('carol@customer.example')
  const home = await carol.get('/demo/help')
  t.match(home.body, /Download a copy of your data/)
  const asked = await carol.post('/demo/help/export')
  t.equal(asked.statusCode, 200)
  t.match(asked.body, /We mailed carol@customer\.example a link/)
  const [mail] = await mails()
  t.same(mail!.envelope, ['carol@customer.example'])
  t.equal(mail!.subject, 'A copy of your data on Site demo')
  const link = /https:\/\/help\.example\.test(\/demo\/help\/export\/service_cln_\w+)/.exec(mail!.text ?? '')![1]!

  // The link's page has a button; its answer is the ZIP, once; in any browser (the mailbox is the proof).
  const elsewhere = webClientOf(app)
  t.match((await elsewhere.get(link)).body, /Download a copy of your data/)
  /** The link's button pressed in `web`: the answer with its bytes as they came. */
  const press = async (web: ReturnType<typeof webClientOf>, path: string) => {
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await web.get(path)).body)![1]!
    return app.inject({ method: 'POST', url: path, headers: { cookie: [...web.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': 'application/x-www-form-urlencoded' }, payload: `_csrf=${encodeURIComponent(csrf)}` })
  }
  const zipped = await press(elsewhere, link)
  t.equal(zipped.statusCode, 200)
  t.equal(zipped.headers['content-type'], 'application/zip')
  const zip = await unzip(zipped.rawPayload)
  t.match(JSON.parse(zip.get('customer.json')!.toString()), { account: { email: 'carol@customer.example' }, discussions: [1] })
  t.notOk([...zip.keys()].some((n) => n === 'discussions/2.json'), "Dave's discussion is not hers")
  t.equal((await press(elsewhere, link)).statusCode, 410, 'each link works once')
  const [line] = await app.securityLog.changes({ siteId: ann.site.id, action: 'customer.exported', limit: 1 })
  t.match(line, { target: 'carol@customer.example', via: 'page' })

  // A visitor is sent to sign in; a changed link downloads nothing.
  const visitor = webClientOf(app)
  await visitor.get('/demo/help/sign_in')
  t.equal((await visitor.post('/demo/help/export')).headers.location, 'https://help.example.test/demo/help/sign_in')
  t.equal((await press(visitor, `${link}x`)).statusCode, 410)

  // A link followed too late, or after she was erased, downloads nothing; asking too often waits.
  const late = async () => {
    await carol.post('/demo/help/export')
    const [again] = await mails()
    return /https:\/\/help\.example\.test(\/demo\/help\/export\/service_cln_\w+)/.exec(again!.text ?? '')![1]!
  }
  const expired = await late()
  clock.advance(16 * 60 * 1000)
  const tooLate = await press(elsewhere, expired)
  t.equal(tooLate.statusCode, 410)
  t.match(tooLate.body, /It was valid for 15 minutes/)
  for (let i = 0; i < 5; i++) await carol.post('/demo/help/export')
  const limited = await carol.post('/demo/help/export')
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) > 0)
  await mails()
  clock.advance(2 * 60 * 60 * 1000)
  const pending = await late()
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const carolId = (await api('GET', '/demo/customers?email=carol@customer.example')).json().customers[0].id
  t.equal((await api('POST', `/demo/customers/${carolId}/erase`, {})).statusCode, 200)
  t.equal((await press(elsewhere, pending)).statusCode, 410, 'erased meanwhile: her link went with her')
})
