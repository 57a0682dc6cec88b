import { connect } from 'node:net'
import nodemailer from 'nodemailer'
import t, { type Test } from 'tap'
import { buildTestApp, rawRows, supporterWithToken } from '../fixtures/app.ts'
import { PNG } from '../fixtures/files.ts'
import { testDns } from '../fixtures/mail.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { selfSigned } from '../fixtures/certificate.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the built-in SMTP receiver: what it takes, refuses and says; a message taken once is asked of the store on both in test/db/stores/mailboxes.test.ts, and every other path of the stores it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 48, the built-in receiver (plugins/mail/receiver.ts) and the one pipeline behind it
// (plugins/mail/pipeline.ts): real SMTP, sent by nodemailer as a customer's mail program would, on
// the engine the suite runs on.

async function helpDesk(t: Test, options: Parameters<typeof mailDesk>[1] = {}) {
  const desk = await mailDesk(t, options)
  const api = (url: string) => desk.app.inject({ url, headers: desk.ann.bearer }).then((res) => res.json())
  return { ...desk, api }
}

t.test("a customer's mail opens a discussion; the answer to it lands in the same one, its quoted history cut", async (t) => {
  const { app, ann, general, send, api } = await helpDesk(t)
  const first = await send({
    subject: 'Re: Printer on fire',
    messageId: '<first@customer.example>',
    text: 'It smokes when I print.\n\n-- \nCarol, Customer Inc.',
    attachments: [{ filename: 'smoke.png', content: PNG }],
  })
  t.match(first.response, /250 .*Message taken/)
  const listing = await api('/demo/discussions')
  t.equal(listing.total, 1)
  const opened = await api('/demo/discussions/1')
  t.match(opened, { title: 'Printer on fire', state: 'new', public: false, author_email: 'carol@customer.example', author_name: 'Carol Customer', category_href: new RegExp(`/categories/${general.id}$`) })
  t.equal(opened.comments[0].via, 'email')
  t.equal(opened.comments[0].body, 'It smokes when I print.\n\n-- \nCarol, Customer Inc.', 'a new message is kept whole')
  t.same(opened.comments[0].attachments.map((a: { name: string; content_type: string }) => [a.name, a.content_type]), [['smoke.png', 'image/png'], ['original-message.eml', 'text/plain']])
  const carol = (await app.users.find('carol@customer.example'))!
  t.equal(await app.users.role(ann.site.id, carol.id), 'customer', 'the sender became a customer of the site')
  t.equal(carol.passwordHash, null)

  // The supporter answers; the customer's answer names the first message.
  await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: ann.bearer, payload: { body: 'Unplug it, please.' } })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: ann.bearer })
  await send({
    subject: 'Re: Re: Printer on fire',
    messageId: '<second@customer.example>',
    inReplyTo: '<first@customer.example>',
    references: ['<first@customer.example>'],
    text: 'Done, it stopped.\n\nOn Fri, 27 Nov 2026 at 12:00, Support <support@acme.example> wrote:\n> Unplug it, please.\n',
  })
  const answered = await api('/demo/discussions/1')
  t.equal(answered.comments.length, 3)
  t.match(answered.comments[2], { body: 'Done, it stopped.', author_email: 'carol@customer.example', via: 'email', internal: false })
  t.equal(answered.state, 'open', "the customer's answer reopened it")
  t.equal((await api('/demo/discussions')).total, 1, 'no second discussion')
})

