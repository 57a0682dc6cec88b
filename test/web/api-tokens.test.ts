import t, { type Test } from 'tap'
import { MAX_ACTIVE_TOKENS } from '../../db/stores/token-rules.ts'
import { buildTestApp, V1 } from '../fixtures/app.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.

const TOKENS = '/demo/profile/api_tokens'
const valueIn = (html: string) => /value="(service_pat_\w+)"/.exec(html)?.[1]

async function signedIn(t: Test) {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  return { app, clock, ann, browser }
}

t.test('create a token: shown once, then only its end', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  const form = await browser.get(TOKENS)
  t.match(form.body, '<option value="90" selected>90 days</option>', '90 days preselected')
  t.match(form.body, `<strong>${MAX_ACTIVE_TOKENS}</strong> remaining`)
  t.match(form.body, 'You have no active tokens on this site.')
  t.match(form.body, 'create a new token, switch the integration to it', 'replacement guidance')

  const created = await browser.createToken({ name: '  Nightly export  ', access: 'read', expires: '30' })
  t.equal(created.statusCode, 201)
  t.equal(created.headers['cache-control'], 'no-store')
  const value = valueIn(created.body)!
  t.ok(value, 'the full value is on the page')
  t.match(created.body, 'It is shown only this once')
  t.match(created.body, 'Never put it in a URL or a query string')
  t.match(created.body, 'data-copy="new-token"', 'a copy button')
  t.notMatch(JSON.stringify(created.headers), value, 'never in a header or cookie')
  t.match(created.body, `<strong>${MAX_ACTIVE_TOKENS - 1}</strong> remaining`)

  const api = await app.inject({ url: '/demo/discussions', headers: { authorization: `Bearer ${value}`, accept: V1 } })
  t.equal(api.statusCode, 200, 'the new token works on the API')
  const write = await app.inject({ method: 'POST', url: '/demo/discussions', headers: { authorization: `Bearer ${value}` } })
  t.equal(write.statusCode, 403, 'and is read only')

  const later = await browser.get(TOKENS)
  t.notMatch(later.body, value, 'coming back shows only its end')
  t.match(later.body, `service_pat_...${value.slice(-4)}`)
  t.match(later.body, 'Nightly export')
  t.match(later.body, 'Read only')
  t.match(later.body, 'never')
  t.match(later.body, /2026-03-31 12:00 UTC <span class="help">in 30 days<\/span>/)

  const stored = await app.tokens.listForSite(ann.site.id, ann.user.id)
  t.equal(stored.length, 1)
  t.equal(stored[0].name, 'Nightly export', 'trimmed')
  t.equal(stored[0].access, 'read')
})

t.test('posting the same form again (a reload) neither makes a second token nor shows the value', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  await browser.get(TOKENS)
  const formId = browser.field('form_id')
  const csrf = browser.field('_csrf')
  const form = { _csrf: csrf, form_id: formId, name: 'ci', access: 'write', expires: '7' }
  const first = await browser.request('POST', TOKENS, form)
  t.equal(first.statusCode, 201)
  const reload = await browser.request('POST', TOKENS, form)
  t.equal(reload.statusCode, 303)
  t.equal(reload.headers.location, `https://help.example.test${TOKENS}`)
  t.notMatch(reload.body, 'service_pat_')
  t.equal((await app.tokens.listForSite(ann.site.id)).length, 1)
})

t.test('last used, and tokens expiring soon stand out', async (t) => {
  const { app, clock, ann, browser } = await signedIn(t)
  const created = await browser.createToken({ name: 'soon', access: 'read', expires: '7' })
  const value = valueIn(created.body)!
  await app.inject({ url: '/demo', headers: { authorization: `Bearer ${value}` } })
  await app.tokens.flush()
  clock.advanceDays(6)
  const page = await browser.get(TOKENS)
  t.match(page.body, /<tr class="soon"/)
  t.match(page.body, '<span class="badge warn">within a day</span>')
  t.match(page.body, /2026-03-01 12:00 UTC from 127\.0\.0\.1/, 'when and from where')
  clock.advanceDays(2)
  t.notMatch((await browser.get(TOKENS)).body, 'data-token-row', 'expired tokens leave the list')
  t.ok(ann)
})

t.test('each validation message, values kept, nothing created', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  const cases: [Record<string, string>, string][] = [
    [{ name: '', access: 'read', expires: '90' }, 'Give the token a name that says what it is for.'],
    [{ name: '   ', access: 'read', expires: '90' }, 'Give the token a name that says what it is for.'],
    [{ name: 'x'.repeat(101), access: 'read', expires: '90' }, 'Keep the name to 100 characters at most.'],
    [{ name: 'kept <b>name</b>', access: 'admin', expires: '90' }, 'Choose Read only or Read and write.'],
    [{ name: 'kept', access: 'read', expires: '60' }, 'Choose 7, 30, 90, 365 days.'],
    [{ name: 'kept', access: 'read', expires: '9e1' }, 'Choose 7, 30, 90, 365 days.'],
    [{ name: 'kept', access: 'read', expires: '07' }, 'Choose 7, 30, 90, 365 days.'],
  ]
  for (const [form, message] of cases) {
    const res = await browser.createToken(form)
    t.equal(res.statusCode, 400, message)
    t.match(res.body, `class="field-error">${message}</p>`)
    t.notOk(valueIn(res.body), 'no value shown')
  }
  const kept = await browser.createToken({ name: 'kept <b>name</b>', access: 'admin', expires: '30' })
  t.match(kept.body, 'value="kept &lt;b&gt;name&lt;/b&gt;"', 'the name is kept, escaped')
  t.match(kept.body, '<option value="30" selected>', 'the expiry is kept')
  t.notMatch(kept.body, 'aria-invalid', 'the name was fine, so it is not marked')
  t.notMatch(kept.body, /value="(read|write)" checked/, 'an unknown access is not kept: neither choice is ticked')
  t.equal((await app.tokens.listForSite(ann.site.id)).length, 0, 'nothing created')
})

