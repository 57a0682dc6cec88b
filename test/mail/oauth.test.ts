import t, { type Test } from 'tap'
import { buildTestApp, rawRows, rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'
import { DESK_CLIENT, mailProvider } from '../fixtures/mail-provider.ts'
import { signedInPerson, webClient } from '../fixtures/web.ts'
import { until } from '../fixtures/until.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the connections, their tokens and the renewals are the stores', which each engine must keep alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 66, mailboxes connected with OAuth, through the pages as a browser drives them (app.inject,
// cookies kept) against real peers: a provider of the tests (oidc-provider) standing in for
// Microsoft 365, Dovecot signing in with XOAUTH2 by asking that provider about each token, and an
// SMTP server that does the same. The whole flow in Chromium is test/mail/oauth-browser.test.ts.

if (!haveDovecot(t)) process.exit(0)

const ADDRESS = 'support@acme.example'
const CALLBACK = 'https://help.example.test/demo/admin/mail/connected'


const customerMail = (subject: string, body: string, id: string) =>
  [`From: Carol Customer <carol@customer.example>`, `To: ${ADDRESS}`, `Subject: ${subject}`, `Message-ID: <${id}@customer.example>`, 'Date: Sun, 01 Mar 2026 11:00:00 +0000', 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n')

/**
 * The provider, Dovecot and the provider's SMTP server (both checking tokens at the provider), the
 * service's own SMTP server (its mail to administrators), the app fetching every second, Ann (an
 * administrator signed in on the pages), Bob's token for the API, and the application registered
 * at the provider as `microsoft`.
 */
async function desk(t: Test, accessSeconds = 300) {
  const provider = await mailProvider(t, { redirectUris: [CALLBACK], accessSeconds })
  const imap = await dovecot(t, { introspection: provider.introspection })
  // The mailbox's own password only puts the customers' mail in; the service signs in with tokens.
  imap.user(ADDRESS)
  const smtp = await mailServer(t, { checkToken: (token) => provider.ownerOf(token) })
  const service = await mailServer(t)
  const { app, clock } = await buildTestApp(t, { config: { mailFetchSeconds: 1, mail: { smtpUrl: service.url, from: 'Service Desk <desk@service.example>' } } })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  await app.categories.add(ann.site.id, 'General', true)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await app.users.setAdministrator(bob.site.id, bob.user.id, true)
  const smtpPort = Number(new URL(smtp.url).port)
  await app.mailboxes.addProvider('microsoft', 'Microsoft 365', {
    issuer: provider.issuer,
    clientId: DESK_CLIENT.id,
    clientSecret: DESK_CLIENT.secret,
    scopes: ['openid', 'email', 'offline_access'],
    authorizationParameters: {},
    imap: { host: '127.0.0.1', port: imap.port, secure: false },
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false },
  })
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: bob.bearer, ...(payload ? { payload } : {}) })
  const discussions = async () => ((await api('GET', '/demo/discussions')).json() as { discussions: Array<{ number: number; title: string }> }).discussions
  const mailbox = async () => (await app.mailboxes.mailbox(ADDRESS))!
  return { provider, imap, smtp, service, app, clock, ann, bob, api, discussions, mailbox }
}

/** Connects the mailbox on the mail page as `web`'s administrator, signing in at the provider as `login`: the page it lands on. */
async function connect(web: ReturnType<typeof webClient>, provider: Awaited<ReturnType<typeof mailProvider>>, login = ADDRESS, form: Record<string, string> = {}) {
  await web.get('/demo/admin/mail')
  const started = await web.post('/demo/admin/mail/connect', { provider: 'microsoft', ...form })
  if (started.statusCode !== 303) return started
  const back = await provider.signIn(started.headers.location as string, login)
  return web.get(back)
}

