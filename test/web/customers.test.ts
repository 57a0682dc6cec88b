import t from 'tap'
import { rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { form as filesForm } from '../fixtures/files.ts'
import { desk, main } from '../fixtures/customer-desk.ts'
import { signedInPerson, webClient } from '../fixtures/web.ts'
import { makeMultipass } from '../fixtures/credentials.ts'
import { LINK_MINUTES, LINKS_PER_ADDRESS, LINKS_PER_EMAIL } from '../../db/stores/customer-links.ts'
import { STARTED_PER_HOUR } from '../../routes/web/customers.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 49, the customer's side (routes/web/customers.ts, db/stores/customer-links.ts): a visitor
// writes and nothing exists until the mailed link is followed; sign-in links work once, for 15
// minutes, on their site only; a customer reaches only their own discussions and public ones, never
// an internal note or anyone's email; the limits, the field only robots fill, and the site's two
// switches. Mail goes through the outbox to a real SMTP server.

const discussionCount = async (app: Awaited<ReturnType<typeof desk>>['app'], siteId: number) => (await app.discussions.list({ siteId, state: 'live', sort: 'activity', offset: 0, limit: 10 })).total

t.test("a visitor's discussion exists only once its link is followed, and once however often it is followed", async (t) => {
  const { app, ann, mails, linkIn, write, follow } = await desk(t)
  const visitor = webClient(app)
  const sent = await write(visitor, { name: 'Carol', email: 'carol@customer.example' })
  t.equal(sent.statusCode, 200)
  t.match(sent.body, 'Check your mail')
  t.equal(await discussionCount(app, ann.site.id), 0, 'nothing posted before the link is followed')
  // Waiting in the outbox, the mail is sealed: the database holds neither the link nor the text around it.
  const [queued] = await app.outbox.dueMail(10)
  t.equal(queued!.kind, 'confirmation')
  t.notMatch(queued!.payload, /service_cln_|Printer|carol/, 'the queued mail is sealed')

  const [mail] = await mails()
  t.same(mail!.envelope, ['carol@customer.example'])
  t.equal(mail!.subject, 'Confirm your message to Site demo: Printer on fire')
  t.equal(mail!.headers.get('auto-submitted'), 'auto-replied', 'marked automatic, so no auto-responder answers it')
  t.equal(mail!.from?.text, '"Site demo" <support@acme.example>', "from the site's mailbox")
  const link = linkIn(mail!.text)!
  t.ok(link, 'the mail holds the link')

  // A mail scanner opens the link: the page only, nothing posted.
  t.equal((await webClient(app).get(link)).statusCode, 200)
  t.equal(await discussionCount(app, ann.site.id), 0, 'opening the link posts nothing')

  const posted = await follow(visitor, link)
  t.equal(posted.statusCode, 303)
  t.equal(posted.headers.location, 'https://help.example.test/demo/help/1')
  const page = await visitor.get('/demo/help/1')
  t.equal(page.statusCode, 200, 'signed in, the author reads it')
  t.match(page.body, 'It smokes.')
  const d = await app.discussions.get(ann.site.id, 1)
  t.match(d, { authorName: 'Carol', authorEmail: 'carol@customer.example', public: false, state: 'new' })
  t.equal((await app.discussions.comments(d.id))[0]!.via, 'web')

  // Twice, from another browser (the mail opened on a phone): the same discussion, and no sign-in.
  const phone = webClient(app)
  t.equal((await follow(phone, link)).headers.location, 'https://help.example.test/demo/help/1')
  t.equal(await discussionCount(app, ann.site.id), 1, 'one discussion')
  t.equal((await phone.get('/demo/help/1')).statusCode, 404, 'the second follow signs no one in')
  t.match((await phone.get('/demo/help')).body, '<h1>Support</h1>')
})

t.test('a sign-in link works once, for 15 minutes, on its site only; the page never says whether the address is known', async (t) => {
  const { app, clock, ann, mails, linkIn, follow, customer } = await desk(t)
  const carolWeb = await customer('carol@customer.example').catch(() => null)
  t.equal(carolWeb, null, 'an address that is no customer yet gets no mail (so no link)')

  // Carol becomes a customer (she wrote by mail once, say); Sam is support staff.
  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const other = await supporterWithToken(app, { site: 'other', email: 'sam@example.test' })

  const ask = async (email: string) => {
    const web = webClient(app)
    await web.get('/demo/help/sign_in')
    return web.post('/demo/help/sign_in', { email })
  }
  const known = await ask('carol@customer.example')
  const unknown = await ask('nobody@customer.example')
  const staff = await ask('ann@example.test')
  t.same([known.statusCode, unknown.statusCode, staff.statusCode], [200, 200, 200])
  const words = (body: string) => /<p role="status">([\s\S]*?)<\/p>/.exec(body)![1]!.replace(/<strong>.*<\/strong>/, '')
  t.equal(words(unknown.body), words(known.body), 'the same words for a known and an unknown address')
  const sent = await mails()
  t.same(sent.map((m) => m.envelope), [['carol@customer.example']], 'a mail to the customer only: none to an unknown address, none to the staff')
  const link = linkIn(sent[0]!.text)!

  // Another site's pages do not take it.
  const elsewhere = webClient(app, 'other')
  t.equal((await follow(elsewhere, link.replace('/demo/', '/other/'))).statusCode, 410, "not on another site's pages")
  t.equal((await elsewhere.get('/other/help')).body.includes('My discussions'), false)
  t.ok(other.site.id)

  const web = webClient(app)
  t.equal((await follow(web, link)).headers.location, 'https://help.example.test/demo/help')
  t.match((await web.get('/demo/help')).body, '<h1>My discussions</h1>', 'signed in')
  const again = await follow(webClient(app), link)
  t.equal(again.statusCode, 410, 'once')
  t.match(again.body, 'used already')

  // A new link, followed after its 15 minutes.
  await ask('carol@customer.example')
  const late = linkIn((await mails())[0]!.text)!
  clock.advance(LINK_MINUTES * 60_000)
  const expired = await follow(webClient(app), late)
  t.equal(expired.statusCode, 410, 'not after 15 minutes')
  t.match(expired.body, `valid for ${LINK_MINUTES} minutes`)
  const changed = await follow(webClient(app), late.slice(0, -1) + (late.endsWith('a') ? 'b' : 'a'))
  t.equal(changed.statusCode, 410, 'a changed link is no link')
})

t.test('Carol reads the answer and not the note; Dave cannot reach her private discussion; a public one he reads and cannot answer', async (t) => {
  const { app, ann, general, api, mails, customer } = await desk(t)
  for (const [email, name] of [['carol@customer.example', 'Carol'], ['dave@customer.example', 'Dave']]) {
    const user = await app.users.insert({ email, name }, null)
    await app.users.addStaff(ann.site.id, user.id)
    await app.users.removeStaff(ann.site.id, user.id)
  }
  const carol = await customer('carol@customer.example')
  const dave = await customer('dave@customer.example')

  // Carol starts a private discussion with a file, and a public one.
  await carol.get('/demo/help/new')
  const started = await carol.postFiles('/demo/help/new', { category: String(general.id), title: 'My invoice', body: 'Where is it?', file: { name: 'invoice.txt', type: 'text/plain', bytes: Buffer.from('order 1042') } })
  t.equal(started.headers.location, 'https://help.example.test/demo/help/1')
  await carol.get('/demo/help/new')
  await carol.post('/demo/help/new', { category: String(general.id), title: 'How do I export?', body: 'Asking for everyone.', public: 'yes' })
  t.match(await app.discussions.get(ann.site.id, 1), { public: false, authorName: 'Carol' })
  t.match(await app.discussions.get(ann.site.id, 2), { public: true })

  // The supporter sees it at once, marked as from the web; answers in public and adds a note.
  const listed = (await api('GET', '/demo/discussions')).json()
  t.equal(listed.total, 2)
  const supporter = await signedInPerson(app)
  t.equal((await supporter.web.get('/demo/discussions')).body.match(/data-from-web/g)?.length, 2, 'marked in the queue as from the web')
  t.match((await supporter.web.get('/demo/discussions/1')).body, 'Carol</strong> <span class="muted">(carol@customer.example)</span>')
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'It is attached to your account page.' })).statusCode, 201)
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'She is on the old plan.', internal: true })).statusCode, 201)

  // The public reply is mailed to Carol with the link to the page.
  const [reply] = await mails()
  t.same(reply!.envelope, ['carol@customer.example'])
  t.equal(reply!.subject, 'Re: [#1] My invoice')
  t.match(reply!.text, 'It is attached to your account page.')
  t.match(reply!.text, 'https://help.example.test/demo/help/1')

  // A second answer is threaded under the first one mailed.
  await api('POST', '/demo/discussions/1/comments', { body: 'Anything else?' })
  const [second] = await mails()
  t.equal(second!.inReplyTo, reply!.messageId, 'threaded under the first reply mailed')
  const page = main((await carol.get('/demo/help/1')).body)
  t.match(page, 'It is attached to your account page.', 'Carol reads the answer')
  t.notMatch(page, 'old plan', 'and not the note')
  t.notMatch(page, /ann@example\.test|carol@customer\.example|@/, "no one's email on the page")
  t.match(page, 'Support team')
  const file = /href="([^"]+\/help\/files\/\d+)"/.exec(page)![1]!
  t.equal((await carol.get(file)).statusCode, 200, 'her file')

  // Carol answers; the discussion waits for the team again.
  await carol.get('/demo/help/1')
  t.equal((await carol.post('/demo/help/1/reply', { body: 'Found it, thanks.' })).statusCode, 303)
  t.match((await api('GET', '/demo/discussions/1')).json(), { comments: [{}, {}, {}, {}, { body: 'Found it, thanks.', author_email: 'carol@customer.example', via: 'web' }] })

  // Dave: not by its address (404, as for none), not listed, not its file.
  const missing = await dave.get('/demo/help/1')
  t.equal(missing.statusCode, 404)
  t.same(main(missing.body), main((await dave.get('/demo/help/99')).body), 'the same page as a discussion that does not exist')
  const home = (await dave.get('/demo/help')).body
  t.notMatch(home, 'My invoice', 'not listed')
  t.match(home, 'How do I export?', 'the public one is')
  t.equal((await dave.get(file.replace('https://help.example.test', ''))).statusCode, 404, 'nor its file')
  await dave.get('/demo/help/2')
  t.equal((await dave.post('/demo/help/1/reply', { body: 'Me too' })).statusCode, 404, 'no answer to what he cannot see')

  // The public one: read, not answered, not marked solved; no email on it.
  const shown = await dave.get('/demo/help/2')
  t.equal(shown.statusCode, 200)
  t.notMatch(main(shown.body), /@/, 'display names only')
  t.notMatch(shown.body, 'name="body"', 'no answer form')
  t.equal((await dave.post('/demo/help/2/reply', { body: 'Me too' })).statusCode, 403)
  t.equal((await dave.post('/demo/help/2/solved')).statusCode, 403)
  t.equal((await app.discussions.get(ann.site.id, 2)).commentsCount, 1, 'nothing added')

  // A visitor reads the public one, not the private one, and answers neither.
  const visitor = webClient(app)
  t.equal((await visitor.get('/demo/help/2')).statusCode, 200)
  t.equal((await visitor.get('/demo/help/1')).statusCode, 404)
  t.equal((await visitor.post('/demo/help/2/reply', { body: 'Spam' })).statusCode, 403)

  // Carol marks hers solved; an answer opens it again.
  await carol.get('/demo/help/1')
  t.equal((await carol.post('/demo/help/1/solved')).statusCode, 303)
  t.equal((await app.discussions.get(ann.site.id, 1)).state, 'resolved')
  const solvedPage = await carol.get('/demo/help')
  t.match(/id="solved-title"[\s\S]*<\/section>/.exec(solvedPage.body)![0], 'My invoice', 'listed under Solved')
  await carol.post('/demo/help/1/reply', { body: 'One more thing.' })
  t.equal((await app.discussions.get(ann.site.id, 1)).state, 'open')

  // An internal note's file is the team's: not Carol's either.
  const note = await filesForm({ body: 'Scan', internal: 'true', file: { name: 'scan.txt', type: 'text/plain', bytes: Buffer.from('x') } })
  const noted = (await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...ann.bearer, 'content-type': note.type }, payload: note.payload })).json()
  t.equal((await carol.get(`/demo/help/files/${noted.attachments[0].id}`)).statusCode, 404, "an internal note's file")
  t.equal((await supporter.web.get(`/demo/files/${noted.attachments[0].id}`)).statusCode, 200, 'the team has it')
})

