import { randomBytes } from 'node:crypto'
import { simpleParser } from 'mailparser'
import t, { type Test } from 'tap'
import nodemailer from 'nodemailer'
import { buildTestApp, rawStatement, sharedDatabase, supporterWithToken } from '../fixtures/app.ts'
import { mailServer, testDns } from '../fixtures/mail.ts'
import { LEASE_MS, NO_WAY_OUT } from '../../plugins/mail/sender.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { webClient, personWithPassword } from '../fixtures/web.ts'
import { form, PNG } from '../fixtures/files.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 48, mail out: a public reply of the staff to a discussion that came by mail is queued in
// the outbox with the reply (db/stores/outbox.ts) and sent by the sender (plugins/mail/sender.ts):
// a real SMTP server catches it, and the customer's answer to it comes back through the receiver.

async function desk(t: Test, { mailAttachBytes }: { mailAttachBytes?: number } = {}) {
  const smtp = await mailServer(t)
  const { app, clock, ann, send: customerSends } = await mailDesk(t, { config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@acme.example>' }, ...(mailAttachBytes && { mailAttachBytes }) } })
  const api = (method: 'GET' | 'POST', url: string, payload?: object) => app.inject({ method, url, headers: ann.bearer, ...(payload ? { payload } : {}) }).then((res) => res.json())
  /** Uploads a file as the supporter, for a reply to carry. */
  const upload = async (name: string, bytes: Buffer) => {
    const body = await form({ file: { name, bytes } })
    const res = await app.inject({ method: 'POST', url: '/demo/uploads', headers: { ...ann.bearer, 'content-type': body.type }, payload: body.payload })
    if (res.statusCode !== 201) throw new Error(`upload failed: ${res.statusCode} ${res.body}`)
    return res.json().uploads[0] as { id: number; name: string; size: number; content_type: string }
  }
  return { app, clock, ann, smtp, customerSends, api, upload }
}

t.test("a reply's files go with its mail, byte for byte; past the operator's limit the mail names each with its link instead", async (t) => {
  const { app, smtp, customerSends, api, upload } = await desk(t, { mailAttachBytes: 300 * 1024 })
  await customerSends({ subject: 'Invoice', messageId: '<invoice@customer.example>', text: 'Where is my invoice?' })
  const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(200 * 1024)])
  const files = [await upload('invoice 1042.pdf', pdf), await upload('logo.png', PNG)]
  const reply = await api('POST', '/demo/discussions/1/comments', { body: 'Both attached.', uploads: files.map((f) => f.id) })
  t.equal(reply.attachments.length, 2)
  t.equal(await app.sendOutbox(), 1)
  const mail = await simpleParser(smtp.mails[0]!.raw)
  t.equal(mail.text?.split('\n\n-- ')[0], 'Both attached.', 'the text as written: nothing about files')
  t.same(
    mail.attachments.map((a) => [a.filename, a.contentType]),
    files.map((f) => [f.name, f.content_type]),
    'each file under its name and type, in the order of the reply',
  )
  t.ok(mail.attachments[0]!.content.equals(pdf), 'the first byte for byte')
  t.ok(mail.attachments[1]!.content.equals(PNG), 'the second byte for byte')

  // 400 KiB in all, past the 300 the operator set: named, with their links on the support site.
  const big = [await upload('scan.bin', randomBytes(250 * 1024)), await upload('notes.txt', Buffer.from('line\n'.repeat(30_000)))]
  await api('POST', '/demo/discussions/1/comments', { body: 'Too big to attach.', uploads: big.map((f) => f.id) })
  t.equal(await app.sendOutbox(), 1)
  // The page says so, as the mail does.
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const web = webClient(app)
  await web.signIn(pat.email, pat.password)
  const page = (await web.get('/demo/discussions/1')).body
  t.match(page, 'Mailed to carol@customer.example: sent; its files as links, more than a mail carries (300 KB)')
  t.equal(page.match(/its files as links/g)?.length, 1, 'the reply whose files went attached says nothing of links')
  const linked = await simpleParser(smtp.mails[1]!.raw)
  t.same(linked.attachments, [], 'nothing attached')
  t.equal(
    linked.text?.split('\n\n-- ')[0],
    [
      'Too big to attach.',
      '',
      "The files of this answer add up to 396.5 KB, more than a mail of ours carries (300 KB); they are on the web:",
      `- scan.bin (250 KB): https://help.example.test/demo/help/files/${big[0]!.id}`,
      `- notes.txt (146.5 KB): https://help.example.test/demo/help/files/${big[1]!.id}`,
    ].join('\n'),
  )
})

