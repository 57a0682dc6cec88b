import { connect, type Socket } from 'node:net'
import nodemailer from 'nodemailer'
import t, { type Test } from 'tap'
import { simpleParser } from 'mailparser'
import { PNG } from '../fixtures/files.ts'
import { mailServer, testDns } from '../fixtures/mail.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { webClient } from '../fixtures/web.ts'

// Engines: one: what a forged mail may and may not do, decided over the stores' rows, never by the engine. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 62, the fourth security pass, from the attacker's side and the victim's: mail never speaks
// for the team, a thread is its customer's, the message a mail came as is its sender's and the
// staff's, and the limits of the built-in receiver are on what a forger cannot write (the
// connecting address), on the engine the suite runs on.

async function desk(t: Test, receiver: object = {}) {
  const smtp = await mailServer(t)
  const { app, clock, ann, send } = await mailDesk(t, {
    config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@service.example>' }, mailReceiver: { host: '127.0.0.1', port: 0, resolver: testDns(), ...receiver } },
  })
  const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => app.inject({ method, url, headers: ann.bearer, ...(payload ? { payload } : {}) })
  const discussion = async (number: number) => (await api('GET', `/demo/discussions/${number}`)).json()
  /** Whether the discussion waits for the team (the queue's mark, which the API does not show). */
  const waiting = async (number: number) => (await app.discussions.get(ann.site.id, number)).awaitingTeam
  /** Every mail the outbox sends now, parsed. */
  async function sent() {
    await app.sendOutbox()
    return Promise.all(smtp.mails.map(async (m) => ({ ...(await simpleParser(m.raw)), envelope: m.to })))
  }
  /** A customer of the site signed in on the customer's pages by a mailed link. */
  async function customer(email: string) {
    const web = webClient(app)
    await web.get('/demo/help/sign_in')
    await web.post('/demo/help/sign_in', { email })
    const mail = (await sent()).findLast((m) => m.envelope.includes(email))!
    const link = /https:\/\/help\.example\.test(\/demo\/help\/(?:sign_in|link)\/service_cln_\w+)/.exec(mail.text ?? '')![1]!
    await web.get(link)
    await web.post(link)
    return web
  }
  return { app, clock, ann, send, smtp, api, discussion, waiting, sent, customer }
}

/** What an SMTP command answered: its error (code and words), or undefined when it was taken. */
const refusalOf = (sending: Promise<unknown>) => sending.then(
  () => undefined,
  (error: { responseCode: number; response: string }) => ({ responseCode: error.responseCode, response: error.response }),
)

t.test("a mail in a supporter's name is never the team's: in a thread it is a note mailed to no one; alone it is the customer's side, unacknowledged", async (t) => {
  const { app, ann, send, api, discussion, waiting, sent } = await desk(t)
  await app.mailboxes.addMailbox(ann.site.id, 'hello@acme.example', { acknowledge: true })
  await send({ subject: 'My refund', messageId: '<refund@customer.example>', text: 'Where is my refund?' })
  const before = await discussion(1)

  // The forger writes as Ann into Carol's thread, asking her to pay elsewhere.
  await send({ from: 'Ann <ann@example.test>', subject: 'Re: My refund', inReplyTo: '<refund@customer.example>', messageId: '<forged@evil.example>', text: 'Please pay the fee to IBAN EVIL 0000 first.' })
  const forged = (await discussion(1)).comments[1]
  t.match(forged, { internal: true, user_is_supporter: false, sender_verified: false, delivery: null, via: 'email' }, 'a note, not the team speaking, marked "sender not verified"')
  t.match(forged.body, /IBAN EVIL[\s\S]*a member of the team, which a mail cannot prove/)
  t.equal((await discussion(1)).state, before.state, 'it moved nothing')
  t.equal(await waiting(1), true, 'still waiting for the team')
  t.same((await sent()).filter((m) => m.envelope.includes('carol@customer.example')), [], 'nothing mailed to the customer')
  const carolsPage = await webClient(app).get('/demo/help/1')
  t.notMatch(carolsPage.body, /IBAN EVIL/, 'and nothing on the customer pages')

  // Alone, it opens a discussion waiting for the team, by no one of the team, and no acknowledgement goes out.
  await send({ from: 'Ann <ann@example.test>', to: 'hello@acme.example', subject: 'Invoice 2026-11', messageId: '<alone@evil.example>', text: 'Pay this.' })
  const alone = await discussion(2)
  t.equal(alone.state, 'new')
  t.equal(await waiting(2), true, 'waiting for the team, as a customer\'s discussion')
  t.match(alone.comments[0], { user_is_supporter: false, sender_verified: false, internal: false })
  t.same((await sent()).map((m) => m.envelope[0]), [], 'no acknowledgement to the address the forger named')

  // The victim's side: Ann's own reply, on the page or through the API, is mailed to Carol as before.
  const reply = await api('POST', '/demo/discussions/1/comments', { body: 'Your refund left today.' })
  t.equal(reply.statusCode, 201)
  const mails = await sent()
  t.same(mails.map((m) => [m.envelope[0], m.subject]), [['carol@customer.example', 'Re: [#1] My refund']])
})

