import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { dovecot } from '../fixtures/dovecot.ts'
import { mailServer } from '../fixtures/mail.ts'
import { logCapture } from '../fixtures/log.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The sites' mailboxes on the command line (cli/mailboxes.ts), on the engine the suite runs on.


t.test('mailbox add, list and remove; an address belongs to one site; bad input is refused with nothing written', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['site', 'add', 'other'])).code, 0)
  const category = /^category (\d+) created/.exec((await cli.run(['category', 'add', 'acme', 'Billing'])).stdout)![1]!

  // None named: the site's first category by creation (General, which site add made), though Billing sorts first.
  const general = (await cli.query<{ id: number }>("SELECT id FROM categories WHERE name = 'General' AND site_id = (SELECT id FROM sites WHERE permalink = 'acme')"))[0]!.id
  const added = await cli.run(['mailbox', 'add', 'acme', 'Support@Acme.Example'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, new RegExp(`^mailbox support@acme\\.example added to acme \\(category ${general}\\); mail reaches it through the receiver`))
  t.equal((await cli.run(['mailbox', 'add', 'acme', 'billing@acme.example', '--category', category])).code, 0)
  t.equal((await cli.run(['mailbox', 'list', 'acme'])).stdout, `support@acme.example\t${general}\treceiver\t-\t-\t-\nbilling@acme.example\t${category}\treceiver\t-\t-\t-\n`)

  const taken = await cli.run(['mailbox', 'add', 'other', 'SUPPORT@acme.example'])
  t.not(taken.code, 0)
  t.match(taken.stderr, 'support@acme.example is already the address of a mailbox')
  for (const [args, words] of [
    [['mailbox', 'add', 'acme', 'not an address'], '"not an address" is not a mail address'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--category', '2'], 'there is no category 2 on this site'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--category', 'two'], '--category must be a category id, not "two"'],
    [['mailbox', 'add', 'nowhere', 'x@acme.example'], 'nowhere'],
    [['mailbox', 'remove', 'acme', 'nobody@acme.example'], 'acme has no mailbox nobody@acme.example'],
    [['mailbox', 'test', 'acme', 'nobody@acme.example'], 'acme has no mailbox nobody@acme.example'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--imap', 'https://user:secret-pw@imap.example'], '--imap must be an imap:// or imaps:// address'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--imap', 'imaps://imap.example/INBOX'], '--imap must name the user and the password'],
    [['mailbox', 'add', 'acme', 'x@acme.example', '--smtp', 'mail.example:25'], 'must be an smtp:// or smtps:// address'],
  ] as const) {
    const refused = await cli.run([...args])
    t.not(refused.code, 0, args.join(' '))
    t.match(refused.stderr, words)
  }
  t.equal((await cli.run(['mailbox', 'list', 'other'])).stdout, '', 'nothing written for the other site')

  const removed = await cli.run(['mailbox', 'remove', 'acme', ' Billing@Acme.Example '])
  t.equal(removed.stdout, 'mailbox billing@acme.example removed from acme\n')
  t.equal((await cli.run(['mailbox', 'list', 'acme'])).stdout, `support@acme.example\t${general}\treceiver\t-\t-\t-\n`)
})