t.test('limits per email and per client address; the field only robots fill; a clear page past a limit', async (t) => {
  const { app, ann, clock, mails, write } = await desk(t)
  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const ask = async (email: string, extra: Record<string, string> = {}) => {
    const web = webClient(app)
    await web.get('/demo/help/sign_in')
    return web.post('/demo/help/sign_in', { email, ...extra })
  }

  // A robot fills every field: answered as anyone is, and nothing is kept or mailed.
  const robot = await ask('carol@customer.example', { website: 'http://spam.example' })
  t.equal(robot.statusCode, 200)
  t.match(robot.body, 'Check your mail')
  t.match((await write(webClient(app), { name: 'Bot', email: 'bot@spam.example', website: 'http://spam.example' })).body, 'Check your mail')
  t.same(await mails(), [], 'no mail for a form a robot filled')

  for (let i = 0; i < LINKS_PER_EMAIL; i++) t.equal((await ask('carol@customer.example')).statusCode, 200)
  const limited = await ask('carol@customer.example')
  t.equal(limited.statusCode, 429, `past ${LINKS_PER_EMAIL} links for one email address`)
  t.equal(limited.headers['retry-after'], '3600')
  t.match(limited.body, 'Please wait a while')
  t.equal((await mails()).length, LINKS_PER_EMAIL)
  // The visitor's form counts against the same limits.
  t.equal((await write(webClient(app), { name: 'Carol', email: 'carol@customer.example' })).statusCode, 429)

  // Other addresses from the same client address, up to its own limit.
  for (let i = LINKS_PER_EMAIL; i < LINKS_PER_ADDRESS; i++) t.equal((await ask(`someone${i}@customer.example`)).statusCode, 200)
  t.equal((await ask('fresh@customer.example')).statusCode, 429, `past ${LINKS_PER_ADDRESS} links from one client address`)

  // An hour on, the window has moved.
  clock.advance(60 * 60_000 + 1)
  t.equal((await ask('carol@customer.example')).statusCode, 200)
})