t.test("a thread is its customer's: a stranger naming its Message-ID writes a note, and the team's replies still go to the customer", async (t) => {
  const { send, api, discussion, waiting, sent } = await desk(t)
  await send({ subject: 'Order 77', messageId: '<order@customer.example>', text: 'Where is order 77?' })
  await send({ from: 'Bob <bob@stranger.example>', subject: 'Re: Order 77', inReplyTo: '<order@customer.example>', references: ['<order@customer.example>'], messageId: '<bob@stranger.example>', text: 'Send the answer to me instead.' })
  const bobs = (await discussion(1)).comments[1]
  t.match(bobs, { internal: true, author_email: 'bob@stranger.example', user_is_supporter: false })
  t.match(bobs.body, /bob@stranger\.example, who is not this discussion's customer: kept as an internal note/)
  await api('POST', '/demo/discussions/1/comments', { body: 'It ships tomorrow.' })
  const replied = (await discussion(1)).comments[2]
  t.match(replied.delivery, { to: 'carol@customer.example' }, "the team's reply goes to Carol, not to Bob")
  const mails = await sent()
  t.same(mails.map((m) => m.envelope[0]), ['carol@customer.example'])
  t.equal(mails[0]!.inReplyTo, '<order@customer.example>', "threaded on Carol's own message")

  // Carol's own answer is still hers: public, and it puts the discussion back with the team.
  await send({ subject: 'Re: Order 77', inReplyTo: mails[0]!.messageId, messageId: '<thanks@customer.example>', text: 'Thanks!' })
  t.match((await discussion(1)).comments[3], { internal: false, author_email: 'carol@customer.example', body: 'Thanks!' })
  t.equal(await waiting(1), true)
})

t.test('the message a mail came as is for the staff and its sender only, on a public discussion too; every download says private, no-store', async (t) => {
  const { app, ann, send, api, customer } = await desk(t)
  await send({ subject: 'Printer', messageId: '<printer@customer.example>', text: 'It smokes.', attachments: [{ filename: 'smoke.png', content: PNG }] })
  t.equal((await api('PUT', '/demo/discussions/1', { public: true })).statusCode, 200)
  const [smoke, original] = (await api('GET', '/demo/discussions/1')).json().comments[0].attachments as Array<{ name: string; href: string }>
  t.equal(original!.name, 'original-message.eml')
  const id = (href: string) => href.split('/').at(-1)
  const visitor = webClient(app)
  const page = await visitor.get('/demo/help/1')
  t.equal(page.statusCode, 200, 'the discussion is public')
  t.match(page.body, 'smoke.png')
  t.notMatch(page.body, 'original-message.eml', 'its original is not listed to a visitor')
  t.equal((await visitor.get(`/demo/help/files/${id(original!.href)}`)).statusCode, 404, 'nor served')
  const picture = await visitor.get(`/demo/help/files/${id(smoke!.href)}`)
  t.equal(picture.statusCode, 200)
  t.equal(picture.headers['cache-control'], 'private, no-store', 'a file of the customer pages is not kept by a cache')

  await send({ from: 'dan@customer.example', subject: 'Mine', text: 'Another customer of the site.' })
  const dan = await customer('dan@customer.example')
  t.equal((await dan.get(`/demo/help/files/${id(original!.href)}`)).statusCode, 404, 'another customer: 404 as well')
  const carol = await customer('carol@customer.example')
  t.match((await carol.get('/demo/help/1')).body, 'original-message.eml', 'its sender sees it')
  const own = await carol.get(`/demo/help/files/${id(original!.href)}`)
  t.equal(own.statusCode, 200)
  t.match(own.body, /Message-ID: <printer@customer\.example>/)

  const staff = await app.inject({ url: original!.href.replace(/^https:\/\/[^/]+/, ''), headers: ann.bearer })
  t.equal(staff.statusCode, 200, 'the staff reads it through the API')
  t.equal(staff.headers['cache-control'], 'private, no-store')
  const again = await app.inject({ url: original!.href.replace(/^https:\/\/[^/]+/, ''), headers: { ...ann.bearer, 'if-none-match': staff.headers.etag as string } })
  t.equal(again.statusCode, 304)
  t.equal(again.headers['cache-control'], 'private, no-store', 'a 304 too')
})

/** Opens a raw SMTP connection from `localAddress` and reads its greeting. */
async function greeting(port: number, localAddress = '127.0.0.1'): Promise<{ socket: Socket; line: string }> {
  const socket = connect({ host: '127.0.0.1', port, localAddress })
  const line = await new Promise<string>((resolve, reject) => {
    socket.once('data', (chunk) => resolve(chunk.toString()))
    socket.once('error', reject)
  })
  return { socket, line }
}

t.test('the receiver counts what a forger cannot write: connections and messages per connecting address, messages per mailbox; no acknowledgement to an address nothing tied to the message', async (t) => {
  const resolver = testDns({ 'trusted.example': 'v=spf1 ip4:127.0.0.0/8 -all' })
  const { app, ann, sent } = await desk(t, { resolver, limits: { connectionsPerClient: 3, perClientPerMinute: 5, perMailboxPerMinute: 7 } })
  await app.mailboxes.addMailbox(ann.site.id, 'hello@acme.example', { acknowledge: true })
  const port = app.mailReceiver.port
  const open: Socket[] = []
  t.teardown(() => open.forEach((socket) => socket.destroy()))
  for (let i = 0; i < 3; i++) {
    const { socket, line } = await greeting(port)
    open.push(socket)
    t.match(line, /^220 /)
  }
  const fourth = await greeting(port)
  open.push(fourth.socket)
  t.match(fourth.line, /^421 4\.7\.0 Too many connections from your address/, 'a fourth connection from one address is refused')
  const elsewhere = await greeting(port, '127.0.0.2')
  open.push(elsewhere.socket)
  t.match(elsewhere.line, /^220 /, 'another address is greeted')
  open.splice(0).forEach((socket) => socket.destroy())

  // One client forging a sender per message: 5 taken, then asked to wait; no acknowledgement to any of them.
  const from = (localAddress: string) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, localAddress, name: 'mx.forger.example' })
  const forger = from('127.0.0.1')
  t.teardown(() => forger.close())
  const answers = []
  for (let i = 0; i < 7; i++) answers.push(await refusalOf(forger.sendMail({ from: `victim${i}@third-party${i}.example`, to: 'hello@acme.example', subject: 'You won', text: 'Claim it.' })))
  t.same(answers.slice(0, 5), [undefined, undefined, undefined, undefined, undefined])
  t.match(answers.slice(5), [{ responseCode: 451, response: /4\.7\.0 More than 5 messages a minute from your address/ }, { responseCode: 451 }])
  t.same((await sent()).map((m) => m.envelope[0]), [], 'no acknowledgement to a third party nothing tied to its message')

  // Another client is not held back by the forger's count, but the mailbox's own count stops a crowd.
  const other = from('127.0.0.3')
  t.teardown(() => other.close())
  t.equal(await refusalOf(other.sendMail({ from: 'tom@trusted.example', to: 'hello@acme.example', subject: 'Hello', text: 'Hi.' })), undefined)
  t.same((await sent()).map((m) => m.envelope[0]), ['tom@trusted.example'], "acknowledged: SPF ties tom's domain to this message")
  t.equal(await refusalOf(other.sendMail({ from: 'tom@trusted.example', to: 'hello@acme.example', subject: 'Again', text: 'Hi.' })), undefined)
  const crowded = await refusalOf(other.sendMail({ from: 'tom@trusted.example', to: 'hello@acme.example', subject: 'Third', text: 'Hi.' }))
  t.match(crowded, { responseCode: 451, response: /More than 7 messages a minute to <hello@acme\.example>/ }, 'the mailbox took 7 this minute')
  t.equal(await refusalOf(other.sendMail({ from: 'tom@trusted.example', to: 'support@acme.example', subject: 'Elsewhere', text: 'Hi.' })), undefined, 'another mailbox still takes mail')
})

t.test('a message the parser cannot read is refused for good (550 5.6.0), and the next one is taken', async (t) => {
  const { send, api } = await desk(t)
  const parts = Array.from({ length: 1_001 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\n${i}\r\n`).join('')
  const raw = `From: carol@customer.example\r\nTo: support@acme.example\r\nSubject: Parts\r\nMessage-ID: <parts@customer.example>\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`
  t.match(await refusalOf(send({ raw, envelope: { from: 'carol@customer.example', to: 'support@acme.example' } })), { responseCode: 550, response: /^550 5\.6\.0 the message cannot be read: Max allowed child nodes exceeded/ })
  await send({ subject: 'After it', text: 'Heard.' })
  t.equal((await api('GET', '/demo/discussions')).json().total, 1)
})
