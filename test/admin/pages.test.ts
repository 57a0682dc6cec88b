import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { personWithPassword, webClient, signedInPerson } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Issue 34: the administration pages of a site (docs/decisions.md, "Site administrators"), through
// app.inject: who may see them, the inventory's filters and revocation, the policy and its dry run.

/** An administrator of the site, signed in on its pages. */
const administrator = (app: Awaited<ReturnType<typeof buildTestApp>>['app'], site = 'demo') => signedInPerson(app, { site, administrator: true })

const PAGES = ['/demo/admin', '/demo/admin/credentials', '/demo/admin/policy']

t.test('only administrators of the site see its administration pages and use its forms', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await administrator(app)
  const supporter = await personWithPassword(app)
  const customer = await personWithPassword(app, { role: 'customer' })
  // An administrator of another site is nobody here.
  const elsewhere = await administrator(app, 'other')
  await app.users.addStaff(admin.site.id, elsewhere.user.id)

  for (const path of PAGES) {
    const res = await admin.web.get(path)
    t.equal(res.statusCode, path === '/demo/admin' ? 303 : 200, `administrator: ${path}`)
  }
  const page = await admin.web.get('/demo/admin/credentials')
  t.match(page.body, '>Administration</a>', 'the navigation links the section for an administrator')

  for (const person of [supporter, customer]) {
    const web = webClient(app)
    await web.signIn(person.email, person.password)
    const tokens = await web.get('/demo/profile/api_tokens')
    t.notMatch(tokens.body, '>Administration</a>', 'no link for others')
    for (const path of PAGES) {
      const res = await web.get(path)
      t.equal(res.statusCode, 403, `${person.email}: ${path}`)
      t.match(res.body, 'Administrators only')
    }
    // The forms too, with a valid CSRF token of their own session.
    for (const path of ['/demo/admin/credentials/revoke', '/demo/admin/policy']) {
      const res = await web.post(path, { ids: 'pat-1', reason: 'x', max_token_days: '7', write_tokens: 'everyone', legacy_token: 'off', multipass: 'off', password: 'off' })
      t.equal(res.statusCode, 403, `${person.email}: POST ${path}`)
    }
  }
  const other = webClient(app, 'demo')
  await other.signIn(elsewhere.email, elsewhere.password)
  t.equal((await other.get('/demo/admin/credentials')).statusCode, 403, "another site's administrator")
  t.equal((await webClient(app).get('/demo/admin/policy')).statusCode, 303, 'signed out: sent to sign in')
  t.equal((await app.sites.get('demo')).passwordOn, true, 'nothing changed by the refused forms')
})

