import t, { type Test } from 'tap'
import { buildTestApp, rawRows, rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { PRESETS, createMailOAuth, type MailOAuth, type MailTokens } from '../../lib/mail-oauth.ts'
import { mailAccess, SignInUnavailable } from '../../plugins/mail/oauth.ts'

// Engines: both: the renewal's claim and its conditional writes are the stores', which each engine must keep alike.
// Issue 66: the access of a connected mailbox (plugins/mail/oauth.ts, mailAccess) when the provider
// answers in each way it can: a renewal when due and only then, a refusal said once, a provider that
// cannot be asked while the token in hand is still good (and when it is not), another process's
// renewal waited for, a mailbox removed or connected again meanwhile. The provider here is a stand-in
// that answers as told; the real exchange is test/mail/oauth.test.ts's.

const HOUR = 60 * 60_000
const ADDRESS = 'support@acme.example'
const SETTINGS = { issuer: 'https://login.example.test', clientId: 'id', clientSecret: 'secret', scopes: ['openid'], authorizationParameters: {}, imap: PRESETS.microsoft.imap, smtp: PRESETS.microsoft.smtp }

/** A provider that renews as `answer` says, counting its renewals. */
function standIn(answer: (refreshToken: string, now: number) => Promise<MailTokens>) {
  const asked: string[] = []
  const protocol: MailOAuth = { ...createMailOAuth(), renew: async (_settings, refreshToken, now) => (asked.push(refreshToken), answer(refreshToken, now)) }
  return { protocol, asked }
}

const tokensAt = (now: number, name: string): MailTokens => ({ refreshToken: `refresh-${name}`, accessToken: `access-${name}`, issuedAt: now, expiresAt: now + HOUR })

async function connected(t: Test) {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  await app.mailboxes.addProvider('microsoft', 'Microsoft 365', SETTINGS)
  const { id } = await app.mailboxes.connectMailbox(ann.site.id, { provider: 'microsoft', address: ADDRESS, settings: SETTINGS, tokens: tokensAt(clock(), 'first') })
  const mailbox = async () => (await app.mailboxes.byId(id))!
  const warnings: string[] = []
  const accessWith = (protocol: MailOAuth) => mailAccess({ mailboxes: app.mailboxes, protocol, clock, warn: (_what, message) => void warnings.push(message), mailPage: (site) => `https://help.example.test/${site}/admin/mail` })
  return { app, clock, ann, id, mailbox, warnings, accessWith }
}

t.test('renewed when due (or due within the connection it is for), and only then; a refused young token is the server\'s doing', async (t) => {
  const { clock, mailbox, accessWith, app } = await connected(t)
  const { protocol, asked } = standIn(async (_r, now) => tokensAt(now, `n${asked.length}`))
  const access = accessWith(protocol)
  t.match(await access(await mailbox()), { user: ADDRESS, accessToken: 'access-first' })
  t.match(await access(await mailbox(), true), { accessToken: 'access-first' }, 'forced, but a minute old at most: not renewed')
  t.same(asked, [])
  t.match(await access(await mailbox(), false, 56 * 60_000), { accessToken: 'access-n1' }, 'due within the connection it is for')
  t.same(asked, ['refresh-first'])
  clock.advance(2 * 60_000)
  t.match(await access(await mailbox(), true), { accessToken: 'access-n2' }, 'forced, a token older than a minute')
  clock.advance(56 * 60_000)
  t.match(await access(await mailbox()), { accessToken: 'access-n3' }, 'five minutes before it ends')
  t.match(await app.mailboxes.tokensOf(await mailbox()), { accessToken: 'access-n3', refreshToken: 'refresh-n3' })
  t.equal((await mailbox()).oauthRenewUntil, null, 'the claim let go')
})

t.test('a provider that cannot be asked: the token in hand while it is good, then a wait; no refusal, nobody mailed', async (t) => {
  const { clock, mailbox, accessWith, warnings, app } = await connected(t)
  const access = accessWith(standIn(async () => Promise.reject(new TypeError('fetch failed'))).protocol)
  clock.advance(56 * 60_000)
  t.match(await access(await mailbox()), { accessToken: 'access-first' }, 'four minutes left: signed in with it')
  t.match(warnings, [/could not renew a connected mailbox's access/])
  clock.advance(3.5 * 60_000)
  const failure = await access(await mailbox()).catch((error: unknown) => error)
  t.type(failure, SignInUnavailable)
  t.match(failure, { lasting: false, message: /^Microsoft 365 could not be asked to renew the mailbox's access \(fetch failed\)/ })
  t.match(await mailbox(), { oauthProblem: null, oauthRenewUntil: null })
  t.same(await rawRows(app, "select id from outbox where kind = 'mailbox_problem'"), [])
  // A 5xx or a 429 with an OAuth error code is the same: no refusal.
  const busy = accessWith(standIn(async () => Promise.reject(Object.assign(new Error('busy'), { error: 'invalid_request', status: 503 }))).protocol)
  await t.rejects(busy(await mailbox()), { lasting: false, message: /could not be asked/ })
  t.equal((await mailbox()).oauthProblem, null)
})

t.test('a refusal is written once, mailed once to the administrators, and stops every later use without asking', async (t) => {
  const { clock, mailbox, accessWith, warnings, app } = await connected(t)
  const { protocol, asked } = standIn(async () => Promise.reject(Object.assign(new Error('refused'), { error: 'invalid_grant', error_description: 'AADSTS50173: the grant was revoked', status: 400 })))
  const access = accessWith(protocol)
  clock.advance(HOUR)
  await t.rejects(access(await mailbox()), { lasting: true, message: /^Microsoft 365 refused to renew the mailbox's access \(invalid_grant: AADSTS50173/ })
  await t.rejects(access(await mailbox()), { lasting: true, message: /refused to renew/ })
  t.equal(asked.length, 1, 'asked once')
  const mails = await rawRows(app, "select payload from outbox where kind = 'mailbox_problem'")
  t.equal(mails.length, 1)
  t.match(JSON.parse(String(mails[0]!.payload)), { to: 'ann@example.test', subject: `The mailbox ${ADDRESS} cannot sign in: connect it again`, text: /https:\/\/help\.example\.test\/demo\/admin\/mail/ })
  t.equal(warnings.length, 1)
})

t.test("another process's renewal is waited for and its tokens taken; a mailbox removed or connected again meanwhile wins", async (t) => {
  const { app, clock, ann, id, mailbox, accessWith } = await connected(t)
  const { protocol, asked } = standIn(async (_r, now) => tokensAt(now, 'ours'))
  const access = accessWith(protocol)
  clock.advance(HOUR)
  // Another process holds the claim and brings its tokens a moment later.
  const theirs = (await app.mailboxes.claimRenewal(id, 30_000))!
  const waiting = access(await mailbox())
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(await app.mailboxes.renewed(id, theirs, tokensAt(clock(), 'theirs')), true)
  t.match(await waiting, { accessToken: 'access-theirs' })
  t.same(asked, [], 'not asked again')

  // Removed while another process renews: said, not waited for to the end.
  clock.advance(HOUR)
  await app.mailboxes.claimRenewal(id, 30_000)
  const gone = access(await mailbox())
  await new Promise((resolve) => setTimeout(resolve, 300))
  await app.mailboxes.removeMailbox(ann.site.id, ADDRESS)
  await t.rejects(gone, { lasting: true, message: 'the mailbox was removed' })

  // Connected again while our renewal is under way: the new connection's tokens, not ours.
  const again = await app.mailboxes.connectMailbox(ann.site.id, { provider: 'microsoft', address: ADDRESS, settings: SETTINGS, tokens: tokensAt(clock() - HOUR, 'old') })
  const racing = accessWith(
    standIn(async (_r, now) => {
      await app.mailboxes.connectMailbox(ann.site.id, { provider: 'microsoft', address: ADDRESS, settings: SETTINGS, tokens: tokensAt(now, 'reconnected') })
      return tokensAt(now, 'late')
    }).protocol,
  )
  t.match(await racing((await app.mailboxes.byId(again.id))!), { accessToken: 'access-reconnected' })
  t.match(await app.mailboxes.tokensOf((await app.mailboxes.byId(again.id))!), { accessToken: 'access-reconnected' })
})

t.test('tokens or an application that cannot be opened, or an application removed, are said on the mailbox', async (t) => {
  const { app, clock, mailbox, accessWith } = await connected(t)
  const access = accessWith(standIn(async (_r, now) => tokensAt(now, 'n')).protocol)
  await rawStatement(app, "update mailboxes set oauth_tokens = 'v1.not-ours'", [])
  await t.rejects(access(await mailbox()), { lasting: true, message: /sealed under another server key: connect it again/ })
  await app.mailboxes.connectMailbox((await mailbox()).siteId, { provider: 'microsoft', address: ADDRESS, settings: SETTINGS, tokens: tokensAt(clock(), 'first') })
  await rawStatement(app, "update mail_providers set settings = 'v1.not-ours'", [])
  clock.advance(HOUR)
  await t.rejects(access(await mailbox()), { lasting: true, message: /application is sealed under another server key: register it again/ })
  t.match((await mailbox()).oauthProblem, /sealed under another server key/)
})