t.test('mailbox add --imap --smtp seals the passwords; list shows neither; test signs in to both and says what failed', async (t) => {
  const cli = await cliRunner(t)
  const imap = await dovecot(t)
  const good = imap.user('support', 'p@ss/word')
  const smtp = await mailServer(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  const added = await cli.run(['mailbox', 'add', 'acme', 'support@acme.example', '--imap', good, '--smtp', smtp.url, '--acknowledge'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, `mail is fetched from imap://support@127.0.0.1:${imap.port}/INBOX by the running service`)
  t.equal(added.stderr, 'service-desk: warning: imap:// signs in over plain text unless the server offers STARTTLS; use imaps:// where the server has it\n')
  const listed = (await cli.run(['mailbox', 'list', 'acme'])).stdout
  t.match(listed, /^support@acme\.example\t\d+\timap:/)
  t.match(listed, `\timap://support@127.0.0.1:${imap.port}/INBOX\t-\t-`)
  t.notMatch(listed + added.stdout, /p%40ss|p@ss|s3cret/, 'no password shown')

  const tested = await cli.run(['mailbox', 'test', 'acme', 'support@acme.example'])
  t.equal(tested.code, 0, tested.stderr)
  t.match(tested.stdout, `IMAP imap://support@127.0.0.1:${imap.port}/INBOX: signed in; INBOX holds 0 messages, 0 unread; new mail is announced (IDLE)`)
  t.match(tested.stdout, `SMTP smtp://mailer@127.0.0.1:`)
  t.same(smtp.state.logins, ['mailer:s3cret-smtp'], 'it signed in to the SMTP server')

  // A folder the mailbox does not have (before a wrong password: Dovecot then slows sign-ins from this address down).
  t.equal((await cli.run(['mailbox', 'add', 'acme', 'folder@acme.example', '--imap', good.replace('/INBOX', '/Nope')])).code, 0)
  t.match((await cli.run(['mailbox', 'test', 'acme', 'folder@acme.example'])).stderr, "Mailbox doesn't exist: Nope")

  // A wrong password, and an SMTP server that is not there: both said, and the command fails.
  t.equal((await cli.run(['mailbox', 'add', 'acme', 'bad@acme.example', '--imap', good.replace('p%40ss%2Fword', 'wrong'), '--smtp', 'smtp://127.0.0.1:1'])).code, 0)
  const failed = await cli.run(['mailbox', 'test', 'acme', 'bad@acme.example'])
  t.not(failed.code, 0)
  t.match(failed.stderr, /IMAP imap:\/\/support@127\.0\.0\.1:\d+\/INBOX: .*auth/i)
  t.match(failed.stderr, 'SMTP smtp://127.0.0.1:1: the server refused the connection')
  t.notMatch(failed.stderr, /wrong/)

  // What the running service wrote of its fetches, in the list.
  const at = cli.engine === 'sqlite' ? '1772366400000' : "'2026-03-01T12:00:00Z'"
  await cli.write(`UPDATE mailboxes SET last_fetch_at = ${at}, last_error = 'Authentication failed.' WHERE address = 'bad@acme.example'`)
  t.match((await cli.run(['mailbox', 'list', 'acme'])).stdout, /bad@acme\.example\t\d+\timap:\/\/support@127\.0\.0\.1:\d+\/INBOX\t2026-03-01T12:00:00\.000Z\tAuthentication failed\.\t-\n/)

  // A mailbox of the receiver, with the service's SMTP: nothing to sign in to, said so.
  t.equal((await cli.run(['mailbox', 'add', 'acme', 'plain@acme.example'])).code, 0)
  t.match((await cli.run(['mailbox', 'test', 'acme', 'plain@acme.example'])).stdout, "no IMAP mailbox: its mail reaches the built-in receiver (SERVICE_MAIL_RECEIVER)\nno SMTP address of its own: its replies leave by the service's (SERVICE_SMTP_URL)\n")
})

t.test('mail status, hold and resume: the first look makes a database the home of its mail; a copy found elsewhere holds it until resumed', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['mail', 'status'])).stdout, 'mail and webhooks go from this database\n', 'the first look: at home here')
  t.same(await cli.run(['mail', 'hold', '--reason', 'moving to a new server']), { code: 0, stdout: 'held: moving to a new server\n', stderr: '' })
  t.equal((await cli.run(['mail', 'status'])).stdout, 'held: moving to a new server\n')
  t.equal((await cli.run(['mail', 'resume'])).stdout, 'mail and webhooks go from this database: fetched and sent within seconds by the running service\n')
  t.equal((await cli.run(['mail', 'hold'])).stdout, 'held: held by an operator (service-desk mail hold)\n', 'without a reason, the default one')
  await cli.run(['mail', 'resume'])
  // A site without a category: its mailbox's mail goes to the first one made.
  await cli.write("DELETE FROM categories WHERE site_id = (SELECT id FROM sites WHERE permalink = 'acme')")
  t.match((await cli.run(['mailbox', 'add', 'acme', 'help@acme.example'])).stdout, /^mailbox help@acme\.example added to acme; /)
  t.match((await cli.run(['mailbox', 'list', 'acme'])).stdout, /^help@acme\.example\tfirst category\treceiver/)
  // As a restored backup or a copy finds it: at home at another place.
  await cli.write(`UPDATE mail_home SET place = 'sqlite:/srv/elsewhere/service.db'`)
  t.match((await cli.run(['mail', 'status'])).stdout, /^held: this database is a copy \(restored or copied from the one where mail was at home, \d{4}-\d\d-\d\d\): mail is not fetched and mail and webhooks are not sent here until an operator runs service-desk mail resume\n$/)
})

