import t from 'tap'
import { buildTestApp, rawRows } from '../fixtures/app.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { personWithPassword, webClient, signedInPerson } from '../fixtures/web.ts'

// Engines: one: the mailboxes on the administration page: their state in words, adding and removing. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 48: the site's mailboxes on the administration page (routes/web/admin-mail.ts): each
// mailbox's state (last fetch, last error in words, today's messages), adding and removing,
// passwords never shown, administrators of this site only.

/** An administrator of the site, signed in on its pages. */
const administrator = (app: Awaited<ReturnType<typeof buildTestApp>>['app'], site = 'demo') => signedInPerson(app, { site, administrator: true })

t.test('an administrator adds an IMAP mailbox and sees its state; passwords are never shown; a mistake keeps the form but them', async (t) => {
  if (!haveDovecot(t)) return
  const imap = await dovecot(t)
  const url = imap.user('support', 'imap-secret-1')
  const { app } = await buildTestApp(t, { config: { mailFetchSeconds: 1 } })
  const admin = await administrator(app)
  const general = await app.categories.add(admin.site.id, 'General', true)

  const empty = await admin.web.get('/demo/admin/mail')
  t.equal(empty.statusCode, 200)
  t.match(empty.body, 'No address yet: customers cannot write to this site by mail.')
  t.match(empty.body, 'aria-current="page">Mail</a>')

  const added = await admin.web.post('/demo/admin/mail', { address: 'Support@Acme.Example', category: String(general.id), imap: url, smtp: 'smtp://mailer:smtp-secret-2@127.0.0.1:2525', acknowledge: 'on' })
  t.equal(added.statusCode, 303, added.body)
  t.equal(added.headers.location, 'https://help.example.test/demo/admin/mail?added=support%40acme.example')

  await imap.deliver('support', ['From: carol@customer.example\r\nTo: support@acme.example\r\nSubject: Hello\r\nMessage-ID: <a@customer.example>\r\n\r\nHi.\r\n'])
  await app.mailFetcher.scan()
  // Until the fetch has taken the message (the mailbox shows its fetch as soon as one holds it), up
  // to half a minute: beside a loaded suite, a fetch from Dovecot has taken seconds.
  const messagesTaken = async () => Number((await rawRows(app, 'select count(*) as n from mail_messages'))[0]!.n)
  for (let i = 0; i < 1500 && (await messagesTaken()) === 0; i++) await new Promise((r) => setTimeout(r, 20))
  const page = await admin.web.get('/demo/admin/mail?added=support%40acme.example')
  t.match(page.body, 'support@acme.example is added.')
  t.match(page.body, `fetched from imap://support@127.0.0.1:${imap.port}/INBOX`)
  t.match(page.body, 'smtp://mailer@127.0.0.1:2525')
  t.match(page.body, 'acknowledges new discussions')
  t.match(page.body, '1 message</td>')
  t.notMatch(page.body, /imap-secret-1|smtp-secret-2/, 'no password on the page')

  // A mistake: the form comes back with the address and the choices, never the passwords.
  const wrong = await admin.web.post('/demo/admin/mail', { address: 'billing@acme.example', imap: 'imaps://user:imap-secret-3@', smtp: 'smtp://u:smtp-secret-4@mail.example' })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, 'Must be an imap:// or imaps:// address')
  t.match(wrong.body, 'Type the IMAP and SMTP addresses again')
  t.match(wrong.body, 'value="billing@acme.example"')
  t.notMatch(wrong.body, /secret-3|secret-4/)
  const taken = await admin.web.post('/demo/admin/mail', { address: 'support@acme.example' })
  t.equal(taken.statusCode, 409)
  t.match(taken.body, 'Support@acme.example is already the address of a mailbox.')
  t.equal((await admin.web.post('/demo/admin/mail', { address: 'x@acme.example', category: 'two' })).statusCode, 400)
  t.equal((await admin.web.post('/demo/admin/mail', { address: 'x@acme.example', category: '99999' })).statusCode, 404)

  // A wrong IMAP password shows as the mailbox's last error, in the server's words.
  await app.mailboxes.addMailbox(admin.site.id, 'wrong@acme.example', { imap: { host: '127.0.0.1', port: imap.port, secure: false, user: 'support', password: 'nope', folder: 'INBOX' } })
  await app.mailFetcher.scan()
  for (let i = 0; i < 300 && (await app.mailboxes.listMailboxes(admin.site.id))[1]!.lastError === null; i++) await new Promise((r) => setTimeout(r, 20))
  t.match((await admin.web.get('/demo/admin/mail')).body, /<span class="field-error">Authentication failed/)
})

t.test('removing: an administrator of this site only; another site cannot reach this one', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await administrator(app)
  await app.mailboxes.addMailbox(admin.site.id, 'support@acme.example')
  const supporter = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(supporter.email, supporter.password)
  t.equal((await web.get('/demo/admin/mail')).statusCode, 403)
  t.equal((await web.post('/demo/admin/mail/remove', { address: 'support@acme.example' })).statusCode, 403)
  t.equal((await web.post('/demo/admin/mail', { address: 'mine@acme.example' })).statusCode, 403)
  const other = await administrator(app, 'other')
  t.match((await other.web.get('/other/admin/mail')).body, 'No address yet', "the other site's page shows none of this site's")
  const crossing = await other.web.post('/other/admin/mail/remove', { address: 'support@acme.example' })
  t.equal(crossing.statusCode, 404, "another site's administrator cannot remove it")
  t.match(crossing.body, 'This site has no mailbox support@acme.example.')
  t.equal((await app.mailboxes.listMailboxes(admin.site.id)).length, 1)

  t.match((await admin.web.get('/demo/admin/mail')).body, 'data-mailbox="support@acme.example"')
  const nothing = await admin.web.post('/demo/admin/mail/remove', {})
  t.equal(nothing.statusCode, 404, 'no address named')
  t.match(nothing.body, 'Name the address to remove.')
  const removed = await admin.web.post('/demo/admin/mail/remove', { address: 'support@acme.example' })
  t.equal(removed.statusCode, 303)
  t.match((await admin.web.get(removed.headers.location!.replace('https://help.example.test', ''))).body, 'support@acme.example is removed; the discussions its mail made stay.')
  t.equal((await app.mailboxes.listMailboxes(admin.site.id)).length, 0)
})