t.test('a message is taken once; mail for another address, from the desk itself, or from nobody is not taken', async (t) => {
  const { send, api } = await helpDesk(t)
  const message = { subject: 'Twice', messageId: '<twice@customer.example>', text: 'Sent twice by a retrying server.' }
  await send(message)
  await send(message)
  t.equal((await api('/demo/discussions')).total, 1, 'the same Message-ID once')
  // Without a Message-ID, the same bytes are still the same message.
  const bare = { subject: 'No id', text: 'No Message-ID here.', date: new Date('2026-11-27T12:00:00Z'), headers: { 'message-id': '' } }
  await send(bare)
  t.equal((await api('/demo/discussions')).total, 2)

  const stranger = await send({ to: 'sales@acme.example', subject: 'x', text: 'y' }).then(
    () => undefined,
    (error: { responseCode: number; response: string }) => error,
  )
  t.match(stranger, { responseCode: 550, response: /no mailbox of this help desk/ }, 'never a relay: another address is refused in SMTP')
  await send({ from: 'support@acme.example', subject: 'Loop', text: 'From ourselves.' })
  t.equal((await api('/demo/discussions')).total, 2, 'mail from the desk itself is dropped')
  const nobody = await send({ from: '', sender: '', subject: 'Nobody', text: 'No From.', envelope: { from: 'bounce@customer.example', to: 'support@acme.example' } }).then(
    () => undefined,
    (error: { responseCode: number }) => error,
  )
  t.match(nobody, { responseCode: 550 }, 'a message with no sender is refused')
  t.equal((await api('/demo/discussions')).total, 2)
})

t.test('an automatic reply is kept as a note and reopens nothing', async (t) => {
  const { app, ann, send, api } = await helpDesk(t)
  await send({ subject: 'Question', messageId: '<q@customer.example>', text: 'A question.' })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: ann.bearer })
  for (const [i, headers] of [{ 'auto-submitted': 'auto-replied' }, { precedence: 'bulk' }, { 'x-autoreply': 'yes' }].entries()) {
    await send({ subject: 'Out of office', messageId: `<away${i}@customer.example>`, inReplyTo: '<q@customer.example>', headers, text: 'I am away until Monday.' })
  }
  await send({ subject: 'Newsletter', messageId: '<list@customer.example>', inReplyTo: '<q@customer.example>', headers: { 'List-Id': 'News <news.customer.example>' }, text: 'Our news.' })
  // A delivery report (RFC 3464) about a message of the thread.
  const report = Buffer.from(
    'From: MAILER-DAEMON@customer.example\r\nTo: support@acme.example\r\nSubject: Undelivered Mail\r\nMessage-ID: <dsn@customer.example>\r\nIn-Reply-To: <q@customer.example>\r\n' +
      'MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n' +
      '--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; customer.example\r\n\r\nFinal-Recipient: rfc822; gone@customer.example\r\nAction: failed\r\nStatus: 5.1.1\r\n--b--\r\n',
  )
  await send({ raw: report, envelope: { from: '', to: 'support@acme.example' } })
  // One that returns the headers of a message the desk never sent: kept as a note too.
  const stray = Buffer.from(
    report.toString().replace('<dsn@customer.example>', '<dsn2@customer.example>').replace('--b--\r\n', '--b\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <never@acme.example>\r\n--b--\r\n'),
  )
  await send({ raw: stray, envelope: { from: '', to: 'support@acme.example' } })
  const shown = await api('/demo/discussions/1')
  t.equal(shown.state, 'resolved', 'still resolved')
  t.same(shown.comments.slice(1).map((c: { internal: boolean }) => c.internal), [true, true, true, true, true, true], 'kept as notes among the staff: out-of-office, bulk, autoreply, a list, two reports')
})