t.test('the inventory lists, filters, sorts and revokes with a reason', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await administrator(app)
  const ann = await supporterWithToken(app, { email: 'ann@example.test', access: 'read', expiresInDays: 7 })
  const bob = await supporterWithToken(app, { email: 'bob@example.test', access: 'write', expiresInDays: 365 })
  const other = await supporterWithToken(app, { site: 'other', email: 'carl@example.test' })

  const all = await admin.web.get('/demo/admin/credentials')
  t.match(all.body, `data-credential="pat-${ann.token.id}"`)
  t.match(all.body, `data-credential="pat-${bob.token.id}"`)
  t.match(all.body, `data-credential="legacy-${bob.user.id}"`, "the staff's legacy tokens")
  t.notMatch(all.body, `data-credential="pat-${other.token.id}"`, "another site's token is never listed")

  const read = await admin.web.get('/demo/admin/credentials?kind=personal_token&access=read')
  t.match(read.body, `pat-${ann.token.id}`)
  t.notMatch(read.body, `pat-${bob.token.id}`)
  const soon = await admin.web.get('/demo/admin/credentials?expires_within_days=10&kind=personal_token')
  t.match(soon.body, `pat-${ann.token.id}`)
  t.notMatch(soon.body, `pat-${bob.token.id}`)
  const byOwner = await admin.web.get('/demo/admin/credentials?owner=BOB')
  t.match(byOwner.body, `pat-${bob.token.id}`)
  t.notMatch(byOwner.body, `pat-${ann.token.id}`)
  const sorted = await admin.web.get('/demo/admin/credentials?kind=personal_token&sort=owner&direction=asc')
  t.ok(sorted.body.indexOf(`pat-${ann.token.id}`) < sorted.body.indexOf(`pat-${bob.token.id}`), 'ann before bob')
  const reversed = await admin.web.get('/demo/admin/credentials?kind=personal_token&sort=owner&direction=desc')
  t.ok(reversed.body.indexOf(`pat-${bob.token.id}`) < reversed.body.indexOf(`pat-${ann.token.id}`), 'bob before ann')

  // No reason, another site's token, a legacy token: refused whole, nothing revoked.
  await admin.web.get('/demo/admin/credentials')
  t.equal((await admin.web.post('/demo/admin/credentials/revoke', { ids: `pat-${ann.token.id}`, reason: ' ' })).statusCode, 400)
  t.equal((await admin.web.request('POST', '/demo/admin/credentials/revoke', `_csrf=${encodeURIComponent(/name="_csrf" value="([^"]+)"/.exec((await admin.web.get('/demo/admin/credentials')).body)![1])}&ids=pat-${ann.token.id}&ids=pat-${other.token.id}&reason=gone`)).statusCode, 404)
  await admin.web.get('/demo/admin/credentials')
  const legacy = await admin.web.post('/demo/admin/credentials/revoke', { ids: `legacy-${bob.user.id}`, reason: 'gone' })
  t.equal(legacy.statusCode, 400)
  t.match(legacy.body, 'switch legacy tokens off')
  t.equal((await app.tokens.find(ann.site.id, ann.token.id))?.revokedAt, null, 'nothing revoked by the refusals')

  await admin.web.get('/demo/admin/credentials?kind=personal_token')
  const page = await admin.web.get('/demo/admin/credentials')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]
  const done = await admin.web.request('POST', '/demo/admin/credentials/revoke?kind=personal_token', `_csrf=${encodeURIComponent(csrf)}&ids=pat-${ann.token.id}&ids=pat-${bob.token.id}&reason=${encodeURIComponent('Laptop stolen')}`)
  t.equal(done.statusCode, 303)
  t.match(done.headers.location, /\/demo\/admin\/credentials\?kind=personal_token&revoked=2$/)
  for (const made of [ann, bob]) {
    const res = await app.inject({ method: 'GET', url: '/demo', headers: made.bearer })
    t.equal(res.statusCode, 401, 'refused on its next request')
  }
  t.equal((await app.tokens.find(other.site.id, other.token.id))?.revokedAt, null, "the other site's token untouched")
  const { events } = await app.securityLog.list({ siteId: admin.site.id, kinds: ['token_revoked'], offset: 0, limit: 10 })
  t.equal(events.length, 2, 'two events')
  for (const event of events) t.match(event, { actor: 'administrator', detail: { reason: 'Laptop stolen', by: admin.email } })
  t.same(new Set(events.map((e) => e.userId)), new Set([ann.user.id, bob.user.id]), "in each owner's log")
  const after = await admin.web.get(done.headers.location as string)
  t.match(after.body, '2 credentials revoked')
})

t.test('a shorter lifetime shows its dry run, then shortens or leaves; the token page follows the policy', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const admin = await administrator(app)
  const ann = await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 365 })
  await supporterWithToken(app, { email: 'ann@example.test', expiresInDays: 90 })
  await supporterWithToken(app, { email: 'bob@example.test', expiresInDays: 7 })
  const policy = { max_token_days: '30', write_tokens: 'administrators', legacy_token: 'on', multipass: 'on', password: 'on' }

  await admin.web.get('/demo/admin/policy')
  const dry = await admin.web.post('/demo/admin/policy', policy)
  t.equal(dry.statusCode, 200)
  t.match(dry.body, /2 active tokens of 1\s+person lasts longer than 30 days/)
  t.equal((await app.sites.get('demo')).tokenMaxDays, 365, 'nothing saved by the dry run')

  const saved = await admin.web.post('/demo/admin/policy', { ...policy, existing: 'shorten' })
  t.equal(saved.statusCode, 303)
  t.equal((await app.sites.get('demo')).tokenMaxDays, 30)
  const shortened = await app.tokens.find(ann.site.id, ann.token.id)
  t.equal(shortened!.expiresAt.getTime(), clock() + 30 * 86_400_000, 'now ends 30 days from now')

  const web = webClient(app)
  const supporter = await personWithPassword(app)
  await web.signIn(supporter.email, supporter.password)
  const page = await web.get('/demo/profile/api_tokens')
  t.same([...page.body.matchAll(/<option value="(\d+)"/g)].map((m) => m[1]), ['7', '30'], 'only 7 and 30 days')
  t.notMatch(page.body, 'value="write"', 'no Read and write for a supporter')
  const refused = await web.createToken({ name: 'long', access: 'read', expires: '90' })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, 'Choose 7, 30 days.')
  const write = await web.createToken({ name: 'w', access: 'write', expires: '30' })
  t.equal(write.statusCode, 400)
  t.match(write.body, 'Only the site&#39;s administrators')
  t.equal((await web.createToken({ name: 'ok', access: 'read', expires: '30' })).statusCode, 201)
  // The administrator may still make one.
  t.equal((await admin.web.createToken({ name: 'admin', access: 'write', expires: '30' })).statusCode, 201)

  // The customer's pages (issue 49): switched on the same form; a value that is neither on nor off is said.
  const kept = { ...policy, max_token_days: '30' }
  await admin.web.get('/demo/admin/policy')
  const odd = await admin.web.post('/demo/admin/policy', { ...kept, visitor_discussions: 'maybe', public_discussions: 'off' })
  t.equal(odd.statusCode, 400)
  t.match(odd.body, 'Choose on or off.')
  t.equal((await app.sites.get('demo')).publicDiscussions, true, 'nothing saved')
  t.equal((await admin.web.post('/demo/admin/policy', { ...kept, visitor_discussions: 'off', public_discussions: 'off' })).statusCode, 303)
  t.match(await app.sites.get('demo'), { visitorDiscussions: false, publicDiscussions: false })
  t.match((await admin.web.get('/demo/admin/policy')).body, 'name="visitor_discussions" value="off" checked')
})

