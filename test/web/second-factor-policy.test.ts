import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { authorize, codeOf, registerClient } from '../fixtures/oauth.ts'
import { totpCode } from '../fixtures/totp.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// A site that requires a second factor of its staff (docs/decisions.md, "Second factors"): until
// a supporter adds one, signing in leads only to adding one; the same supporter on a site without
// the requirement, and the site's customers, are not held. And an application asking to write
// needs a recent confirmation, as a token does.

const MINUTE = 60_000

t.test('a site that requires a second factor: its supporters can only add one until they have', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const set = await app.inject({ method: 'PATCH', url: '/demo/policy', headers: { ...admin.bearer, accept: V1, 'content-type': 'application/json' }, payload: { staff_second_factor: true } })
  t.equal(set.statusCode, 200)
  t.equal(set.json().policy.staff_second_factor, true, 'the API sets it')
  const etag = (await app.inject({ url: '/demo/policy', headers: { ...admin.bearer, accept: V1 } })).headers.etag as string

  const ann = await personWithPassword(app)
  // Ann is support staff of another site too, which asks nothing of the kind.
  const other = await app.sites.add('other', 'Other')
  await app.users.addStaff(other.id, ann.user.id)
  const web = webClient(app)
  const signedIn = await web.signIn(ann.email, ann.password)
  t.equal(signedIn.statusCode, 303, 'the password signs her in')
  const tokens = await web.get('/demo/profile/api_tokens')
  t.equal(tokens.statusCode, 303, 'but the token page is closed')
  t.equal(tokens.headers.location, 'https://help.example.test/demo/profile')
  const profile = await web.get('/demo/profile')
  t.equal(profile.statusCode, 200)
  t.match(profile.body, 'Site demo asks its support staff for a second factor.')
  t.notMatch(profile.body, 'Legacy API token', 'the legacy token is not shown')
  for (const path of ['/demo/profile/security_log', '/demo/profile/reset_api_token', '/demo/admin']) {
    t.equal((await web.get(path)).statusCode, 303, `${path} is closed`)
  }
  await web.get('/demo/profile')
  const forged = await web.post('/demo/profile/api_tokens', { name: 'x', access: 'read', expires: '30' })
  t.equal(forged.statusCode, 303, 'a form sent anyway makes nothing')
  t.equal(await app.tokens.activeCount(ann.user.id), 0)
  await web.get('/demo/profile')
  t.equal((await web.post('/demo/profile/reset_api_token')).statusCode, 303)
  t.equal((await web.get('/demo/assets/app.css')).statusCode, 200, 'the page keeps its stylesheet')

  // The same person on the other site is not held; a customer of this one is not either.
  const elsewhere = webClient(app, 'other')
  await elsewhere.signIn(ann.email, ann.password)
  t.equal((await elsewhere.get('/other/profile/api_tokens')).statusCode, 200, 'the other site asks nothing')
  const customer = await personWithPassword(app, { role: 'customer' })
  const shopper = webClient(app)
  await shopper.signIn(customer.email, customer.password)
  t.equal((await shopper.get('/demo/profile')).statusCode, 200)
  t.notMatch((await shopper.get('/demo/profile')).body, 'asks its support staff')

  // Adding an authenticator app opens the pages.
  await web.get('/demo/profile')
  const started = await web.post('/demo/profile/two_factor/totp', { name: 'Phone' })
  t.equal(started.statusCode, 200, 'adding one is open')
  const secret = /data-secret>([A-Z2-7]+)</.exec(started.body)![1]
  const id = /two_factor\/totp\/(\d+)\/confirm/.exec(started.body)![1]
  t.equal((await web.post(`/demo/profile/two_factor/totp/${id}/confirm`, { code: totpCode(secret, clock()) })).statusCode, 200, 'the recovery codes')
  t.equal((await web.get('/demo/profile/api_tokens')).statusCode, 200, 'open now')
  t.match((await web.get('/demo/profile')).body, 'Legacy API token')

  // After the window, confirming before adding another factor is open too (with the app's code).
  clock.advance(20 * MINUTE)
  await web.get('/demo/confirm?for=factor')
  t.equal((await web.post('/demo/confirm', { code: totpCode(secret, clock()), for: 'factor', next: '/demo/profile' })).statusCode, 303)

  // Switched off again by the operator's policy: nothing is held.
  const off = await app.inject({ method: 'PATCH', url: '/demo/policy', headers: { ...admin.bearer, accept: V1, 'content-type': 'application/json' }, payload: { staff_second_factor: false } })
  t.equal(off.json().policy.staff_second_factor, false)
  const changed = await app.inject({ url: '/demo/policy', headers: { ...admin.bearer, accept: V1, 'if-none-match': etag } })
  t.equal(changed.statusCode, 200, 'the policy has a new version')
  const { events } = await app.securityLog.list({ siteId: admin.site.id, kinds: ['policy_changed'], offset: 0, limit: 5 })
  t.match(events[0].detail, { staff_second_factor: 'true -> false' })
})