t.test('an administrator connects a mailbox: mail comes in by IMAP and replies leave by SMTP, each signed in with the token, renewed in time', async (t) => {
  const { provider, imap, smtp, app, clock, ann, api, discussions, mailbox } = await desk(t)

  const page = await connect(ann.web, provider)
  t.equal(page.statusCode, 303, page.body)
  t.equal(page.headers.location, 'https://help.example.test/demo/admin/mail?connected=support%40acme.example')
  t.match((await ann.web.get(page.headers.location as string)).body, /support@acme\.example is connected/)
  const connected = await mailbox()
  t.match(connected, { oauthProvider: 'microsoft', oauthProblem: null, categoryId: (await app.categories.list(ann.site.id, 0, 10)).categories[0]!.id })
  // Sealed: neither token is in the row as itself.
  const tokens = (await app.mailboxes.tokensOf(connected))!
  t.notOk(connected.oauthTokens!.includes(tokens.refreshToken) || connected.oauthTokens!.includes(tokens.accessToken), 'the tokens are sealed')
  t.match((await api('GET', '/demo/mailboxes')).json().mailboxes[0], { address: ADDRESS, oauth: { provider: 'microsoft', state: 'connected', problem: null }, smtp: `smtp://support%40acme.example@127.0.0.1:${new URL(smtp.url).port}` })

  await imap.deliver(ADDRESS, [customerMail('The printer smokes', 'It smokes.', 'first')])
  const [first] = await until('the first mail taken in', async () => (await discussions()).length === 1 && discussions())
  t.equal(first!.title, 'The printer smokes')

  t.equal((await api('POST', `/demo/discussions/${first!.number}/comments`, { body: 'Unplug it, please.' })).statusCode, 201)
  t.equal(await app.sendOutbox(), 1, 'the reply left')
  t.same(smtp.state.logins, [`${ADDRESS}:token`], 'the SMTP server took the token of the mailbox')
  t.match(readMail(smtp.mails[0]!).text, /Unplug it, please\./)
  t.same(smtp.mails[0]!.to, ['carol@customer.example'])

  // The token's life runs out (five minutes, renewed a third before): renewed once, the IMAP
  // connection made again with the new one, and no message missed meanwhile.
  await imap.deliver(ADDRESS, [customerMail('The scanner jams', 'It jams.', 'second')])
  clock.advance(210_000)
  await until('the token renewed', async () => provider.refreshes === 1 && (await app.mailboxes.tokensOf(await mailbox()))!.accessToken !== tokens.accessToken)
  await imap.deliver(ADDRESS, [customerMail('The fax is silent', 'Nothing.', 'third')])
  await until('both mails taken in', async () => (await discussions()).length === 3)
  t.equal(provider.refreshes, 1, 'renewed once, by one process')
  const renewed = (await app.mailboxes.tokensOf(await mailbox()))!
  t.equal(renewed.refreshToken !== '', true)
  t.equal((await provider.ownerOf(renewed.accessToken)), ADDRESS, 'the new token is good at the provider')

  t.equal((await api('POST', `/demo/discussions/${first!.number}/comments`, { body: 'Did it work?' })).statusCode, 201)
  t.equal(await app.sendOutbox(), 1)
  t.same(smtp.state.logins, [`${ADDRESS}:token`, `${ADDRESS}:token`])
  // \Seen is set just after a message's discussion is stored: the last one's may lag behind it.
  await until('the last \\Seen flag', async () => (await imap.messages(ADDRESS))[2]?.seen)
  t.same((await imap.messages(ADDRESS)).map((m) => m.seen), [true, true, true], 'each message taken is marked read')
})