t.test('a signed-in customer starts at most so many discussions an hour; bad fields are said, files dropped', async (t) => {
  const { app, ann, general, internal, customer } = await desk(t)
  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const web = await customer('carol@customer.example')
  const form = (await web.get('/demo/help/new')).body
  t.match(form, 'General', 'the public category is offered')
  t.notMatch(form, 'Team only', 'a private category is not')
  t.notMatch(form, 'name="email"', 'a customer is not asked for an address')

  const wrong = await web.postFiles('/demo/help/new', { category: String(internal.id), title: '', body: ' ', file: { name: 'a.txt', bytes: Buffer.from('a') } })
  t.equal(wrong.statusCode, 400)
  for (const words of ['Give your discussion a title.', 'Write a message first.', 'Choose what your discussion is about.', 'Choose the files again too.']) t.match(wrong.body, words)
  t.same(await app.files.usage(ann.site.id), await app.files.usage(ann.site.id + 1000), 'the refused upload is gone')

  for (let i = 0; i < STARTED_PER_HOUR; i++) {
    await web.get('/demo/help/new')
    t.equal((await web.post('/demo/help/new', { category: String(general.id), title: `Question ${i}`, body: 'Hm?' })).statusCode, 303)
  }
  await web.get('/demo/help/new')
  const over = await web.post('/demo/help/new', { category: String(general.id), title: 'One more', body: 'Hm?' })
  t.equal(over.statusCode, 429)
  t.match(over.body, `You started ${STARTED_PER_HOUR} discussions in the last hour.`)
})

