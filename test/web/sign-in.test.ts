import t from 'tap'
import { SESSION_COOKIE } from '../../plugins/sessions.ts'
import { DEFAULT_LIMITS } from '../../plugins/auth/limits.ts'
import { SIGN_IN_FAILED } from '../../routes/web/sign-in.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the sign-in page's words, cookies, redirects and limits; its sessions and second factors run on both in test/web/second-factors.test.ts, test/team/live.test.ts and test/web/customers.test.ts.

const SITE = 'https://help.example.test/demo'

t.test('sign in, see the token page, sign out', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  const page = await browser.get('/demo/login')
  t.equal(page.statusCode, 200)
  t.match(page.body, '<label for="email">Email</label>')
  t.match(page.body, '<label for="password">Password</label>')

  const signedIn = await browser.signIn(ann.email.toUpperCase(), ann.password)
  t.equal(signedIn.statusCode, 303)
  t.equal(signedIn.headers.location, `${SITE}/discussions`, 'support staff land on the queue')
  const cookie = [signedIn.headers['set-cookie']].flat().find((c) => c!.startsWith(`${SESSION_COOKIE}=`))!
  t.match(cookie, /; Path=\/demo;/)
  t.match(cookie, /HttpOnly/)
  t.match(cookie, /SameSite=Lax/)
  t.match(cookie, /Secure/, 'the site URL is https')
  t.match(cookie, /Max-Age=604800/)

  const tokens = await browser.get('/demo/profile/api_tokens')
  t.equal(tokens.statusCode, 200)
  t.match(tokens.body, ann.email)
  t.equal(await app.sessions.activeCount(ann.user.id), 1)

  const out = await browser.post('/demo/logout')
  t.equal(out.statusCode, 303)
  t.equal(out.headers.location, `${SITE}/login`)
  t.equal(await app.sessions.activeCount(ann.user.id), 0, 'the session is gone from the store')
  t.equal((await browser.get('/demo/profile/api_tokens')).statusCode, 303, 'signed out')
})

t.test('a wrong email and a wrong password get the same message', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const outsider = await personWithPassword(app, { site: 'other' })
  const answers = []
  for (const [email, password] of [
    ['nobody@example.test', ann.password],
    [ann.email, 'wrong password'],
    [outsider.email, outsider.password],
    ['', ''],
  ]) {
    const res = await webClient(app).signIn(email, password)
    t.equal(res.statusCode, 401, `${email} / ${password}`)
    t.match(res.body, SIGN_IN_FAILED)
    t.notOk([res.headers['set-cookie']].flat().some((c) => c?.startsWith(SESSION_COOKIE)), 'no session cookie')
    answers.push(res.body.replace(/name="_csrf" value="[^"]+"/g, '').replace(/data-options="[^"]+"/, '').replace(/(name="email"[^>]*value=")[^"]*"/, '$1"'))
  }
  t.equal(new Set(answers).size, 1, 'the pages are identical but for the email typed back (and the passkey challenge)')
})

t.test('a disabled account cannot sign in, and disabling ends its sessions', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  t.equal((await browser.get('/demo/profile/api_tokens')).statusCode, 200)
  await app.users.setDisabled(ann.email, true)
  t.equal((await browser.get('/demo/profile/api_tokens')).statusCode, 303, 'the session no longer signs anyone in')
  t.equal(await app.sessions.activeCount(ann.user.id), 0, 'and it was deleted')
  t.equal((await webClient(app).signIn(ann.email, ann.password)).statusCode, 401)
})

t.test('session fixation: signing in always makes a new session id', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  const first = browser.jar.get(SESSION_COOKIE)
  // Signed in already, the sign-in form is posted again (from a page still open, say).
  await browser.get('/demo/profile/api_tokens')
  const again = await browser.post('/demo/login', { email: ann.email, password: ann.password })
  t.equal(again.statusCode, 303)
  const second = browser.jar.get(SESSION_COOKIE)
  t.ok(first && second && first !== second, 'a new id')
  t.equal(await app.sessions.activeCount(ann.user.id), 1, 'the old session was ended')

  const planted = webClient(app)
  planted.jar.set(SESSION_COOKIE, 'attacker-chosen')
  await planted.signIn(ann.email, ann.password)
  t.not(planted.jar.get(SESSION_COOKIE), 'attacker-chosen')
})

t.test('a signed-out visitor is sent to sign in and brought back', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  const res = await browser.get('/demo/profile/api_tokens')
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, `${SITE}/login?next=%2Fdemo%2Fprofile%2Fapi_tokens`)
  const login = await browser.get(res.headers.location as string)
  t.match(login.body, 'name="next" value="/demo/profile/api_tokens"')
  const back = await browser.post('/demo/login', { email: ann.email, password: ann.password, next: '/demo/profile/api_tokens' })
  t.equal(back.headers.location, '/demo/profile/api_tokens')
  t.equal((await browser.get('/demo/')).headers.location, `${SITE}/discussions`, 'the site home sends the signed-in on')
  t.equal((await browser.get('/demo/login?next=/demo/profile')).headers.location, '/demo/profile', 'signed in already: straight on')
})

t.test('next never leads off the site', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  for (const next of ['https://evil.example/', '//evil.example/demo/', '/other/profile', '/demo/../other', '/demo/\\evil', '/demox/a', '/demo//evil.example', '/demo/%2e%2e/x', '/demo/%2E./x', '/demo/profile€', '/demo/a\u0001b', '/demo/a b']) {
    const browser = webClient(app)
    await browser.get('/demo/login')
    const res = await browser.post('/demo/login', { email: ann.email, password: ann.password, next })
    t.equal(res.headers.location, `${SITE}/discussions`, next)
  }
  t.equal((await webClient(app).get('/demo/')).headers.location, `${SITE}/help`, "a visitor goes to the support site, which links the staff's sign-in")
})