t.test('the provider revokes the grant: the mailbox says so, its administrators are mailed once, replies wait, and connecting again mends it', async (t) => {
  const { provider, imap, smtp, service, app, clock, ann, api, discussions, mailbox } = await desk(t)
  t.equal((await connect(ann.web, provider)).statusCode, 303)
  await imap.deliver(ADDRESS, [customerMail('Before', 'Before the revocation.', 'before')])
  const [before] = await until('the mail taken in', async () => (await discussions()).length === 1 && discussions())

  // An administrator at the provider removes the application's consent: the whole grant ends.
  await provider.revoke((await app.mailboxes.tokensOf(await mailbox()))!.accessToken)
  clock.advance(210_000)
  const refused = await until('the refusal written down', async () => (await mailbox()).oauthProblem)
  t.match(refused, /^Microsoft 365 refused to renew the mailbox's access \(invalid_grant/)
  t.match((await api('GET', '/demo/mailboxes')).json().mailboxes[0].oauth, { state: 'refused', problem: refused })

  // A reply meanwhile waits, with the reason, instead of failing.
  t.equal((await api('POST', `/demo/discussions/${before!.number}/comments`, { body: 'Still there?' })).statusCode, 201)
  t.equal(await app.sendOutbox(), 2, 'only the mails to the administrators left, by the service')
  t.equal(smtp.mails.length, 0)
  t.same(service.mails.map((mail) => mail.to.join()).sort(), ['ann@example.test', 'bob@example.test'], "each of the site's administrators is told")
  t.match(readMail(service.mails[0]!), { subject: `The mailbox ${ADDRESS} cannot sign in: connect it again`, text: /https:\/\/help\.example\.test\/demo\/admin\/mail/ })
  const [waiting] = await rawRows(app, "select state, last_error from outbox where kind = 'reply_mail'")
  t.match(waiting, { state: 'queued', last_error: /^waiting: Microsoft 365 refused/ })

  // Told once: the next uses find the refusal written and ask the provider nothing.
  const asked = provider.refreshes
  clock.advance(120_000)
  await app.mailFetcher.scan()
  await app.sendOutbox()
  t.equal(service.mails.length, 2, 'the administrators are mailed once')
  t.equal(provider.refreshes, asked)

  const page = (await ann.web.get('/demo/admin/mail')).body
  t.match(page, /data-oauth-problem>Microsoft 365 refused to renew/)
  t.match(page, /data-connect-again/)

  // Connect again: the same mailbox, its fetch's place kept; the waiting reply leaves.
  const again = await connect(ann.web, provider, ADDRESS, { address: ADDRESS })
  t.equal(again.statusCode, 303, again.body)
  t.match(await mailbox(), { oauthProblem: null, oauthProvider: 'microsoft' })
  t.equal((await app.mailboxes.listMailboxes(ann.site.id)).length, 1)
  t.equal((await app.outbox.dueMail(10)).length, 1, 'the waiting reply due at once, not when its wait ends')
  await imap.deliver(ADDRESS, [customerMail('After', 'After connecting again.', 'after')])
  await until('the next mail taken in', async () => (await discussions()).length === 2)
  clock.advance(60_000)
  t.equal(await app.sendOutbox(), 1, 'the waiting reply left')
  t.match(readMail(smtp.mails[0]!).text, /Still there\?/)
})

t.test('the answer of a sign-in is taken only in the browser, by the administrator and on the site that asked, once and in time', onSqlite("a provider's answer checked against the browser's sealed cookie"), async (t) => {
  const { provider, app, clock, ann, mailbox } = await desk(t)
  await ann.web.get('/demo/admin/mail')
  const started = await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  t.equal(started.statusCode, 303)
  const authorization = new URL(started.headers.location as string)
  t.match(Object.fromEntries(authorization.searchParams), { client_id: DESK_CLIENT.id, redirect_uri: CALLBACK, response_type: 'code', code_challenge_method: 'S256', scope: 'openid email offline_access' })
  t.ok(authorization.searchParams.get('state') && authorization.searchParams.get('nonce') && authorization.searchParams.get('code_challenge'))
  const back = await provider.signIn(authorization.href, ADDRESS)

  // Mallory, another administrator of the site in her own browser, is sent the link.
  const mallory = await signedInPerson(app, { administrator: true, email: 'mallory@example.test' })
  const stolen = await mallory.web.get(back)
  t.equal(stolen.statusCode, 400)
  t.match(stolen.body, /was not asked for by you in this browser/)
  // A visitor signed in nowhere goes to the sign-in page.
  t.equal((await webClient(app).get(back)).statusCode, 303)
  t.equal(await app.mailboxes.mailbox(ADDRESS), undefined, 'nothing was connected')

  // Ann's browser, but her cookie copied onto Mallory's: the cookie is bound to Ann.
  mallory.web.jar.set('mail_connect', ann.web.jar.get('mail_connect')!)
  t.equal((await mallory.web.get(back)).statusCode, 400)

  // The state is checked: Ann's cookie with another sign-in's answer.
  const other = await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  const otherBack = await provider.signIn(other.headers.location as string, ADDRESS)
  await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  const crossed = await ann.web.get(otherBack)
  t.equal(crossed.statusCode, 400)
  t.match(crossed.body, /was not asked for by you in this browser/)
  // A link anyone can make, with words of their own as the provider's: not shown.
  await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  const forged = await ann.web.get(`${CALLBACK}?error=access_denied&error_description=Call+0800+HACKER`)
  t.equal(forged.statusCode, 400)
  t.notMatch(forged.body, /HACKER/)
  t.equal(await app.mailboxes.mailbox(ADDRESS), undefined)

  // Too late: ten minutes.
  const late = await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  const lateBack = await provider.signIn(late.headers.location as string, ADDRESS)
  clock.advance(11 * 60_000)
  const tooLate = await ann.web.get(lateBack)
  t.equal(tooLate.statusCode, 400)
  t.match(tooLate.body, /took longer than 10 minutes/)
  // Once: the cookie is gone after an answer.
  t.equal(ann.web.jar.has('mail_connect'), false)

  // The administrator says no at the provider: the page says what the provider said.
  await ann.web.get('/demo/admin/mail')
  const denied = await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })
  const deniedBack = await provider.signIn(denied.headers.location as string, 'someone@acme.example', { deny: true })
  const refusedPage = await ann.web.get(deniedBack)
  t.equal(refusedPage.statusCode, 400)
  t.match(refusedPage.body, /Microsoft 365 did not connect the mailbox \(access_denied/)
  t.equal(await mailbox(), undefined)
})

