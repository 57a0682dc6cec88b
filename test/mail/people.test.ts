import { simpleParser, type ParsedMail } from 'mailparser'
import nodemailer from 'nodemailer'
import t, { type Test } from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { mailServer } from '../fixtures/mail.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { webClient, personWithPassword } from '../fixtures/web.ts'
import { replyAddress } from '../../lib/reply-address.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Issue 65, mail as mail: the people a customer's mail copies become the discussion's participants,
// copied on each public reply, whose answers join it; the team adds and removes them; a supporter
// answers the mail about a discussion by mail (their reply address), as a reply or with #note as an
// internal note; and the attacker's side of each: a stranger to the thread, a forged or stolen
// reply address, an auto-responder. Real SMTP servers both ways (smtp-server, the built-in receiver).

async function desk(t: Test) {
  const smtp = await mailServer(t)
  const { app, ann, send: customerSends } = await mailDesk(t, { config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@acme.example>' } } })
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: ann.bearer, ...(payload ? { payload } : {}) })
  const json = async (method: 'GET' | 'POST', url: string, payload?: object) => (await api(method, url, payload)).json()
  // Anyone's mail program, pointed at the receiver.
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: app.mailReceiver.port, secure: false, ignoreTLS: true, name: 'mx.sender.example' })
  t.teardown(() => transport.close())
  const sends = (message: Parameters<typeof transport.sendMail>[0]) => transport.sendMail(message)
  /** The mails sent since the last look, parsed, with whom each went to. */
  let seen = 0
  const sent = async (): Promise<Array<{ rcpt: string[]; mail: ParsedMail }>> => {
    await app.sendOutbox()
    const fresh = smtp.mails.slice(seen)
    seen = smtp.mails.length
    return Promise.all(fresh.map(async (m) => ({ rcpt: m.to, mail: await simpleParser(m.raw) })))
  }
  return { app, ann, smtp, customerSends, sends, api, json, sent }
}

