import t from 'tap'
import { buildTestApp, V1 } from '../fixtures/app.ts'
import { basic } from '../fixtures/credentials.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'
import { totpCode } from '../fixtures/totp.ts'
import { enrollAuthenticator, personWithPassword, webClient } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the second factors' and sessions' stores are reached through these pages alone, so each engine must run them.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Second factors (docs/decisions.md, "Second factors"): an authenticator app enrolled on the
// profile, the sign-in's second step, recovery codes, the lockout, replays, and Basic on the API.
// Codes are computed by test/fixtures/totp.ts, not by the library the service uses.

const STEP = 30_000
type App = Awaited<ReturnType<typeof buildTestApp>>['app']
type Clock = Awaited<ReturnType<typeof buildTestApp>>['clock']

/** Ann, signed in, with an authenticator app enrolled: its secret and her recovery codes. */
async function enrolled(app: App, clock: Clock) {
  const ann = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  return { ann, web, ...(await enrollAuthenticator(web, clock())) }
}

/** A new browser that passes the password step of Ann's sign-in. */
async function passwordStep(app: App, ann: { email: string; password: string }) {
  const web = webClient(app)
  const res = await web.signIn(ann.email, ann.password)
  return { web, res }
}

t.test('enrolling an authenticator app: a QR code and the key, a code to confirm, ten recovery codes once', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann, web, secret, codes, started, done } = await enrolled(app, clock)
  t.match(started.body, '<svg', 'the QR code, drawn in the page')
  t.match(started.body, `otpauth://totp/`, 'the address as text too')
  t.match(started.body, `secret=${secret}`)
  t.equal(done.statusCode, 200)
  t.equal(codes.length, 10, 'ten recovery codes')
  t.equal(new Set(codes).size, 10)
  const profile = await web.get('/demo/profile')
  t.match(profile.body, /data-factor="\d+"/)
  t.match(profile.body, '10 of 10 recovery codes left.')
  t.notMatch(profile.body, secret, 'the key is never shown again')
  for (const code of codes) t.notMatch(profile.body, code)
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['factor_added'], offset: 0, limit: 5 })
  t.match(events, [{ detail: { kind: 'authenticator app', name: 'Phone' } }])

  // A wrong code does not confirm; the enrollment page comes back with the same key.
  await web.get('/demo/profile')
  const again = await web.post('/demo/profile/two_factor/totp', { name: 'Tablet' })
  const other = /data-secret>([A-Z2-7]+)</.exec(again.body)![1]
  const id = /two_factor\/totp\/(\d+)\/confirm/.exec(again.body)![1]
  const wrong = await web.post(`/demo/profile/two_factor/totp/${id}/confirm`, { code: totpCode(secret, clock()) === totpCode(other, clock()) ? '000000' : totpCode(secret, clock()) })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, `data-secret>${other}<`)
  t.equal((await app.secondFactors.list(ann.user.id)).length, 1, 'not added')
  t.equal((await web.post('/demo/profile/two_factor/totp/999/confirm', { code: '123456' })).statusCode, 404)
  t.equal((await web.post('/demo/profile/two_factor/totp', { name: ' ' })).statusCode, 400, 'a name is needed')
})

t.test('signing in asks for a code after the password; a code works once; a small drift is fine', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann, secret } = await enrolled(app, clock)
  clock.advance(STEP)

  const { web, res } = await passwordStep(app, ann)
  t.equal(res.statusCode, 200, 'the password alone signs nobody in')
  t.match(res.body, 'Sign in: second step')
  t.equal((await web.get('/demo/profile/api_tokens')).statusCode, 303, 'not signed in yet')
  const code = totpCode(secret, clock())
  const wrongCode = code === '000000' ? '111111' : '000000'
  t.equal((await web.post('/demo/login/second_step', { code: wrongCode })).statusCode, 401)
  const ok = await web.post('/demo/login/second_step', { code })
  t.equal(ok.statusCode, 303, 'signed in')
  t.equal((await web.get('/demo/profile/api_tokens')).statusCode, 200)

  // The same code, again, from another browser that knows the password: refused.
  const replay = await passwordStep(app, ann)
  t.equal((await replay.web.post('/demo/login/second_step', { code })).statusCode, 401, 'a code is accepted once')
  // The previous step's code, 30 s behind, is still taken (a phone a little slow) once the current one was not used.
  clock.advance(STEP)
  const late = await passwordStep(app, ann)
  t.equal((await late.web.post('/demo/login/second_step', { code: totpCode(secret, clock() - STEP) })).statusCode, 401, 'not the step already used')
  clock.advance(STEP)
  const slow = await passwordStep(app, ann)
  t.equal((await slow.web.post('/demo/login/second_step', { code: totpCode(secret, clock() - STEP) })).statusCode, 303, 'one step of drift')
  clock.advance(4 * STEP)
  const old = await passwordStep(app, ann)
  t.equal((await old.web.post('/demo/login/second_step', { code: totpCode(secret, clock() - 3 * STEP) })).statusCode, 401, 'an old code is refused')

  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['second_factor_failed', 'sign_in_succeeded'], offset: 0, limit: 20 })
  t.equal(events.filter((e) => e.kind === 'second_factor_failed').length, 4, 'the wrong code, the replay, the used step, the old code')
  t.match(events.find((e) => e.kind === 'sign_in_succeeded'), { detail: { second_factor: 'code' } })

  // The second step waits five minutes, then asks for the password again.
  const waited = await passwordStep(app, ann)
  clock.advance(5 * 60_000 + 1)
  const expired = await waited.web.post('/demo/login/second_step', { code: totpCode(secret, clock()) })
  t.equal(expired.statusCode, 401)
  t.match(expired.body, 'Enter your password again.')
  t.equal((await webClient(app).get('/demo/login/second_step')).statusCode, 303, 'no second step without the first')
})

