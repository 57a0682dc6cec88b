import t from 'tap'
import { twoApps } from '../../multiprocess/two-apps.ts'
import { BASE_URL, buildTestApp, rawStatement, SITE_URL, supporterWithToken, V1 } from '../../fixtures/app.ts'

// Engines: one: the challenges and refusals of the API's credentials, decided before and above the stores. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const metadata = (site: string) => `${BASE_URL}/.well-known/oauth-protected-resource/${site}`
const tokensPage = (site: string) => `${SITE_URL.replace('{site}', site)}/profile/api_tokens`
const challenge = (site: string, rest = '') =>
  `Bearer realm="Service", resource_metadata="${metadata(site)}", scope="read write"${rest}`
const INVALID = ', error="invalid_token"'

t.test('spec table 7: no token sent', async (t) => {
  const { app } = await buildTestApp(t)
  await supporterWithToken(app)
  for (const url of ['/demo', '/demo/discussions', '/nosuchsite', '/nosuchsite/discussions']) {
    const res = await app.inject({ url, headers: { accept: V1 } })
    const site = url.split('/')[1]
    t.equal(res.statusCode, 401, url)
    t.equal(res.headers['www-authenticate'], challenge(site), `${url}: no error parameter`)
    t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
    t.match(res.body, /Authentication required/)
  }
})

t.test('spec table 7: wrong, revoked or other-site token', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const other = await supporterWithToken(app, { site: 'other' })
  const revoked = await supporterWithToken(app)
  await app.tokens.revoke(revoked.site.id, revoked.token.id)
  const wrong = ann.value.slice(0, -10) + 'AAAAAAAAAA'

  const cases = {
    'a well-formed token nobody made': (await supporterWithToken(app)).value.replace(/^(service_pat_)(.)/, (_, prefix: string, first: string) => prefix + (first === 'x' ? 'y' : 'x')),
    'a broken checksum': wrong,
    'a revoked token': revoked.value,
    "another site's token": other.value,
    'not a personal token at all': 'abc.def.ghi',
  }
  for (const [what, value] of Object.entries(cases)) {
    const res = await app.inject({ url: '/demo/discussions', headers: { authorization: `Bearer ${value}`, accept: V1 } })
    t.equal(res.statusCode, 401, what)
    t.equal(res.headers['www-authenticate'], challenge('demo', INVALID), what)
    t.notOk(res.headers['service-token-expiration'], `${what}: no expiration header`)
    t.equal(res.body, 'The access token is invalid: it is wrong, revoked, or was made for another site.\n')
  }
  const unknownSite = await app.inject({ url: '/nosuchsite', headers: { authorization: `Bearer ${ann.value}` } })
  t.equal(unknownSite.statusCode, 401, 'an unknown site with a credential looks like a wrong token')
  t.equal(unknownSite.headers['www-authenticate'], challenge('nosuchsite', INVALID))
})

t.test('revocation takes effect on the very next request', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
  await app.tokens.revoke(ann.site.id, ann.token.id)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 401)
})

t.test('a broken checksum is refused without a database read', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  let lookups = 0
  const lookup = app.tokens.lookupOnSite
  app.tokens.lookupOnSite = (permalink, value) => {
    lookups++
    return lookup(permalink, value)
  }
  const typo = ann.value.slice(0, 20) + (ann.value[20] === 'Q' ? 'R' : 'Q') + ann.value.slice(21)
  const res = await app.inject({ url: '/demo', headers: { authorization: `Bearer ${typo}` } })
  t.equal(res.statusCode, 401)
  t.equal(lookups, 0, 'no look-up for a token whose checksum fails')
  await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(lookups, 1, 'a well-formed token is looked up')
})

t.test('a personal token and its site are one read (on PostgreSQL one statement: test/db/postgres/authentication.test.ts)', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const other = await supporterWithToken(app, { site: 'other' })
  const reads: string[] = []
  const { sites, tokens } = app
  const find = sites.find
  const lookupOnSite = tokens.lookupOnSite
  sites.find = (permalink) => (reads.push(`site ${permalink}`), find(permalink))
  tokens.lookupOnSite = (permalink, value) => (reads.push(`site and token ${permalink}`), lookupOnSite(permalink, value))
  const get = async (site: string, headers: Record<string, string>) => (await app.inject({ url: `/${site}`, headers: { accept: V1, ...headers } })).statusCode

  t.equal(await get('demo', ann.bearer), 200)
  t.same(reads, ['site and token demo'], 'the site is read with the token, not before it')
  // The other site's token, here and on an unknown site, is the same read, refused.
  reads.length = 0
  t.same([await get('demo', other.bearer), await get('nosuchsite', ann.bearer)], [401, 401])
  t.same(reads, ['site and token demo', 'site and token nosuchsite'])
})