t.test('connecting is for the site\'s administrators, a provider the operator registered, and an address no other site has', async (t) => {
  const { provider, app, ann } = await desk(t)
  const supporter = await signedInPerson(app, { email: 'sam@example.test' })
  await supporter.web.get('/demo/discussions')
  t.equal((await supporter.web.post('/demo/admin/mail/connect', { provider: 'microsoft' })).statusCode, 403)

  await ann.web.get('/demo/admin/mail')
  const unknown = await ann.web.post('/demo/admin/mail/connect', { provider: 'yahoo' })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.body, /Choose a mail provider the operator registered/)
  t.equal((await ann.web.post('/demo/admin/mail/connect', { provider: 'microsoft', category: 'first' })).statusCode, 400)

  // A category that is not the site's; an account the provider knows no address of.
  const wrongCategory = await connect(ann.web, provider, ADDRESS, { category: '999' })
  t.equal(wrongCategory.statusCode, 400)
  t.match(wrongCategory.body, /There is no category 999 on this site/)
  const noAddress = await connect(ann.web, provider, 'not-an-address')
  t.equal(noAddress.statusCode, 400)
  t.match(noAddress.body, /did not say the account&#39;s mail address/)

  // A provider that cannot be reached: the page says so, and nothing is kept.
  await app.mailboxes.addProvider('down', 'Down Mail', { ...(await app.mailboxes.provider('microsoft'))!.settings!, issuer: 'http://127.0.0.1:1' })
  await ann.web.get('/demo/admin/mail')
  const unreachable = await ann.web.post('/demo/admin/mail/connect', { provider: 'down' })
  t.equal(unreachable.statusCode, 502)
  t.match(unreachable.body, /Down Mail could not be reached/)
  t.equal(ann.web.jar.has('mail_connect'), false)

  // Another site has the address already.
  const other = await app.sites.add('other', 'Other')
  await app.mailboxes.addMailbox(other.id, ADDRESS)
  const taken = await connect(ann.web, provider)
  t.equal(taken.statusCode, 409)
  t.match(taken.body, /already the address of a mailbox/)
  t.equal((await app.mailboxes.mailbox(ADDRESS))!.siteId, other.id, 'the other site keeps it')

  // A category of the site: the new mailbox's discussions go there.
  const billing = await app.categories.add(ann.site.id, 'Billing', true)
  const elsewhere = await connect(ann.web, provider, 'billing@acme.example', { category: String(billing.id), acknowledge: 'on' })
  t.equal(elsewhere.statusCode, 303, elsewhere.body)
  t.match(await app.mailboxes.mailbox('billing@acme.example'), { categoryId: billing.id, acknowledge: true, oauthProvider: 'microsoft' })
})

