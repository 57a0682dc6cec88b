import t from 'tap'
import { BASE_URL, buildTestApp, SITE_URL, supporterWithToken, V1 } from '../../fixtures/app.ts'
import { inDays, makeMultipass } from '../../fixtures/credentials.ts'

// Engines: one: multipass sign-in's rules and challenges, above the stores. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const challenge = (site: string, rest: string) =>
  `Bearer realm="Service", resource_metadata="${BASE_URL}/.well-known/oauth-protected-resource/${site}", scope="read write"${rest}`
const INVALID = ', error="invalid_token"'
const EXPIRED = `${INVALID}, error_description="The access token has expired"`
const DEPRECATION_LINK = `<${BASE_URL}/README.md#migrating-from-multipass-to-personal-tokens>; rel="deprecation"`
const WORKED_EXAMPLE =
  '4rdsKqcXzJVqbltYJdayy6lIkwtl7vAivlgyDkWCfORWze5HrvfuarBh8Yvkush8cOywmDG4y4M9%0A6vuIyAIWskXOpUaCT/%2BzQ%2BJU8Jf0u0X7%2BbTwjdWyzub6srayFyKn%0A'

async function multipassApp(t: Parameters<typeof buildTestApp>[0]) {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const token = async (claims: object = {}, form: Parameters<typeof makeMultipass>[3] = {}) =>
    makeMultipass({ email: 'ann@example.test', expires: inDays(app, 1), ...claims }, (await app.sites.get('demo')).multipassKey, 'demo', form)
  return { app, clock, ann, token }
}

t.test('spec 5.3: the X-Multipass header, as the account named inside, with the deprecation headers', async (t) => {
  const { app, token } = await multipassApp(t)
  const res = await app.inject({ url: '/demo', headers: { 'x-multipass': await token(), accept: V1 } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { permalink: 'demo' })
  t.equal(res.headers.deprecation, 'true')
  t.equal(res.headers.link, DEPRECATION_LINK)
  t.equal(res.headers['cache-control'], 'no-store', 'an answer to X-Multipass is private')

  const write = await app.inject({ method: 'POST', url: '/demo/categories/999/discussions', headers: { 'x-multipass': await token() }, payload: { title: 'x', body: 'y' } })
  t.equal(write.statusCode, 404, 'read and write: a write reaches the route')
  t.equal(write.headers.deprecation, 'true', 'every answer to a multipass request says it')
})

t.test('the deprecation link joins the links a route sets', async (t) => {
  const { app, token } = await multipassApp(t)
  const res = await app.inject({ url: '/demo/discussions', headers: { 'x-multipass': await token() } })
  t.equal(res.statusCode, 200)
  const links = String(res.headers.link)
  t.match(links, /rel="first"/, "the listing's own links are kept")
  t.ok(links.endsWith(`, ${DEPRECATION_LINK}`), 'and the deprecation link is added')
})

t.test('sso= on GET and HEAD: escaped, unescaped (a + read as a space), every form the libraries make', async (t) => {
  const { app, token } = await multipassApp(t)
  const long = { name: 'Ann '.repeat(30) }
  let plus = await token(long)
  for (let i = 0; !plus.includes('+'); i++) plus = await token({ ...long, unique_id: i })
  const urls = {
    'escaped once': `/demo?sso=${encodeURIComponent(plus)}`,
    'not escaped at all: + arrives as a space': `/demo?sso=${plus}`,
    'URL-safe, unpadded': `/demo?sso=${await token(long, { urlSafe: true, padding: false })}`,
    'escaped by the library, newlines and all': `/demo?sso=${await token(long, { newlines: true, escaped: true })}`,
    'escaped by the library, then by the caller': `/demo?sso=${encodeURIComponent(await token(long, { newlines: true, escaped: true }))}`,
  }
  for (const [name, url] of Object.entries(urls)) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, name)
    t.equal(res.headers['cache-control'], 'no-store', `${name}: nothing may store an answer to a URL holding a credential`)
    t.equal(res.headers.deprecation, 'true')
  }
  t.equal((await app.inject({ method: 'HEAD', url: `/demo?sso=${encodeURIComponent(plus)}` })).statusCode, 200)
  const post = await app.inject({ method: 'POST', url: `/demo?sso=${encodeURIComponent(plus)}` })
  t.equal(post.statusCode, 400, 'the query form on a write')
  t.match(post.body, 'sso query parameter is accepted on GET and HEAD only')
})

t.test('header forms: URL-safe, unpadded, with newlines escaped the way libraries leave them', async (t) => {
  const { app, token } = await multipassApp(t)
  const long = { name: 'Ann '.repeat(30) }
  for (const form of [{ urlSafe: true }, { padding: false }, { urlSafe: true, padding: false }, { newlines: true, escaped: true }, { escaped: true }]) {
    const res = await app.inject({ url: '/demo', headers: { 'x-multipass': await token(long, form) } })
    t.equal(res.statusCode, 200, JSON.stringify(form))
  }
})

