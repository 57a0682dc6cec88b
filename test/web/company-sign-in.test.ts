import t, { type Test } from 'tap'
import { buildTestApp, newSite, rawStatement, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, legacyTokenOf } from '../fixtures/credentials.ts'
import { DESK, identityProvider, subjectOf, type IdentityProvider } from '../fixtures/identity-provider.ts'
import { freePort } from '../fixtures/server.ts'
import { enrollAuthenticator, personWithPassword, webClient } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: who a provider's answer signs in (links, newcomers of a domain, refusals) is decided
// in one transaction of the store, and the sessions it makes are ended by its back-channel logout.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 73: staff sign in with the company's account, against a provider of the tests
// (oidc-provider: test/fixtures/identity-provider.ts) through the pages as a browser drives them;
// the whole walk in Chromium is test/web/company-sign-in-browser.test.ts.

const CALLBACK = 'https://help.example.test/demo/login/provider/callback'
const MINUTE = 60_000
const TOKEN_FORM = { name: 'Nightly export', access: 'read', expires: '30' }

type Web = ReturnType<typeof webClient>

/** Ann (an administrator, ann@acme.example, with a password), the site's provider "Acme", and the provider of the tests; `listen`: the app on a socket, for the provider's back-channel logout. */
async function desk(t: Test, { listen = false, provider = {} }: { listen?: boolean; provider?: Record<string, unknown> } = {}) {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@acme.example' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const port = await freePort()
  const acme = await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'oidc', issuer: `http://127.0.0.1:${port}`, clientId: DESK.id, clientSecret: DESK.secret, ...provider })
  let logoutUri: string | undefined
  if (listen) {
    await app.listen({ port: 0, host: '127.0.0.1' })
    logoutUri = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/login/provider/${acme.id}/logout`
  }
  const idp = await identityProvider(t, { redirectUri: CALLBACK, logoutUri, port })
  return { app, clock, ann, acme, idp, site: ann.site }
}

/** Signs in with the company's account on the sign-in page as `web`: the service's answer to the provider's redirect back. */
async function companySignIn(web: Web, idp: IdentityProvider, login: string, providerId: number, next = '') {
  await web.get('/demo/login')
  const started = await web.post('/demo/login/provider', { provider: String(providerId), next })
  if (started.statusCode !== 303) return started
  return web.get(await idp.signIn(started.headers.location as string, login))
}

/** Whether `web` is signed in on the site's queue. */
const onQueue = async (web: Web) => (await web.get('/demo/discussions')).statusCode === 200

t.test('Ann signs in with the company account and lands on the queue; her subject is linked, and checked after', async (t) => {
  const { app, ann, acme, idp } = await desk(t)
  const web = webClient(app)
  const login = await web.get('/demo/login')
  t.match(login.body, /Sign in with Acme/, 'the button is on the sign-in page')

  const started = await web.post('/demo/login/provider', { provider: String(acme.id) })
  t.equal(started.statusCode, 303)
  const to = new URL(started.headers.location as string)
  t.equal(to.origin, idp.issuer)
  t.match(Object.fromEntries(to.searchParams), { client_id: DESK.id, response_type: 'code', code_challenge_method: 'S256', redirect_uri: CALLBACK, scope: 'openid email profile' })
  t.ok(to.searchParams.get('state') && to.searchParams.get('nonce'), 'state and nonce')
  t.notOk(to.searchParams.has('prompt'), 'a sign-in asks nothing more of the provider')

  const back = await web.get(await idp.signIn(to.href, 'ann@acme.example'))
  t.equal(back.statusCode, 303, back.body)
  t.equal(back.headers.location, 'https://help.example.test/demo/discussions')
  t.ok(await onQueue(web), 'on the queue')
  const { events } = await app.securityLog.list({ userId: ann.user.id, offset: 0, limit: 10 })
  t.same(events.map((e) => e.kind), ['sign_in_succeeded', 'provider_linked'])
  t.match(events[0]!.detail, { with: 'Acme' })
  t.equal(await app.signInProviders.subjectOf(acme.id, ann.user.id), subjectOf('ann@acme.example'))

  // The company gives her address to another account: the link, not the address, says who it is.
  idp.accounts.set('impostor', { email: 'ann@acme.example', email_verified: true })
  const other = webClient(app)
  const refused = await companySignIn(other, idp, 'impostor', acme.id)
  t.equal(refused.statusCode, 403)
  t.match(refused.body, /another account than the one linked to your address/)
  t.notOk(await onQueue(other), 'not signed in')

  // Ann's own account again, in a new browser: signed in by her subject.
  const again = webClient(app)
  t.equal((await companySignIn(again, idp, 'ann@acme.example', acme.id)).statusCode, 303)
  t.ok(await onQueue(again))
})

t.test('refused: an unverified address, a customer, a stranger, a disabled account, and another site\'s provider', async (t) => {
  const { app, site, acme, idp } = await desk(t)
  const refusal = async (login: string, words: RegExp, status = 403) => {
    const web = webClient(app)
    const answer = await companySignIn(web, idp, login, acme.id)
    t.equal(answer.statusCode, status, login)
    t.match(answer.body, words, login)
    t.notOk(await onQueue(web), `${login}: not signed in`)
  }
  const bob = await personWithPassword(app, { email: 'bob@acme.example' })
  idp.accounts.set('bob@acme.example', { email: 'bob@acme.example', email_verified: false })
  await refusal('bob@acme.example', /says your email address is not verified/)
  idp.accounts.set('nomail', { email_verified: true })
  await refusal('nomail', /did not say your email address/)
  await personWithPassword(app, { email: 'carol@customer.example', role: 'customer' })
  await refusal('carol@customer.example', /signed you in as a customer of this site/)
  await refusal('stranger@elsewhere.example', /you are not on this site.{1,5}s staff/)
  t.notOk(await app.users.find('stranger@elsewhere.example'), 'no account made for a stranger')
  await app.users.setDisabled(bob.email, true)
  idp.accounts.delete('bob@acme.example')
  await refusal('bob@acme.example', /your account here is switched off/)
  const failed = await app.securityLog.list({ siteId: site.id, kinds: ['sign_in_failed'], offset: 0, limit: 20 })
  t.same(failed.events.map((e) => e.detail.refused).sort(), ['customer', 'disabled', 'no_email', 'not_staff', 'unverified'])

  // Another site's provider, named on this site's form: not this site's.
  const other = await newSite(app, 'other')
  const theirs = await app.signInProviders.add(other.id, { name: 'Theirs', kind: 'oidc', issuer: idp.issuer, clientId: DESK.id, clientSecret: DESK.secret })
  const web = webClient(app)
  await web.get('/demo/login')
  const crossed = await web.post('/demo/login/provider', { provider: String(theirs.id) })
  t.equal(crossed.statusCode, 404)
  t.match(crossed.body, /no such sign-in provider/)
  t.notMatch((await web.get('/demo/login')).body, /Sign in with Theirs/, "another site's button is not on this one's page")
  for (const odd of ['', 'x', '-1', '99999999999', '1e3']) t.equal((await web.post('/demo/login/provider', { provider: odd })).statusCode, 404, `provider ${JSON.stringify(odd)}`)
})

t.test('the answer is bound to the browser: a replayed, a swapped or a planted answer is refused, and so is a wrong nonce or an ID token of another application', onSqlite('an answer bound to the browser that asked for it'), async (t) => {
  const { app, acme, idp } = await desk(t)
  const web = webClient(app)
  await web.get('/demo/login')
  const started = await web.post('/demo/login/provider', { provider: String(acme.id) })
  const back = await idp.signIn(started.headers.location as string, 'ann@acme.example')

  // Planted: the answer followed in another browser (a link sent to a victim) signs nobody in.
  const victim = webClient(app)
  const planted = await victim.get(back)
  t.equal(planted.statusCode, 400)
  t.match(planted.body, /was not asked for in this browser/)
  t.notOk(await onQueue(victim))

  t.equal((await web.get(back)).statusCode, 303, 'the browser that asked is signed in')
  t.ok(await onQueue(web))
  await web.post('/demo/logout')
  const replayed = await web.get(back)
  t.equal(replayed.statusCode, 400, 'an answer is taken once')
  t.notOk(await onQueue(web))

  // Swapped: the browser's own sign-in under way, another sign-in's answer brought to it.
  const mine = webClient(app)
  await mine.get('/demo/login')
  await mine.post('/demo/login/provider', { provider: String(acme.id) })
  const theirs = webClient(app)
  await theirs.get('/demo/login')
  const theirStart = await theirs.post('/demo/login/provider', { provider: String(acme.id) })
  const swapped = await mine.get(await idp.signIn(theirStart.headers.location as string, 'ann@acme.example'))
  t.equal(swapped.statusCode, 400)
  t.match(swapped.body, /was not asked for in this browser/)
  t.notOk(await onQueue(mine))

  // The provider's answer carries an ID token of another sign-in (its nonce), or of another application.
  for (const [what, token] of [
    ['a wrong nonce', await idp.idTokenOf('ann@acme.example', 'another sign-in')],
    ['an ID token for another client', await idp.idTokenOf('ann@acme.example', 'other application')],
  ] as const) {
    const browser = webClient(app)
    idp.swapNextIdToken(token)
    const answer = await companySignIn(browser, idp, 'ann@acme.example', acme.id)
    t.equal(answer.statusCode, 401, what)
    t.match(answer.body, /Acme.{1,5}s answer could not be accepted/, what)
    t.notOk(await onQueue(browser), `${what}: not signed in`)
  }
  const { events } = await app.securityLog.list({ kinds: ['sign_in_failed'], offset: 0, limit: 10 })
  t.equal(events.filter((e) => e.detail.with === 'Acme').length, 2, 'each refused answer is in the security log')

  // The provider says no (the person cancelled): its words, nobody signed in.
  const cancelled = webClient(app)
  await cancelled.get('/demo/login')
  const start = new URL((await cancelled.post('/demo/login/provider', { provider: String(acme.id) })).headers.location as string)
  const no = await cancelled.get(`${CALLBACK}?error=access_denied&error_description=${encodeURIComponent('The person said no')}&state=${start.searchParams.get('state')}`)
  t.equal(no.statusCode, 401)
  t.match(no.body, /Acme did not sign you in \(access_denied: The person said no\)/)
})

t.test('a new person of a named domain joins the staff as a collaborator; one of another domain does not', async (t) => {
  const { app, clock, site, idp, acme } = await desk(t, { provider: { domains: ['acme.example'], domainRole: 'collaborator' } })
  idp.accounts.set('newbie@acme.example', { email: 'newbie@acme.example', email_verified: true, name: 'New Bie' })
  const web = webClient(app)
  t.equal((await companySignIn(web, idp, 'newbie@acme.example', acme.id)).statusCode, 303)
  const newbie = (await app.users.find('newbie@acme.example'))!
  t.equal(newbie.name, 'New Bie')
  t.same(await app.users.staffRole(site.id, newbie.id), 'collaborator')
  t.ok(await onQueue(web), 'on the queue')
  t.equal((await app.securityLog.list({ userId: newbie.id, kinds: ['staff_added'], offset: 0, limit: 5 })).events.length, 1)
  const [joined] = await app.securityLog.changes({ siteId: site.id, action: 'team.joined', limit: 1 })
  t.match(joined, { target: 'newbie@acme.example', detail: { role: 'collaborator', by: 'Acme' } })

  // A collaborator confirms it is them at the provider too (their own account's forms).
  clock.advance(16 * MINUTE)
  await web.get('/demo/confirm?for=token')
  const toConfirm = await web.post('/demo/confirm/provider', { for: 'token', next: '/demo/profile/api_tokens' })
  t.equal(toConfirm.statusCode, 303)
  t.equal(new URL(toConfirm.headers.location as string).origin, idp.issuer)

  const other = webClient(app)
  const refused = await companySignIn(other, idp, 'newbie@acme.example.evil.example', acme.id)
  t.equal(refused.statusCode, 403, 'a domain that ends like it is another domain')
  t.notOk(await app.users.find('newbie@acme.example.evil.example'))
})

t.test("with the company's account only: the password form, Basic and the legacy token are refused to the staff", async (t) => {
  const { app, ann, acme, idp, site } = await desk(t)
  const bob = await supporterWithToken(app, { email: 'bob@acme.example' })
  await app.users.setAdministrator(site.id, bob.user.id, true)
  const patch = (body: object) => app.inject({ method: 'PATCH', url: '/demo/policy', headers: bob.bearer, payload: body })

  // Bob has never signed in with the company's account: switching it on would lock him out.
  const locked = await patch({ company_sign_in_only: true })
  t.equal(locked.statusCode, 409)
  t.match(locked.json().message, /ign in with the company.{1,5}s account yourself first/)
  const annWeb = webClient(app)
  t.equal((await companySignIn(annWeb, idp, 'ann@acme.example', acme.id)).statusCode, 303)
  const byPassword = webClient(app)
  await byPassword.signIn(ann.email, ann.password)
  const carolBefore = await personWithPassword(app, { email: 'carol@customer.example', role: 'customer' })
  const carolWeb = webClient(app)
  await carolWeb.signIn(carolBefore.email, carolBefore.password)
  // Ann has: on the page, she switches it on.
  await annWeb.get('/demo/admin/sign_in')
  const on = await annWeb.post('/demo/admin/sign_in/policy', { company_only: 'on' })
  t.equal(on.statusCode, 303, on.body)
  t.equal((await app.sites.find('demo'))!.companySignInOnly, true)
  t.notOk(await onQueue(byPassword), "her session of a password ended with the switch")
  t.ok(await onQueue(annWeb), "the company's account's session stays")
  t.equal((await carolWeb.get('/demo/help')).statusCode, 200, "a customer's session is not concerned")
  t.match((await annWeb.get(on.headers.location as string)).body, /The staff sign in with the company.{1,5}s account only/)
  t.equal((await app.securityLog.list({ userId: ann.user.id, kinds: ['policy_changed'], offset: 0, limit: 1 })).events[0]!.detail.company_sign_in_only, 'false -> true')
  t.equal((await app.inject({ method: 'GET', url: '/demo/policy', headers: bob.bearer })).json().company_sign_in_only, true)
  t.match((await annWeb.get('/demo/admin/policy')).body, /data-company-only>The staff sign in with the company/, 'the token policy page says the switches below are overruled')

  const password = webClient(app)
  const form = await password.signIn(ann.email, ann.password)
  t.equal(form.statusCode, 403)
  t.match(form.body, /sign in with the company.{1,5}s account/)
  t.notOk(await onQueue(password))
  const wrong = await webClient(app).signIn(ann.email, 'not her password')
  t.equal(wrong.statusCode, 403, 'the same answer whether the password was right or not')

  const accept = { accept: V1 }
  const byBasic = await app.inject({ method: 'GET', url: '/demo/discussions', headers: basic(ann.email, ann.password) })
  t.equal(byBasic.statusCode, 401)
  t.match(byBasic.body, /Basic authentication with email and password is switched off for this site/)
  const legacy = await legacyTokenOf(app, ann.user.id)
  const byLegacy = await app.inject({ method: 'GET', url: '/demo/discussions', headers: { ...accept, 'x-service-auth': legacy.value } })
  t.equal(byLegacy.statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: '/demo/discussions', headers: bob.bearer })).statusCode, 200, 'a personal token still works')
  // MCP is a door of the API: Basic is refused there too, before any tool runs; a personal token is taken.
  const mcp = (authorization: string) =>
    app.inject({ method: 'POST', url: '/demo/mcp', headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
  const mcpBasic = await mcp(basic(ann.email, ann.password).authorization)
  t.equal(mcpBasic.statusCode, 401)
  t.match(mcpBasic.headers['www-authenticate'], /switched off for this site/)
  t.equal((await mcp(bob.bearer.authorization)).statusCode, 200, 'MCP with a personal token')

  // A customer is not concerned: her password still signs her in.
  t.equal((await webClient(app).signIn(carolBefore.email, carolBefore.password)).statusCode, 303)

  // The last provider stays while it is on; off again, the password works.
  const removal = await app.inject({ method: 'DELETE', url: `/demo/sign_in_providers/${acme.id}`, headers: bob.bearer })
  t.equal(removal.statusCode, 409)
  t.equal((await patch({ company_sign_in_only: false })).statusCode, 200)
  t.equal((await webClient(app).signIn(ann.email, ann.password)).statusCode, 303)
})

t.test('our second factor is asked after the provider, unless the site trusts the provider\'s and it says it asked one', async (t) => {
  const { app, clock, ann, acme, idp, site } = await desk(t)
  const own = webClient(app)
  await own.signIn(ann.email, ann.password)
  await enrollAuthenticator(own, clock())
  const held = webClient(app)
  const answer = await companySignIn(held, idp, 'ann@acme.example', acme.id)
  t.equal(answer.statusCode, 303)
  t.match(answer.headers.location, /\/demo\/login\/second_step$/)
  t.notOk(await onQueue(held), 'not signed in before the second step')

  await app.signInProviders.update(site.id, acme.id, { trustMfa: true })
  idp.accounts.set('ann@acme.example', { email: 'ann@acme.example', email_verified: true, amr: ['pwd'] })
  const passwordOnly = webClient(app)
  t.match((await companySignIn(passwordOnly, idp, 'ann@acme.example', acme.id)).headers.location, /second_step$/, 'a password alone at the provider is not a second factor')

  idp.accounts.set('ann@acme.example', { email: 'ann@acme.example', email_verified: true, amr: ['pwd', 'otp'] })
  const trusted = webClient(app)
  const straight = await companySignIn(trusted, idp, 'ann@acme.example', acme.id)
  t.equal(straight.headers.location, 'https://help.example.test/demo/discussions', "the provider's second factor stands for ours")
  t.ok(await onQueue(trusted))
  const [event] = (await app.securityLog.list({ userId: ann.user.id, kinds: ['sign_in_succeeded'], offset: 0, limit: 1 })).events
  t.match(event!.detail, { with: 'Acme', second_factor: 'Acme' })

  // A site that requires a second factor of its staff: the provider's, trusted, is that factor.
  await app.sites.setPolicy(site.id, { staffSecondFactor: true })
  const newbie = await personWithPassword(app, { email: 'dan@acme.example' })
  idp.accounts.set('dan@acme.example', { email: 'dan@acme.example', email_verified: true, amr: ['mfa', 'pwd'] })
  const dan = webClient(app)
  await companySignIn(dan, idp, 'dan@acme.example', acme.id)
  t.ok(await onQueue(dan), 'not held to add one of ours')
  idp.accounts.set('dan@acme.example', { email: 'dan@acme.example', email_verified: true })
  const danAgain = webClient(app)
  await companySignIn(danAgain, idp, 'dan@acme.example', acme.id)
  t.equal((await danAgain.get('/demo/discussions')).headers.location, 'https://help.example.test/demo/profile', 'without the provider saying so, held to add one')
  t.ok(newbie)
})

t.test('sudo mode sends Ann back to the provider to sign in anew; another account of the company confirms nothing', async (t) => {
  const { app, clock, acme, idp } = await desk(t)
  const web = webClient(app)
  await companySignIn(web, idp, 'ann@acme.example', acme.id)
  t.equal((await web.createToken(TOKEN_FORM)).statusCode, 201, 'within the minutes of signing in')
  clock.advance(16 * MINUTE)
  const asked = await web.createToken({ ...TOKEN_FORM, name: 'later' })
  t.equal(asked.statusCode, 303)
  const page = await web.get(asked.headers.location as string)
  t.match(page.body, /Confirm at Acme/)
  t.notMatch(page.body, /name="password"/, 'no password asked')
  t.equal((await web.post('/demo/confirm', { password: 'anything', for: 'token', next: '/demo/profile/api_tokens' })).statusCode, 403, 'a password does not confirm it')

  const logins = idp.logins
  const toProvider = await web.post('/demo/confirm/provider', { for: 'token', next: '/demo/profile/api_tokens' })
  t.equal(toProvider.statusCode, 303)
  const url = new URL(toProvider.headers.location as string)
  t.equal(url.searchParams.get('prompt'), 'login')
  t.equal(url.searchParams.get('max_age'), '0')
  const back = await web.get(await idp.signIn(url.href, 'ann@acme.example'))
  t.equal(idp.logins, logins + 1, 'the provider asked her to sign in again')
  t.equal(back.headers.location, 'https://help.example.test/demo/profile/api_tokens')
  t.equal((await web.createToken({ ...TOKEN_FORM, name: 'confirmed' })).statusCode, 201)

  // Someone else of the company signs in at the provider's page: Ann's session is not confirmed.
  clock.advance(16 * MINUTE)
  await web.get('/demo/confirm?for=token')
  const other = await web.post('/demo/confirm/provider', { for: 'token', next: '/demo/profile/api_tokens' })
  const crossed = await web.get(await idp.signIn(other.headers.location as string, 'mallory@acme.example'))
  t.equal(crossed.statusCode, 403)
  t.match(crossed.body, /did not sign you in again as yourself/)
  t.equal((await web.createToken({ ...TOKEN_FORM, name: 'not confirmed' })).statusCode, 303, 'still to confirm')
})

t.test("a session of the company's account acts on this site only: the account's password, name, legacy token and second factors are not reached", onSqlite("the forms refused to a session of the company's account"), async (t) => {
  const { app, acme, idp } = await desk(t)
  const web = webClient(app)
  await companySignIn(web, idp, 'ann@acme.example', acme.id)
  const profile = await web.get('/demo/profile')
  t.match(profile.body, /data-legacy-company/)
  t.notMatch(profile.body, /id="legacy-token"/, 'the legacy token is not shown')
  for (const [path, form] of [
    ['/demo/profile/password', { current: 'x', password: 'a new password here', repeated: 'a new password here' }],
    ['/demo/profile/name', { name: 'Mallory' }],
    ['/demo/profile/reset_api_token', {}],
    ['/demo/profile/two_factor/totp', { name: 'Phone' }],
    ['/demo/profile/two_factor/recovery_codes', {}],
  ] as const) {
    await web.get('/demo/profile')
    const refused = await web.post(path, form)
    t.equal(refused.statusCode, 403, path)
    t.match(refused.body, /changed in a session of your own/, path)
  }
  t.equal((await web.get('/demo/profile/reset_api_token')).statusCode, 403)
  t.equal((await app.users.find('ann@acme.example'))!.name !== 'Mallory', true, 'the name stays')
  t.equal(await app.secondFactors.has((await app.users.find('ann@acme.example'))!.id), false, 'no factor added')
})

t.test("the provider's back-channel logout ends the sessions it made, and nothing else's", async (t) => {
  const { app, ann, acme, idp } = await desk(t, { listen: true })
  const web = webClient(app)
  await companySignIn(web, idp, 'ann@acme.example', acme.id)
  const byPassword = webClient(app)
  await byPassword.signIn(ann.email, ann.password)
  t.ok(await onQueue(web))

  const told = await idp.signOut('ann@acme.example')
  t.same(told, [200], 'the provider told the service, which took it')
  t.notOk(await onQueue(web), 'the session the provider made is ended')
  t.ok(await onQueue(byPassword), 'her session by password is not the provider\'s')
  t.equal((await app.securityLog.list({ userId: ann.user.id, kinds: ['signed_out_by_provider'], offset: 0, limit: 1 })).events.length, 1)

  // Tokens of the provider's signing: by subject alone it ends her provider's sessions; each is taken once; one not of a logout is refused.
  const again = webClient(app)
  await companySignIn(again, idp, 'ann@acme.example', acme.id)
  t.ok(await onQueue(again))
  const post = (token: string) => app.inject({ method: 'POST', url: `/demo/login/provider/${acme.id}/logout`, payload: `logout_token=${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  const bySubject = await idp.logoutToken({ sub: subjectOf('ann@acme.example') })
  t.equal((await post(bySubject)).statusCode, 200)
  t.notOk(await onQueue(again), 'ended by her subject')
  t.ok(await onQueue(byPassword), 'her own session stays')
  t.match((await post(bySubject)).json(), { error: 'invalid_request', error_description: 'this logout token was used already' })
  for (const [what, claims] of [
    ['no logout event', { sub: subjectOf('ann@acme.example'), event: false }],
    ['a nonce', { sub: subjectOf('ann@acme.example'), nonce: 'n' }],
    ['no jti', { sub: subjectOf('ann@acme.example'), jti: null }],
    ['neither subject nor session', {}],
  ] as const) {
    const refused = await post(await idp.logoutToken(claims))
    t.equal(refused.statusCode, 400, what)
  }
  t.equal((await post(await idp.logoutToken({ sub: 'nobody-here' }))).statusCode, 200, 'a subject nobody is linked to ends nothing')

  // A logout token of nobody's making, or to another site's address.
  const forged = await app.inject({ method: 'POST', url: `/demo/login/provider/${acme.id}/logout`, payload: 'logout_token=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(forged.statusCode, 400)
  t.equal(forged.json().error, 'invalid_request')
  const none = await app.inject({ method: 'POST', url: `/demo/login/provider/${acme.id}/logout`, payload: '', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(none.statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: '/demo/login/provider/9999999999/logout', payload: 'logout_token=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode, 404, 'an id past the column, no crash')
  await newSite(app, 'other')
  t.equal((await app.inject({ method: 'POST', url: `/other/login/provider/${acme.id}/logout`, payload: 'logout_token=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode, 404)
})

t.test('the providers through the API: administrators only, the secret never read back, each refusal in words, both outsiders kept out', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await supporterWithToken(app)
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const supporter = await supporterWithToken(app)
  const outsider = await supporterWithToken(app, { site: 'other' })
  await app.users.setAdministrator(outsider.site.id, outsider.user.id, true)
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who = admin, payload?: object) => app.inject({ method, url, headers: who.bearer, ...(payload && { payload }) })

  const made = await call('POST', '/demo/sign_in_providers', admin, { name: 'Acme Google', kind: 'google', client_id: 'acme.apps.googleusercontent.com', client_secret: 'GOCSPX-secret-of-acme', domains: ['Acme.example', '@acme.org'], domain_role: 'supporter' })
  t.equal(made.statusCode, 201, made.body)
  const provider = made.json()
  t.match(provider, { name: 'Acme Google', kind: 'google', issuer: 'https://accounts.google.com', domains: ['acme.example', 'acme.org'], domain_role: 'supporter', trust_mfa: false, redirect_uri: CALLBACK })
  t.notMatch(made.body, /GOCSPX/, 'the secret is never read back')
  t.equal(made.headers.location, provider.href)
  const stored = (await app.signInProviders.find(admin.site.id, provider.id))!
  t.notMatch(stored.secret, /GOCSPX/, 'kept sealed')

  const microsoft = await call('POST', '/demo/sign_in_providers', admin, { name: 'Acme Entra', kind: 'microsoft', tenant: 'acme.onmicrosoft.com', client_id: 'c1', client_secret: 's1' })
  t.equal(microsoft.json().issuer, 'https://login.microsoftonline.com/acme.onmicrosoft.com/v2.0')
  for (const [body, field] of [
    [{ name: 'Any', kind: 'microsoft', tenant: 'organizations', client_id: 'c', client_secret: 's' }, 'tenant'],
    [{ name: 'Plain', kind: 'oidc', issuer: 'http://sso.acme.example', client_id: 'c', client_secret: 's' }, 'issuer'],
    [{ name: 'Bad', kind: 'oidc', issuer: 'https://sso.acme.example', client_id: 'c', client_secret: 's', domains: ['not a domain'] }, 'domains'],
    [{ name: 'Acme Google', kind: 'google', client_id: 'c', client_secret: 's' }, 'name'],
    [{ name: 'Local', kind: 'oidc', issuer: 'http://127.0.0.1:8080', client_id: 'c', client_secret: 's' }, 'public address'],
    [{ name: 'Inside', kind: 'oidc', issuer: 'https://10.0.0.5/realms/x', client_id: 'c', client_secret: 's' }, 'public address'],
    [{ name: 'Metadata', kind: 'oidc', issuer: 'https://169.254.169.254', client_id: 'c', client_secret: 's' }, 'public address'],
    [{ name: 'Here', kind: 'oidc', issuer: 'https://localhost:8443', client_id: 'c', client_secret: 's' }, 'public address'],
    [{ name: 'Mapped', kind: 'oidc', issuer: 'https://[::ffff:127.0.0.1]', client_id: 'c', client_secret: 's' }, 'public address'],
    [{ name: 'Any Entra', kind: 'oidc', issuer: 'https://login.microsoftonline.com/common/v2.0', client_id: 'c', client_secret: 's' }, 'kind microsoft'],
  ] as const) {
    const refused = await call('POST', '/demo/sign_in_providers', admin, body)
    t.ok(refused.statusCode === 400 || refused.statusCode === 409, `${field}: ${refused.statusCode}`)
    t.match(refused.body, new RegExp(field === 'name' ? 'named Acme Google already' : field), field)
    t.notMatch(refused.body, /Something went wrong/, field)
  }
  t.equal((await call('POST', '/demo/sign_in_providers', admin, { name: 'X', kind: 'saml', client_id: 'c', client_secret: 's' })).statusCode, 400)

  const changed = await call('PATCH', `/demo/sign_in_providers/${provider.id}`, admin, { trust_mfa: true, client_secret: 'GOCSPX-new-secret' })
  t.equal(changed.json().trust_mfa, true)
  const [line] = await app.securityLog.changes({ siteId: admin.site.id, limit: 1 })
  t.match(line, { action: 'sign_in_provider.changed', detail: { after: { trust_mfa: true, client_secret: 'replaced' } } })
  t.notMatch(JSON.stringify(line), /GOCSPX/, 'the record names no secret')

  t.equal((await call('GET', '/demo/sign_in_providers', supporter)).statusCode, 403, 'a supporter may not read them')
  t.equal((await call('POST', '/demo/sign_in_providers', supporter, { name: 'Mine', kind: 'google', client_id: 'c', client_secret: 's' })).statusCode, 403)
  t.equal((await call('GET', '/demo/sign_in_providers', outsider)).statusCode, 401, "another site's administrator's token is not this site's")
  t.equal((await call('GET', `/other/sign_in_providers/${provider.id}`, outsider)).statusCode, 404, "nor is this site's provider theirs")
  t.equal((await call('DELETE', `/other/sign_in_providers/${provider.id}`, outsider)).statusCode, 404)

  t.equal((await call('GET', '/demo/sign_in_providers')).json().sign_in_providers.length, 2)
  t.match((await call('GET', `/demo/sign_in_providers/${provider.id}`)).json(), { id: provider.id, name: 'Acme Google', trust_mfa: true })
  t.equal((await call('DELETE', `/demo/sign_in_providers/${provider.id}`)).statusCode, 204)
  t.equal((await call('GET', `/demo/sign_in_providers/${provider.id}`)).statusCode, 404)
  t.equal((await app.inject({ method: 'PATCH', url: '/demo/policy', headers: admin.bearer, payload: { company_sign_in_only: true } })).statusCode, 409, 'nobody could sign in: refused until someone has')
})

t.test('Administration -> Sign-in: a provider added, changed and removed on the page, each refusal said, both outsiders kept out', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@acme.example' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const { site } = ann
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  const page = await web.get('/demo/admin/sign_in')
  t.match(page.body, /<code data-redirect-address>https:\/\/help\.example\.test\/demo\/login\/provider\/callback<\/code>/)

  const form = { kind: 'microsoft', name: 'Acme Entra', tenant: 'acme.onmicrosoft.com', client_id: 'c-1', client_secret: 'entra-secret-of-acme', domains: 'acme.example, acme.org', domain_role: 'collaborator', trust_mfa: 'yes' }
  const added = await web.post('/demo/admin/sign_in', form)
  t.equal(added.statusCode, 303, added.body)
  const [provider] = await app.signInProviders.list(site.id)
  t.match(provider, { name: 'Acme Entra', kind: 'microsoft', issuer: 'https://login.microsoftonline.com/acme.onmicrosoft.com/v2.0', clientId: 'c-1', domainRole: 'collaborator', trustMfa: true })
  t.same(JSON.parse(provider!.domains), ['acme.example', 'acme.org'])
  const listed = await web.get(added.headers.location as string)
  t.match(listed.body, /The provider is added/)
  t.match(listed.body, new RegExp(`/demo/login/provider/${provider!.id}/logout`), 'its back-channel logout address is shown')
  t.notMatch(listed.body, /entra-secret-of-acme/, 'the secret is never shown')

  for (const [change, words, status] of [
    [{ ...form, name: 'Any', tenant: 'common' }, /The tenant must be your company/, 400],
    [{ ...form, name: 'Acme Entra' }, /named Acme Entra already/, 409],
    [{ ...form, name: 'Bad', domains: 'acme example!' }, /is not a domain name/, 400],
    [{ ...form, kind: 'saml' }, /Choose the kind of provider/, 400],
  ] as const) {
    const refused = await web.post('/demo/admin/sign_in', change)
    t.equal(refused.statusCode, status, String(words))
    t.match(refused.body, words)
    t.notMatch(refused.body, /entra-secret-of-acme/, 'the secret is not sent back in a refused form')
  }
  t.equal((await app.signInProviders.list(site.id)).length, 1, 'nothing written by a refusal')

  const changed = await web.post(`/demo/admin/sign_in/${provider!.id}`, { name: 'Acme', client_id: 'c-2', client_secret: '', domains: '', domain_role: '', trust_mfa: '' })
  t.equal(changed.statusCode, 303)
  const after = (await app.signInProviders.find(site.id, provider!.id))!
  t.match(after, { name: 'Acme', clientId: 'c-2', domainRole: null, trustMfa: false, domains: '[]' })
  t.same(app.signInProviders.settingsOf(after)?.clientSecret, 'entra-secret-of-acme', 'an empty secret box keeps the secret')
  await web.get('/demo/admin/sign_in')
  t.equal((await web.post(`/demo/admin/sign_in/${provider!.id}`, { name: 'Acme', client_id: 'c-2', client_secret: 'a-new-secret', domains: 'acme.example', domain_role: 'supporter', trust_mfa: 'yes' })).statusCode, 303)
  t.same(app.signInProviders.settingsOf((await app.signInProviders.find(site.id, provider!.id))!)?.clientSecret, 'a-new-secret', 'a new secret replaces the old')
  await rawStatement(app, 'UPDATE sign_in_providers SET secret = ? WHERE id = ?', ['sealed-under-another-key', provider!.id])
  t.match((await web.get('/demo/admin/sign_in')).body, /its secret is sealed under another server key/)

  // The switch: refused while Ann never signed in with a provider (she would lock herself out); off stays off.
  const locked = await web.post('/demo/admin/sign_in/policy', { company_only: 'on' })
  t.equal(locked.statusCode, 409)
  t.match(locked.body, /ign in with the company.{1,5}s account yourself first/)
  await web.get('/demo/admin/sign_in')
  const off = await web.post('/demo/admin/sign_in/policy', { company_only: 'off' })
  t.equal(off.headers.location, 'https://help.example.test/demo/admin/sign_in?done=both')

  // Outsiders: a supporter of the site, and another site's administrator.
  const pat = await personWithPassword(app, { email: 'pat@acme.example' })
  const supporter = webClient(app)
  await supporter.signIn(pat.email, pat.password)
  t.equal((await supporter.get('/demo/admin/sign_in')).statusCode, 403)
  t.equal((await supporter.post(`/demo/admin/sign_in/${provider!.id}`, { remove: 'yes' })).statusCode, 403)
  const olga = await personWithPassword(app, { site: 'other', email: 'olga@other.example' })
  await app.users.setAdministrator(olga.site.id, olga.user.id, true)
  const outsider = webClient(app, 'other')
  await outsider.signIn(olga.email, olga.password)
  await outsider.get('/other/admin/sign_in')
  t.equal((await outsider.post(`/other/admin/sign_in/${provider!.id}`, { remove: 'yes' })).statusCode, 404, "another site's administrator cannot reach this site's provider")
  t.ok(await app.signInProviders.find(site.id, provider!.id), 'still there')

  await web.get('/demo/admin/sign_in')
  const removed = await web.post(`/demo/admin/sign_in/${provider!.id}`, { remove: 'yes' })
  t.equal(removed.statusCode, 303)
  t.same(await app.signInProviders.list(site.id), [])
  t.same((await app.securityLog.changes({ siteId: site.id, action: 'sign_in_provider', limit: 5 })).map((l) => l.action), ['sign_in_provider.removed', 'sign_in_provider.changed', 'sign_in_provider.changed', 'sign_in_provider.added'])
})

t.test("a provider that cannot be reached, or whose secret is sealed under another key, is said so; nobody is signed in", onSqlite('a provider unreachable or its secret unreadable, said in words'), async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@acme.example' })
  const gone = await app.signInProviders.add(ann.site.id, { name: 'Gone', kind: 'oidc', issuer: `http://127.0.0.1:${await freePort()}`, clientId: 'c', clientSecret: 's' })
  const web = webClient(app)
  await web.get('/demo/login')
  const unreachable = await web.post('/demo/login/provider', { provider: String(gone.id) })
  t.equal(unreachable.statusCode, 502)
  t.match(unreachable.body, /Gone could not be reached/)

  await rawStatement(app, 'UPDATE sign_in_providers SET secret = ? WHERE id = ?', ['sealed-under-another-key', gone.id])
  const sealed = await web.post('/demo/login/provider', { provider: String(gone.id) })
  t.equal(sealed.statusCode, 400)
  t.match(sealed.body, /sealed under another server key/)
  t.notOk(await onQueue(web))
})

t.test("the answer's edges: late, of a provider removed meanwhile, refused without words, with where to go next; sudo's own", onSqlite("a provider's answer refused late or after its removal, and where each goes next"), async (t) => {
  const { app, clock, ann, acme, idp, site } = await desk(t)
  const start = async (web: Web, next = '') => {
    await web.get('/demo/login')
    return new URL((await web.post('/demo/login/provider', { provider: String(acme.id), next })).headers.location as string)
  }
  const late = webClient(app)
  const lateUrl = await start(late)
  clock.advance(11 * MINUTE)
  const tooLate = await late.get(await idp.signIn(lateUrl.href, 'ann@acme.example'))
  t.equal(tooLate.statusCode, 400)
  t.match(tooLate.body, /took longer than 10 minutes/)

  const plain = webClient(app)
  const plainUrl = await start(plain)
  const no = await plain.get(`${CALLBACK}?error=access_denied&state=${plainUrl.searchParams.get('state')}`)
  t.match(no.body, /Acme did not sign you in \(access_denied\)\./)

  // Sudo: without `next`, back to the token page; an unknown purpose is the token's; an answer of another sign-in confirms nothing, and is logged as hers.
  const web = webClient(app)
  await web.get(await idp.signIn((await start(web)).href, 'ann@acme.example'))
  clock.advance(16 * MINUTE)
  await web.get('/demo/confirm?for=token')
  const confirmAt = new URL((await web.post('/demo/confirm/provider', { for: 'nonsense' })).headers.location as string)
  idp.swapNextIdToken(await idp.idTokenOf('ann@acme.example', 'another sign-in'))
  t.equal((await web.get(await idp.signIn(confirmAt.href, 'ann@acme.example'))).statusCode, 401)
  const [failed] = (await app.securityLog.list({ userId: ann.user.id, kinds: ['sign_in_failed'], offset: 0, limit: 1 })).events
  t.match(failed!.detail, { with: 'Acme' })
  await web.get('/demo/confirm?for=token')
  const confirmAgain = (await web.post('/demo/confirm/provider', { for: 'nonsense' })).headers.location as string
  t.equal((await web.get(await idp.signIn(confirmAgain, 'ann@acme.example'))).headers.location, 'https://help.example.test/demo/profile/api_tokens')

  // Where to go next is kept across the provider, and across our second step.
  const onward = webClient(app)
  t.equal((await onward.get(await idp.signIn((await start(onward, '/demo/search')).href, 'ann@acme.example'))).headers.location, 'https://help.example.test/demo/search')
  const own = webClient(app)
  await own.signIn(ann.email, ann.password)
  await enrollAuthenticator(own, clock())
  t.equal((await own.post('/demo/confirm/provider', { for: 'token' })).headers.location, 'https://help.example.test/demo/confirm', "a password's session confirms here")
  const held = webClient(app)
  const step = await held.get(await idp.signIn((await start(held, '/demo/search')).href, 'ann@acme.example'))
  t.equal(step.headers.location, `https://help.example.test/demo/login/second_step?next=${encodeURIComponent('/demo/search')}`)

  // The provider removed while the browser was at it.
  const removed = webClient(app)
  const removedUrl = await start(removed)
  await app.signInProviders.remove(site.id, acme.id)
  const gone = await removed.get(await idp.signIn(removedUrl.href, 'ann@acme.example'))
  t.equal(gone.statusCode, 400)
  t.match(gone.body, /no longer one of this site/)
})