t.test('a mailbox that signed in with a password is connected again with OAuth, its place kept; removing a connected one revokes its token', async (t) => {
  const { provider, imap, app, ann, api, discussions, mailbox } = await desk(t)
  imap.user('support@acme.example', 'the-old-password')
  const added = await api('POST', '/demo/mailboxes', { address: ADDRESS, imap: `imap://support%40acme.example:the-old-password@127.0.0.1:${imap.port}/INBOX` })
  t.equal(added.statusCode, 201)
  await imap.deliver(ADDRESS, [customerMail('By password', 'Taken with the password.', 'password')])
  await until('the mail taken in', async () => (await discussions()).length === 1)
  const place = (await mailbox()).imapPosition
  t.ok(place)

  t.equal((await connect(ann.web, provider)).statusCode, 303)
  t.match(await mailbox(), { oauthProvider: 'microsoft', imapPosition: place })
  await imap.deliver(ADDRESS, [customerMail('By token', 'Taken with the token.', 'token')])
  await until('the next mail taken in', async () => (await discussions()).length === 2)
  t.equal((await discussions()).length, 2, 'the first message was not taken again')

  const { refreshToken, accessToken } = (await app.mailboxes.tokensOf(await mailbox()))!
  t.equal((await api('DELETE', `/demo/mailboxes/${encodeURIComponent(ADDRESS)}`)).statusCode, 204)
  // Revoked at the provider: the refresh token renews nothing any more.
  const settings = (await app.mailboxes.provider('microsoft'))!.settings!
  // In the background, after the answer: the grant ends at the provider, its tokens with it.
  await until('the grant revoked', async () => (await provider.ownerOf(accessToken)) === null)
  const refused = await app.mailOAuth.protocol.renew(settings, refreshToken, Date.now()).then(() => 'renewed', (error: unknown) => error)
  t.match(refused, { error: 'invalid_grant' })
})

t.test('one renewal at a time: two processes due together ask the provider once', async (t) => {
  const { provider, app, clock, ann, mailbox } = await desk(t)
  t.equal((await connect(ann.web, provider)).statusCode, 303)
  const before = (await app.mailboxes.tokensOf(await mailbox()))!
  clock.advance(250_000)
  const due = await mailbox()
  // Two renewals at once, each with the mailbox as it read it.
  const [one, two] = await Promise.all([app.mailOAuth.access(due), app.mailOAuth.access(due)])
  t.equal(provider.refreshes, 1, 'the provider was asked once')
  t.equal(one.accessToken, two.accessToken)
  t.not(one.accessToken, before.accessToken)
  t.equal(await provider.ownerOf(one.accessToken), ADDRESS)
  // A process that finds another's claim running waits for it; one whose claim ran out takes it.
  const claim = await app.mailboxes.claimRenewal(due.id, 30_000)
  t.ok(claim)
  t.equal(await app.mailboxes.claimRenewal(due.id, 30_000), undefined)
  clock.advance(31_000)
  const taken = await app.mailboxes.claimRenewal(due.id, 30_000)
  t.ok(taken)
  // The first claim ran out and another took it: what the first renewal brings is not written.
  t.equal(await app.mailboxes.renewed(due.id, claim!, before), false)
  t.equal((await app.mailboxes.tokensOf(await mailbox()))!.accessToken, one.accessToken)
  // Connected again meanwhile: the renewal under way writes nothing over the new grant, and no refusal.
  t.equal((await connect(ann.web, provider)).statusCode, 303)
  t.equal(await app.mailboxes.renewed(due.id, taken!, before), false)
  t.equal(await app.mailboxes.renewalRefused(due.id, taken!, 'refused', () => ({ to: 'x', subject: 'x', text: 'x' })), false)
  t.match(await mailbox(), { oauthProblem: null })
})