t.test('the worked example of docs/decisions.md decrypts, then is refused as expired', async (t) => {
  const { app } = await buildTestApp(t)
  const site = await app.sites.add('some_site')
  await app.sites.setMultipassKey(site.id, 'some_key')
  const user = await app.users.insert({ email: 'michael@mtrichardson.com', name: 'Michael' }, null)
  await app.users.addStaff(site.id, user.id)
  for (const [name, request] of [
    ['header, as given', { url: '/some_site', headers: { 'x-multipass': WORKED_EXAMPLE } }],
    ['query, as given', { url: `/some_site?sso=${WORKED_EXAMPLE}` }],
  ] as const) {
    const res = await app.inject(request)
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], challenge('some_site', EXPIRED), `${name}: expired, so it was read`)
    t.equal(
      res.body,
      `The multipass token has expired. Multipass is deprecated for the API: create a personal API token at ${SITE_URL.replace('{site}', 'some_site')}/profile/api_tokens\n`,
    )
  }
  await app.sites.setMultipassKey(site.id, 'another_key')
  const wrongKey = await app.inject({ url: '/some_site', headers: { 'x-multipass': WORKED_EXAMPLE } })
  t.equal(wrongKey.headers['www-authenticate'], challenge('some_site', INVALID), 'under another key it does not even decrypt')
})

t.test('expiry through the injected clock, in each accepted format', async (t) => {
  const { app, clock, token } = await multipassApp(t)
  const at = new Date(clock() + 3_600_000)
  const iso = at.toISOString()
  const formats = [
    iso,
    iso.slice(0, 16),
    iso.slice(0, 19),
    `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`,
    `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`,
    at.toUTCString().replace('GMT', '+0000'),
    'Sun Mar 01 13:00:00 UTC 2026',
  ]
  for (const expires of formats) {
    const sent = await token({ expires })
    t.equal((await app.inject({ url: '/demo', headers: { 'x-multipass': sent } })).statusCode, 200, `${expires}: valid before`)
    clock.advance(3_600_000)
    const res = await app.inject({ url: '/demo', headers: { 'x-multipass': sent } })
    t.equal(res.statusCode, 401, `${expires}: expired at its moment`)
    t.equal(res.headers['www-authenticate'], challenge('demo', EXPIRED))
    t.notOk(res.headers.deprecation, 'a refused request was not authenticated by multipass')
    clock.advance(-3_600_000)
  }
})

t.test('tampered, wrong-key, unreadable: 401 invalid_token, all alike', async (t) => {
  const { app, token } = await multipassApp(t)
  const good = Buffer.from(await token(), 'base64')
  good[good.length - 20] ^= 0x40
  const cases = {
    tampered: good.toString('base64'),
    'another key': makeMultipass({ email: 'ann@example.test', expires: inDays(app, 1) }, 'not the key of this site', 'demo'),
    'another site': makeMultipass({ email: 'ann@example.test', expires: inDays(app, 1) }, (await app.sites.get('demo')).multipassKey, 'other'),
    'not a token': 'hello',
    'no email': makeMultipass({ expires: inDays(app, 1) }, (await app.sites.get('demo')).multipassKey, 'demo'),
  }
  const bodies = new Set<string>()
  for (const [name, value] of Object.entries(cases)) {
    const res = await app.inject({ url: '/demo', headers: { 'x-multipass': value } })
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], challenge('demo', INVALID), name)
    bodies.add(res.body)
  }
  t.equal(bodies.size, 1, 'one answer for every failure: no padding oracle')
})

t.test('the named account must exist, be enabled, and be staff of the site', async (t) => {
  const { app, ann, token } = await multipassApp(t)
  const nobody = await app.inject({ url: '/demo', headers: { 'x-multipass': await token({ email: 'nobody@example.test' }) } })
  t.equal(nobody.statusCode, 401)
  t.equal(nobody.headers['www-authenticate'], challenge('demo', INVALID))

  await app.users.insert({ email: 'cust@example.test' }, null)
  const customer = await app.inject({ url: '/demo', headers: { 'x-multipass': await token({ email: 'CUST@example.test' }) } })
  t.equal(customer.statusCode, 403)
  t.equal(customer.body, "API access is limited to the site's support staff.\n")

  await app.users.setDisabled(ann.user.email, true)
  const disabled = await app.inject({ url: '/demo', headers: { 'x-multipass': await token() } })
  t.equal(disabled.statusCode, 401)
  t.equal(disabled.headers['www-authenticate'], challenge('demo', INVALID))
})

t.test('rotating the key stops the old tokens at once; an unknown site looks like a wrong token', async (t) => {
  const { app, ann, token } = await multipassApp(t)
  const before = await token()
  await app.sites.setMultipassKey(ann.site.id)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-multipass': before } })).statusCode, 401)
  t.equal((await app.inject({ url: '/demo', headers: { 'x-multipass': await token() } })).statusCode, 200, 'tokens made with the new key work')
  const unknown = await app.inject({ url: '/nosuchsite', headers: { 'x-multipass': await token() } })
  t.equal(unknown.headers['www-authenticate'], challenge('nosuchsite', INVALID))
})