t.test('recovery codes work once each; wrong codes lock the second step even for someone who knows the password', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann, secret, codes } = await enrolled(app, clock)
  const first = await passwordStep(app, ann)
  const used = await first.web.post('/demo/login/second_step', { recovery_code: codes[0].toUpperCase() })
  t.equal(used.statusCode, 303, 'any case')
  t.equal(used.headers.location, 'https://help.example.test/demo/profile?recovery_left=9', 'to the profile, which says how many are left')
  t.match((await first.web.get(used.headers.location!)).body, 'You signed in with a recovery code: 9 of 10 are left.')
  const second = await passwordStep(app, ann)
  t.equal((await second.web.post('/demo/login/second_step', { recovery_code: codes[0] })).statusCode, 401, 'used up')
  t.equal(await app.secondFactors.recoveryCodesLeft(ann.user.id), 9)
  // The wrong codes in a row of an account that is not there: none, and none counted.
  t.equal(await app.secondFactors.failedCodes(999_999), 0)
  t.equal(await app.secondFactors.failCode(999_999), 0)
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['recovery_code_used'], offset: 0, limit: 5 })
  t.match(events, [{ detail: { left: 9 } }])

  // An attacker with the password: the right password again does not give back the wrong codes.
  clock.advance(10 * 60_000)
  for (let i = 0; i < 5; i++) {
    const attempt = await passwordStep(app, ann)
    t.equal(attempt.res.statusCode, 200)
    t.equal((await attempt.web.post('/demo/login/second_step', { code: String(100000 + i) })).statusCode, 401)
  }
  const locked = await passwordStep(app, ann)
  const refused = await locked.web.post('/demo/login/second_step', { code: totpCode(secret, clock()) })
  t.equal(refused.statusCode, 429, 'locked: even the right code waits')
  t.ok(Number(refused.headers['retry-after']) > 0)
  clock.advance(6 * 60_000)
  const later = await passwordStep(app, ann)
  t.equal((await later.web.post('/demo/login/second_step', { code: totpCode(secret, clock()) })).statusCode, 303, 'after the window')
})

t.test("Basic on the API is refused for an account with a second factor, and told why only with the right password", onSqlite('Basic on the API refused to an account with a second factor, and its words'), async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann } = await enrolled(app, clock)
  const right = await app.inject({ url: '/demo', headers: basic(ann.email, ann.password) })
  t.equal(right.statusCode, 401)
  t.match(String(right.headers['www-authenticate']), 'error_description="This account has a second factor: send a personal API token, not its password"')
  const wrong = await app.inject({ url: '/demo', headers: basic(ann.email, 'not the password') })
  t.notMatch(String(wrong.headers['www-authenticate']), 'second factor')
  const bob = await personWithPassword(app)
  t.equal((await app.inject({ url: '/demo', headers: { ...basic(bob.email, bob.password), accept: V1 } })).statusCode, 200, 'an account without one still passes')
})

t.test('removing the factor asks for a fresh confirmation, and takes the recovery codes with it', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann, web, secret } = await enrolled(app, clock)
  const [factor] = await app.secondFactors.list(ann.user.id)
  clock.advance(20 * 60_000)
  await web.get('/demo/profile')
  const asked = await web.post(`/demo/profile/two_factor/${factor.id}/remove`)
  t.match(asked.headers.location, /\/demo\/confirm\?for=factor&next=%2Fdemo%2Fprofile$/)
  const page = await web.get(asked.headers.location as string)
  t.match(page.body, 'enter a code of your authenticator app', 'with a factor, a code confirms')
  t.notMatch(page.body, 'type="password"')
  const byPassword = await web.post('/demo/confirm', { password: ann.password, for: 'factor', next: '/demo/profile' })
  t.equal(byPassword.statusCode, 401, 'the password alone does not')
  const byCode = await web.post('/demo/confirm', { code: totpCode(secret, clock()), for: 'factor', next: '/demo/profile' })
  t.equal(byCode.headers.location, 'https://help.example.test/demo/profile')
  await web.get('/demo/profile')
  const removed = await web.post(`/demo/profile/two_factor/${factor.id}/remove`)
  t.equal(removed.statusCode, 303)
  t.equal(await app.secondFactors.has(ann.user.id), false)
  t.equal(await app.secondFactors.recoveryCodesLeft(ann.user.id), 0)
  t.equal((await web.post(`/demo/profile/two_factor/${factor.id}/remove`)).statusCode, 404)
  const plain = await passwordStep(app, ann)
  t.equal(plain.res.statusCode, 303, 'one step again')
  // Another person cannot remove Ann's factor: theirs is the only one they reach.
  const again = await enrolled(app, clock)
  const bob = await personWithPassword(app)
  const bobWeb = webClient(app)
  await bobWeb.signIn(bob.email, bob.password)
  await bobWeb.get('/demo/profile')
  const [annsFactor] = await app.secondFactors.list(again.ann.user.id)
  t.equal((await bobWeb.post(`/demo/profile/two_factor/${annsFactor.id}/remove`)).statusCode, 404)
  t.equal(await app.secondFactors.has(again.ann.user.id), true)
})

