import t from 'tap'
import { buildTestApp, rawStatement } from '../fixtures/app.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.

const legacyIn = (html: string) => /id="legacy-token" class="token-value" type="text" readonly value="([0-9a-f]{40})"/.exec(html)?.[1]

t.test('the profile shows name, email and the legacy token; Reset API Token replaces it at once', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  t.equal((await browser.get('/demo/profile')).statusCode, 303, 'signed out: sent to sign in')
  await browser.signIn(ann.email, ann.password)

  const page = await browser.get('/demo/profile')
  t.equal(page.statusCode, 200)
  t.equal(page.headers['cache-control'], 'no-store')
  t.match(page.body, `<dd>${ann.user.name}</dd>`)
  t.match(page.body, `<dd>${ann.email}</dd>`)
  const old = legacyIn(page.body)!
  t.equal(old, (await app.users.legacyTokens.current(ann.user.id)).value)
  t.match(page.body, 'Expires on 2027-03-01.', 'one year after the account was made')
  const api = (key: string) => app.inject({ url: '/demo', headers: { 'x-service-auth': key } })
  t.equal((await api(old)).statusCode, 200)

  const confirm = await browser.get('/demo/profile/reset_api_token')
  t.equal(confirm.statusCode, 200)
  t.match(confirm.body, 'stops working at once')
  const done = await browser.post('/demo/profile/reset_api_token')
  t.equal(done.statusCode, 303, 'redirected, so a reload does not reset again')
  t.equal(done.headers.location, 'https://help.example.test/demo/profile?reset=1')
  const reset = await browser.get(done.headers.location as string)
  t.match(reset.body, 'Your legacy API token was reset.')
  const fresh = legacyIn(reset.body)!
  t.not(fresh, old)
  t.equal((await api(old)).statusCode, 401, 'the old value stops working at once')
  t.equal((await api(fresh)).statusCode, 200, 'the new one works')
})

t.test('the reset needs its CSRF token', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  const before = (await app.users.legacyTokens.current(ann.user.id)).value
  const res = await browser.request('POST', '/demo/profile/reset_api_token', {})
  t.equal(res.statusCode, 403)
  t.equal((await app.users.legacyTokens.current(ann.user.id)).value, before, 'nothing changed')
})

t.test('a customer sees the profile without a token, and cannot reset one', async (t) => {
  const { app } = await buildTestApp(t)
  const carol = await personWithPassword(app, { role: 'customer' })
  const browser = webClient(app)
  await browser.signIn(carol.email, carol.password)
  const page = await browser.get('/demo/profile')
  t.equal(page.statusCode, 200)
  t.match(page.body, '<dd>Customer</dd>')
  t.notOk(legacyIn(page.body))
  const before = (await app.users.legacyTokens.current(carol.user.id)).value
  t.equal((await browser.get('/demo/profile/reset_api_token')).statusCode, 303)
  await browser.get('/demo/profile')
  t.equal((await browser.post('/demo/profile/reset_api_token')).statusCode, 303)
  t.equal((await app.users.legacyTokens.current(carol.user.id)).value, before)
})

t.test('signed-out visitors of the reset are sent to sign in', async (t) => {
  const { app } = await buildTestApp(t)
  await personWithPassword(app)
  const browser = webClient(app)
  t.equal((await browser.get('/demo/profile/reset_api_token')).statusCode, 303)
  await browser.get('/demo/login')
  t.equal((await browser.post('/demo/profile/reset_api_token')).statusCode, 303)
})

t.test('a token sealed under another server key is explained, and a reset mends it', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  await rawStatement(app, 'UPDATE users SET legacy_token_encrypted = ? WHERE id = ?', ['v1.AAAA.BBBB.CCCC', ann.user.id])
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  const page = await browser.get('/demo/profile')
  t.match(page.body, 'cannot be shown here')
  t.notOk(legacyIn(page.body))
  await browser.post('/demo/profile/reset_api_token')
  t.ok(legacyIn((await browser.get('/demo/profile')).body))
})

t.test('an unexpected failure reading the token is a 500 page, not a half-drawn one', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  app.users.legacyTokens.current = async () => {
    throw new Error('disk I/O error')
  }
  const res = await browser.get('/demo/profile')
  t.equal(res.statusCode, 500)
  t.match(res.body, 'Something went wrong')
})