t.test("the site's switches: visitors may write, public discussions are shown", async (t) => {
  const { app, ann, general, api, customer } = await desk(t)
  const dave = await app.users.insert({ email: 'dave@customer.example', name: 'Dave' }, null)
  await app.users.addStaff(ann.site.id, dave.id)
  await app.users.removeStaff(ann.site.id, dave.id)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Shared answer', body: 'For all.', public: true, supporterId: ann.user.id, via: 'api' })

  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  // A visitor opened the form before the switch.
  const early = webClient(app)
  await early.get('/demo/help/new')
  const policy = await api('PATCH', '/demo/policy', { visitor_discussions: false, public_discussions: false })
  t.match(policy.json(), { policy: { visitor_discussions: false, public_discussions: false } })
  const visitor = webClient(app)
  const closed = await visitor.get('/demo/help/new')
  t.equal(closed.statusCode, 403)
  t.match(closed.body, 'Sign in to write to us')
  const sent = await early.post('/demo/help/new', { category: String(general.id), title: 'Hello', body: 'Hi', name: 'Eve', email: 'eve@customer.example' })
  t.equal(sent.statusCode, 403, 'a visitor may not write')
  t.match(sent.body, 'takes new discussions from signed-in customers only')
  const web = await customer('dave@customer.example')
  t.notMatch((await web.get('/demo/help')).body, 'Shared answer', 'public discussions not listed')
  t.equal((await web.get('/demo/help/1')).statusCode, 404, 'nor shown')
  const form = (await web.get('/demo/help/new')).body
  t.notMatch(form, 'name="public"', 'not offered')
  await web.post('/demo/help/new', { category: String(general.id), title: 'Mine', body: 'Private?', public: 'yes' })
  t.equal((await app.discussions.get(ann.site.id, 2)).public, false, 'a discussion asked public is private where the site shows none')

  await api('PATCH', '/demo/policy', { visitor_discussions: true, public_discussions: true })
  t.equal((await visitor.get('/demo/help/1')).statusCode, 200)
  t.match((await visitor.get('/demo/help')).body, 'Shared answer')
})

