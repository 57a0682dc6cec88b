import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { supporterWithPassword } from '../fixtures/credentials.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Sudo mode (docs/decisions.md, "Confirming it is you"): creating a token and the administrators'
// actions ask for a sign-in or a password confirmation within SERVICE_SUDO_MINUTES (15 here).

const MINUTE = 60_000
const FORM = { name: 'Nightly export', access: 'read', expires: '30' }

t.test('creating a token after the window asks for the password, then goes back to the form', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  t.equal((await web.createToken(FORM)).statusCode, 201, 'within 15 minutes of signing in: no question')

  clock.advance(15 * MINUTE + 1)
  const asked = await web.createToken({ ...FORM, name: 'later' })
  t.equal(asked.statusCode, 303)
  t.match(asked.headers.location, /\/demo\/confirm\?for=token&next=%2Fdemo%2Fprofile%2Fapi_tokens$/)
  t.equal(await app.tokens.activeCount(ann.user.id), 1, 'no token made')

  const page = await web.get(asked.headers.location as string)
  t.equal(page.statusCode, 200)
  t.match(page.body, 'To create a personal API token, enter your password again.')
  const wrong = await web.post('/demo/confirm', { password: 'not my password', next: '/demo/profile/api_tokens', for: 'token' })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.body, 'That is not your password.')
  t.equal((await web.createToken({ ...FORM, name: 'still later' })).statusCode, 303, 'still not confirmed')

  await web.get(asked.headers.location as string)
  const right = await web.post('/demo/confirm', { password: ann.password, next: '/demo/profile/api_tokens', for: 'token' })
  t.equal(right.statusCode, 303)
  t.equal(right.headers.location, 'https://help.example.test/demo/profile/api_tokens', 'back to the form')
  t.equal((await web.createToken({ ...FORM, name: 'confirmed' })).statusCode, 201)
  clock.advance(16 * MINUTE)
  t.equal((await web.createToken({ ...FORM, name: 'too late again' })).statusCode, 303, 'a confirmation lasts 15 minutes too')

  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['confirmed', 'sign_in_failed'], offset: 0, limit: 10 })
  t.same(events.map((e) => e.kind), ['confirmed', 'sign_in_failed'])
  t.match(events[0].detail, { for: 'create a personal API token' })
  // Revoking a token never asks.
  const [token] = await app.tokens.listForSite(ann.site.id, ann.user.id)
  await web.get(`/demo/profile/api_tokens/${token.id}/revoke`)
  t.equal((await web.post(`/demo/profile/api_tokens/${token.id}/revoke`)).statusCode, 303)
  t.not((await app.tokens.find(ann.site.id, token.id))?.revokedAt, null)
})

t.test("someone else's password does not confirm, wrong ones count towards the lockout, and next stays on the site", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const bob = await supporterWithPassword(app, { email: 'bob@example.test', password: 'bobs own password' })
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  clock.advance(20 * MINUTE)
  await web.get('/demo/confirm?for=token')
  t.equal((await web.post('/demo/confirm', { password: bob.password })).statusCode, 401, "Bob's password is not Ann's")
  // Ann's account allows five failures per window (the first was Bob's password).
  for (let i = 0; i < 4; i++) await web.post('/demo/confirm', { password: `wrong ${i}` })
  const locked = await web.post('/demo/confirm', { password: ann.password })
  t.equal(locked.statusCode, 429, 'locked out: even the right password waits')
  t.ok(Number(locked.headers['retry-after']) > 0)
  clock.advance(6 * MINUTE)
  await web.get('/demo/confirm')
  const away = await web.post('/demo/confirm', { password: ann.password, next: 'https://evil.example/steal' })
  t.equal(away.headers.location, 'https://help.example.test/demo/profile/api_tokens', 'an address off the site is not followed')
  t.equal((await webClient(app).get('/demo/confirm')).statusCode, 303, 'signed out: sent to sign in')
})

t.test("an administrator's actions ask too, and come back to their page", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const admin = await personWithPassword(app)
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  clock.advance(30 * MINUTE)
  await web.get('/demo/admin/credentials')
  const revoke = await web.post('/demo/admin/credentials/revoke', { ids: `pat-${ann.token.id}`, reason: 'x' })
  t.match(revoke.headers.location, /\/demo\/confirm\?for=administration&next=%2Fdemo%2Fadmin%2Fcredentials$/)
  t.equal((await app.tokens.find(ann.site.id, ann.token.id))?.revokedAt, null, 'not revoked')
  await web.get('/demo/admin/policy')
  const policy = await web.post('/demo/admin/policy', { max_token_days: '7', write_tokens: 'everyone', legacy_token: 'on', multipass: 'on', password: 'on' })
  t.match(policy.headers.location, /for=administration&next=%2Fdemo%2Fadmin%2Fpolicy$/)
  t.equal((await app.sites.get('demo')).tokenMaxDays, 365, 'not changed')
  const page = await web.get(policy.headers.location as string)
  t.match(page.body, "To revoke credentials or change this site&#39;s token policy, enter your password again.")
  const back = await web.post('/demo/confirm', { password: admin.password, next: '/demo/admin/policy', for: 'administration' })
  t.equal(back.headers.location, 'https://help.example.test/demo/admin/policy')
  await web.get('/demo/admin/credentials')
  t.equal((await web.post('/demo/admin/credentials/revoke', { ids: `pat-${ann.token.id}`, reason: 'x' })).statusCode, 303)
  t.not((await app.tokens.find(ann.site.id, ann.token.id))?.revokedAt, null, 'revoked once confirmed')
})