t.test('the pages in their other states: a notice for one, a conflict, a form at fault, no match, many pages', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await administrator(app)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  for (let i = 0; i < 3; i++) {
    const person = await supporterWithToken(app, { email: `many${i}@example.test` })
    for (let j = 0; j < 17; j++) await app.tokens.create({ siteId: person.site.id, userId: person.user.id, name: `t${j}`, access: 'read', expiresInDays: 7 })
  }
  const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)![1]

  const first = await admin.web.get('/demo/admin/credentials?kind=personal_token')
  t.match(first.body, 'Page 1 of 2')
  t.match(first.body, /aria-sort="descending"><a href="[^"]*\/demo\/admin\/credentials\?kind=personal_token&amp;sort=created&amp;direction=asc"/, 'the current order, and a link to the other way')
  const next = /<a href="([^"]+)">Next<\/a>/.exec(first.body)![1].replaceAll('&amp;', '&')
  const second = await admin.web.get(next)
  t.match(second.body, 'Page 2 of 2')
  t.match(second.body, '>Previous</a>')
  t.match((await admin.web.get('/demo/admin/credentials?owner=nobody')).body, 'Nothing matches this filter.')

  await admin.web.get('/demo/admin/credentials')
  const one = await admin.web.post('/demo/admin/credentials/revoke', { ids: `pat-${ann.token.id}`, reason: 'done' })
  t.match((await admin.web.get(one.headers.location as string)).body, '1 credential revoked.')
  const again = await admin.web.post('/demo/admin/credentials/revoke', { ids: `pat-${ann.token.id}`, reason: 'done' })
  t.equal(again.statusCode, 409, 'already revoked')
  t.match(again.body, 'has already ended (revoked)')
  t.match(again.body, '>done</textarea>', 'the reason kept in the form')
  // The CSRF token in a header, and no body at all: a clear refusal, not a crash.
  const empty = await admin.web.request('GET', '/demo/admin/credentials')
  const bare = await app.inject({
    method: 'POST',
    url: '/demo/admin/credentials/revoke',
    headers: { cookie: [...admin.web.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': csrfOf(empty.body) },
  })
  t.equal(bare.statusCode, 400)
  t.match(bare.body, 'Say why: the owner is told the reason.')

  await admin.web.get('/demo/admin/policy')
  const wrong = await admin.web.post('/demo/admin/policy', { max_token_days: '400', write_tokens: 'nobody', legacy_token: 'maybe', multipass: '', password: 'on' })
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, 'Give a whole number of days from 1 to 365.')
  t.match(wrong.body, 'Choose who may create Read and write tokens.')
  t.equal((wrong.body.match(/Choose on or off\./g) ?? []).length, 2)
  t.match(wrong.body, 'value="400"', 'what was typed stays')
  const bareForm = await app.inject({
    method: 'POST',
    url: '/demo/admin/policy',
    headers: { cookie: [...admin.web.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': csrfOf(wrong.body) },
  })
  t.equal(bareForm.statusCode, 400, 'no body: every field at fault')

  await admin.web.get('/demo/admin/policy')
  const saved = await admin.web.post('/demo/admin/policy', { max_token_days: '365', write_tokens: 'everyone', legacy_token: 'off', multipass: 'on', password: 'on' })
  t.equal(saved.headers.location, 'https://help.example.test/demo/admin/policy?saved=1', 'nothing over the limit: saved at once')
  t.match((await admin.web.get('/demo/admin/policy?saved=1')).body, 'The policy is saved.')
  t.equal((await app.sites.get('demo')).legacyTokenOn, false)
  const left = await admin.web.post('/demo/admin/policy', { max_token_days: '3', write_tokens: 'everyone', legacy_token: 'off', multipass: 'on', password: 'on', existing: 'leave' })
  t.equal(left.headers.location, 'https://help.example.test/demo/admin/policy?saved=1', 'left as they are: nothing shortened')
  t.match((await admin.web.get('/demo/admin/policy?saved=1&shortened=1')).body, '1 token was shortened')
})
