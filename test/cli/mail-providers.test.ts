import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { mailServer } from '../fixtures/mail.ts'
import { DESK_CLIENT, mailProvider } from '../fixtures/mail-provider.ts'

// Engines: both: the registered applications and the connected mailboxes are the stores', which each engine must keep alike.
// Issue 66 on the command line (cli/mail-providers.ts, cli/mailboxes.ts): the operator registers
// the service's applications at mail providers, the secret on standard input and never shown;
// presets know Microsoft's and Google's servers; a connected mailbox is listed with its state, and
// removing it revokes its token at the provider.

const SECRET = 'a-client-secret~with.odd_chars 42'

t.test('mail-provider add, list, secret and remove; what is wrong is refused with nothing written', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)

  const microsoft = await cli.run(['mail-provider', 'add', 'microsoft', '--client-id', 'app-id-1', '--tenant', 'acme.onmicrosoft.com'], { stdin: `${SECRET}\n` })
  t.equal(microsoft.code, 0, microsoft.stderr)
  t.equal(
    microsoft.stdout,
    'mail provider microsoft registered (Microsoft 365: https://login.microsoftonline.com/acme.onmicrosoft.com/v2.0; IMAP imaps://outlook.office365.com:993, SMTP smtp://smtp.office365.com:587)\nits redirect addresses to register at the provider:\n  http://localhost:3000/acme/admin/mail/connected\n',
  )
  t.equal((await cli.run(['mail-provider', 'add', 'google', '--client-id', 'app-id-2'], { stdin: SECRET })).code, 0)
  const other = await cli.run(['mail-provider', 'add', 'fastmail', '--label', 'Fastmail', '--client-id', 'app-id-3', '--issuer', 'https://login.fastmail.example', '--imap', 'imaps://imap.fastmail.example', '--smtp', 'smtps://smtp.fastmail.example', '--scope', 'openid email', '--scope', 'offline_access'], { stdin: SECRET })
  t.equal(other.code, 0, other.stderr)

  const listed = (await cli.run(['mail-provider', 'list'])).stdout.split('\n').filter(Boolean).map((line) => line.split('\t').slice(0, 5))
  t.same(listed, [
    ['microsoft', 'Microsoft 365', 'https://login.microsoftonline.com/acme.onmicrosoft.com/v2.0', 'imaps://outlook.office365.com:993', 'smtp://smtp.office365.com:587'],
    ['google', 'Google Workspace', 'https://accounts.google.com', 'imaps://imap.gmail.com:993', 'smtps://smtp.gmail.com:465'],
    ['fastmail', 'Fastmail', 'https://login.fastmail.example', 'imaps://imap.fastmail.example:993', 'smtps://smtp.fastmail.example:465'],
  ])
  const rows = await cli.query<{ name: string; settings: string }>('SELECT name, settings FROM mail_providers ORDER BY id')
  t.notOk(rows.some((row) => row.settings.includes(SECRET) || row.settings.includes('app-id')), 'the settings are sealed')

  // Refused, each with what is wrong, and nothing written.
  const refusals: Array<[string[], string, RegExp]> = [
    [['mail-provider', 'add', 'microsoft', '--client-id', 'again'], SECRET, /a mail provider named microsoft is registered already/],
    [['mail-provider', 'add', 'Yahoo!', '--client-id', 'x'], SECRET, /a provider's name is a short word/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x'], SECRET, /a provider other than microsoft or google needs --issuer/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x', '--issuer', 'http://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example'], SECRET, /--issuer must be an https:\/\/ address \(plain http only on this machine\)/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://user:pw@i.example', '--smtp', 'smtps://s.example'], SECRET, /--imap names no user or password/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'ftp://s.example'], SECRET, /--smtp must be an address such as smtps:/],
    [['mail-provider', 'add', 'google', '--client-id', 'x', '--tenant', 'acme'], SECRET, /--tenant is for microsoft only/],
    [['mail-provider', 'add', 'microsoft2', '--client-id', 'x', '--issuer', 'https://l.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example', '--tenant', 'a/b'], SECRET, /--tenant is for microsoft only/],
    [['mail-provider', 'add', 'microsoft', '--client-id', 'x', '--tenant', 'a/../b'], SECRET, /--tenant must be a tenant id or domain/],
    [['mail-provider', 'add', 'microsoft2', '--client-id', 'x'], SECRET, /needs --issuer/],
    [['mail-provider', 'add', 'zoho', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example'], SECRET, /--client-id is needed/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x y', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example'], SECRET, /--client-id must be the application/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example'], '', /give the client secret on standard input/],
    [['mail-provider', 'add', 'zoho', '--client-id', 'x', '--issuer', 'https://login.zoho.example', '--imap', 'imaps://i.example', '--smtp', 'smtps://s.example'], 'two\nlines\n', /the client secret \(standard input\) must be/],
    [['mail-provider', 'secret', 'yahoo'], SECRET, /no mail provider is registered as yahoo/],
    [['mail-provider', 'secret', 'google'], '', /give the new client secret on standard input/],
    [['mail-provider', 'remove', 'yahoo'], '', /no mail provider is registered as yahoo/],
  ]
  for (const [argv, stdin, said] of refusals) {
    const refused = await cli.run(argv, { stdin })
    t.not(refused.code, 0, argv.join(' '))
    t.match(refused.stderr, said, argv.join(' '))
    t.notMatch(refused.stderr + refused.stdout, SECRET)
  }
  t.equal((await cli.query('SELECT id FROM mail_providers')).length, 3, 'nothing more was written')

  const rotated = await cli.run(['mail-provider', 'secret', 'google'], { stdin: 'the-new-secret\n' })
  t.equal(rotated.stdout, 'mail provider google has its new client secret\n')
  const { app } = await buildTestApp(t, { config: cli.appDatabase })
  t.match((await app.mailboxes.provider('google'))!.settings, { clientSecret: 'the-new-secret', clientId: 'app-id-2' })
  t.match((await app.mailboxes.provider('fastmail'))!.settings, { scopes: ['openid', 'email', 'offline_access'], authorizationParameters: {} })
  t.match((await app.mailboxes.provider('google'))!.settings, { authorizationParameters: { access_type: 'offline', prompt: 'consent' }, scopes: ['openid', 'email', 'https://mail.google.com/'] })

  // Under another server key the settings cannot be opened: said, never guessed.
  if (cli.engine === 'postgres') {
    const otherKey = await cli.run(['mail-provider', 'list'], { env: { SERVICE_SECRET: 'f'.repeat(64) } })
    t.match(otherKey.stdout, /^microsoft\tMicrosoft 365\thttps:\/\/login\.microsoftonline\.com\/acme\.onmicrosoft\.com\/v2\.0\tsealed under another server key: register it again\t-\t/)
  }

  t.equal((await cli.run(['mail-provider', 'remove', 'fastmail'])).stdout, 'mail provider fastmail removed\n')
  t.same((await cli.run(['mail-provider', 'list'])).stdout.split('\n').filter(Boolean).map((line) => line.split('\t')[0]), ['microsoft', 'google'])
})