t.test("an odd file name goes into the mail's headers encoded, never as words of a header of its own", onSqlite("an odd file name in a mail's headers"), async (t) => {
  const { app, smtp, customerSends, api, upload } = await desk(t)
  await customerSends({ subject: 'Odd', messageId: '<odd@customer.example>', text: 'A name?' })
  const file = await upload('Rechnung "März"; filename=evil.exe — 𝒳 ü.pdf', Buffer.from('%PDF-1.4\n'))
  await api('POST', '/demo/discussions/1/comments', { body: 'Odd name.', uploads: [file.id] })
  t.equal(await app.sendOutbox(), 1)
  const raw = smtp.mails[0]!.raw
  t.notMatch(raw, /filename="?evil\.exe/, 'no second filename parameter')
  const mail = await simpleParser(raw)
  t.equal(mail.attachments.length, 1)
  t.equal(mail.attachments[0]!.filename, file.name, 'the name as the upload kept it, read back whole')
})

t.test("the supporter's reply reaches the customer, threaded; the customer's answer to it lands in the same discussion", async (t) => {
  const { app, smtp, customerSends, api } = await desk(t)
  await customerSends({ subject: 'Printer on fire', messageId: '<first@customer.example>', text: 'It smokes.' })
  const reply = await api('POST', '/demo/discussions/1/comments', { body: 'Unplug it, please.' })
  t.match(reply.delivery, { state: 'queued', to: 'carol@customer.example', attempts: 0, last_error: null, sent_at: null }, 'queued with the reply')
  const note = await api('POST', '/demo/discussions/1/comments', { body: 'Between us.', internal: true })
  t.equal(note.delivery, null, 'an internal note is never mailed')

  // Two senders at once (two processes' loops): one takes the row, the other passes it by.
  t.same((await Promise.all([app.sendOutbox(), app.sendOutbox()])).sort(), [0, 1])
  t.equal(smtp.mails.length, 1, 'one mail')
  const mail = await simpleParser(smtp.mails[0]!.raw)
  t.same([smtp.mails[0]!.from, smtp.mails[0]!.to], ['support@acme.example', ['carol@customer.example']])
  t.equal(mail.from?.text, '"Site demo" <support@acme.example>')
  t.equal(mail.subject, 'Re: [#1] Printer on fire')
  t.equal(mail.text?.split('\n\n-- ')[0], 'Unplug it, please.')
  t.equal(mail.text?.split('\n\n-- ')[1]?.trim(), 'Read and answer it on the web: https://help.example.test/demo/help/1', 'and the page of the discussion on the customer\'s side')
  t.equal(mail.inReplyTo, '<first@customer.example>')
  t.same([mail.references].flat(), ['<first@customer.example>'])
  t.match(mail.messageId, /^<reply-\d+\.[0-9a-f]{12}@acme\.example>$/)
  t.equal(await app.sendOutbox(), 0, 'sent once')
  t.match((await api('GET', '/demo/discussions/1/comments/2')).delivery, { state: 'sent', attempts: 1, sent_at: /Z$/ })

  // The customer answers the reply: it names our Message-ID only.
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: (await supporterWithToken(app, { email: 'ann@example.test' })).bearer })
  await customerSends({ subject: mail.subject, messageId: '<second@customer.example>', inReplyTo: mail.messageId, references: [mail.messageId!], text: `It worked.\n\nOn Fri, Site demo wrote:\n> Unplug it, please.` })
  const thread = await api('GET', '/demo/discussions/1')
  t.equal(thread.comments.length, 4)
  t.match(thread.comments[3], { body: 'It worked.', via: 'email', author_email: 'carol@customer.example' })
  t.equal(thread.state, 'open')
  t.equal((await api('GET', '/demo/discussions')).total, 1)
})