t.test('the policy page sets the requirement; a form of an older page leaves it as it is', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await personWithPassword(app)
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  const page = await web.get('/demo/admin/policy')
  t.match(page.body, 'value="optional" checked')
  const base = { max_token_days: '365', write_tokens: 'everyone', legacy_token: 'on', multipass: 'on', password: 'on' }
  const wrong = await web.post('/demo/admin/policy', { ...base, staff_second_factor: 'sometimes' })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, 'Choose whether a second factor is required.')
  t.equal((await web.post('/demo/admin/policy', { ...base, staff_second_factor: 'required' })).statusCode, 303)
  t.equal((await app.sites.get('demo')).staffSecondFactor, true)
  await web.get('/demo/admin/policy')
  t.equal((await web.post('/demo/admin/policy', base)).statusCode, 303, 'without the field')
  t.equal((await app.sites.get('demo')).staffSecondFactor, true, 'unchanged')
  // The administrator has no second factor either: the rule holds for them from their next page on.
  t.equal((await web.get('/demo/admin/policy')).statusCode, 303)
})

t.test('authorizing an application to write asks for a recent confirmation; read-only does not', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const { client } = await registerClient(app)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  clock.advance(20 * MINUTE)

  const read = await authorize(app, { clientId: client.client_id, scope: 'read', browser: web })
  t.ok(codeOf(read.res.headers.location).code, 'read-only: authorized without a question')

  const write = await authorize(app, { clientId: client.client_id, scope: 'read write', browser: web })
  t.equal(write.res.statusCode, 303)
  const consentPath = new URL(write.consentUrl!).pathname
  t.equal(write.res.headers.location, `https://help.example.test/demo/confirm?for=oauth&next=${encodeURIComponent(consentPath)}`, 'the page asks first')
  // Allow sent without the page (or after the window) is not taken either.
  await web.get('/demo/profile')
  const forced = await web.post(write.consentUrl!, { decision: 'allow' })
  t.equal(forced.statusCode, 303)
  t.match(forced.headers.location, /\/demo\/confirm\?for=oauth/)

  const asked = await web.get(write.res.headers.location as string)
  t.match(asked.body, 'To let an application read and write on your behalf, enter your password again.')
  const confirmed = await web.post('/demo/confirm', { password: ann.password, for: 'oauth', next: consentPath })
  t.equal(confirmed.headers.location, `https://help.example.test${consentPath}`, 'back to the consent page')
  const consent = await web.get(write.consentUrl!)
  t.equal(consent.statusCode, 200)
  const allowed = await web.post(write.consentUrl!, { decision: 'allow' })
  const done = await web.get(allowed.headers.location!)
  t.ok(codeOf(done.headers.location).code, 'authorized after the confirmation')
})