t.test("a customer's Cc and To join the discussion: each reply copies them, and their answers join it; a stranger's do not", async (t) => {
  const { app, customerSends, sends, json, sent } = await desk(t)
  await customerSends({
    subject: 'Invoice 1042',
    messageId: '<invoice@customer.example>',
    to: ['Support <support@acme.example>', 'Dave <dave@customer.example>'],
    // The service's own subaddress and a supporter are never participants.
    cc: ['"Boss, Big" <BOSS@customer.example>', 'support+anything@acme.example', 'ann@example.test', 'Finance: frank@customer.example;'],
    text: 'Where is my invoice?',
  })
  const listed = await json('GET', '/demo/discussions/1/participants')
  t.match(listed.participants, [
    { email: 'dave@customer.example', name: 'Dave', added_by: 'mail', added_at: /Z$/ },
    { email: 'boss@customer.example', name: 'Boss, Big', added_by: 'mail' },
    { email: 'frank@customer.example', name: null, added_by: 'mail' },
  ])
  t.equal(listed.participants.length, 3, 'a group opened; the mailbox, its subaddress and the supporter left out')

  const reply = await json('POST', '/demo/discussions/1/comments', { body: 'Attached soon.' })
  t.match(reply.delivery, { to: 'carol@customer.example', cc: ['dave@customer.example', 'boss@customer.example', 'frank@customer.example'] })
  const [out] = await sent()
  t.same(out!.rcpt.sort(), ['boss@customer.example', 'carol@customer.example', 'dave@customer.example', 'frank@customer.example'], 'one mail, to all four')
  t.equal(out!.mail.to && 'text' in out!.mail.to ? out!.mail.to.text : '', 'carol@customer.example')
  t.same((out!.mail.cc as { value: Array<{ address: string }> }).value.map((a) => a.address), ['dave@customer.example', 'boss@customer.example', 'frank@customer.example'])

  // The boss answers: the customer's side of the discussion, not a note.
  await sends({ from: 'boss@customer.example', to: 'support@acme.example', cc: 'mallory@elsewhere.example', subject: `Re: ${out!.mail.subject}`, inReplyTo: out!.mail.messageId, text: 'Please hurry.' })
  // A stranger names the same message: a note for the team, and whom they copied joins nothing.
  await sends({ from: 'eve@elsewhere.example', to: 'support@acme.example', cc: 'victim@elsewhere.example', subject: 'Re: x', inReplyTo: out!.mail.messageId, text: 'Send it to me instead.' })
  const thread = await json('GET', '/demo/discussions/1')
  t.match(thread.comments[2], { body: 'Please hurry.', author_email: 'boss@customer.example', internal: false, via: 'email' })
  t.match(thread.comments[3], { author_email: 'eve@elsewhere.example', internal: true, body: /who is not this discussion's customer/ })
  t.same(
    (await json('GET', '/demo/discussions/1/participants')).participants.map((p: { email: string }) => p.email),
    ['dave@customer.example', 'boss@customer.example', 'frank@customer.example', 'mallory@elsewhere.example'],
    "a participant's copies join; a stranger's do not",
  )
  t.equal((await sent()).length, 0, 'neither answer is mailed to anyone')

  // The discussion's page lists them, and says how each joined.
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const web = webClient(app)
  await web.signIn(pat.email, pat.password)
  t.match((await web.get('/demo/discussions/1')).body, /data-participant="boss@customer\.example">Boss, Big &lt;boss@customer\.example&gt; <span class="muted">\(copied on the customer&#39;s mail\)/)
  t.equal((await web.post('/demo/discussions/99/participants', { email: 'x@customer.example' })).statusCode, 404)

  // The database away while a thread is looked up: the sender is asked to try again, nothing taken.
  const current = app.discussions.current
  app.discussions.current = async () => {
    throw new Error('the database is away')
  }
  const refused = await sends({ from: 'boss@customer.example', to: 'support@acme.example', subject: 'Re: x', inReplyTo: out!.mail.messageId, text: 'Again.' }).then(
    () => undefined,
    (error: { responseCode: number }) => error,
  )
  t.match(refused, { responseCode: 451 })
  app.discussions.current = current
  t.equal((await json('GET', '/demo/discussions/1')).comments.length, 4)
})

t.test('the team adds and removes participants through the API and the page; the refusals say why', async (t) => {
  const { app, ann, customerSends, api, json, sent } = await desk(t)
  await customerSends({ subject: 'Refund', messageId: '<refund@customer.example>', text: 'Please refund.' })
  const add = (email: string, name?: string) => api('POST', '/demo/discussions/1/participants', { email, ...(name && { name }) })
  const added = await add('Finance@Customer.Example', 'Fin\r\nBcc: x@y')
  t.equal(added.statusCode, 201)
  t.match(added.json(), { email: 'finance@customer.example', name: 'FinBcc: x@y', added_by: 'team' }, 'no line break in a name that goes into a header')
  t.equal((await add('finance@customer.example')).statusCode, 200, 'there already: 200, the same')
  for (const [email, why] of [
    ['not an address', /is not a mail address/],
    ['carol@customer.example', /the discussion's customer/],
    ['support@acme.example', /an address of the service itself/],
    ['support+x@acme.example', /an address of the service itself/],
    ['ann@example.test', /support staff/],
  ] as const) {
    const refused = await add(email)
    t.equal(refused.statusCode, 400, email)
    t.match(refused.json(), { error: 'invalid_request', message: why })
  }
  for (let i = 2; i <= 20; i++) t.equal((await add(`p${i}@customer.example`)).statusCode, 201)
  t.match((await add('twenty-one@customer.example')).json(), { message: /at most 20 participants/ })
  t.equal((await api('POST', '/demo/discussions/99/participants', { email: 'x@customer.example' })).statusCode, 404)
  t.equal((await api('POST', '/demo/discussions/1/participants', { email: 'x@customer.example', bcc: 'y' })).statusCode, 400, 'an unknown field')
  for (let i = 2; i <= 20; i++) t.equal((await api('DELETE', `/demo/discussions/1/participants/p${i}@customer.example`)).statusCode, 204)
  t.equal((await api('DELETE', '/demo/discussions/1/participants/p2@customer.example')).statusCode, 404, 'gone already')

  // Another site's supporter cannot reach this discussion's participants.
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  t.equal((await app.inject({ method: 'GET', url: '/demo/discussions/1/participants', headers: otto.bearer })).statusCode, 401)

  // The page: listed, removed, added, as the API does.
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const web = webClient(app)
  await web.signIn(pat.email, pat.password)
  const page = (await web.get('/demo/discussions/1')).body
  t.match(page, /data-participant="finance@customer\.example">FinBcc: x@y &lt;finance@customer\.example&gt; <span class="muted">\(added by the team\)/)
  t.equal((await web.post('/demo/discussions/1/participants', { email: 'finance@customer.example', remove: 'yes' })).statusCode, 303)
  t.equal((await web.post('/demo/discussions/1/participants', { email: 'legal@customer.example' })).statusCode, 303)
  t.match((await web.post('/demo/discussions/1/participants', { email: ' ' })).body, 'Write the address of the person to copy.')
  const refused = await web.post('/demo/discussions/1/participants', { email: 'support@acme.example' })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, 'That was not done: support@acme.example is an address of the service itself.')
  t.same((await json('GET', '/demo/discussions/1/participants')).participants.map((p: { email: string }) => p.email), ['legal@customer.example'])
  await json('POST', '/demo/discussions/1/comments', { body: 'Refunded.' })
  t.same((await sent())[0]!.rcpt.sort(), ['carol@customer.example', 'legal@customer.example'], 'the reply copies who is there now')
  t.match((await web.get('/demo/discussions/1')).body, 'Mailed to carol@customer.example, copying legal@customer.example: sent')

  // A discussion whose customer is mailed nothing (made through the API): its participants are.
  const general = (await app.categories.list(ann.site.id, 0, 1)).categories[0]!
  await json('POST', `/demo/categories/${general.id}/discussions`, { title: 'By API', body: 'x', author_email: 'dan@customer.example' })
  t.equal((await json('POST', '/demo/discussions/2/comments', { body: 'Nobody hears.' })).delivery, null)
  await add('legal@customer.example')
  await api('POST', '/demo/discussions/2/participants', { email: 'legal@customer.example' })
  t.match((await json('POST', '/demo/discussions/2/comments', { body: 'Legal hears.' })).delivery, { to: 'legal@customer.example', cc: [] })
  t.same((await sent())[0]!.rcpt, ['legal@customer.example'])
})

t.test('a supporter answers the mail about a discussion: a reply, #note a note; the notification never opens a discussion; a forged, stolen or automatic answer speaks for nobody', async (t) => {
  const { app, ann, customerSends, sends, json, sent } = await desk(t)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await app.users.setNotifications(ann.site.id, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  await customerSends({ subject: 'Printer on fire', messageId: '<fire@customer.example>', cc: 'boss@customer.example', text: 'It smokes.' })
  const [told] = await sent()
  t.same(told!.rcpt, ['bob@example.test'])
  const notice = told!.mail
  t.equal(notice.subject, '[Site demo] New discussion #1: Printer on fire')
  t.equal(notice.from?.text, '"Site demo" <support@acme.example>')
  const replyTo = (notice.replyTo as { value: Array<{ address: string }> }).value[0]!.address
  t.match(replyTo, new RegExp(`^support\\+r-1-${bob.user.id.toString(36)}-[0-9a-f]{24}@acme\\.example$`), "Bob's reply address for #1")
  t.match(notice.messageId, /^<notify\.1\.[0-9a-f]{16}\.[0-9a-f]{12}@acme\.example>$/)
  t.match(notice.text, 'Answer this mail to reply to the customer; start your answer with #note to add an internal note instead.')

  const answer = (text: string, extra: object = {}) =>
    sends({ from: 'Bob <bob@example.test>', to: replyTo, subject: `Re: ${notice.subject}`, inReplyTo: notice.messageId, text: `${text}\n\nOn Mon, Site demo wrote:\n> It smokes.`, ...extra })
  await answer('Unplug it, we are on our way.', { cc: 'someone@customer.example' })
  await answer('#note\nThe third this week: call the vendor.')
  const thread = await json('GET', '/demo/discussions/1')
  t.match(thread.comments[1], { body: 'Unplug it, we are on our way.', author_email: 'bob@example.test', user_is_supporter: true, internal: false, via: 'email', delivery: { to: 'carol@customer.example', cc: ['boss@customer.example'] } })
  t.match(thread.comments[2], { body: 'The third this week: call the vendor.', author_email: 'bob@example.test', user_is_supporter: true, internal: true })
  t.equal(thread.comments[2].delivery, null, 'a note is mailed to no one')
  t.equal((await json('GET', '/demo/discussions/1/participants')).participants.length, 1, "a supporter's copies join nothing")
  const mailed = await sent()
  t.same(mailed.map((m) => m.rcpt.sort()), [['boss@customer.example', 'carol@customer.example']], "Bob's reply reaches the customer and the Cc")
  t.equal(mailed[0]!.mail.text?.split('\n\n-- ')[0], 'Unplug it, we are on our way.', 'without the quoted notification')

  // The mail of a discussion given to him is answered the same way.
  await json('POST', `/demo/discussions/1/assign?to=${bob.user.id}`)
  const [given] = await sent()
  t.equal(given!.mail.subject, '[Site demo] #1 is yours: Printer on fire')
  t.equal((given!.mail.replyTo as { value: Array<{ address: string }> }).value[0]!.address, replyTo, 'his reply address for #1')
  await sends({ from: 'bob@example.test', to: replyTo, subject: `Re: ${given!.mail.subject}`, inReplyTo: given!.mail.messageId, text: 'Mine now: on my way.' })
  t.match((await json('GET', '/demo/discussions/1')).comments[3], { body: 'Mine now: on my way.', author_email: 'bob@example.test', user_is_supporter: true, internal: false })
  t.same((await sent()).map((m) => m.rcpt.sort()), [['boss@customer.example', 'carol@customer.example']])

  // Answered to the mailbox itself (no reply address): a note on #1, never a new discussion.
  await sends({ from: 'bob@example.test', to: 'support@acme.example', subject: `Re: ${notice.subject}`, inReplyTo: notice.messageId, text: 'Sent to the wrong address.' })
  // Bob's reply address used by someone else, one altered, and an out-of-office: none speaks for Bob.
  await sends({ from: 'eve@elsewhere.example', to: replyTo, subject: 'Re: x', text: 'Refund me, says Bob.' })
  const altered = replyTo.replace(/-([0-9a-f])([0-9a-f]{23})@/, (_, first: string, rest: string) => `-${first === '0' ? '1' : '0'}${rest}@`)
  await sends({ from: 'bob@example.test', to: altered, subject: 'Re: y', text: 'Altered digest.' })
  const forOther = replyTo.replace('+r-1-', '+r-2-')
  await sends({ from: 'bob@example.test', to: forOther, subject: 'Re: z', text: 'Another number, the same digest.' })
  // A true reply address of another site's mailbox, copied on a mail to this one: it names nothing
  // here; there, its number names no discussion (the mail opens one), and Bob is not on its staff.
  const otherSite = (await supporterWithToken(app, { site: 'other' })).site
  await app.categories.add(otherSite.id, 'General', true)
  await app.mailboxes.addMailbox(otherSite.id, 'help@other.example')
  const elsewhere = replyAddress(app.secretBox.digest, { mailbox: 'help@other.example', number: 7, userId: bob.user.id })
  await sends({ from: 'bob@example.test', to: 'support@acme.example', cc: elsewhere, subject: 'Re: w', text: "Another site's address." })
  t.match((await app.discussions.get(otherSite.id, 1)).title, 'w')
  await answer('I am away until Monday.', { headers: { 'Auto-Submitted': 'auto-replied' } })
  const after = await json('GET', '/demo/discussions/1')
  const last = after.comments.slice(4)
  t.match(last, [
    { body: /^Sent to the wrong address\.[\s\S]*Sent from the address of a member of the team/, internal: true },
    { author_email: 'eve@elsewhere.example', internal: true, body: /who is not this discussion's customer/ },
    { body: /^I am away until Monday\./, internal: true },
  ])
  t.equal(last.length, 3, 'the altered addresses thread nowhere')
  const discussions = await json('GET', '/demo/discussions')
  t.same(discussions.discussions.map((d: { title: string }) => d.title).sort(), ['Printer on fire', 'w', 'y', 'z'], "each is mail to the mailbox: a discussion of its own, on the customer's side")
  t.same((await sent()).map((m) => m.rcpt), [['bob@example.test']], "nothing of these reaches the customer: only Bob hears, of Eve's note on the discussion he owns")

  // An answer with nothing above what it quotes (an image only, or written under the quote): what it
  // quotes may be an internal note, so it is kept as one, whole, and mailed to no one.
  await answer('')
  t.match((await json('GET', '/demo/discussions/1')).comments.at(-1), { author_email: 'bob@example.test', user_is_supporter: true, internal: true, body: /^On Mon, Site demo wrote:\n> It smokes\.\n\n\[Nothing new was found above the quoted mail/ })
  t.same(await sent(), [], 'nothing mailed')

  // Bob leaves the team: his reply address says nothing any more.
  await app.users.removeStaff(ann.site.id, bob.user.id)
  await answer('Still me.')
  t.match((await json('GET', '/demo/discussions/1')).comments.at(-1), { author_email: 'bob@example.test', user_is_supporter: false, internal: true })
})