t.test('from the page too; nothing for a discussion that did not come by mail; a refusal for good and a server away', async (t) => {
  const { app, clock, ann, smtp, customerSends, api } = await desk(t)
  await customerSends({ subject: 'Refund', messageId: '<refund@customer.example>', text: 'Please refund order 1042.' })
  const person = await personWithPassword(app, { email: 'pat@example.test' })
  const web = webClient(app)
  await web.signIn(person.email, person.password)
  await web.get('/demo/discussions/1')
  t.equal((await web.post('/demo/discussions/1/reply', { body: 'Refunded.', internal: 'no' })).statusCode, 303)
  const page = (await web.get('/demo/discussions/1')).body
  t.match(page, /Mailed to carol@customer\.example: queued/)

  // A discussion made through the API is not mailed.
  const general = (await app.categories.list(ann.site.id, 0, 1)).categories[0]!
  await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'By API', body: 'x', author_email: 'dan@customer.example' })
  t.equal((await api('POST', '/demo/discussions/2/comments', { body: 'Answer.' })).delivery, null)

  // The server refuses for good: failed, with its words, never tried again.
  smtp.state.refuse = true
  t.equal(await app.sendOutbox(), 0)
  const failed = (await api('GET', '/demo/discussions/1/comments/2')).delivery
  t.match(failed, { state: 'failed', attempts: 1, last_error: /550 mailbox unavailable/ })
  t.match((await web.get('/demo/discussions/1')).body, /Mailed to carol@customer\.example: failed \(550 mailbox unavailable\)/)

  // A server away: tried again after a minute, then two.
  smtp.state.refuse = false
  await api('POST', '/demo/discussions/1/comments', { body: 'Second try.' })
  const mailer = app.mail
  const before = smtp.mails.length
  const send = mailer.send
  mailer.send = async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code: 'ECONNREFUSED' })
  }
  await app.sendOutbox()
  t.match((await api('GET', '/demo/discussions/1/comments/3')).delivery, { state: 'queued', attempts: 1, last_error: 'the server refused the connection' })
  t.match((await web.get('/demo/discussions/1')).body, /Mailed to carol@customer\.example: queued, to be tried again \(the server refused the connection\)/)
  await app.sendOutbox()
  t.equal((await api('GET', '/demo/discussions/1/comments/3')).delivery.attempts, 1, 'not before its time')
  mailer.send = send
  clock.advance(60_001)
  t.equal(await app.sendOutbox(), 1, 'sent once the server is back and the wait is over')
  t.equal(smtp.mails.length, before + 1)
})

