import t from 'tap'
import { BASE_URL, buildTestApp, supporterWithToken, V1 } from '../../fixtures/app.ts'
import { legacyTokenOf } from '../../fixtures/credentials.ts'

// Engines: one: the legacy token's rules and challenges, above the stores. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const metadata = (site: string) => `${BASE_URL}/.well-known/oauth-protected-resource/${site}`
const INVALID = `Bearer realm="Service", resource_metadata="${metadata('demo')}", scope="read write", error="invalid_token"`
const EXPIRED_BODY = '{"error": "API token has expired. Please generate a new token from your account settings."}'

async function legacySupporter(t: Parameters<typeof buildTestApp>[0], options: Parameters<typeof supporterWithToken>[1] = {}) {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, options)
  const { value } = await legacyTokenOf(app, ann.user.id)
  return { app, clock, ann, value }
}

t.test('spec 5.2: the header and the GET query parameter, read and write', async (t) => {
  const { app, ann, value } = await legacySupporter(t)
  const header = await app.inject({ url: '/demo', headers: { 'x-service-auth': value, accept: V1 } })
  t.equal(header.statusCode, 200)
  t.match(header.json(), { permalink: 'demo' })
  t.equal(header.headers['cache-control'], 'no-store', 'a header credential: no cache keeps the answer either')
  t.notOk(header.headers['service-token-expiration'], 'that header is for personal tokens')

  const query = await app.inject({ url: `/demo/discussions?auth=${value}`, headers: { accept: V1 } })
  t.equal(query.statusCode, 200)
  t.equal(query.headers['cache-control'], 'no-store', 'a credential in the URL: nothing may be stored')
  const head = await app.inject({ method: 'HEAD', url: `/demo?auth=${value}` })
  t.equal(head.statusCode, 200, 'HEAD is a GET')

  const write = await app.inject({ method: 'DELETE', url: '/demo/nothing-here', headers: { 'x-service-auth': value } })
  t.equal(write.statusCode, 404, 'a write passes authentication: the legacy token is read and write')
  const create = await app.inject({
    method: 'POST',
    url: '/demo/categories/999/discussions',
    headers: { 'x-service-auth': value },
    payload: { title: 'x', body: 'y' },
  })
  t.equal(create.statusCode, 404, 'and reaches the route as the account')
  t.equal(ann.user.email, (await app.users.legacyTokens.lookup(value, ann.site.id))!.email)
})

t.test('the query form on a write is a bad request', async (t) => {
  const { app, value } = await legacySupporter(t)
  for (const method of ['POST', 'PUT', 'DELETE'] as const) {
    const res = await app.inject({ method, url: `/demo?auth=${value}` })
    t.equal(res.statusCode, 400, method)
    t.match(res.headers['www-authenticate'], 'error="invalid_request"')
    t.match(res.body, 'accepted on GET and HEAD only')
  }
})

t.test('valid on every site where the account is staff, refused (403) where it is not', async (t) => {
  const { app, ann, value } = await legacySupporter(t)
  const other = await app.sites.add('other')
  await app.sites.add('third')
  await app.users.addStaff(other.id, ann.user.id)
  t.equal((await app.inject({ url: '/other', headers: { 'x-service-auth': value } })).statusCode, 200)
  const notStaff = await app.inject({ url: '/third', headers: { 'x-service-auth': value } })
  t.equal(notStaff.statusCode, 403)
  t.equal(notStaff.body, "API access is limited to the site's support staff.\n")
  t.notOk(notStaff.headers['www-authenticate'])
  await app.users.removeStaff(other.id, ann.user.id)
  t.equal((await app.inject({ url: '/other', headers: { 'x-service-auth': value } })).statusCode, 403, 'off the staff: refused at once')
})

t.test('wrong, disabled, unknown site: 401 invalid_token', async (t) => {
  const { app, ann, value } = await legacySupporter(t)
  const wrong = await app.inject({ url: '/demo', headers: { 'x-service-auth': value.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) } })
  t.equal(wrong.statusCode, 401)
  t.equal(wrong.headers['www-authenticate'], INVALID)
  t.equal(wrong.headers['content-type'], 'text/plain; charset=utf-8')

  const unknownSite = await app.inject({ url: '/nosuchsite', headers: { 'x-service-auth': value } })
  t.equal(unknownSite.statusCode, 401)
  t.match(unknownSite.headers['www-authenticate'], 'error="invalid_token"')
  t.equal(unknownSite.body, wrong.body, 'the same answer as a wrong token')

  await app.users.setDisabled(ann.user.email, true)
  const disabled = await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })
  t.equal(disabled.statusCode, 401)
  t.equal(disabled.headers['www-authenticate'], INVALID)
  await app.users.setDisabled(ann.user.email, false)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })).statusCode, 200)
})

t.test('spec table 7: expiry a year after issue, through the injected clock, answered in JSON', async (t) => {
  const { app, clock, value } = await legacySupporter(t)
  clock.advanceDays(365)
  clock.advance(-1)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })).statusCode, 200, 'valid until the last millisecond')
  clock.advance(1)
  for (const accept of [V1, 'application/json', undefined]) {
    const res = await app.inject({ url: '/demo', headers: { 'x-service-auth': value, ...(accept ? { accept } : {}) } })
    t.equal(res.statusCode, 401, `Accept: ${accept}`)
    t.equal(res.headers['content-type'], 'application/json', 'exactly application/json, whatever the Accept')
    t.equal(res.body, EXPIRED_BODY)
    t.same(res.json(), { error: 'API token has expired. Please generate a new token from your account settings.' })
    t.equal(res.headers['www-authenticate'], `${INVALID}, error_description="The access token has expired"`, 'every 401 carries the challenge')
  }
  const query = await app.inject({ url: `/demo?auth=${value}` })
  t.equal(query.statusCode, 401)
  t.equal(query.body, EXPIRED_BODY, 'the query form too')
  t.equal(query.headers['cache-control'], 'no-store', 'refusals are private too')
})

t.test('check order: disabled before expired, expired before staff', async (t) => {
  const { app, clock, ann, value } = await legacySupporter(t, { staff: false })
  clock.advanceDays(400)
  const expired = await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })
  t.equal(expired.statusCode, 401, 'expired and not staff: the expiry is told')
  t.equal(expired.body, EXPIRED_BODY)
  await app.users.setDisabled(ann.user.email, true)
  const disabled = await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })
  t.equal(disabled.headers['www-authenticate'], INVALID, 'disabled: no expiry told')
})

t.test('reset: the old value stops working at once; the new one lives a year from the reset', async (t) => {
  const { app, clock, ann, value } = await legacySupporter(t)
  clock.advanceDays(200)
  const fresh = await app.users.legacyTokens.reset(ann.user.id)
  const old = await app.inject({ url: '/demo', headers: { 'x-service-auth': value } })
  t.equal(old.statusCode, 401)
  t.equal(old.headers['www-authenticate'], INVALID, 'the old value is simply unknown now')
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': fresh.value } })).statusCode, 200)
  clock.advanceDays(364)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': fresh.value } })).statusCode, 200, 'still valid 564 days after issue of the first')
  clock.advanceDays(2)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': fresh.value } })).body, EXPIRED_BODY)
})

t.test('a personal token sent as the legacy header is just a wrong legacy token', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const res = await app.inject({ url: '/demo', headers: { 'x-service-auth': ann.value } })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], INVALID)
})