t.test("a site's row is kept by its version: any change to it, by the stores or another writer, is read by the next request", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const site = async () => (await app.tokens.lookupOnSite('demo', ann.value)).site!
  const first = await site()
  t.equal(await site(), first, 'the same row while nothing changed')

  // A policy change moves the version (the migration hot_path's trigger: the store does not).
  await app.sites.setPolicy(first.id, { legacyTokenOn: false })
  const after = await site()
  t.ok(after.version > first.version, 'the version moved')
  t.equal(after.legacyTokenOn, false)
  // So does a change made behind the stores' back, as another program would.
  await rawStatement(app, 'UPDATE sites SET name = ? WHERE id = ?', ['Renamed', first.id])
  const renamed = await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(renamed.json().name, 'Renamed')
  t.ok((await site()).version > after.version)
  // An update that sets the version itself moves it once, as it says.
  await rawStatement(app, 'UPDATE sites SET version = version + 1, name = ? WHERE id = ?', ['Once', first.id])
  t.equal((await site()).version, (await app.sites.find('demo'))!.version)
  t.equal((await site()).name, 'Once')
})

t.test('spec table 3 and 7: an expired token, through the injected clock', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { expiresInDays: 7 })
  clock.advanceDays(7)
  clock.advance(-1)
  const before = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(before.statusCode, 200, 'valid until the last millisecond')
  clock.advance(1)
  const res = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], challenge('demo', `${INVALID}, error_description="The access token has expired"`))
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(res.body, `Your personal API token has expired. Create a new token on the API tokens page: ${tokensPage('demo')}\n`)
})

t.test('a disabled owner: 401 invalid_token while disabled, working again when enabled', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  await app.users.setDisabled(ann.user.email, true)
  const res = await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], challenge('demo', INVALID))
  await app.users.setDisabled(ann.user.email, false)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
})

t.test("a personal token's owner disabled, or taken off the staff, through one process: the other's next request is refused", async (t) => {
  const { one, two } = await twoApps(t)
  const ann = await supporterWithToken(one)
  const status = async () => (await two.inject({ url: '/demo', headers: ann.bearer })).statusCode
  // The other process has read the token and kept the site's row.
  t.same([await status(), await status()], [200, 200])
  await one.users.setDisabled(ann.user.email, true)
  t.equal(await status(), 401, 'disabled')
  await one.users.setDisabled(ann.user.email, false)
  t.equal(await status(), 200, 'enabled again')
  await one.users.removeStaff(ann.site.id, ann.user.id)
  t.equal(await status(), 403, 'off the staff')
  await one.users.addStaff(ann.site.id, ann.user.id)
  t.equal(await status(), 200, 'staff again')
})

t.test('a disabled owner is refused before expiry is told', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { expiresInDays: 7 })
  await app.users.setDisabled(ann.user.email, true)
  clock.advanceDays(8)
  const res = await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(res.headers['www-authenticate'], challenge('demo', INVALID), 'no error_description')
})

t.test('spec table 7: a valid token whose owner is not on the staff', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { staff: false })
  const res = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(res.statusCode, 403)
  t.equal(res.body, "API access is limited to the site's support staff.\n")
  t.notOk(res.headers['www-authenticate'])
  t.ok(res.headers['service-token-expiration'], 'the token itself is genuine')

  await app.users.addStaff(ann.site.id, ann.user.id)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200, 'back on the staff, working again')
})

t.test('spec table 7: a read-only token on every write method', async (t) => {
  const { app } = await buildTestApp(t)
  const reader = await supporterWithToken(app, { access: 'read' })
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
    for (const url of ['/demo', '/demo/discussions', '/demo/discussions/1']) {
      const res = await app.inject({ method, url, headers: reader.bearer, payload: { title: 'x' } })
      t.equal(res.statusCode, 403, `${method} ${url}`)
      t.equal(
        res.headers['www-authenticate'],
        `Bearer realm="Service", resource_metadata="${metadata('demo')}", scope="write", error="insufficient_scope"`,
      )
      t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
      t.match(res.body, /lacks the write scope/)
    }
  }
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: '/demo/discussions', headers: reader.bearer })
    t.equal(res.statusCode, 200, `${method} is a read`)
  }
  const head = await app.inject({ method: 'HEAD', url: '/demo', headers: reader.bearer })
  t.equal(head.body, '', 'HEAD has no body')
  t.match(head.headers['content-type'], V1)
})

