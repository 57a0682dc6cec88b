import t from 'tap'
import { PRESETS, addressOfClaims, createMailOAuth, isClientSecret, isProviderName, issuerProblem, parseServer, refusalWords, renewalDue, revokeConnection, serverAddress } from '../../lib/mail-oauth.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The pure rules of mailboxes connected with OAuth (issue 66, lib/mail-oauth.ts); the protocol
// itself against a real provider is test/mail/oauth.test.ts's.

const MINUTE = 60_000

t.test('the access token is renewed a third of its life before it ends, and at least five minutes before', async (t) => {
  const hour = { issuedAt: 0, expiresAt: 60 * MINUTE }
  t.equal(renewalDue(hour, 54 * MINUTE), false)
  t.equal(renewalDue(hour, 55 * MINUTE), true, 'five minutes before an hour token ends')
  const short = { issuedAt: 0, expiresAt: 9_000 }
  t.equal(renewalDue(short, 5_999), false)
  t.equal(renewalDue(short, 6_000), true, 'a third of a short life before')
  t.equal(renewalDue(hour, 61 * MINUTE), true, 'ended')
})

t.test('a refusal only a person mends is told apart from a provider that is down', async (t) => {
  t.equal(refusalWords({ error: 'invalid_grant', error_description: 'AADSTS70008: The provided\r\n grant has expired.  Trace ID: 1' }, 'Microsoft 365'), "Microsoft 365 refused to renew the mailbox's access (invalid_grant: AADSTS70008: The provided grant has expired. Trace ID: 1): an administrator connects it again")
  t.equal(refusalWords({ error: 'invalid_client' }, 'Google Workspace'), "Google Workspace refused to renew the mailbox's access (invalid_client): an administrator connects it again")
  t.equal(refusalWords({ error: 'invalid_grant', error_description: 'x'.repeat(500) }, 'P')!.length < 300, true, 'the provider\'s words are cut short')
  for (const passing of [{ error: 'temporarily_unavailable' }, { error: 'server_error' }, new TypeError('fetch failed'), undefined, { error: 42 }]) {
    t.equal(refusalWords(passing, 'P'), undefined, `not a refusal: ${JSON.stringify(passing)}`)
  }
})

t.test("the mailbox's address: a verified email, else Microsoft's sign-in name; never something that is not an address", async (t) => {
  t.equal(addressOfClaims({ email: 'Support@Acme.Example', email_verified: true }), 'support@acme.example')
  t.equal(addressOfClaims({ email: 'support@acme.example' }), 'support@acme.example', 'no word on verification (Microsoft)')
  t.equal(addressOfClaims({ email: 'mallory@acme.example', email_verified: false, preferred_username: 'support@acme.example' }), 'support@acme.example', 'an unverified email is not taken')
  t.equal(addressOfClaims({ email: 'mallory@acme.example', email_verified: false }), undefined)
  t.equal(addressOfClaims({ preferred_username: 'not an address' }), undefined)
  t.equal(addressOfClaims({ sub: '123' }), undefined)
  t.equal(addressOfClaims(undefined), undefined)
})

t.test('servers, issuers, names and secrets as the operator gives them', async (t) => {
  t.same(parseServer('imaps://imap.example.com', 'imap'), { host: 'imap.example.com', port: 993, secure: true })
  t.same(parseServer('imap://127.0.0.1:1143', 'imap'), { host: '127.0.0.1', port: 1143, secure: false })
  t.same(parseServer('smtps://smtp.example.com', 'smtp'), { host: 'smtp.example.com', port: 465, secure: true })
  t.same(parseServer('smtp://[::1]', 'smtp'), { host: '::1', port: 587, secure: false })
  t.same(parseServer('imap://h', 'imap'), { host: 'h', port: 143, secure: false })
  t.match(parseServer('smtp://smtp.example.com', 'imap'), /must be an address such as imaps:/)
  t.match(parseServer('not a url', 'smtp'), /must be an address such as smtps:/)
  t.match(parseServer('imaps://user:secret@imap.example.com', 'imap'), /names no user or password/)
  t.equal(serverAddress({ host: '::1', port: 993, secure: true }, 'imap'), 'imaps://[::1]:993')
  t.equal(serverAddress(PRESETS.microsoft.smtp, 'smtp'), 'smtp://smtp.office365.com:587')

  t.equal(issuerProblem('https://login.microsoftonline.com/organizations/v2.0'), null)
  t.equal(issuerProblem('http://127.0.0.1:8080'), null, 'plain http on this machine')
  t.equal(issuerProblem('http://localhost:8080/realms/mail'), null)
  t.match(issuerProblem('http://login.example.com'), /https:\/\/ address \(plain http only on this machine\)/)
  t.match(issuerProblem('ftp://login.example.com'), /must be an https:\/\/ address/)
  t.match(issuerProblem('https://user:pw@login.example.com'), /issuer alone/)
  t.match(issuerProblem('https://login.example.com/?tenant=1'), /issuer alone/)
  t.match(issuerProblem('login.example.com'), /issuer address/)

  t.equal(PRESETS.microsoft.issuer(), 'https://login.microsoftonline.com/organizations/v2.0')
  t.equal(PRESETS.microsoft.issuer('acme.onmicrosoft.com'), 'https://login.microsoftonline.com/acme.onmicrosoft.com/v2.0')
  t.equal(PRESETS.google.issuer(), 'https://accounts.google.com')
  t.ok(isProviderName('microsoft') && isProviderName('my-imap2'))
  t.notOk(isProviderName('Microsoft') || isProviderName('1mail') || isProviderName('a'.repeat(40)) || isProviderName('a b'))
  t.ok(isClientSecret('Abc~1.2_xyz secret'))
  t.notOk(isClientSecret('') || isClientSecret('two\nlines') || isClientSecret('é'))
})

t.test('a removed mailbox says what became of its token, whatever the provider does', async (t) => {
  const settings = { issuer: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's', scopes: ['openid'], authorizationParameters: {}, imap: PRESETS.google.imap, smtp: PRESETS.google.smtp }
  const tokens = { refreshToken: 'r', accessToken: 'a', issuedAt: 0, expiresAt: 1 }
  const answering = (revoke: () => Promise<boolean>) => ({ ...createMailOAuth(), revoke })
  t.equal(await revokeConnection(answering(async () => true), { label: 'Google Workspace', settings }, tokens), 'its token is revoked at Google Workspace')
  t.match(await revokeConnection(answering(async () => false), { label: 'Microsoft 365', settings }, tokens), /^Microsoft 365 offers no revocation/)
  t.match(await revokeConnection(answering(async () => Promise.reject(new Error('connect ECONNREFUSED'))), { label: 'P', settings }, tokens), /could not be revoked at P \(connect ECONNREFUSED\)/)
  t.match(await revokeConnection(createMailOAuth(), undefined, tokens), /could not be opened/)
  t.match(await revokeConnection(createMailOAuth(), { label: 'P', settings: null }, tokens), /could not be opened/)
  t.match(await revokeConnection(createMailOAuth(), { label: 'P', settings }, null), /could not be opened/)
  // A provider that is not there: discovery fails, and is asked again next time (not kept).
  const protocol = createMailOAuth()
  t.match(await revokeConnection(protocol, { label: 'P', settings }, tokens), /could not be revoked at P/)
  await t.rejects(protocol.start(settings, 'https://help.example.test/demo/admin/mail/connected'))
  t.same(protocol.signInOrigins([settings]), ['http://127.0.0.1:9'], 'the issuer, where discovery found nothing')
})