t.test('odd mail: HTML only with a script, other charsets, a file too large to keep, no text, too much text', async (t) => {
  const { app, send, api } = await helpDesk(t)
  await send({ subject: 'HTML', messageId: '<html@customer.example>', html: '<p>Hello <b>team</b></p><script>alert(document.cookie)</script>' })
  const html = await api('/demo/discussions/1')
  t.match(html.comments[0].body, /Hello team/i)
  t.notMatch(html.comments[0].body, /<script|alert\(/, 'no markup, no script')
  const latin = Buffer.concat([
    Buffer.from('From: carol@customer.example\r\nTo: support@acme.example\r\nSubject: Caf=?windows-1252?Q?=E9?=\r\nMessage-ID: <latin@customer.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=windows-1252\r\nContent-Transfer-Encoding: 8bit\r\n\r\n'),
    Buffer.from([0x47, 0x72, 0xfc, 0xdf, 0x65, 0x2c, 0x20, 0x63, 0x61, 0x66, 0xe9, 0x2c, 0x20, 0x80, 0x35, 0x0d, 0x0a]),
  ])
  await send({ raw: latin, envelope: { from: 'carol@customer.example', to: 'support@acme.example' } })
  const cafe = await api('/demo/discussions/2')
  t.equal(cafe.title, 'Café')
  t.equal(cafe.comments[0].body, 'Grüße, café, €5', 'windows-1252, its euro sign included')
  const raw = Buffer.concat([
    Buffer.from('From: taro@customer.example\r\nTo: support@acme.example\r\nSubject: =?ISO-2022-JP?B?GyRCJDMkcyRLJEEkTxsoQg==?=\r\nMessage-ID: <jp@customer.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=ISO-2022-JP\r\nContent-Transfer-Encoding: 7bit\r\n\r\n'),
    Buffer.from('\u001b$B$3$s$K$A$O\u001b(B\r\n', 'binary'),
  ])
  await send({ raw, envelope: { from: 'taro@customer.example', to: 'support@acme.example' } })
  const jp = await api('/demo/discussions/3')
  t.equal(jp.title, 'こんにちは')
  t.equal(jp.comments[0].body, 'こんにちは')

  await send({ subject: 'Empty', messageId: '<empty@customer.example>', text: '' })
  t.equal((await api('/demo/discussions/4')).comments[0].body, '(The message has no text.)')
  await send({ subject: 'Long', messageId: '<long@customer.example>', text: 'word '.repeat(20_000) })
  const long = (await api('/demo/discussions/5')).comments[0]
  t.equal([...long.body].length, 65_536 - 80 + '\n\n[Cut here: the whole message is kept beside it.]'.length)
  t.match(long.body, /\[Cut here: the whole message is kept beside it\.\]$/)
  // A file the store cannot write now: the message is not taken, and the sender tries again.
  const begin = app.files.begin
  app.files.begin = async () => {
    throw new Error('the disk is full')
  }
  const failed = await send({ subject: 'File', messageId: '<file@customer.example>', text: 'x', attachments: [{ filename: 'c.txt', content: 'c' }] }).then(
    () => undefined,
    (error: { responseCode: number }) => error,
  )
  app.files.begin = begin
  t.match(failed, { responseCode: 451 })
  t.equal((await api('/demo/discussions')).total, 5)

  const big = await buildTestApp(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, resolver: testDns() }, files: { fileBytes: 1024 * 1024, siteBytes: 10 * 1024 * 1024 } } })
  const bob = await supporterWithToken(big.app, { email: 'bob@example.test' })
  await big.app.categories.add(bob.site.id, 'General', true)
  await big.app.mailboxes.addMailbox(bob.site.id, 'help@acme.example')
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: big.app.mailReceiver.port, secure: false, ignoreTLS: true })
  t.teardown(() => transport.close())
  await transport.sendMail({ from: 'carol@customer.example', to: 'help@acme.example', subject: 'Scan', text: 'The scan.', attachments: [{ filename: 'scan.bin', content: Buffer.alloc(2 * 1024 * 1024, 7) }] })
  const scan = (await big.app.inject({ url: '/demo/discussions/1', headers: bob.bearer })).json()
  t.match(scan.comments[0].body, /The scan\.\n\n\[scan\.bin \(2 MB\) was not kept: a file may hold at most 1 MB\.\]/)
  t.same(scan.comments[0].attachments.map((a: { name: string }) => a.name), ['original-message.txt'], 'the message, too large to keep whole, kept as its text')
  // A file only, no text at all, too large to keep whole: its file, and an empty text beside it.
  await transport.sendMail({ from: 'carol@customer.example', to: 'help@acme.example', subject: 'Just a file', attachments: [{ filename: 'photo.bin', content: Buffer.alloc(1024 * 1024 - 100, 9) }] })
  const photo = (await big.app.inject({ url: '/demo/discussions/2', headers: bob.bearer })).json()
  t.same(photo.comments[0].attachments.map((a: { name: string; size: number }) => [a.name, a.size]), [['photo.bin', 1024 * 1024 - 100], ['original-message.txt', 0]])
})