t.test('where people land: a visitor at the support site, staff at the queue, a multipass customer at their discussions', onSqlite('where each kind of person lands'), async (t) => {
  const { app, ann, general } = await desk(t)
  const visitor = webClient(app)
  t.equal((await visitor.get('/demo/')).headers.location, 'https://help.example.test/demo/help')
  const supporter = await signedInPerson(app)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Shared answer', body: 'For all.', public: true, supporterId: ann.user.id, via: 'api' })
  t.equal((await supporter.web.get('/demo/help')).headers.location, 'https://help.example.test/demo/discussions', 'staff work from the queue')
  t.equal((await supporter.web.get('/demo/help/1')).headers.location, 'https://help.example.test/demo/discussions/1')
  const site = (await app.sites.find('demo'))!
  const sso = makeMultipass({ email: 'mia@customer.example', name: 'Mia', expires: new Date(Date.now() + 3_600_000).toISOString() }, site.multipassKey, 'demo')
  const signedIn = await webClient(app).get(`/demo/?sso=${encodeURIComponent(sso)}`)
  t.equal(signedIn.headers.location, 'https://help.example.test/demo/help')
})

t.test("the customer's answer by mail lands in the discussion they started on the web; without a mailbox, replies leave from the service", async (t) => {
  const { app, ann, general, api, mails, send, customer } = await desk(t)
  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const web = await customer('carol@customer.example')
  await web.get('/demo/help/new')
  await web.post('/demo/help/new', { category: String(general.id), title: 'Login trouble', body: 'It says no.' })
  await api('POST', '/demo/discussions/1/comments', { body: 'Try again now.' })
  const [reply] = await mails()
  await send({ from: 'Carol <carol@customer.example>', subject: reply!.subject, inReplyTo: reply!.messageId, references: [reply!.messageId!], messageId: '<answer@customer.example>', text: 'It works now.' })
  const thread = (await api('GET', '/demo/discussions/1')).json()
  t.match(thread.comments[2], { body: 'It works now.', via: 'email', author_email: 'carol@customer.example' })

  // A site with no mailbox: from the service's own address, still with the link to the page.
  t.equal(await app.mailboxes.removeMailbox(ann.site.id, 'support@acme.example'), true)
  await web.get('/demo/help/new')
  await web.post('/demo/help/new', { category: String(general.id), title: 'Second question', body: 'And this?' })
  await api('POST', '/demo/discussions/2/comments', { body: 'This too.' })
  const [second] = await mails()
  t.equal(second!.from?.text, '"Service Desk" <desk@service.example>')
  t.equal(second!.subject, 'Re: [#2] Second question')
  t.match(second!.text, 'https://help.example.test/demo/help/2')
  // The link mails leave from the service too.
  await web.request('POST', '/demo/logout', `_csrf=${encodeURIComponent(web.field('_csrf'))}`)
  await web.get('/demo/help/sign_in')
  await web.post('/demo/help/sign_in', { email: 'carol@customer.example' })
  const [link] = await mails()
  t.match(link, { subject: 'Sign in to Site demo', from: { text: '"Service Desk" <desk@service.example>' } })
  // A discussion the staff started through the API is not one a customer started here: no mail.
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Staff only', body: 'Notes.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  await api('POST', '/demo/discussions/3/comments', { body: 'Hello.' })
  t.same(await mails(), [])
})