t.test('a bounce of a reply is recorded on that reply, not posted; a flood from one sender waits past the limit, the rest goes on', async (t) => {
  const { app, clock, smtp, customerSends, api } = await desk(t)
  await customerSends({ subject: 'Gone soon', messageId: '<gone@customer.example>', text: 'Write back.' })
  await api('POST', '/demo/discussions/1/comments', { body: 'Here you are.' })
  await app.sendOutbox()
  const sent = await simpleParser(smtp.mails[0]!.raw)
  const report = Buffer.from(
    'From: Mail Delivery System <MAILER-DAEMON@customer.example>\r\nTo: support@acme.example\r\nSubject: Undelivered Mail Returned to Sender\r\nMessage-ID: <bounce1@customer.example>\r\n' +
      'MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n' +
      '--b\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n' +
      '--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.customer.example\r\n\r\nFinal-Recipient: rfc822; carol@customer.example\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 No such user\r\n' +
      `--b\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: support@acme.example\r\nTo: carol@customer.example\r\nMessage-ID: ${sent.messageId}\r\nSubject: ${sent.subject}\r\n` +
      '--b--\r\n',
  )
  await customerSends({ raw: report, envelope: { from: '', to: 'support@acme.example' } })
  const thread = await api('GET', '/demo/discussions/1')
  t.equal(thread.comments.length, 2, 'the bounce is not a message of the discussion')
  t.match(thread.comments[1].delivery, { state: 'failed', last_error: 'bounced: 5.1.1, smtp; 550 5.1.1 No such user' })

  // A terser report (no Status, no Diagnostic-Code) still marks its reply; one that returns no
  // headers names no reply: kept as an automatic note, as any other report.
  await api('POST', '/demo/discussions/1/comments', { body: 'Trying again.' })
  await app.sendOutbox()
  const again = await simpleParser(smtp.mails[1]!.raw)
  const terse = (returned: string) =>
    Buffer.from(
      `From: MAILER-DAEMON@customer.example\r\nTo: support@acme.example\r\nSubject: Failure\r\nMessage-ID: <terse${returned.length}@customer.example>\r\nMIME-Version: 1.0\r\n` +
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n' +
        (returned ? `--b\r\nContent-Type: text/rfc822-headers\r\n\r\n${returned}\r\n` : '') +
        '--b--\r\n',
    )
  await customerSends({ raw: terse(`Message-ID: ${again.messageId}`), envelope: { from: '', to: 'support@acme.example' } })
  t.match((await api('GET', '/demo/discussions/1')).comments[2].delivery, { state: 'failed', last_error: 'bounced: the mail could not be delivered' })
  await customerSends({ raw: terse(''), envelope: { from: '', to: 'support@acme.example' } })
  t.equal((await api('GET', '/demo/discussions')).total, 2, 'a report naming no reply of ours is kept, as a discussion of its own')

  // A flood: past 30 messages a minute from one address, the sender is asked to try later.
  const results = []
  for (let i = 0; i < 32; i++) {
    results.push(await customerSends({ from: 'flood@spam.example', subject: `Spam ${i}`, messageId: `<spam${i}@spam.example>`, text: 'Buy.' }).then(() => 'taken', (error: { responseCode: number }) => error.responseCode))
  }
  t.same(results.slice(28), ['taken', 'taken', 451, 451])
  await customerSends({ subject: 'Meanwhile', messageId: '<meanwhile@customer.example>', text: 'Others go on.' })
  t.equal((await api('GET', '/demo/discussions')).total, 2 + 30 + 1)
  clock.advance(61_000)
  t.equal(await customerSends({ from: 'flood@spam.example', subject: 'Later', messageId: '<spam-later@spam.example>', text: 'Again.' }).then(() => 'taken'), 'taken', 'a minute later')
})

t.test('the sender runs by itself in the background, and says so when it cannot', onSqlite("the sender's loop in the background and its log line"), async (t) => {
  const smtp = await mailServer(t)
  const lines: string[] = []
  const { app, ann, send } = await mailDesk(t, {
    config: { mail: { smtpUrl: smtp.url, from: 'desk@acme.example' } },
    logStream: { write: (line) => void lines.push(line) },
    outboxEveryMs: 5,
  })
  await send({ subject: 'Hi', text: 'Hello.' })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: ann.bearer, payload: { body: 'Hello back.' } })
  for (let i = 0; i < 200 && smtp.mails.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
  t.equal(smtp.mails.length, 1, 'sent without being asked')
  app.outbox.dueMail = async () => {
    throw new Error('the database is away')
  }
  for (let i = 0; i < 200 && !lines.some((l) => l.includes('could not send the outbox')); i++) await new Promise((r) => setTimeout(r, 10))
  t.match(lines.find((l) => l.includes('could not send the outbox')), 'the database is away')
})