t.test('what cannot be done now is a temporary failure, so the sender tries again; a race for one message takes it once', async (t) => {
  const { app, send, api } = await helpDesk(t)
  const lookup = app.mailboxes.reaches
  app.mailboxes.reaches = async () => {
    throw new Error('the database is away')
  }
  const early = await send({ subject: 'x', text: 'y' }).then(
    () => undefined,
    (error: { responseCode: number; response: string }) => error,
  )
  t.match(early, { responseCode: 451, response: /try again later/ }, 'at RCPT')
  app.mailboxes.reaches = lookup
  const known = app.mailboxes.known
  app.mailboxes.known = async () => {
    throw new Error('the database is away')
  }
  const late = await send({ subject: 'x', text: 'y' }).then(
    () => undefined,
    (error: { responseCode: number }) => error,
  )
  t.match(late, { responseCode: 451 }, 'at DATA')
  t.equal((await api('/demo/discussions')).total, 0, 'nothing taken')

  // Two deliveries of one message that both passed the check (two processes): the record's
  // unique index takes one, and the other's comment and files are rolled back and removed.
  app.mailboxes.known = async () => false
  const message = { subject: 'Raced', messageId: '<race@customer.example>', text: 'Once.', attachments: [{ filename: 'a.txt', content: 'a file' }] }
  await send(message)
  await send(message)
  app.mailboxes.known = known
  t.equal((await api('/demo/discussions')).total, 1)
  t.equal((await api('/demo/discussions/1')).comments.length, 1)
  t.equal(await app.files.sweep().then(() => app.files.usage(1)), (await api('/demo/discussions/1')).comments[0].attachments.reduce((sum: number, a: { size: number }) => sum + a.size, 0), 'only the taken message’s files remain')
})

/** An SMTP conversation by hand (no SIZE announced, as some senders do), its last answer. */
async function converse(port: number, lines: string[]): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  let heard = ''
  socket.on('data', (chunk) => (heard += chunk.toString()))
  const answered = async (count: number) => {
    for (let i = 0; i < 500 && (heard.match(/^\d{3} /gm) ?? []).length < count; i++) await new Promise((r) => setTimeout(r, 5))
  }
  await answered(1)
  // Each line is answered once (EHLO's many lines end with one "250 ").
  let expected = 1
  for (const line of lines) {
    socket.write(line)
    await answered(++expected)
  }
  socket.destroy()
  return heard.trim().split('\r\n').at(-1)!
}

t.test('a message over the size limit is refused in SMTP; a message to two addresses of one site is taken once; an answer to a deleted discussion opens a new one', async (t) => {
  const { app, ann, send, api } = await helpDesk(t)
  const small = await buildTestApp(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, maxBytes: 64 * 1024, resolver: testDns() } } })
  const site = await small.app.sites.add('demo', 'Demo')
  await small.app.categories.add(site.id, 'General', true)
  await small.app.mailboxes.addMailbox(site.id, 'support@acme.example')
  const last = await converse(small.app.mailReceiver.port, [
    'EHLO client.example\r\n',
    'MAIL FROM:<carol@customer.example>\r\n',
    'RCPT TO:<support@acme.example>\r\n',
    'DATA\r\n',
    `From: carol@customer.example\r\nSubject: big\r\n\r\n${'x'.repeat(100 * 1024)}\r\n.\r\n`,
  ])
  t.match(last, /^552 5\.3\.4 The message is larger than/)
  await t.rejects(small.app.discussions.get(site.id, 1), { code: 'not_found' }, 'nothing taken')

  await app.mailboxes.addMailbox(ann.site.id, 'help@acme.example')
  await send({ to: ['support@acme.example', 'help@acme.example'], subject: 'Both', messageId: '<both@customer.example>', text: 'To both.' })
  t.equal((await api('/demo/discussions')).total, 1, 'one discussion for two addresses of one site')
  await app.inject({ method: 'DELETE', url: '/demo/discussions/1', headers: ann.bearer })
  await send({ subject: 'Re: Both', messageId: '<after@customer.example>', inReplyTo: '<both@customer.example>', text: 'Still there?' })
  const reopened = await api('/demo/discussions/2')
  t.match(reopened, { title: 'Both', state: 'new' }, 'an answer to a deleted discussion opens a new one')
  // A message without a Message-ID is known by its bytes.
  const raw = Buffer.from('From: carol@customer.example\r\nTo: support@acme.example\r\nSubject: No id\r\n\r\nNo Message-ID at all.\r\n')
  await send({ raw, envelope: { from: 'carol@customer.example', to: 'support@acme.example' } })
  await send({ raw, envelope: { from: 'carol@customer.example', to: 'support@acme.example' } })
  t.equal((await api('/demo/discussions')).total, 2, 'taken once')
  t.equal((await api('/demo/discussions/3')).comments[0].body, 'No Message-ID at all.')
  // A failure inside the transaction keeps nothing, and asks the sender to try again.
  const atomic = app.database.atomic
  app.database.atomic = async () => {
    throw new Error('the disk is full')
  }
  const failed = await send({ subject: 'Later', messageId: '<later@customer.example>', text: 'x', attachments: [{ filename: 'b.txt', content: 'kept?' }] }).then(
    () => undefined,
    (error: { responseCode: number }) => error,
  )
  app.database.atomic = atomic
  t.match(failed, { responseCode: 451 })
  t.equal((await api('/demo/discussions')).total, 2)
})

