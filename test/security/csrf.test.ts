import t from 'tap'
import { CSRF_COOKIE, PRE_SESSION_COOKIE, SESSION_COOKIE } from '../../plugins/sessions.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.
// Issue 13, item 4: a form's CSRF token is bound to the session (or pre-session) and site it was
// issued for. A cookie planted by a sibling host cannot carry a pair that works in a victim's session.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']
type Browser = ReturnType<typeof webClient>

/** The attacker's pair: a CSRF cookie and the token of a page they were shown. */
async function pairFrom(browser: Browser, path: string) {
  await browser.get(path)
  return { cookie: browser.jar.get(CSRF_COOKIE)!, token: browser.field('_csrf'), preSession: browser.jar.get(PRE_SESSION_COOKIE) }
}

/** The victim's session cookie with the attacker's planted pair, posted to `path`. */
function forged(app: App, victim: Browser, pair: { cookie: string; token: string; preSession?: string }, path: string) {
  const cookies = [`${SESSION_COOKIE}=${victim.jar.get(SESSION_COOKIE)}`, `${CSRF_COOKIE}=${pair.cookie}`]
  if (pair.preSession) cookies.push(`${PRE_SESSION_COOKIE}=${pair.preSession}`)
  return app.inject({
    method: 'POST',
    url: path,
    headers: { cookie: cookies.join('; '), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: pair.token, name: 'forged', access: 'write', expires: '7' }).toString(),
  })
}

const FORMS = ['/demo/profile/reset_api_token', '/demo/profile/api_tokens', '/demo/logout']

t.test("an anonymous visit's pair is refused in a victim's session, on every form", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const victim = webClient(app)
  t.equal((await victim.signIn(ann.email, ann.password)).statusCode, 303)
  const legacy = (await app.users.legacyTokens.current(ann.user.id)).value
  const pair = await pairFrom(webClient(app), '/demo/login')
  t.ok(pair.cookie && pair.token && pair.preSession, 'an anonymous visit gets a pair and a pre-session')
  for (const form of FORMS) {
    const res = await forged(app, victim, pair, form)
    t.equal(res.statusCode, 403, `${form}: refused`)
    t.match(res.body, 'This form has expired')
  }
  t.equal((await app.users.legacyTokens.current(ann.user.id)).value, legacy, 'the legacy token was not reset')
  t.equal((await app.tokens.listForSite(1)).length, 0, 'no token was made')
  t.equal((await victim.get('/demo/profile')).statusCode, 200, 'the victim is still signed in')
})

t.test("another session's pair is refused, even the same person's", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const victim = webClient(app)
  await victim.signIn(ann.email, ann.password)
  const other = webClient(app)
  await other.signIn(ann.email, ann.password)
  const pair = await pairFrom(other, '/demo/profile')
  t.equal((await forged(app, victim, pair, '/demo/profile/reset_api_token')).statusCode, 403)
  t.equal((await other.post('/demo/profile/reset_api_token')).statusCode, 303, 'the pair works in its own session')
})

t.test("another site's pair is refused", async (t) => {
  const { app } = await buildTestApp(t)
  await app.sites.add('other', 'Other')
  const ann = await personWithPassword(app)
  const victim = webClient(app)
  await victim.signIn(ann.email, ann.password)
  const pair = await pairFrom(webClient(app, 'other'), '/other/login')
  t.equal((await forged(app, victim, pair, '/demo/profile/reset_api_token')).statusCode, 403)
})

t.test('sign-in replaces the pre-session; the CSRF and pre-session cookies are scoped to the site', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  const page = await browser.get('/demo/login')
  const cookies = [page.headers['set-cookie'] ?? []].flat()
  for (const name of [CSRF_COOKIE, PRE_SESSION_COOKIE]) {
    const line = cookies.find((c) => c.startsWith(`${name}=`))
    t.match(line, /; Path=\/demo(;|$)/, `${name} is scoped to the site's pages`)
    t.match(line, /HttpOnly/)
  }
  const before = browser.field('_csrf')
  t.equal((await browser.post('/demo/login', { email: ann.email, password: ann.password })).statusCode, 303)
  t.notOk(browser.jar.has(PRE_SESSION_COOKIE), 'the pre-session is gone')
  const stale = await browser.request('POST', '/demo/profile/reset_api_token', { _csrf: before })
  t.equal(stale.statusCode, 403, "the pre-session's token does not work in the session")
  await browser.get('/demo/profile')
  t.equal((await browser.post('/demo/profile/reset_api_token')).statusCode, 303, "the session's own token does")
})

t.test('a form posted with no session and no pre-session matches no token', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.get('/demo/login')
  browser.jar.delete(PRE_SESSION_COOKIE)
  t.equal((await browser.post('/demo/login', { email: ann.email, password: ann.password })).statusCode, 403)
})