t.test('one link followed twice at once posts one discussion; a disabled account signs in by no link', async (t) => {
  const { app, ann, mails, linkIn, write } = await desk(t)
  await write(webClient(app), { name: 'Carol', email: 'carol@customer.example' })
  const link = linkIn((await mails())[0]!.text)!
  const [one, two] = [webClient(app), webClient(app)]
  await Promise.all([one.get(link), two.get(link)])
  const answers = await Promise.all([one.post(link), two.post(link)])
  t.same(answers.map((a) => a.headers.location), ['https://help.example.test/demo/help/1', 'https://help.example.test/demo/help/1'], 'both see the one discussion')
  t.equal(await discussionCount(app, ann.site.id), 1, 'one discussion')
  t.equal([(await one.get('/demo/help/1')).statusCode, (await two.get('/demo/help/1')).statusCode].sort().join(), '200,404', 'one of the two is signed in')

  // Carol's account is disabled: her next links neither sign her in nor post.
  await app.users.setDisabled('carol@customer.example', true)
  const signIn = webClient(app)
  await signIn.get('/demo/help/sign_in')
  await signIn.post('/demo/help/sign_in', { email: 'carol@customer.example' })
  await write(webClient(app), { name: 'Carol', email: 'carol@customer.example' })
  const sent = await mails()
  t.same(sent.map((m) => m.subject), ['Confirm your message to Site demo: Printer on fire'], 'no sign-in link for a disabled account')
  const refused = webClient(app)
  await refused.get(linkIn(sent[0]!.text)!)
  t.equal((await refused.post(linkIn(sent[0]!.text)!)).statusCode, 410)
  t.equal(await discussionCount(app, ann.site.id), 1, 'nothing posted for a disabled account')
})