t.test('a spoofed address whose domain asks for it is refused; one under p=none is kept and marked; a sender that passes is not', async (t) => {
  // customer.example allows only 192.0.2.7 to send its mail and asks receivers to reject the rest;
  // watching.example asks for nothing (p=none); trusted.example allows this machine.
  const resolver = testDns({
    'customer.example': 'v=spf1 ip4:192.0.2.7 -all',
    '_dmarc.customer.example': 'v=DMARC1; p=reject',
    'watching.example': 'v=spf1 ip4:192.0.2.7 -all',
    '_dmarc.watching.example': 'v=DMARC1; p=none',
    'trusted.example': 'v=spf1 ip4:127.0.0.1 -all',
    '_dmarc.trusted.example': 'v=DMARC1; p=reject',
  })
  const { app, ann, send } = await mailDesk(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, resolver } } })
  const spoofed = await send({ from: 'carol@customer.example', subject: 'Send the refund to my new account', messageId: '<spoof@customer.example>', text: 'IBAN XX00 0000' }).then(
    () => undefined,
    (error: { responseCode: number; response: string }) => error,
  )
  t.match(spoofed, { responseCode: 550, response: /5\.7\.1 .*customer\.example.*DMARC/ }, 'refused in SMTP: the forger hears of it, nothing is kept')
  t.equal(await app.users.find('carol@customer.example'), undefined, 'not even the address')
  await send({ from: 'wes@watching.example', cc: 'victim@elsewhere.example', subject: 'Send the refund to my new account', messageId: '<spoof@watching.example>', text: 'IBAN XX00 0000' })
  await send({ from: 'tom@trusted.example', cc: 'colleague@trusted.example', subject: 'Hello', messageId: '<tom@trusted.example>', text: 'Hi.' })
  await send({ from: 'ned@unknown.example', subject: 'No policy', messageId: '<ned@unknown.example>', text: 'Hi.' })
  const verdict = async (number: number) => (await app.inject({ url: `/demo/discussions/${number}`, headers: ann.bearer })).json().comments[0].sender_verified
  t.same([await verdict(1), await verdict(2), await verdict(3)], [false, true, null], 'fail under p=none, pass, no policy')
  t.equal((await app.discussions.get(ann.site.id, 1)).authorEmail, 'wes@watching.example', 'the message is kept, under the address it claims')
  const copied = async (number: number) => (await app.inject({ url: `/demo/discussions/${number}/participants`, headers: ann.bearer })).json().participants.map((p: { email: string }) => p.email)
  t.same([await copied(1), await copied(2)], [[], ['colleague@trusted.example']], "whom a mail failing DMARC copied joins nothing: the team's replies go to no one it named")

  const web = webClient(app)
  const person = await personWithPassword(app, { email: 'pat@example.test' })
  await web.signIn(person.email, person.password)
  t.match((await web.get('/demo/discussions/1')).body, /data-not-verified>Sender not verified: the mail failed its domain's DMARC check/)
  t.notMatch((await web.get('/demo/discussions/2')).body, /data-not-verified/)

  // How each message came: by mail, to which address; through the API; on the page.
  t.equal((await app.inject({ url: '/demo/discussions/2', headers: ann.bearer })).json().comments[0].mailbox, 'support@acme.example')
  await app.inject({ method: 'POST', url: '/demo/discussions/2/comments', headers: ann.bearer, payload: { body: 'By script.' } })
  const page = (await web.get('/demo/discussions/2')).body
  t.match(page, /customer, [^<]*, by mail to support@acme\.example/)
  t.match(page, /support staff, [^<]*, through the API/)
  await app.mailboxes.removeMailbox(ann.site.id, 'support@acme.example')
  t.equal((await app.inject({ url: '/demo/discussions/2', headers: ann.bearer })).json().comments[0].mailbox, null, 'its mailbox removed: no address, the message stays')
  t.match((await web.get('/demo/discussions/2')).body, /customer, [^<]*, by mail\s/)
})