t.test('without a mail server the replies wait, queued, and say why; a mailbox with an SMTP address of its own sends its replies', async (t) => {
  const { app, clock, ann, send } = await mailDesk(t)
  await send({ subject: 'Hi', text: 'Hello.' })
  const reply = (await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: ann.bearer, payload: { body: 'Hello back.' } })).json()
  t.equal(await app.sendOutbox(), 0)
  t.match(reply.delivery, { state: 'queued', attempts: 0 })
  const waiting = (await app.inject({ method: 'GET', url: '/demo/discussions/1/comments/2', headers: ann.bearer })).json().delivery
  t.match(waiting, { state: 'queued', attempts: 0, last_error: NO_WAY_OUT })
  t.equal((await app.outbox.dueMail(10)).length, 0, 'looked at again later, not holding up the rows behind it')
  clock.advance(61_000)
  t.equal((await app.outbox.dueMail(10)).length, 1, 'due again, for when SERVICE_SMTP_URL is set')

  // Another mailbox of the site with an SMTP server of its own: its replies leave by it.
  const own = await mailServer(t)
  await app.mailboxes.addMailbox(ann.site.id, 'billing@acme.example', { smtpUrl: own.url })
  await send({ to: 'billing@acme.example', subject: 'Invoice', text: 'Where is it?' })
  await app.inject({ method: 'POST', url: '/demo/discussions/2/comments', headers: ann.bearer, payload: { body: 'Attached.' } })
  t.equal(await app.sendOutbox(), 1, "the billing reply goes; support's still has no way out")
  t.same(own.mails.map((m) => [m.from, m.to]), [['billing@acme.example', ['carol@customer.example']]])
  t.same(own.state.logins, ['mailer:s3cret-smtp'])
})

t.test('a reply with no way out is looked at again after as long as it has waited, six hours at most; a process started with a mail server sends it at once', async (t) => {
  const shared = await sharedDatabase(t)
  const { app, clock, ann, send } = await mailDesk(t, { config: shared })
  await send({ subject: 'Hi', text: 'Hello.' })
  await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: ann.bearer, payload: { body: 'Hello back.' } })
  const due = async () => (await app.outbox.dueMail(10)).length
  // Queued and looked at at once: a minute's wait, as before.
  t.equal(await app.sendOutbox(), 0)
  clock.advance(60 * 60_000)
  t.equal(await due(), 1, 'looked at again')
  // Waited an hour: it waits an hour more, not a minute.
  t.equal(await app.sendOutbox(), 0)
  clock.advance(59 * 60_000)
  t.equal(await due(), 0, 'not looked at again within the hour')
  clock.advance(2 * 60_000)
  t.equal(await due(), 1, 'an hour later')
  // Waited ten days: six hours at most.
  clock.advance(10 * 24 * 60 * 60_000)
  t.equal(await app.sendOutbox(), 0)
  clock.advance(6 * 60 * 60_000 - 60_000)
  t.equal(await due(), 0)
  clock.advance(2 * 60_000)
  t.equal(await due(), 1, 'six hours later')
  t.equal(await app.sendOutbox(), 0)
  t.equal(await due(), 0, 'waiting again')

  // Another process of the service, started with SERVICE_SMTP_URL: what waited leaves at its first send, hours early.
  const smtp = await mailServer(t)
  const { app: other } = await buildTestApp(t, { clock, config: { ...shared, mail: { smtpUrl: smtp.url, from: 'desk@acme.example' } } })
  // The database refuses the wake: the run fails, nothing is sent, and the next run wakes them.
  const wake = other.outbox.wake
  other.outbox.wake = async () => {
    throw new Error('the database is away')
  }
  await t.rejects(other.sendOutbox(), /the database is away/)
  t.equal(smtp.mails.length, 0)
  other.outbox.wake = wake
  t.equal(await other.sendOutbox(), 1)
  t.same(smtp.mails.map((m) => m.to), [['carol@customer.example']])
  t.match((await app.inject({ method: 'GET', url: '/demo/discussions/1/comments/2', headers: ann.bearer })).json().delivery, { state: 'sent', attempts: 1 })
})

