import { request as httpRequest } from 'node:http'
import t from 'tap'
import { withThisUse } from '../../routes/api/personal-tokens.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, legacyTokenOf, supporterWithPassword } from '../fixtures/credentials.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: a token's life over a real socket, as a supporter lives it: signed in, made, used from two addresses, read back, revoked. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 18, items 1 to 3, through a real socket: a supporter signs in, makes a token, uses it from
// two addresses (127.0.0.1 and 127.0.0.2, both this machine's loopback), reads it back with
// /personal_tokens/self, sees its addresses on the token page, revokes it; the security log has
// every step, and the token is refused from then on.

/** A GET from a chosen local address, over a real socket. */
function getFrom(port: number, localAddress: string, path: string, token: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, headers: { authorization: `Bearer ${token}`, accept: V1 } }, (res) => {
      let body = ''
      res.on('data', (chunk) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('a session that creates a token, uses it from two addresses and revokes it: every step in the security log', async (t) => {
  const { app, clock } = await buildTestApp(t)
  await app.sites.add('demo', 'Demo help')
  const person = await personWithPassword(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const browser = webClient(app, 'demo', `http://127.0.0.1:${port}`)

  t.equal((await browser.signIn(person.email, person.password)).statusCode, 303)
  const created = await browser.createToken({ name: 'Deploy bot', access: 'write', expires: '30' })
  const value = /service_pat_\w+/.exec(created.body)![0]

  // Two uses within the batch's second, as a script and a colleague would: both addresses are noted.
  t.equal((await getFrom(port, '127.0.0.1', '/demo/discussions', value)).status, 200)
  clock.advance(1_000)
  const second = await getFrom(port, '127.0.0.2', '/demo/discussions', value)
  t.equal(second.status, 200, 'a use from a second address')
  await app.tokens.flush()
  const noted = await browser.get('/demo/profile/api_tokens')
  t.match(noted.body, /Last 2 addresses<\/summary>\s*<ul><li><code>127\.0\.0\.2<\/code>.*<li><code>127\.0\.0\.1<\/code>/s, 'one batch noted both addresses')
  clock.advance(1_000)

  const self = await getFrom(port, '127.0.0.2', '/demo/personal_tokens/self', value)
  t.equal(self.status, 200)
  t.match(self.headers['content-type'], V1)
  const record = JSON.parse(self.body)
  t.match(record, {
    name: 'Deploy bot',
    access: 'write',
    active: true,
    created_at: '2026-03-01T12:00:00Z',
    last_used_at: '2026-03-01T12:00:02Z',
    expires_at: '2026-03-31T12:00:00Z',
    api_tokens_url: 'https://help.example.test/demo/profile/api_tokens',
  })
  t.same(
    record.last_used_from.map((use: { address: string }) => use.address),
    ['127.0.0.2', '127.0.0.1'],
    'the addresses it was used from, this request first',
  )
  t.equal(self.headers['service-token-expiration'], new Date(record.expires_at).toUTCString())
  await app.tokens.flush()

  const page = await browser.get('/demo/profile/api_tokens')
  t.match(page.body, /Last 2 addresses<\/summary>\s*<ul><li><code>127\.0\.0\.2<\/code>.*<li><code>127\.0\.0\.1<\/code>/s, 'the token page lists both addresses')
  const id = /api_tokens\/(\d+)\/revoke/.exec(page.body)![1]
  await browser.get(`/demo/profile/api_tokens/${id}/revoke`)
  t.equal((await browser.post(`/demo/profile/api_tokens/${id}/revoke`)).statusCode, 303)

  const refused = await getFrom(port, '127.0.0.1', '/demo/personal_tokens/self', value)
  t.equal(refused.status, 401)
  t.match(refused.headers['www-authenticate'], 'error="invalid_token"')

  const log = await browser.get('/demo/profile/security_log')
  const rows = [...log.body.matchAll(/<tr data-event="(\w+)">(.*?)<\/tr>/gs)].map(([, kind, row]) => [kind, /127\.0\.0\.\d/.exec(row)?.[0] ?? ''])
  t.same(rows, [
    ['token_revoked', '127.0.0.1'],
    ['token_new_address', '127.0.0.2'],
    ['token_new_address', '127.0.0.1'],
    ['token_created', '127.0.0.1'],
    ['sign_in_succeeded', '127.0.0.1'],
  ], 'newest first: signed in, created, first use from each address, revoked')
  t.match(log.body, 'Token used from a new address')
  t.notMatch(log.body, value.slice(12), 'no token value in the log')
})

t.test('/personal_tokens/self: only the token itself reads it; every other credential gets 404 JSON', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { access: 'read' })
  const res = await app.inject({ url: '/demo/personal_tokens/self', headers: { ...ann.bearer, accept: V1 } })
  t.equal(res.statusCode, 200, 'a Read only token reads its own record')
  t.match(res.json(), { id: ann.token.id, name: 'test token', access: 'read', last_used_from: [{ address: '127.0.0.1' }] })
  const head = await app.inject({ method: 'HEAD', url: '/demo/personal_tokens/self', headers: ann.bearer })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')

  const pat = await supporterWithPassword(app)
  const legacy = (await legacyTokenOf(app, pat.user.id)).value
  const oauth = (await oauthTokens(app)).tokens.access_token
  for (const [name, headers] of [
    ['legacy token', { 'x-service-auth': legacy }],
    ['Basic', basic(pat.user.email, pat.password)],
    ['OAuth access token', { authorization: `Bearer ${oauth}` }],
  ] as const) {
    const other = await app.inject({ url: '/demo/personal_tokens/self', headers: { ...headers, accept: V1 } })
    t.equal(other.statusCode, 404, name)
    t.same(other.json(), { error: 'not_found', message: 'Only a personal token has a record to read here; send one as "Authorization: Bearer service_pat_...".' }, name)
  }
  t.equal((await app.inject({ url: '/demo/personal_tokens/self' })).statusCode, 401, 'no credential: the challenge, as everywhere')
  const elsewhere = await supporterWithToken(app, { site: 'other' })
  t.equal((await app.inject({ url: '/demo/personal_tokens/self', headers: elsewhere.bearer })).statusCode, 401, "another site's token")
  t.equal((await app.inject({ method: 'POST', url: '/demo/personal_tokens/self', headers: ann.bearer })).statusCode, 403, 'a write with a Read only token is refused first')
})

t.test('this use first among the last five, without repeating an address', async (t) => {
  const now = new Date('2026-03-01T12:00:00Z')
  const earlier = (n: number) => ({ address: `192.0.2.${n}`, lastUsedAt: new Date(now.getTime() - n * 1000) })
  t.same(withThisUse([], '192.0.2.9', now), [{ address: '192.0.2.9', lastUsedAt: now }])
  t.same(
    withThisUse([1, 2, 3, 4, 5].map(earlier), '192.0.2.3', now).map((use) => use.address),
    ['192.0.2.3', '192.0.2.1', '192.0.2.2', '192.0.2.4', '192.0.2.5'],
  )
  t.same(withThisUse([1, 2, 3, 4, 5].map(earlier), '192.0.2.9', now).map((use) => use.address), ['192.0.2.9', '192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'])
})
