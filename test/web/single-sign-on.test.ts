import t, { type Test } from 'tap'
import { SESSION_COOKIE } from '../../plugins/sessions.ts'
import { SSO_FAILED, SSO_STAFF } from '../../routes/web/sign-in.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { inDays, makeMultipass } from '../fixtures/credentials.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.

const SITE = 'https://help.example.test/demo'

async function setup(t: Test) {
  const { app, clock } = await buildTestApp(t)
  const site = await app.sites.add('demo', 'Demo')
  const token = (claims: object, form = {}) => encodeURIComponent(makeMultipass(claims, site.multipassKey, 'demo', form))
  return { app, clock, site, token }
}

t.test('{site_url}/?sso= signs an unknown email in as a new customer', async (t) => {
  const { app, site, token } = await setup(t)
  const browser = webClient(app)
  const res = await browser.get(`/demo/?sso=${token({ email: 'new@example.test', name: 'New Person', expires: inDays(app, 1) })}`)
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, `${SITE}/help`, 'a customer lands on their discussions')
  t.ok(browser.jar.get(SESSION_COOKIE), 'signed in')
  const user = await app.users.get('new@example.test')
  t.equal(user.name, 'New Person')
  t.equal(await app.users.role(site.id, user.id), 'customer')
  t.match((await browser.get('/demo/profile')).body, '<dd>New Person</dd>')
})

t.test('/login?sso= signs a known customer in, updates the name, and follows `to` on the same site only', async (t) => {
  const { app, token } = await setup(t)
  const ann = await personWithPassword(app, { role: 'customer' })
  const go = async (to: unknown) => {
    const browser = webClient(app)
    const claims = { email: ann.email.toUpperCase(), name: 'Ann Renamed', expires: inDays(app, 1), to }
    return (await browser.get(`/demo/login?sso=${token(claims, { newlines: true })}`)).headers.location
  }
  t.equal(await go(`${SITE}/profile`), `${SITE}/profile`)
  t.equal(await go('/demo/profile?tab=1'), `${SITE}/profile?tab=1`, 'a path on the site')
  t.equal((await app.users.get(ann.email)).name, 'Ann Renamed')
  t.equal(await app.users.role((await app.sites.get('demo')).id, ann.user.id), 'customer', 'a customer stays a customer')
  for (const evil of ['https://evil.example/demo/profile', '//evil.example/demo/', '/other/profile', 'javascript:alert(1)', 'https://help.example.test/other', `${SITE}/../other`, 'http://[::1', 42, '']) {
    t.equal(await go(evil), `${SITE}/help`, `refused: ${evil}`)
  }
})

t.test('support staff are not signed in by multipass: their session would reach the legacy token', async (t) => {
  const { app, token } = await setup(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  const res = await browser.get(`/demo/?sso=${token({ email: ann.email, name: 'Mallory', expires: inDays(app, 1) })}`)
  t.equal(res.statusCode, 401)
  t.match(res.body, SSO_STAFF)
  t.notOk(browser.jar.get(SESSION_COOKIE), 'no session')
  t.equal((await app.users.get(ann.email)).name, ann.user.name, 'nothing about the account changed')
})

t.test('expired, tampered, wrong-key or disabled: no sign-in, one message', async (t) => {
  const { app, site, token } = await setup(t)
  const ann = await personWithPassword(app, { role: 'customer' })
  const valid = { email: ann.email, expires: inDays(app, 1) }
  const wrongKey = encodeURIComponent(makeMultipass(valid, 'another key', 'demo'))
  const tampered = token(valid).replace(/^.{4}/, 'AAAA')
  for (const raw of [token({ email: ann.email, expires: inDays(app, -1) }), wrongKey, tampered, 'garbage', '']) {
    const browser = webClient(app)
    const res = await browser.get(`/demo/?sso=${raw}`)
    t.equal(res.statusCode, 401, raw.slice(0, 20))
    t.match(res.body, SSO_FAILED)
    t.notOk(browser.jar.get(SESSION_COOKIE))
  }
  await app.users.setDisabled(ann.email, true)
  const disabled = await webClient(app).get(`/demo/login?sso=${token({ ...valid, name: 'Changed' })}`)
  t.equal(disabled.statusCode, 401, 'a disabled account')
  t.match(disabled.body, SSO_FAILED)
  t.equal((await app.users.get(ann.email)).name, ann.user.name, 'a disabled account is not touched')
  const badEmail = await webClient(app).get(`/demo/?sso=${token({ email: 'not an email', expires: inDays(app, 1) })}`)
  t.equal(badEmail.statusCode, 401, 'a token naming no email address')
  t.ok(site)
})