t.test('DNS that fails is no verdict: the mail is taken', async (t) => {
  const resolver = async () => {
    throw new TypeError('the resolver is broken')
  }
  const { app, ann, send } = await mailDesk(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, resolver } } })
  await send({ subject: 'Hi', text: 'Hello.' })
  t.equal((await app.inject({ url: '/demo/discussions/1', headers: ann.bearer })).json().comments[0].sender_verified, null)
})

t.test('STARTTLS where a certificate is set: the mail goes encrypted; without one it is not offered', async (t) => {
  const pem = selfSigned(t)
  const { app, send } = await mailDesk(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, resolver: testDns(), tls: { cert: pem.cert, key: pem.key } } } })
  // requireTLS: the mail program refuses to send in the clear; the test trusts the self-signed certificate.
  const secure = nodemailer.createTransport({ host: '127.0.0.1', port: app.mailReceiver.port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false } })
  t.teardown(() => secure.close())
  const sent = await secure.sendMail({ from: 'carol@customer.example', to: 'support@acme.example', subject: 'Over TLS', text: 'Encrypted.' })
  t.match(sent.response, /^250 /)
  t.equal((await app.discussions.get((await app.sites.find('demo'))!.id, 1))?.title, 'Over TLS')

  const plain = await mailDesk(t)
  const refused = nodemailer.createTransport({ host: '127.0.0.1', port: plain.app.mailReceiver.port, secure: false, requireTLS: true })
  t.teardown(() => refused.close())
  await t.rejects(refused.sendMail({ from: 'carol@customer.example', to: 'support@acme.example', subject: 'x', text: 'x' }), /STARTTLS/)
  t.match((await send({ subject: 'In the clear', text: 'Fine.' })).response, /^250 /, 'STARTTLS is offered, not required')
})

t.test("a stranger's mail past the site's space: what would pass it is not kept, said in the text, and the space holds", async (t) => {
  const MiB = 1024 * 1024
  const { app, ann, send, api } = await helpDesk(t, { config: { files: { fileBytes: MiB, siteBytes: MiB } } })
  await send({ subject: 'First scan', text: 'The first.', attachments: [{ filename: 'first.bin', content: Buffer.alloc(700 * 1024, 1) }] })
  await send({ subject: 'Second scan', text: 'The second.', attachments: [{ filename: 'second.bin', content: Buffer.alloc(700 * 1024, 2) }] })
  const first = await api('/demo/discussions/1')
  t.same(first.comments[0].attachments.map((a: { name: string }) => a.name).slice(0, 1), ['first.bin'], 'the first fits')
  const second = await api('/demo/discussions/2')
  t.match(second.comments[0].body, /^The second\.\n\n\[second\.bin \(700 KB\) was not kept: this site's files would pass its space of 1 MB: remove old discussions' files or ask the operator for more\.\]\n\n\[original-message\.eml \([\d.]+ KB\) was not kept: this site's files would pass/)
  t.notOk(second.comments[0].attachments.some((a: { name: string }) => a.name === 'second.bin'), 'the file that would pass it is not kept')
  const used = await app.files.usage(ann.site.id)
  t.ok(used <= MiB, `the site's files take ${used} bytes, within its space`)
  const [{ n }] = await rawRows(app, `SELECT coalesce(sum(size), 0) AS n FROM files WHERE site_id = ${ann.site.id} AND sha256 NOT LIKE 'pending:%'`)
  t.equal(used, Number(n), 'the kept count is the sum of the files')
})