t.test('the limit of 20: the 21st is refused with a clear message and nothing is created', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  for (let i = 0; i < MAX_ACTIVE_TOKENS - 1; i++) {
    await app.tokens.create({ siteId: ann.site.id, userId: ann.user.id, name: `t${i}`, access: 'read', expiresInDays: 7 })
  }
  const last = await browser.createToken({ name: 'twentieth', access: 'read', expires: '7' })
  t.equal(last.statusCode, 201)
  t.match(last.body, 'You have 20 active tokens, the most allowed.')
  t.match(last.body, '<button type="submit" disabled>Create token</button>')
  const refused = await browser.createToken({ name: 'one too many', access: 'read', expires: '7' })
  t.equal(refused.statusCode, 409)
  t.match(refused.body, 'You already have 20 active tokens, the most allowed. Revoke one you no longer use, then create the new one.')
  t.equal(await app.tokens.activeCount(ann.user.id), 20)
})

t.test('revoke: a confirmation, then the token stops working at once', async (t) => {
  const { app, browser } = await signedIn(t)
  const value = valueIn((await browser.createToken({ name: 'to revoke', access: 'write', expires: '90' })).body)!
  const list = await browser.get(TOKENS)
  const link = /href="https:\/\/help\.example\.test(\/demo\/profile\/api_tokens\/\d+\/revoke)"/.exec(list.body)![1]
  const confirm = await browser.get(link)
  t.equal(confirm.statusCode, 200)
  t.match(confirm.body, 'Revoke “to revoke”?')
  t.match(confirm.body, 'stops working at once')
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${value}` } })).statusCode, 200, 'not yet')
  const done = await browser.post(link)
  t.equal(done.statusCode, 303)
  t.equal(done.headers.location, `https://help.example.test${TOKENS}?revoked=1`)
  const after = await app.inject({ url: '/demo', headers: { authorization: `Bearer ${value}` } })
  t.equal(after.statusCode, 401)
  t.match(after.headers['www-authenticate'], 'error="invalid_token"')
  const page = await browser.get(`${TOKENS}?revoked=1`)
  t.match(page.body, 'The token was revoked. It no longer works.')
  t.notMatch(page.body, 'to revoke')
  t.equal((await browser.post(link)).statusCode, 404, 'already revoked')
  t.equal((await browser.get(link)).statusCode, 404)
})

t.test('nobody revokes or sees another supporter’s tokens', async (t) => {
  const { app, browser } = await signedIn(t)
  const bob = await personWithPassword(app)
  const bobs = await app.tokens.create({ siteId: bob.site.id, userId: bob.user.id, name: 'bob secret', access: 'read', expiresInDays: 7 })
  t.notMatch((await browser.get(TOKENS)).body, 'bob secret')
  await browser.get(TOKENS)
  t.equal((await browser.post(`${TOKENS}/${bobs.token.id}/revoke`)).statusCode, 404)
  t.equal((await browser.post(`${TOKENS}/abc/revoke`)).statusCode, 404)
  t.equal((await app.tokens.listForSite(bob.site.id, bob.user.id))[0].revokedAt, null)
})

t.test('a signed-in customer gets a 403 page that says why', async (t) => {
  const { app } = await buildTestApp(t)
  const carol = await personWithPassword(app, { role: 'customer' })
  const browser = webClient(app)
  t.equal((await browser.signIn(carol.email, carol.password)).statusCode, 303)
  for (const res of [await browser.get(TOKENS), await browser.createToken({ name: 'x', access: 'read', expires: '7' })]) {
    t.equal(res.statusCode, 403)
    t.match(res.body, 'This page is for the support staff of Site demo.')
  }
  t.equal(await app.tokens.activeCount(carol.user.id), 0)
})

t.test('odd form input is a clear 400, never a crash', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  await browser.get(TOKENS)
  const csrf = browser.field('_csrf')
  // Repeated fields arrive as arrays; missing ones as nothing at all.
  const res = await browser.request('POST', TOKENS, `_csrf=${encodeURIComponent(csrf)}&name=a&name=b&access=read&access=write`)
  t.equal(res.statusCode, 400)
  t.match(res.body, 'Give the token a name')
  t.match(res.body, 'Choose Read only or Read and write.')
  t.match(res.body, 'Choose 7, 30, 90, 365 days.')
  // The CSRF token may also come as a header, with no body at all.
  const empty = await app.inject({
    method: 'POST',
    url: TOKENS,
    headers: { cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': csrf },
  })
  t.equal(empty.statusCode, 400)
  t.equal((await app.tokens.listForSite(ann.site.id)).length, 0)
})

t.test('a form without its form id still creates exactly one token', async (t) => {
  const { app, ann, browser } = await signedIn(t)
  await browser.get(TOKENS)
  const res = await browser.post(TOKENS, { name: 'scripted', access: 'read', expires: '7' })
  t.equal(res.statusCode, 201)
  t.equal((await app.tokens.listForSite(ann.site.id)).length, 1)
})

t.test('an unexpected failure is a generic 500 page, with the details in the log only', async (t) => {
  const { app, browser } = await signedIn(t)
  app.tokens.create = async () => {
    throw new Error('SQLITE_FULL: database or disk is full at /srv/data')
  }
  const res = await browser.createToken({ name: 'x', access: 'read', expires: '7' })
  t.equal(res.statusCode, 500)
  t.match(res.body, 'Something went wrong on our side.')
  t.notMatch(res.body, 'SQLITE_FULL')
})