t.test('a reply whose sending process died mid-send is sent once, by another, when its lease ends', async (t) => {
  const { app, clock, smtp, customerSends, api } = await desk(t)
  await customerSends({ subject: 'Printer', text: 'Smoke.' })
  await api('POST', '/demo/discussions/1/comments', { body: 'On our way.' })
  // A process took the row and died before saying how the send went: its lease holds the row.
  const [row] = await app.outbox.dueMail(10)
  t.ok(await app.outbox.claim(row!.id, LEASE_MS))
  t.equal(await app.sendOutbox(), 0, 'held by the dead process, for now')
  clock.advance(LEASE_MS + 1)
  t.equal(await app.sendOutbox(), 1, 'its lease over: sent')
  t.equal(await app.sendOutbox(), 0)
  clock.advance(LEASE_MS + 1)
  t.equal(await app.sendOutbox(), 0, 'and never again')
  t.equal(smtp.mails.length, 1)
})

t.test('a long thread names its first message and its newest in References; a row queued before replies named their mailbox goes by the service', async (t) => {
  const { app, smtp, customerSends, api } = await desk(t)
  let last = '<m0@customer.example>'
  await customerSends({ subject: 'Long', messageId: last, text: 'Start.' })
  for (let i = 1; i <= 21; i++) {
    const id = `<m${i}@customer.example>`
    await customerSends({ subject: 'Re: Long', messageId: id, inReplyTo: last, references: [last], text: `More ${i}.` })
    last = id
  }
  t.equal((await api('GET', '/demo/discussions/1')).comments.length, 22, 'one thread')
  await api('POST', '/demo/discussions/1/comments', { body: 'Enough.' })
  // As the outbox held it before replies named their mailbox (the first version of the row).
  const [row] = await app.outbox.dueMail(10)
  const { mailboxId: _dropped, ...older } = JSON.parse(row!.payload) as Record<string, unknown>
  await rawStatement(app, 'UPDATE outbox SET payload = ? WHERE id = ?', [JSON.stringify(older), row!.id])
  t.equal(await app.sendOutbox(), 1, "sent through the service's mailer")
  const mail = await simpleParser(smtp.mails[0]!.raw)
  const references = [mail.references].flat()
  t.equal(references.length, 20, 'at most 20')
  t.equal(references[0], '<m0@customer.example>', 'the first')
  t.equal(references.at(-1), '<m21@customer.example>', 'and the newest')
  t.notOk(references.includes('<m1@customer.example>'), 'the middle left out')
})

t.test('mail to a site that has no category yet is not lost: the sender is asked to try again', async (t) => {
  const { app } = await buildTestApp(t, { config: { mailReceiver: { host: '127.0.0.1', port: 0, resolver: testDns(), limits: { perClientPerMinute: 1_000 } } } })
  const site = await app.sites.add('bare', 'Bare')
  await app.mailboxes.addMailbox(site.id, 'help@bare.example')
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: app.mailReceiver.port, secure: false, ignoreTLS: true })
  t.teardown(() => transport.close())
  const refused = await transport.sendMail({ from: 'carol@customer.example', to: 'help@bare.example', subject: 'Hi', text: 'Hello.' }).then(() => 0, (error: { responseCode: number }) => error.responseCode)
  t.equal(refused, 451)
  const general = await app.categories.add(site.id, 'General', true)
  await app.categories.add(site.id, 'Billing', false)
  t.match((await transport.sendMail({ from: 'carol@customer.example', to: 'help@bare.example', subject: 'Hi', text: 'Hello.' })).response, /^250 /, 'taken once it has one')
  t.equal((await app.discussions.get(site.id, 1))?.categoryId, general.id, 'in its first category by creation, though Billing sorts first')
})