t.test('repeated failures are slowed down: 429 with Retry-After', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  for (let i = 0; i < DEFAULT_LIMITS.perAccount; i++) t.equal((await webClient(app).signIn(ann.email, 'wrong')).statusCode, 401)
  const limited = await webClient(app).signIn(ann.email, ann.password)
  t.equal(limited.statusCode, 429, 'even the right password waits')
  t.equal(limited.headers['retry-after'], '300')
  t.match(limited.body, 'Too many failed attempts. Try again in 5 minutes.')
  clock.advance(DEFAULT_LIMITS.windowSeconds * 1000)
  t.equal((await webClient(app).signIn(ann.email, ann.password)).statusCode, 303, 'free again after the window')
})

t.test('one address trying many accounts is slowed down too', async (t) => {
  const { app } = await buildTestApp(t)
  await personWithPassword(app)
  let last
  for (let i = 0; i < 21; i++) last = await webClient(app).signIn(`guess${i}@example.test`, 'x')
  t.equal(last!.statusCode, 429)
  t.match(last!.body, 'Try again in 5 minutes')
})

t.test('CSRF: a form without its token is refused with a page that says why', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.get('/demo/login')
  const res = await browser.request('POST', '/demo/login', { email: ann.email, password: ann.password })
  t.equal(res.statusCode, 403)
  t.match(res.headers['content-type'], 'text/html')
  t.match(res.body, 'This form has expired')
  const forged = await browser.request('POST', '/demo/login', { _csrf: 'forged', email: ann.email, password: ann.password })
  t.equal(forged.statusCode, 403)
  const fresh = webClient(app)
  const noSecret = await fresh.request('POST', '/demo/logout', { _csrf: 'x' })
  t.equal(noSecret.statusCode, 403, 'no CSRF cookie at all')
})

t.test('every page carries the security headers', async (t) => {
  const { app } = await buildTestApp(t)
  await app.sites.add('demo')
  const res = await webClient(app).get('/demo/login')
  t.equal(
    res.headers['content-security-policy'],
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  )
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['x-frame-options'], 'DENY')
  t.equal(res.headers['cache-control'], 'no-store')
  t.notMatch(res.body, /<script>|style="/, 'no inline script or style')
  const css = await app.inject({ url: '/demo/assets/app.css' })
  t.equal(css.statusCode, 200)
  t.equal(css.headers['content-type'], 'text/css; charset=utf-8')
  t.equal((await app.inject({ url: '/demo/assets/copy.js' })).headers['content-type'], 'text/javascript; charset=utf-8')
  const traversal = await app.inject({ url: '/demo/assets/..%2F..%2Fapp.ts' })
  t.equal(traversal.statusCode, 404, 'only the named assets, nothing else from disk')
  t.notMatch(traversal.body, 'buildApp')
  t.equal((await app.inject({ url: '/demo/assets/evil.js' })).statusCode, 404)
})

t.test('pages of an unknown site are 404; pages never accept an API credential', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await app.inject({ url: '/nosuchsite/login' })).statusCode, 404)
  await personWithPassword(app)
  const res = await app.inject({ url: '/demo/profile/api_tokens', headers: { authorization: 'Bearer service_pat_x' } })
  t.equal(res.statusCode, 303, 'sent to sign in, as if no credential')
})

t.test('the slow-down message counts down in minutes, to the last one', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  for (let i = 0; i < DEFAULT_LIMITS.perAccount; i++) await webClient(app).signIn(ann.email, 'wrong')
  clock.advance(DEFAULT_LIMITS.windowSeconds * 1000 - 30_000)
  const res = await webClient(app).signIn(ann.email, ann.password)
  t.equal(res.headers['retry-after'], '30')
  t.match(res.body, 'Try again in 1 minute.')
})

t.test('when password checks are saturated the form says so: 503 with Retry-After', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  app.passwords.verify = async () => ({ kind: 'busy', retryAfter: 1 })
  const res = await webClient(app).signIn(ann.email, ann.password)
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '1')
  t.match(res.body, 'We are checking too many sign-ins right now.')
})

t.test('odd sign-in input is a failed sign-in, never a crash', async (t) => {
  const { app } = await buildTestApp(t)
  await personWithPassword(app)
  const browser = webClient(app)
  await browser.get('/demo/login')
  const csrf = encodeURIComponent(browser.field('_csrf'))
  const res = await browser.request('POST', '/demo/login', `_csrf=${csrf}&email=a@b.c&email=d@e.f&password=x&password=y`)
  t.equal(res.statusCode, 401)
  t.match(res.body, SIGN_IN_FAILED)
  const wrongType = await browser.request('POST', '/demo/login', undefined)
  t.equal(wrongType.statusCode, 403, 'no form, no CSRF token')
  const json = await app.inject({ method: 'POST', url: '/demo/login', headers: { 'content-type': 'application/xml' }, payload: '<email>x</email>' })
  t.equal(json.statusCode, 415, 'pages take forms, nothing else')
  t.match(json.body, 'That did not work')
})

t.test('signed in already, the sign-in page sends you to your tokens; a form may carry its CSRF token as a header', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  t.equal((await browser.get('/demo/login')).headers.location, `${SITE}/discussions`)
  const page = await browser.get('/demo/profile/api_tokens')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]
  const res = await app.inject({
    method: 'POST',
    url: '/demo/login',
    headers: { cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': csrf },
  })
  t.equal(res.statusCode, 401, 'no body: no email, no password')
  t.match(res.body, SIGN_IN_FAILED)
})