t.test('a token the servers refuse before it ends is renewed and tried again; a provider gone or unregistered is said on the mailbox', async (t) => {
  const { provider, imap, smtp, app, clock, ann, api, discussions, mailbox } = await desk(t)
  t.equal((await connect(ann.web, provider)).statusCode, 303)
  await imap.deliver(ADDRESS, [customerMail('First', 'First.', 'first')])
  const [first] = await until('the mail taken in', async () => (await discussions()).length === 1 && discussions())

  // The provider forgets the access token (its grant kept): the SMTP server refuses it.
  await provider.forget((await app.mailboxes.tokensOf(await mailbox()))!.accessToken)
  t.equal((await api('POST', `/demo/discussions/${first!.number}/comments`, { body: 'Try this.' })).statusCode, 201)
  t.equal(await app.sendOutbox(), 0)
  t.ok(smtp.state.logins.length > 0 && smtp.state.logins.every((login) => login === `${ADDRESS}:refused`), 'the SMTP server refused the forgotten token')
  const [tried] = await rawRows(app, "select state, attempts from outbox where kind = 'reply_mail'")
  t.match(tried, { state: 'queued', attempts: 1 }, 'a refused sign-in is tried again, not failed for good')
  // Renewed for a refusal only once the token is a minute old (a young one refused is the server's doing).
  clock.advance(61_000)
  t.equal(await app.sendOutbox(), 1, 'sent with a renewed token')
  t.equal(provider.refreshes, 1)
  t.equal(smtp.state.logins.at(-1), `${ADDRESS}:token`)

  // IMAP: a connection made with a token the provider forgot is refused; the next is made with a renewed one.
  clock.advance(61_000)
  const current = await mailbox()
  await provider.forget((await app.mailboxes.tokensOf(current))!.accessToken)
  const settings = (await app.mailboxes.provider('microsoft'))!.settings!
  // Connected again with the same (forgotten) token: the fetcher's connection is made again.
  await app.mailboxes.connectMailbox(ann.site.id, { provider: 'microsoft', address: ADDRESS, settings, tokens: (await app.mailboxes.tokensOf(current))! })
  await until('the refusal of the IMAP server', async () => (await mailbox()).lastError === 'Authentication failed.')
  await until('a renewal', async () => provider.refreshes === 2)
  await imap.deliver(ADDRESS, [customerMail('Second', 'Second.', 'second')])
  await until('the next mail taken in', async () => (await discussions()).length === 2)

  // The provider cannot be reached: tried again later, no refusal written, nobody mailed.
  await provider.stop()
  clock.advance(250_000)
  const unreachable = await until('the fetch says why', async () => (await mailbox()).lastError?.startsWith('Microsoft 365 could not be asked') && mailbox())
  t.match(unreachable, { oauthProblem: null, oauthRenewUntil: null })
  t.equal((await api('POST', `/demo/discussions/${first!.number}/comments`, { body: 'Again.' })).statusCode, 201)
  await app.sendOutbox()
  const [waiting] = await rawRows(app, "select state, last_error from outbox where kind = 'reply_mail' and state = 'queued'")
  t.match(waiting, { last_error: /^waiting: Microsoft 365 could not be asked to renew the mailbox's access/ })

  // Its application is no longer registered (removed behind the service's back): said on the mailbox.
  await rawStatement(app, 'delete from mail_providers', [])
  clock.advance(5 * 60_000)
  await until('the refusal', async () => (await mailbox()).oauthProblem?.startsWith('the mail provider microsoft is no longer registered'))
})

t.test("a Microsoft 365 shared mailbox: connected by an account that may send as it, whose token signs its SMTP in", async (t) => {
  const { provider, smtp, app, ann, api, mailbox } = await desk(t)
  const refused = await connect(ann.web, provider, ADDRESS, { shared: 'not an address' })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, /is not a mail address: give the shared mailbox/)

  const page = await connect(ann.web, provider, ADDRESS, { shared: 'Team@Acme.Example' })
  t.equal(page.headers.location, 'https://help.example.test/demo/admin/mail?connected=team%40acme.example')
  const shared = (await app.mailboxes.mailbox('team@acme.example'))!
  t.match(await app.mailboxes.imapOf(shared), { user: 'team@acme.example' }, 'IMAP opens the shared mailbox')
  t.match(await app.mailboxes.smtpOf(shared), `smtp://support%40acme.example@127.0.0.1:${new URL(smtp.url).port}`, 'SMTP signs in as the account')
  t.equal(await mailbox(), undefined, "the account's own mailbox is not connected")

  // A reply from the shared mailbox: the account's token signs the SMTP server in; the From is the shared address.
  const created = await api('POST', `/demo/categories/${(await app.categories.list(ann.site.id, 0, 1)).categories[0]!.id}/discussions`, { title: 'Order', body: 'Where is it?' })
  t.equal(created.statusCode, 201, created.body)
  // As a customer's discussion of the support site: its replies are mailed to them, from the site's first mailbox.
  await rawStatement(app, 'update discussions set started_on_the_web = true, author_id = (select id from users where email = ?) where number = ?', ['ann@example.test', created.json().number])
  t.equal((await api('POST', `/demo/discussions/${created.json().number}/comments`, { body: 'On its way.' })).statusCode, 201)
  t.equal(await app.sendOutbox(), 1)
  t.same(smtp.state.logins, [`${ADDRESS}:token`])
  t.match(smtp.mails[0]!.raw, /^From: .*<team@acme\.example>/m)
})