t.test('mails, when mail is set up: a factor added and removed, a recovery code used; never a code', onSqlite("the security notices' mails and their words"), async (t) => {
  const smtp = await mailServer(t)
  const { app, clock } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: 'Desk <desk@example.test>' } } })
  const { ann, web, codes } = await enrolled(app, clock)
  const login = await passwordStep(app, ann)
  await login.web.post('/demo/login/second_step', { recovery_code: codes[3] })
  smtp.state.refuse = true
  const refused = await passwordStep(app, ann)
  t.equal((await refused.web.post('/demo/login/second_step', { recovery_code: codes[4] })).statusCode, 303, 'a refused mail stops nothing')
  smtp.state.refuse = false
  const [factor] = await app.secondFactors.list(ann.user.id)
  await web.get('/demo/profile')
  await web.post(`/demo/profile/two_factor/${factor.id}/remove`)
  for (let i = 0; i < 100 && smtp.mails.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  const mails = smtp.mails.map((mail) => ({ to: mail.to[0], ...readMail(mail) }))
  t.same(mails.map((mail) => mail.subject), [
    'A second factor was added to your Site demo account',
    'A recovery code was used to sign in to Site demo',
    'A second factor was removed from your Site demo account',
  ])
  t.ok(mails.every((mail) => mail.to === ann.email))
  t.match(mails[1].text, '9 codes are left.')
  for (const mail of mails) for (const code of codes) t.notMatch(mail.text, code, 'never a recovery code')
})

t.test('a second app keeps the codes; new codes end the old ones; the second step page by address; confirm by code locks too', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann, web, secret, codes } = await enrolled(app, clock)
  // A second app: no new codes, the profile says it is added.
  await web.get('/demo/profile')
  const started = await web.post('/demo/profile/two_factor/totp', { name: 'Tablet' })
  const tablet = /data-secret>([A-Z2-7]+)</.exec(started.body)![1]
  const id = /two_factor\/totp\/(\d+)\/confirm/.exec(started.body)![1]
  const added = await web.post(`/demo/profile/two_factor/totp/${id}/confirm`, { code: totpCode(tablet, clock()) })
  t.equal(added.headers.location, 'https://help.example.test/demo/profile?factor=totp')
  t.match((await web.get(added.headers.location as string)).body, 'The authenticator app is added.')
  t.equal((await app.secondFactors.list(ann.user.id)).length, 2)

  const fresh = await web.post('/demo/profile/two_factor/recovery_codes')
  const newCodes = [...fresh.body.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1])
  t.equal(newCodes.length, 10)
  const login = await passwordStep(app, ann)
  t.equal((await login.web.post('/demo/login/second_step', { recovery_code: codes[1] })).statusCode, 401, 'an old code no longer works')
  t.equal((await login.web.post('/demo/login/second_step', { recovery_code: newCodes[1] })).statusCode, 303, 'a new one does')

  const pending = await passwordStep(app, ann)
  t.equal((await pending.web.get('/demo/login/second_step?next=/demo/profile')).statusCode, 200, 'the second step, by its address')
  t.match((await web.get('/demo/profile?factor=removed')).body, 'The second factor is removed.')

  // Confirming by code: wrong codes count towards the second step's lockout too.
  clock.advance(20 * 60_000)
  for (let i = 0; i < 5; i++) await web.post('/demo/confirm', { code: String(200000 + i), for: 'token' })
  const locked = await web.post('/demo/confirm', { code: totpCode(secret, clock()), for: 'token' })
  t.equal(locked.statusCode, 429)
  t.match(locked.body, 'Too many failed attempts.')

  // Without a factor, asking for new codes makes none.
  const bob = await personWithPassword(app)
  const bobWeb = webClient(app)
  await bobWeb.signIn(bob.email, bob.password)
  await bobWeb.get('/demo/profile')
  const none = await bobWeb.post('/demo/profile/two_factor/recovery_codes')
  t.equal(none.headers.location, 'https://help.example.test/demo/profile')
  t.equal(await app.secondFactors.recoveryCodesLeft(bob.user.id), 0)
})