t.test("where mail is at home: the first place to look; elsewhere held, said in the log at the first look, and nothing sent", async (t) => {
  const copy = await buildTestApp(t, { logStream: logCapture().stream, config: { logLevel: 'warn' } })
  const log = logCapture()
  const { app: copied } = await buildTestApp(t, { logStream: log.stream, config: { logLevel: 'warn' } })
  // As a copy finds it: the record names another place, and this process has not looked yet.
  await copied.mailboxes.setHome('sqlite:/srv/elsewhere/service.db', null)
  t.match(await copied.mailHeld(), /^this database is a copy/)
  t.equal(await copied.sendOutbox(), 0)
  t.match(log.entries(), [{ msg: 'mail and webhooks are held', mail: { held: /^this database is a copy/ } }])
  const { app } = copy
  t.equal(await app.mailboxes.held(), null, 'nothing looked yet: nothing held')
  t.equal(await app.mailHeld(), null, 'a database nobody looked at: at home at the first look')
  const here = await app.database.place()
  t.equal(await app.mailboxes.settleHome(here), null, 'the same place: at home')
  t.match(await app.mailboxes.heldAt('sqlite:/b'), /^this database is a copy/, 'what a process there would find')
  t.equal(await app.mailboxes.held(), null, 'asking writes nothing')
  t.equal(await app.mailboxes.heldAt(here), null)
  const held = await app.mailboxes.settleHome('sqlite:/b')
  t.match(held, /^this database is a copy/)
  t.equal(await app.mailboxes.settleHome('sqlite:/c'), held, 'held once, with its first reason')
  t.equal(await app.mailboxes.settleHome(here), held, 'and the old place does not free it: only resume does')
  await app.mailboxes.setHome('sqlite:/b', null)
  t.equal(await app.mailboxes.settleHome('sqlite:/b'), null)
  t.equal(await app.mailboxes.held(), null)
  const place = await app.database.place()
  t.equal(await app.database.place(), place, 'a place is the same each time it is asked')
  t.match(place, app.database.kind === 'sqlite' ? /^sqlite:/ : /^postgres:\d+\/\d+\/\w+$/)
})

t.test("the IMAP messages put off for later: another UIDVALIDITY's mean nothing; only the lease's holder writes them", async (t) => {
  const { app } = await buildTestApp(t)
  const site = await app.sites.add('demo', 'Site demo')
  const mailbox = await app.mailboxes.addMailbox(site.id, 'support@acme.example', { imap: { host: '127.0.0.1', port: 1, secure: false, user: 'u', password: 'p', folder: 'INBOX' } })
  const leased = (await app.mailboxes.lease(mailbox.id, 'me', 60_000))!
  await app.mailboxes.defer(mailbox.id, 'me', '7', [[12, 'carol@customer.example']])
  const kept = (await app.mailboxes.byId(mailbox.id))!
  t.same(await app.mailboxes.deferred(kept, '7'), [[12, 'carol@customer.example']])
  t.same(await app.mailboxes.deferred(kept, '8'), [], 'the server renumbered: its old UIDs name nothing now')
  t.same(await app.mailboxes.deferred(leased, '7'), [], 'none before')
  await t.rejects(app.mailboxes.defer(mailbox.id, 'another process', '7', []), { code: 'conflict', field: 'imap_position' }, 'a process without the lease writes nothing')
  await app.mailboxes.defer(mailbox.id, 'me', '7', [])
  t.equal((await app.mailboxes.byId(mailbox.id))!.imapDeferred, null, 'an empty list is none')
})