t.test('a connected mailbox is listed with its state and tested with its token; removing it revokes its token at the provider; its provider cannot go while it is there', async (t) => {
  if (!haveDovecot(t)) return
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  const redirect = 'http://localhost:3000/acme/admin/mail/connected'
  const provider = await mailProvider(t, { redirectUris: [redirect] })
  const imap = await dovecot(t, { introspection: provider.introspection })
  imap.user('help@acme.example')
  const smtp = await mailServer(t, { checkToken: (token) => provider.ownerOf(token) })
  const servers = ['--imap', `imap://127.0.0.1:${imap.port}`, '--smtp', `smtp://127.0.0.1:${new URL(smtp.url).port}`]
  const added = await cli.run(['mail-provider', 'add', 'corp', '--client-id', DESK_CLIENT.id, '--issuer', provider.issuer, ...servers, '--scope', 'openid email offline_access'], { stdin: DESK_CLIENT.secret })
  t.equal(added.code, 0, added.stderr)

  // A sign-in at the provider, as the mail page makes it, and the mailbox it connects.
  const { app } = await buildTestApp(t, { config: cli.appDatabase })
  const { settings } = (await app.mailboxes.provider('corp'))!
  const started = await app.mailOAuth.protocol.start(settings!, redirect)
  const back = await provider.signIn(started.url, 'help@acme.example')
  const { address, tokens } = await app.mailOAuth.protocol.finish(settings!, new URL(back), started.pending, cli.clock())
  const site = await app.sites.get('acme')
  await app.mailboxes.connectMailbox(site.id, { provider: 'corp', address, settings: settings!, tokens })
  t.equal(await provider.ownerOf(tokens.accessToken), 'help@acme.example')

  t.match((await cli.run(['mailbox', 'list', 'acme'])).stdout, /^help@acme\.example\t\d+\timap:\/\/help%40acme\.example@127\.0\.0\.1:\d+\/INBOX\t-\t-\tcorp: connected\n$/)

  // `mailbox test` signs in to both servers with the token, as the service would; renewed when due.
  const tested = await cli.run(['mailbox', 'test', 'acme', 'help@acme.example'])
  t.equal(tested.code, 0, tested.stderr)
  t.match(tested.stdout, /^OAuth corp: signs in as help@acme\.example with a token good until \S+\nIMAP imap:\/\/help%40acme\.example@127\.0\.0\.1:\d+\/INBOX: signed in; INBOX holds 0 messages, 0 unread; new mail is announced \(IDLE\)\nSMTP smtp:\/\/help%40acme\.example@127\.0\.0\.1:\d+: signed in\n$/)
  t.same(smtp.state.logins, ['help@acme.example:token'])
  cli.clock.advance(2 * 60 * 60_000)
  t.equal((await cli.run(['mailbox', 'test', 'acme', 'help@acme.example'])).code, 0)
  t.equal(provider.refreshes, 1, 'renewed by the command, its token due')

  // The grant revoked at the provider: the command's renewal is refused, said, and the site's administrator mailed.
  t.equal((await cli.run(['user', 'add', 'boss@acme.example', '--password-stdin'], { stdin: 'the boss password\n' })).code, 0)
  t.equal((await cli.run(['staff', 'add', 'acme', 'boss@acme.example', '--admin'])).code, 0)
  await provider.revokeEverything()
  cli.clock.advance(2 * 60 * 60_000)
  const revoked = await cli.run(['mailbox', 'test', 'acme', 'help@acme.example'])
  t.not(revoked.code, 0)
  t.match(revoked.stderr, "service-desk: warning: the mail provider refused to renew a connected mailbox's access")
  t.match(revoked.stderr, "OAuth corp: corp refused to renew the mailbox's access (invalid_grant")
  const [told] = await cli.query<{ payload: string }>("SELECT payload FROM outbox WHERE kind = 'mailbox_problem'")
  t.match(JSON.parse(told!.payload), { to: 'boss@acme.example', text: /http:\/\/localhost:3000\/acme\/admin\/mail/ })
  await cli.write("UPDATE mailboxes SET oauth_problem = 'corp refused to renew the mailbox''s access (invalid_grant)'")
  t.match((await cli.run(['mailbox', 'list', 'acme'])).stdout, /\tcorp: refused: corp refused to renew the mailbox's access \(invalid_grant\)\n$/)
  const refused = await cli.run(['mailbox', 'test', 'acme', 'help@acme.example'])
  t.not(refused.code, 0)
  t.match(refused.stderr, "OAuth corp: corp refused to renew the mailbox's access (invalid_grant)")

  // The application's secret ended (invalid_client): a new secret lets the mailbox go on, no reconnection.
  await cli.write("UPDATE mailboxes SET oauth_problem = 'corp refused to renew the mailbox''s access (invalid_client: the secret expired)'")
  t.equal((await cli.run(['mail-provider', 'secret', 'corp'], { stdin: `${DESK_CLIENT.secret}\n` })).stdout, 'mail provider corp has its new client secret; going on: help@acme.example\n')
  t.match((await cli.run(['mailbox', 'list', 'acme'])).stdout, /\tcorp: connected\n$/)

  const kept = await cli.run(['mail-provider', 'remove', 'corp'])
  t.not(kept.code, 0)
  t.match(kept.stderr, 'mailboxes sign in through corp: help@acme.example; remove them first')

  const removed = await cli.run(['mailbox', 'remove', 'acme', 'help@acme.example'])
  t.equal(removed.stdout, 'mailbox help@acme.example removed from acme\nits token is revoked at corp\n')
  t.equal(await provider.ownerOf(tokens.accessToken), null, 'the grant is gone at the provider')
  t.equal((await cli.run(['mail-provider', 'remove', 'corp'])).code, 0)
})
