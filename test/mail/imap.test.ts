import { simpleParser } from 'mailparser'
import t, { type Test } from 'tap'
import { buildTestApp, rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import { holderIsGone, machineName } from '../../plugins/mail/fetcher.ts'
import { checkImap } from '../../lib/imap.ts'
import { createSecretBox } from '../../lib/secret-box.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { mailServer } from '../fixtures/mail.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { until } from '../fixtures/until.ts'

// Engines: one: fetching from Dovecot (a real IMAP server): what becomes of each message, the mailbox's errors and pages; the lease, the place and a message taken once are asked of the store on both in test/db/stores/mailboxes.test.ts, and two processes on one PostgreSQL database in test/mail/imap-process.test.ts; every other path of the stores it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 48, mail in by IMAP (plugins/mail/fetcher.ts) against a real IMAP server (Dovecot): the
// support mailbox fetched, the customer's own mailbox receiving the reply through a real SMTP
// server, and the customer's answer fetched back into the same discussion; on the suite's engine.

if (!haveDovecot(t)) process.exit(0)


const message = (fields: { from?: string; to?: string; subject: string; id?: string; inReplyTo?: string; body: string; headers?: string }) =>
  [
    ...(fields.from === '' ? [] : [`From: ${fields.from ?? 'Carol Customer <carol@customer.example>'}`]),
    `To: ${fields.to ?? 'support@acme.example'}`,
    `Subject: ${fields.subject}`,
    ...(fields.id ? [`Message-ID: ${fields.id}`] : []),
    ...(fields.inReplyTo ? [`In-Reply-To: ${fields.inReplyTo}`, `References: ${fields.inReplyTo}`] : []),
    'Date: Sun, 01 Mar 2026 11:00:00 +0000',
    ...(fields.headers ? [fields.headers] : []),
    'Content-Type: text/plain; charset=utf-8',
    '',
    fields.body,
    '',
  ].join('\r\n')

async function imapDesk(t: Test, mailbox: { acknowledge?: boolean; smtp?: boolean } = {}) {
  const imap = await dovecot(t)
  const support = imap.user('support')
  imap.user('carol')
  const smtp = await mailServer(t)
  const { app, clock } = await buildTestApp(t, { config: { mailFetchSeconds: 1 } })
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  await app.categories.add(ann.site.id, 'General', true)
  const api = (method: 'GET' | 'POST', url: string, payload?: object) => app.inject({ method, url, headers: ann.bearer, ...(payload ? { payload } : {}) })
  const added = await api('POST', '/demo/mailboxes', { address: 'support@acme.example', imap: support, ...(mailbox.smtp !== false && { smtp: smtp.url }), acknowledge: mailbox.acknowledge ?? false })
  t.equal(added.statusCode, 201, added.body)
  const listing = async () => (await api('GET', '/demo/discussions')).json() as { total: number; discussions: Array<{ number: number; title: string; author_email: string }> }
  return { app, clock, ann, imap, smtp, api, listing }
}

/**
 * Dovecot with the mailbox `support`, and the app (a look every second) with site demo, Ann, the
 * category General, and `settings`: the IMAP address of that mailbox, for a test that adds it itself.
 */
async function fetchingApp(t: Test, server: { idle?: boolean } = {}) {
  const imap = await dovecot(t, server)
  imap.user('support')
  const { app } = await buildTestApp(t, { config: { mailFetchSeconds: 1 } })
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  await app.categories.add(ann.site.id, 'General', true)
  const settings = { host: '127.0.0.1', port: imap.port, secure: false, user: 'support', password: 'support-password', folder: 'INBOX' }
  return { imap, app, ann, settings }
}

/** The site's mailbox (the first, unless told) once a fetch has said what went wrong with it. */
async function failedMailbox(app: Awaited<ReturnType<typeof buildTestApp>>['app'], siteId: number, index = 0) {
  return until('the last error', async () => {
    const mailbox = (await app.mailboxes.listMailboxes(siteId))[index]!
    return mailbox.lastError !== null && mailbox
  })
}

t.test("a customer's mail in the support mailbox becomes a discussion; the reply reaches the customer's mailbox; the answer joins it", async (t) => {
  const { app, imap, smtp, api, listing } = await imapDesk(t)
  const shown = (await api('GET', '/demo/mailboxes')).json().mailboxes[0]
  t.equal(shown.imap, `imap://support@127.0.0.1:${imap.port}/INBOX`, 'the IMAP mailbox without its password')
  t.equal(shown.smtp, smtp.url.replace(':s3cret-smtp', ''), 'the SMTP address without its password')
  t.notMatch(JSON.stringify((await api('GET', '/demo/mailboxes')).json()), /support-password|s3cret/)

  await imap.deliver('support', [message({ subject: 'Printer on fire', id: '<first@customer.example>', body: 'It smokes.' })])
  await app.mailFetcher.scan()
  const opened = await until('the discussion', async () => (await listing()).total === 1 && (await listing()).discussions[0])
  t.match(opened, { number: 1, title: 'Printer on fire', author_email: 'carol@customer.example' })
  t.match((await api('GET', '/demo/discussions/1')).json().comments[0], { body: 'It smokes.', via: 'email' })
  await until('the \\Seen flag', async () => (await imap.messages('support'))[0]!.seen)
  const state = await until('the fetch state', async () => {
    const mailbox = (await api('GET', '/demo/mailboxes')).json().mailboxes[0]
    return mailbox.state.last_fetch_at && mailbox
  })
  t.match(state.state, { last_error: null, taken_today: 1 })

  // Mail that comes while the connection is open is announced (IDLE) and taken without a new scan.
  await imap.deliver('support', [message({ from: 'Dave <dave@customer.example>', subject: 'Second', id: '<dave@customer.example>', body: 'Me too.' })])
  await until('the announced message', async () => (await listing()).total === 2)

  // The supporter answers; the reply leaves by the mailbox's SMTP server, which the test hands to Carol's mailbox.
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'Unplug it, please.' })).statusCode, 201)
  await app.sendOutbox()
  await until('the reply mailed', async () => smtp.mails.length >= 1)
  t.equal(smtp.mails.length, 1)
  t.same(smtp.mails[0]!.to, ['carol@customer.example'])
  await imap.deliver('carol', smtp.mails.map((m) => m.raw))
  const [received] = await imap.messages('carol')
  const reply = await simpleParser(received!.raw)
  t.equal(reply.subject, 'Re: [#1] Printer on fire')
  t.equal(reply.inReplyTo, '<first@customer.example>', 'threaded under her message')
  t.equal(reply.text?.split('\n\n-- ')[0], 'Unplug it, please.')

  // Carol answers from her mailbox: her answer names our reply only, and lands in discussion 1.
  await imap.deliver('support', [message({ subject: `Re: ${reply.subject}`, id: '<third@customer.example>', inReplyTo: reply.messageId, body: 'It worked, thanks.\r\n\r\nOn Sun, Site demo wrote:\r\n> Unplug it, please.' })])
  const answered = await until('the answer', async () => {
    const thread = (await api('GET', '/demo/discussions/1')).json()
    return thread.comments.length === 3 && thread
  })
  t.match(answered.comments[2], { body: 'It worked, thanks.', via: 'email', author_email: 'carol@customer.example' })
  t.equal((await listing()).total, 2, 'no new discussion')

  // Issue 71: her discussion merged into Dave's, her next answer to our reply, fetched, joins that one.
  t.equal((await api('POST', '/demo/discussions/1/merge', { into: 2 })).statusCode, 200)
  await imap.deliver('support', [message({ subject: `Re: ${reply.subject}`, id: '<fourth@customer.example>', inReplyTo: reply.messageId, body: 'And again.' })])
  const merged = await until('the answer in the merged discussion', async () => {
    const thread = (await api('GET', '/demo/discussions/2')).json()
    return thread.comments.length === 5 && thread
  })
  t.match(merged.comments[4], { body: 'And again.', via: 'email', author_email: 'carol@customer.example', internal: false })
  t.equal((await listing()).total, 1, 'no new discussion: the merged one is no longer listed')
})