t.test('edges: a staff address posts without signing in, a customer made staff meanwhile, a mail sealed under another key, a reply to a discussion deleted meanwhile', async (t) => {
  const { app, ann, general, mails, linkIn, write, follow, customer } = await desk(t)
  // A visitor's form with a staff member's address: posted as theirs, and no one is signed in by it.
  await write(webClient(app), { name: 'Ann', email: 'ann@example.test' })
  const visitor = webClient(app)
  t.equal((await follow(visitor, linkIn((await mails())[0]!.text)!)).headers.location, 'https://help.example.test/demo/help/1')
  t.equal((await visitor.get('/demo/help/1')).statusCode, 404, 'not signed in: staff sign in with their password')
  t.match(await app.discussions.get(ann.site.id, 1), { authorEmail: 'ann@example.test' })

  // Carol asks for a link, then becomes support staff before she follows it.
  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const web = webClient(app)
  await web.get('/demo/help/sign_in')
  await web.post('/demo/help/sign_in', { email: 'carol@customer.example' })
  const link = linkIn((await mails())[0]!.text)!
  await app.users.addStaff(ann.site.id, carol.id)
  t.equal((await follow(web, link)).statusCode, 410, 'a sign-in link signs in customers only')
  await app.users.removeStaff(ann.site.id, carol.id)

  // A queued link mail that cannot be opened (the server key changed since): failed, never sent.
  await web.get('/demo/help/sign_in')
  await web.post('/demo/help/sign_in', { email: 'carol@customer.example' })
  await rawStatement(app, "UPDATE outbox SET payload = 'v1.AAAA' WHERE kind = 'sign_in_link' AND state = 'queued'", [])
  t.same(await mails(), [], 'not sent')
  const [failed] = (await app.outbox.dueMail(10)).filter((row) => row.kind === 'sign_in_link')
  t.equal(failed, undefined, 'and no longer due')

  // Carol writes an answer while the team deletes her discussion: the page says it is gone.
  const signedIn = await customer('carol@customer.example')
  await signedIn.get('/demo/help/new')
  await signedIn.post('/demo/help/new', { category: String(general.id), title: 'Mine', body: 'Hello' })
  const page = await signedIn.get('/demo/help/2')
  t.equal(page.statusCode, 200)
  const empty = await signedIn.post('/demo/help/2/reply', { body: '  ' })
  t.equal(empty.statusCode, 400)
  t.match(empty.body, 'Write a message first.')
  const reply = app.discussions.reply
  app.discussions.reply = async (...args) => {
    await app.discussions.act(ann.site.id, 2, 'delete')
    return reply(...args)
  }
  t.teardown(() => void (app.discussions.reply = reply))
  const gone = await signedIn.post('/demo/help/2/reply', { body: 'Still there?' })
  t.equal(gone.statusCode, 404, 'deleted meanwhile: no longer hers to see')
  t.equal((await app.discussions.get(ann.site.id, 2)).commentsCount, 1, 'nothing added')
  // The same for "this is solved".
  await app.discussions.act(ann.site.id, 2, 'restore')
  const act = app.discussions.act
  app.discussions.act = async (siteId, number, action, expected) => {
    await act(siteId, number, 'delete')
    return act(siteId, number, action, expected)
  }
  t.teardown(() => void (app.discussions.act = act))
  await signedIn.get('/demo/help/2')
  t.equal((await signedIn.post('/demo/help/2/solved')).statusCode, 404)
  app.discussions.act = act
  t.equal((await app.discussions.get(ann.site.id, 2)).state, 'deleted', 'not resolved')
})