t.test('a read-and-write token passes authentication on writes', async (t) => {
  const { app } = await buildTestApp(t)
  const writer = await supporterWithToken(app, { access: 'write' })
  const res = await app.inject({ method: 'DELETE', url: '/demo/nothing-here', headers: writer.bearer })
  t.equal(res.statusCode, 404, 'authenticated, then not found')
  t.same(res.json(), { error: 'not_found', message: 'There is no such API resource.' })
})

t.test('checks run in the order of docs/decisions.md', async (t) => {
  const { app, clock } = await buildTestApp(t)
  // Expired, not staff and read-only at once: the expiry is what is told.
  const ann = await supporterWithToken(app, { access: 'read', staff: false, expiresInDays: 7 })
  clock.advanceDays(30)
  const expired = await app.inject({ method: 'POST', url: '/demo/discussions', headers: ann.bearer })
  t.equal(expired.statusCode, 401)
  t.match(expired.headers['www-authenticate'], /error_description/)
  // Not staff and read-only: the staff rule comes before the scope.
  const bob = await supporterWithToken(app, { access: 'read', staff: false })
  const notStaff = await app.inject({ method: 'POST', url: '/demo/discussions', headers: bob.bearer })
  t.equal(notStaff.statusCode, 403)
  t.match(notStaff.body, /support staff/)
  // Revoked and for another site: just invalid.
  const other = await supporterWithToken(app, { site: 'other' })
  await app.tokens.revoke(other.site.id, other.token.id)
  const res = await app.inject({ url: '/demo', headers: other.bearer })
  t.equal(res.headers['www-authenticate'], challenge('demo', INVALID))
})

t.test('every answer to a token-authenticated request carries Service-Token-Expiration', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { access: 'read' })
  const expected = ann.token.expiresAt.toUTCString()
  t.match(expected, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, 'an RFC 9110 IMF-fixdate')
  for (const [method, url] of [['GET', '/demo'], ['GET', '/demo/discussions'], ['HEAD', '/demo'], ['POST', '/demo'], ['GET', '/demo/x']] as const) {
    const res = await app.inject({ method, url, headers: ann.bearer })
    t.equal(res.headers['service-token-expiration'], expected, `${method} ${url} (${res.statusCode})`)
  }
})

t.test('tokens never go in URLs; one credential per request', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  for (const url of [`/demo?access_token=${ann.value}`, `/demo/discussions?token=${ann.value}`, `/demo?auth=${ann.value}`]) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 400, url)
    t.equal(res.headers['www-authenticate'], challenge('demo', ', error="invalid_request"'))
    t.match(res.body, /must not be sent in a URL/)
  }
  const two = await app.inject({ url: '/demo', headers: { ...ann.bearer, 'x-service-auth': 'legacy' } })
  t.equal(two.statusCode, 400)
  t.match(two.body, /exactly one credential/)
  const twice = await app.inject({ url: '/demo?auth=a&auth=b', headers: { accept: V1 } })
  t.equal(twice.statusCode, 400, 'the same kind twice')
  t.match(twice.body, /exactly one credential/)
})

t.test('a malformed Authorization header is a 401 invalid_token, never a 500', async (t) => {
  const { app } = await buildTestApp(t)
  await supporterWithToken(app)
  for (const value of ['Bearer', 'Bearer  ', 'Token x', 'service_pat_x', 'Bearer a b', 'Basic ###', 'Bearer \u00e9\u00e8', 'Bearer ' + 'A'.repeat(8000)]) {
    const res = await app.inject({ url: '/demo', headers: { authorization: value } })
    t.equal(res.statusCode, 401, JSON.stringify(value.slice(0, 20)))
    t.equal(res.headers['www-authenticate'], challenge('demo', INVALID))
  }
})

t.test('unknown values of the other credential kinds are answered as invalid tokens', async (t) => {
  const { app } = await buildTestApp(t)
  await supporterWithToken(app)
  for (const headers of [{ 'x-service-auth': 'k' }, { 'x-multipass': 'm' }, { authorization: `Basic ${Buffer.from('a@b:c').toString('base64')}` }]) {
    const res = await app.inject({ url: '/demo', headers })
    t.equal(res.statusCode, 401, JSON.stringify(headers))
    t.equal(res.headers['www-authenticate'], challenge('demo', INVALID))
  }
})

t.test('an unknown site reveals nothing: odd segments are encoded in the challenge', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/a%22b%5Cc' })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], challenge('a%22b%5Cc'))
})

t.test('the authenticated supporter reaches the route', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const res = await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(res.statusCode, 200)
  t.match(res.json(), {
    name: 'Site demo',
    permalink: 'demo',
    href: `${BASE_URL}/demo`,
    html_href: 'https://help.example.test/demo/',
    discussions_href: `${BASE_URL}/demo/discussions`,
    api_tokens_url: tokensPage('demo'),
  })
})