t.test('bad mail gets a clear outcome and never stops the mailbox; an automatic reply is never answered', async (t) => {
  const { app, imap, smtp, listing, api } = await imapDesk(t, { acknowledge: true })
  await imap.deliver('support', [
    message({ from: '', subject: 'Nobody', id: '<nobody@x.example>', body: 'From nobody.' }),
    message({ subject: 'No Message-ID', body: 'Where is my id?' }),
    'From: carol@customer.example\r\nSubject: Broken MIME\r\nMessage-ID: <broken@customer.example>\r\nContent-Type: multipart/mixed; boundary="never-closed"\r\n\r\n--never-closed\r\nContent-Type: text/plain\r\n\r\nHalf a message',
    Buffer.concat([Buffer.from('From: taro@customer.example\r\nSubject: =?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?=\r\nMessage-ID: <jis@customer.example>\r\nContent-Type: text/plain; charset=ISO-2022-JP\r\n\r\n'), Buffer.from('1b24422433247324' + '4b2441244f1b2842', 'hex'), Buffer.from('\r\n')]),
    Buffer.concat([Buffer.from('From: zoe@customer.example\r\nSubject: =?windows-1252?Q?Caf=E9?=\r\nMessage-ID: <cp1252@customer.example>\r\nContent-Type: text/plain; charset=windows-1252\r\n\r\n', 'latin1'), Buffer.from('Un caf\x80 \x93cr\xe8me\x94\r\n', 'latin1')]),
    'From: mallory@customer.example\r\nSubject: Script\r\nMessage-ID: <html@customer.example>\r\nContent-Type: text/html\r\n\r\n<p>Hello <script>alert(1)</script><b>there</b></p>\r\n',
    message({ from: 'Out of office <carol@customer.example>', subject: 'Auto: away', id: '<ooo@customer.example>', body: 'I am away.', headers: 'Auto-Submitted: auto-replied' }),
    // 40 MB: passed over by its size, never downloaded.
    message({ subject: 'Huge', id: '<huge@customer.example>', body: `${'A'.repeat(76)}\r\n`.repeat(40 * 1024 * 1024 / 78) }),
  ])
  await app.mailFetcher.scan()
  const found = await until('the good messages', async () => {
    const { total, discussions } = await listing()
    return total === 6 && discussions
  })
  t.same(found.map((d) => d.title).sort(), ['Auto: away', 'Broken MIME', 'Café', 'No Message-ID', 'Script', 'テスト'].sort(), 'all but the one without a sender')
  const bodies = async (title: string) => (await api('GET', `/demo/discussions/${found.find((d) => d.title === title)!.number}`)).json().comments[0].body as string
  t.equal(await bodies('テスト'), 'こんにちは')
  t.equal(await bodies('Café'), 'Un caf€ “crème”')
  t.notMatch(await bodies('Script'), /<script|alert/, 'HTML only: its text, no script')
  t.match(await bodies('Script'), 'Hello there')
  // A message is flagged \Seen just after its discussion is stored: the last one's flag may lag.
  const messages = await until('the six taken flagged \\Seen', async () => {
    const now = await imap.messages('support')
    return now.filter((m) => m.seen).length >= 6 && now
  })
  t.same(messages.map((m) => m.seen), [false, true, true, true, true, true, true, false], 'the message without a sender, and the one too large, are left unread for a person')
  t.notOk(found.some((d) => d.title === 'Huge'), 'the 40 MB message was not taken')

  // Acknowledgements: one per new discussion of a person, marked automatic; none to the out-of-office.
  // Sent here or by the app's own sender loop, which may run meanwhile on a loaded machine.
  await app.sendOutbox()
  await until('five acknowledgements', async () => smtp.mails.length >= 5)
  t.equal(smtp.mails.length, 5, 'five acknowledgements, each once')
  const acknowledgements = await Promise.all(smtp.mails.map((m) => simpleParser(m.raw)))
  t.same(smtp.mails.map((m) => m.to[0]).sort(), ['carol@customer.example', 'carol@customer.example', 'mallory@customer.example', 'taro@customer.example', 'zoe@customer.example'])
  t.ok(acknowledgements.every((m) => m.headers.get('auto-submitted') === 'auto-replied'), 'Auto-Submitted: auto-replied')
  t.match(acknowledgements.find((m) => m.subject === 'Re: [#' + found.find((d) => d.title === 'Script')!.number + '] Script')?.text, /Thank you for writing to Site demo\. Your message is #\d+, "Script"/)
  // An auto-responder answering the acknowledgement: kept as a note, never answered again.
  await imap.deliver('support', [message({ from: 'carol@customer.example', subject: 'Auto: Re: Broken MIME', id: '<ooo-2@customer.example>', inReplyTo: acknowledgements[0]!.messageId, body: 'Away.', headers: 'Auto-Submitted: auto-replied' })])
  const thread = await until('the note', async () => {
    const discussion = (await api('GET', `/demo/discussions?per_page=50`)).json().discussions.find((d: { comments_count: number }) => d.comments_count === 2)
    return discussion
  })
  t.ok(thread, 'added to the discussion it answers')
  await app.sendOutbox()
  t.equal(smtp.mails.length, 5, 'nothing answers an automatic reply')
  t.equal((await listing()).total, 6)
})

t.test('a wrong password is the mailbox\'s last error, in words; the app closes while fetching', async (t) => {
  const { app, ann, settings } = await fetchingApp(t)
  await app.mailboxes.addMailbox(ann.site.id, 'support@acme.example', { imap: { ...settings, password: 'wrong' } })
  await app.mailFetcher.scan()
  const mailbox = await failedMailbox(app, ann.site.id)
  t.match(mailbox.lastError, /auth/i)
  t.notMatch(mailbox.lastError, /wrong/)
})

t.test('a mailbox whose password this server key cannot open, a lease another process holds, a place another moved', async (t) => {
  const { imap, app, ann, settings } = await fetchingApp(t)
  const sealedElsewhere = await app.mailboxes.addMailbox(ann.site.id, 'old@acme.example', { imap: settings })
  // As a copy of the database under another server key would have it.
  await rawStatement(app, 'UPDATE mailboxes SET imap = ? WHERE id = ?', [createSecretBox('another server key, of at least 32 characters').seal(JSON.stringify(settings)), sealedElsewhere.id])
  await app.mailFetcher.scan()
  const broken = await failedMailbox(app, ann.site.id)
  t.equal(broken.lastError, 'the IMAP password cannot be opened with this server key: add the mailbox again')
  t.equal(await app.mailboxes.imapOf(broken), null)

  // Another process holds the lease of this one: this process leaves it alone.
  const held = await app.mailboxes.addMailbox(ann.site.id, 'held@acme.example', { imap: settings })
  t.ok(await app.mailboxes.lease(held.id, 'another-process', 60_000))
  t.notOk(await app.mailboxes.lease(held.id, app.mailFetcher.owner, 60_000), 'not while its lease lasts')
  await imap.deliver('support', [message({ subject: 'Held', id: '<held@customer.example>', body: 'Mine?' })])
  await app.mailFetcher.scan()
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal((await app.mailboxes.listMailboxes(ann.site.id))[1]!.imapPosition, null, 'nothing fetched by this process')
  // Its place moved by the other process: a write from a stale place is refused.
  const move = (owner: string, from: string | null, to: string) => app.mailboxes.advance(held.id, { owner, from, to, leaseMs: 60_000 })
  await t.rejects(move(app.mailFetcher.owner, null, '1:1'), { code: 'conflict', field: 'imap_position' }, 'not the lease holder')
  await move('another-process', null, '1:1')
  await t.rejects(move('another-process', null, '1:2'), { code: 'conflict' }, 'the place is no longer what was read')
  await app.mailboxes.release(held.id, 'another-process')
  t.ok(await app.mailboxes.lease(held.id, app.mailFetcher.owner, 60_000), 'released: taken at once')
})

t.test('held mail is neither fetched nor sent until resumed, and the page says so; a holder on this machine that is gone is taken over at once; plain text is said', async (t) => {
  const { app, imap, smtp, api, listing } = await imapDesk(t)
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  await app.users.setAdministrator(pat.site.id, pat.user.id, true)
  const ann = pat
  const web = webClient(app)
  await web.signIn(pat.email, pat.password)
  await until('the first look', async () => (await app.mailboxes.listMailboxes(ann.site.id))[0]!.lastFetchAt !== null)
  const page = (await web.get('/demo/admin/mail')).body
  t.match(page, 'data-plain-text>imap:// signs in over plain text unless the server offers STARTTLS: use imaps://')
  t.match(page, /<td>General<\/td>/, 'the category its mail opens discussions in')
  t.match(page, /data-fetched-until>held by a process until /)

  await app.mailboxes.setHome(await app.database.place(), 'moving to a new server')
  await imap.deliver('support', [message({ subject: 'While held', id: '<held@customer.example>', body: 'Anyone?' })])
  await new Promise((resolve) => setTimeout(resolve, 2_500))
  t.equal((await listing()).total, 0, 'the running fetch stopped and nothing was taken')
  t.match((await web.get('/demo/admin/mail')).body, '<p class="alert" role="alert" data-held>Mail is held: moving to a new server.</p>')
  const general = (await app.categories.list(ann.site.id, 0, 1)).categories[0]!
  await api('POST', `/demo/categories/${general.id}/discussions`, { title: 'By API', body: 'x', author_email: 'dan@customer.example' })
  await api('POST', '/demo/discussions/1/participants', { email: 'legal@customer.example' })
  await api('POST', '/demo/discussions/1/comments', { body: 'Queued while held.' })
  t.equal(await app.sendOutbox(), 0, 'nothing sent')
  t.equal(smtp.mails.length, 0)

  await app.mailboxes.setHome(await app.database.place(), null)
  await until('the held message', async () => (await listing()).total === 2)
  t.equal(await app.sendOutbox(), 1, 'the queued reply goes once resumed')

  // A holder on this machine whose process is gone: taken over at the next look, not in three minutes.
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
  const mailbox = (await app.mailboxes.listMailboxes(ann.site.id))[0]!
  await rawStatement(app, 'UPDATE mailboxes SET lease_owner = ?, lease_until = ? WHERE id = ?', [`${machineName()}/${child.stdout}/dead`, new Date(Date.UTC(2100, 0, 1)), mailbox.id])
  await until('the lease taken over', async () => (await app.mailboxes.byId(mailbox.id))!.leaseOwner === app.mailFetcher.owner)
  t.pass('taken over')
})

t.test('whose lease holder is gone: this machine, another pid, no such process; anything else is not known dead', async (t) => {
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout
  const here = machineName()
  t.match(here, new RegExp(`^${hostname()}(:\\d+)?$`), 'the host name, and the PID namespace where there is one')
  t.equal(holderIsGone(`${here}/${dead}/x`), true)
  t.equal(holderIsGone(`other-host/${dead}/x`), false, 'another machine: its processes cannot be seen from here')
  t.equal(holderIsGone(`${hostname()}:1/${dead}/x`), false, 'the same host name in another PID namespace (a container): another machine')
  t.equal(holderIsGone(`${here}/${process.pid}/x`), false, 'this process')
  t.equal(holderIsGone(`${here}/${process.ppid}/x`), false, 'a live process')
  t.equal(holderIsGone('another-process'), false, 'not a holder of ours')
  t.equal(holderIsGone(`${here}/1/x`, here, 2), false, 'pid 1 lives (or cannot be signalled): not known dead')
})

t.test('a process whose mailbox another took while it waited stops, and fetches nothing more', async (t) => {
  const { imap, app, ann, settings } = await fetchingApp(t)
  const mailbox = await app.mailboxes.addMailbox(ann.site.id, 'support@acme.example', { imap: settings })
  await app.mailFetcher.scan()
  await until('the first look', async () => (await app.mailboxes.byId(mailbox.id))!.lastFetchAt !== null)
  // Another process takes the mailbox (its lease in the database), then mail comes.
  await rawStatement(app, 'UPDATE mailboxes SET lease_owner = ?, lease_until = ? WHERE id = ?', ['another-process', new Date(Date.UTC(2100, 0, 1)), mailbox.id])
  await imap.deliver('support', [message({ subject: 'For the other', id: '<other@customer.example>', body: 'Hi.' })])
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal((await app.mailboxes.byId(mailbox.id))!.imapPosition, null, 'nothing taken by this process')
  t.equal((await imap.messages('support'))[0]!.seen, false)
  await app.mailFetcher.scan()
  t.equal((await app.mailboxes.byId(mailbox.id))!.leaseOwner, 'another-process', 'and it does not take it back while that lease lasts')
})

t.test('1,000 messages from one sender in a minute: 30 are taken, the rest wait unread, kept for later, and the others in the mailbox go on', async (t) => {
  const { app, imap, api, listing } = await imapDesk(t)
  const flood = Array.from({ length: 1_000 }, (_, i) => message({ from: 'flood@spam.example', subject: `Buy ${i}`, id: `<buy${i}@spam.example>`, body: 'Buy now.' }))
  const others = Array.from({ length: 5 }, (_, i) => message({ from: `person${i}@customer.example`, subject: `Question ${i}`, id: `<q${i}@customer.example>`, body: 'A real question.' }))
  await imap.deliver('support', [...flood.slice(0, 500), ...others.slice(0, 2), ...flood.slice(500), ...others.slice(2)])
  await app.mailFetcher.scan()
  const site = (await app.sites.find('demo'))!
  await until('the whole mailbox looked at', async () => (await app.mailboxes.listMailboxes(site.id))[0]!.imapPosition?.endsWith(':1005'), 60_000)
  t.equal((await listing()).total, 35, '30 of the flood and the 5 others')
  const titles: string[] = []
  for (let page = 1; page <= 2; page++) titles.push(...((await api('GET', `/demo/discussions?page=${page}`)).json().discussions as Array<{ title: string }>).map((d) => d.title))
  t.same(titles.filter((title) => title.startsWith('Question')).sort(), ['Question 0', 'Question 1', 'Question 2', 'Question 3', 'Question 4'], 'every other sender taken, before and after the flood')
  // The last question's \Seen comes just after the place moves past it.
  await until("the last question's \\Seen flag", async () => (await imap.messages('support'))[1004]!.seen)
  const seen = (await imap.messages('support')).filter((m) => m.seen).length
  t.equal(seen, 35, 'the flood past the limit left unread, for now')
  t.equal(JSON.parse((await app.mailboxes.listMailboxes(site.id))[0]!.imapDeferred!).messages.length, 970, 'each kept for later, none passed over')
})

t.test("30 forged messages in a customer's name do not make the fetch pass over the customer's own: it is taken when the minute allows", async (t) => {
  const { app, imap, api, listing, clock } = await imapDesk(t)
  const forged = Array.from({ length: 30 }, (_, i) => message({ subject: `Forged ${i}`, id: `<forged${i}@evil.example>`, body: 'Not Carol.' }))
  await imap.deliver('support', [...forged, message({ subject: 'My real question', id: '<real@customer.example>', body: 'From Carol, truly.' }), message({ from: 'dan@customer.example', subject: 'Dan', id: '<dan@customer.example>', body: 'Hi.' })])
  await app.mailFetcher.scan()
  const site = (await app.sites.find('demo'))!
  await until('the whole mailbox looked at', async () => (await app.mailboxes.listMailboxes(site.id))[0]!.imapPosition?.endsWith(':32'))
  t.equal((await listing()).total, 31, "the forged 30 and Dan's; Carol's own waits")
  t.notOk((await imap.messages('support'))[30]!.seen, 'left unread meanwhile')
  clock.advance(61_000)
  await until("the customer's own message", async () => (await listing()).discussions.some((d) => d.title === 'My real question'))
  t.equal((await listing()).total, 32)
  await until('the \\Seen flag', async () => (await imap.messages('support'))[30]!.seen)
  await until('the list emptied', async () => (await app.mailboxes.listMailboxes(site.id))[0]!.imapDeferred === null)
  t.equal((await api('GET', '/demo/discussions/32')).json().comments[0].body, 'From Carol, truly.')
})

t.test('a message the parser cannot read (1,001 parts, a header over 1 MiB) is passed over, left unread and said on the mailbox page; the mail after it is taken', async (t) => {
  const { app, imap, api, listing } = await imapDesk(t)
  const parts = Array.from({ length: 1_001 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\n${i}\r\n`).join('')
  await imap.deliver('support', [
    `From: carol@customer.example\r\nSubject: Parts\r\nMessage-ID: <parts@customer.example>\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`,
    `From: carol@customer.example\r\nSubject: Big header\r\nMessage-ID: <header@customer.example>\r\nX-Filler: ${'a'.repeat(1024 * 1024 + 10)}\r\n\r\nHi.\r\n`,
    message({ from: 'dan@customer.example', subject: 'After them', id: '<after@customer.example>', body: 'Still heard.' }),
  ])
  await app.mailFetcher.scan()
  await until('the message after them', async () => (await listing()).total === 1)
  t.equal((await listing()).discussions[0]!.title, 'After them')
  await until('the \\Seen flag of the one taken', async () => (await imap.messages('support'))[2]!.seen)
  t.same((await imap.messages('support')).map((m) => m.seen), [false, false, true], 'the two left unread for a person')
  const state = (await api('GET', '/demo/mailboxes')).json().mailboxes[0].state
  t.match(state, { last_error: null, passed_over: /UID 2: the message cannot be read: Max header size/ })
  const admin = await personWithPassword(app, { email: 'adele@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  t.match((await web.get('/demo/admin/mail')).body, /data-passed-over>Passed over, left unread: [^<]*UID 2: the message cannot be read/)
})

t.test('a server without IDLE: its new mail is taken at the next look, and the check says so', async (t) => {
  const { imap, app, ann, settings } = await fetchingApp(t, { idle: false })
  t.match(await checkImap(settings), 'no IDLE: looked at every SERVICE_MAIL_FETCH_SECONDS')
  await app.mailboxes.addMailbox(ann.site.id, 'support@acme.example', { imap: settings })
  await app.mailFetcher.scan()
  await until('the first look', async () => (await app.mailboxes.listMailboxes(ann.site.id))[0]!.lastFetchAt !== null)
  await imap.deliver('support', [message({ subject: 'Polled', id: '<polled@customer.example>', body: 'Found at the next look.' })])
  await until('the next look', async () => (await app.discussions.get(ann.site.id, 1).catch(() => undefined))?.title === 'Polled')
  t.pass('taken without IDLE')
})

t.test("mail to a site without a category waits in the mailbox, and the mailbox says why", async (t) => {
  // A Dovecot of its own: after a wrong password from this address, Dovecot slows the next sign-ins down.
  const { imap, app, settings } = await fetchingApp(t)
  const bare = await app.sites.add('bare', 'Bare')
  await app.mailboxes.addMailbox(bare.id, 'help@bare.example', { imap: settings })
  await imap.deliver('support', [message({ to: 'help@bare.example', subject: 'Anyone?', id: '<bare@customer.example>', body: 'Hello?' })])
  await app.mailFetcher.scan()
  const waiting = await failedMailbox(app, bare.id)
  t.equal(waiting.lastError, 'the site has no category for new discussions: add one (service-desk category add)')
  t.equal(waiting.imapPosition, null, 'the message is still to be taken')
})