t.test("after a merge, mail answering either old thread joins the merged discussion, and its replies copy the merged one's customer", async (t) => {
  const { app, smtp, customerSends, api } = await desk(t)
  await customerSends({ subject: 'Printer on fire', messageId: '<fire@customer.example>', text: 'It smokes.' })
  await customerSends({ from: 'Dave <dave@customer.example>', subject: 'Printers down', messageId: '<down@customer.example>', text: 'All of them.' })
  await api('POST', '/demo/discussions/1/comments', { body: 'Unplug it, please.' })
  t.equal(await app.sendOutbox(), 1)
  const toCarol = await simpleParser(smtp.mails[0]!.raw)
  const merged = await api('POST', '/demo/discussions/1/merge', { into: 2 })
  t.match(merged, { number: 2, comments_count: 3 })

  await customerSends({ subject: toCarol.subject, messageId: '<answer@customer.example>', inReplyTo: toCarol.messageId, references: [toCarol.messageId!], text: 'Unplugged.' })
  await customerSends({ subject: 'Re: Printer on fire', messageId: '<again@customer.example>', inReplyTo: '<fire@customer.example>', references: ['<fire@customer.example>'], text: 'Still smoking.' })
  const thread = await api('GET', '/demo/discussions/2')
  t.match(thread.comments.slice(3), [{ body: 'Unplugged.', author_email: 'carol@customer.example', internal: false, via: 'email' }, { body: 'Still smoking.', author_email: 'carol@customer.example', internal: false }], "both land in the merged discussion as its participant's answers")
  t.equal((await api('GET', '/demo/discussions')).total, 1, 'no new discussion')

  await api('POST', '/demo/discussions/2/comments', { body: 'A technician is on the way to both of you.' })
  t.equal(await app.sendOutbox(), 1)
  const toBoth = smtp.mails[1]!
  t.same(toBoth.to.sort(), ['carol@customer.example', 'dave@customer.example'], "mailed to its customer, copying the merged one's")
  t.match((await simpleParser(toBoth.raw)).subject, /\[#2\] Printers down/)
})

t.test('after a split, an answer to a message taken along joins the new discussion; one to the first stays', async (t) => {
  const { customerSends, api } = await desk(t)
  await customerSends({ subject: 'Printer', messageId: '<printer@customer.example>', text: 'It jams.' })
  await customerSends({ subject: 'Re: Printer', messageId: '<invoice@customer.example>', inReplyTo: '<printer@customer.example>', references: ['<printer@customer.example>'], text: 'Also, the invoice is wrong.' })
  t.equal((await api('GET', '/demo/discussions/1')).comments_count, 2)
  const split = await api('POST', '/demo/discussions/1/split', { comment: 2, title: 'Invoice' })
  t.match(split, { number: 2, author_email: 'carol@customer.example', comments_count: 1 })
  await customerSends({ subject: 'Re: Printer', messageId: '<invoice2@customer.example>', inReplyTo: '<invoice@customer.example>', references: ['<printer@customer.example>', '<invoice@customer.example>'], text: 'It says 12.00, not 21.00.' })
  await customerSends({ subject: 'Re: Printer', messageId: '<printer2@customer.example>', inReplyTo: '<printer@customer.example>', references: ['<printer@customer.example>'], text: 'Still jams.' })
  t.same((await api('GET', '/demo/discussions/2')).comments.map((c: { body: string }) => c.body), ['Also, the invoice is wrong.', 'It says 12.00, not 21.00.'])
  t.same((await api('GET', '/demo/discussions/1')).comments.map((c: { body: string }) => c.body), ['It jams.', 'Split into discussion #2: Invoice', 'Still jams.'])
})