t.test('odd input on the forms is said plainly; the public list pages; a signed-in customer is not asked to sign in', async (t) => {
  const { app, ann, general, customer } = await desk(t)
  const visitor = webClient(app)
  await visitor.get('/demo/help/new')
  const bad = await visitor.post('/demo/help/new', { category: 'x', title: 'A'.repeat(201), body: 'Hi\u0000', name: 'N'.repeat(101), email: 'not an address' })
  t.equal(bad.statusCode, 400)
  for (const words of ['A title holds at most 200 characters', 'U+0000 (NUL), which cannot be saved', 'Give your name: 1 to 100 characters', 'Give the address we should answer: &quot;not an address&quot; is not an email address.', 'Choose what your discussion is about.']) t.match(bad.body, words)
  t.match(bad.body, 'value="not an address"', 'what was typed is kept')
  await visitor.get('/demo/help/new')
  t.match((await visitor.post('/demo/help/new', { category: String(general.id), title: 'Nul\u0000', body: 'Hi', name: 'Eve', email: 'eve@customer.example' })).body, 'A title holds at most')
  await visitor.get('/demo/help/sign_in')
  const noAddress = await visitor.post('/demo/help/sign_in', { email: 'carol at home' })
  t.equal(noAddress.statusCode, 400)
  t.match(noAddress.body, 'Give the address you wrote to us from: &quot;carol at home&quot; is not an email address.')
  t.equal((await visitor.get('/demo/help/abc')).statusCode, 404)
  t.equal((await visitor.get('/demo/help/99999999999')).statusCode, 404)
  await visitor.get('/demo/help/new')
  const answer = await visitor.post('/demo/help/1/reply', { body: 'Hi' })
  t.equal(answer.statusCode, 403)
  t.match(answer.body, 'Sign in to answer')

  // 21 public discussions: two pages of them.
  for (let i = 1; i <= 21; i++) await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: `Public ${i}`, body: 'For all.', public: true, supporterId: ann.user.id, via: 'api' })
  const first = (await visitor.get('/demo/help')).body
  t.match(first, 'Page 1 of 2')
  t.match(first, 'href="https://help.example.test/demo/help?page=2" rel="next"')
  const second = (await visitor.get('/demo/help?page=2')).body
  t.match(second, 'href="https://help.example.test/demo/help" rel="prev"')
  t.equal(second.match(/data-discussion=/g)?.length, 1)

  const carol = await app.users.insert({ email: 'carol@customer.example', name: 'Carol' }, null)
  await app.users.addStaff(ann.site.id, carol.id)
  await app.users.removeStaff(ann.site.id, carol.id)
  const web = await customer('carol@customer.example')
  t.equal((await web.get('/demo/help/sign_in')).headers.location, 'https://help.example.test/demo/help')
  // Fields left out altogether, and an empty answer with a file: said, and the file not kept.
  await web.get('/demo/help/new')
  const bare = await web.request('POST', '/demo/help/new', `_csrf=${encodeURIComponent(web.field('_csrf'))}&category=${general.id}&title=Hi`)
  t.equal(bare.statusCode, 400)
  t.match(bare.body, 'Write a message first.')
  await web.post('/demo/help/new', { category: String(general.id), title: 'Mine', body: 'Hello' })
  await web.get('/demo/help/22')
  const fileOnly = await web.postFiles('/demo/help/22/reply', { body: '', file: { name: 'a.txt', bytes: Buffer.from('a') } })
  t.equal(fileOnly.statusCode, 400)
  t.match(fileOnly.body, 'Write a message first. Choose the files again too.')
  const noField = await web.request('POST', '/demo/help/22/reply', `_csrf=${encodeURIComponent(web.field('_csrf'))}`)
  t.equal(noField.statusCode, 400)
  t.equal((await web.get('/demo/help/files/abc')).statusCode, 404)
})
