import { createHash } from 'node:crypto'
import t from 'tap'
import { oauthErrorPage } from '../../plugins/oauth/index.ts'
import { accessTokenReader, EXPIRED_TOKEN_KEPT_MS, recordAdapter, recordColumns } from '../../plugins/oauth/adapter.ts'
import { permalinkOfResource } from '../../lib/urls.ts'
import { accountIdOf, libraryAccount, REFRESH_TOKEN_TTL_S, refreshTokenTtl, registrableRedirectUri, signingKey } from '../../plugins/oauth/settings.ts'
import { buildTestApp, newTestApp } from '../fixtures/app.ts'

// Engines: one: the adapter's mapping of the library's records, and pure rules; every method of the store under it runs on both in test/db/stores/oauth.test.ts.
// The storage adapter of oidc-provider and the pure rules of plugins/oauth, on the engine the
// suite runs on.

const sha = (value: string) => createHash('sha256').update(value).digest('hex')

t.test('the adapter stores fingerprints and payloads without their jti, and gives both back', async (t) => {
  const { app } = await buildTestApp(t)
  const now = Date.now()
  const Adapter = recordAdapter(app.oauthRecords, () => now)
  const tokens = new Adapter('AccessToken')
  await tokens.upsert('service_oat_secret', { jti: 'service_oat_secret', grantId: 'g1', accountId: '7', clientId: 'c', aud: 'https://x/demo', exp: 1 }, 60)
  const [row] = await app.oauthRecords.list('AccessToken', {})
  t.equal(row.id, sha('service_oat_secret'), 'the id is its SHA-256')
  t.notMatch(row.payload, 'service_oat_secret', 'the payload has no jti')
  t.match(row, { grantId: 'g1', accountId: '7', clientId: 'c', resource: 'https://x/demo' })
  t.equal(row.expiresAt!.getTime(), now + 60_000 + EXPIRED_TOKEN_KEPT_MS, 'an access token is known a while past its expiry')
  t.match(await tokens.find('service_oat_secret'), { jti: 'service_oat_secret', grantId: 'g1' })
  t.equal(await tokens.find('service_oat_other'), undefined)
  await tokens.consume('service_oat_secret')
  t.type((await tokens.find('service_oat_secret'))!.consumed, 'number', 'consumed, as the library expects it')
  await tokens.destroy('service_oat_secret')
  t.equal(await tokens.find('service_oat_secret'), undefined)

  const sessions = new Adapter('Session')
  await sessions.upsert('cookie-value', { jti: 'cookie-value', uid: 'u1', accountId: '7' })
  t.equal((await app.oauthRecords.list('Session', {}))[0].expiresAt, null, 'no expiry given, none kept')
  t.match(await sessions.findByUid('u1'), { uid: 'u1', accountId: '7' })
  t.equal((await sessions.findByUid('u1'))!.jti, undefined, 'found by uid: the id is not known, and not kept')
  const codes = new Adapter('DeviceCode')
  await codes.upsert('d1', { jti: 'd1', userCode: 'ABCD-EFGH' }, 60)
  t.match(await codes.findByUserCode('ABCD-EFGH'), { userCode: 'ABCD-EFGH' })
  t.equal(await codes.findByUserCode('WXYZ-WXYZ'), undefined)

  const grants = new Adapter('Grant')
  await grants.upsert('g1', { jti: 'g1', accountId: '7', clientId: 'c', resources: { 'https://x/demo': 'read' } }, 60)
  await tokens.upsert('service_oat_2', { jti: 'service_oat_2', grantId: 'g1', aud: 'https://x/demo' }, 60)
  t.match((await app.oauthRecords.list('Grant', {}))[0], { grantId: 'g1', resource: 'https://x/demo' })
  await grants.revokeByGrantId('g1')
  t.same([...(await app.oauthRecords.list('Grant', {})), ...(await app.oauthRecords.list('AccessToken', {}))], [], 'the grant and its tokens')
})

t.test('the columns kept beside the payload', async (t) => {
  t.same(recordColumns('Grant', 'g', { accountId: '1', clientId: 'c' }), {
    grantId: 'g',
    uid: null,
    userCode: null,
    accountId: '1',
    clientId: 'c',
    resource: null,
  }, 'a grant without resources')
  t.match(recordColumns('Client', 'c', { client_id: 'c' }), { clientId: 'c', grantId: null, resource: null })
  t.match(recordColumns('AccessToken', 'v', { grantId: 42 as unknown as string, aud: 'r' }), { grantId: null, resource: 'r' }, 'only text')
})

t.test('an access token as the API reads it', async (t) => {
  const { app } = await buildTestApp(t)
  const Adapter = recordAdapter(app.oauthRecords, Date.now)
  const read = accessTokenReader(app.oauthRecords)
  const tokens = new Adapter('AccessToken')
  const good = { grantId: 'g', accountId: '3', aud: 'https://x/demo', exp: 2_000_000_000 }
  await tokens.upsert('ok', { ...good, scope: 'read write' }, 60)
  t.equal(await read('ok'), undefined, 'its grant is gone')
  await new Adapter('Grant').upsert('g', { accountId: '3', clientId: 'c', resources: {} }, 60)
  t.same(await read('ok'), { accountId: 3, grantId: 'g', audience: 'https://x/demo', scopes: new Set(['read', 'write']), expiresAt: new Date(2_000_000_000_000) })
  await tokens.upsert('no-scope', good, 60)
  t.same((await read('no-scope'))!.scopes, new Set(), 'no scope, no access')
  for (const [name, broken] of Object.entries({ grant: { ...good, grantId: 1 }, account: { ...good, accountId: 3 }, aud: { ...good, aud: ['a'] }, exp: { ...good, exp: '1' } })) {
    await tokens.upsert(name, broken as never, 60)
    t.equal(await read(name), undefined, `a record with a bad ${name}`)
  }
  t.equal(await read('unknown'), undefined)
})

t.test('pure rules', async (t) => {
  t.equal(permalinkOfResource('https://api.example/demo', 'https://api.example'), 'demo')
  t.equal(permalinkOfResource('https://api.example.evil/demo', 'https://api.example'), undefined, 'another origin')
  t.equal(permalinkOfResource('https://api.example/demo/discussions', 'https://api.example'), undefined, 'a path below a site')
  t.equal(permalinkOfResource('https://api.example/Demo', 'https://api.example'), undefined, 'not a permalink')
  t.equal(permalinkOfResource('https://api.example/', 'https://api.example'), undefined)

  t.ok(registrableRedirectUri('https://app.example/cb'))
  t.ok(registrableRedirectUri('http://127.0.0.1:1234/cb'))
  t.ok(registrableRedirectUri('http://[::1]/cb'))
  t.ok(registrableRedirectUri('http://localhost/cb'))
  t.notOk(registrableRedirectUri('http://localhost.evil/cb'))
  t.notOk(registrableRedirectUri('http://app.example/cb'))
  t.notOk(registrableRedirectUri('https://app.example/cb#frag'))
  t.notOk(registrableRedirectUri('not a url'))
  t.notOk(registrableRedirectUri('javascript:alert(1)'))

  t.equal(accountIdOf('42'), 42)
  t.same(await libraryAccount('42').claims(), { sub: '42' })
  for (const sub of ['0', '042', '-1', '1.5', 'x', '', '12345678901234567']) t.equal(accountIdOf(sub), undefined, JSON.stringify(sub))

  const key = signingKey('a'.repeat(64))
  t.match(key, { kty: 'OKP', crv: 'Ed25519' })
  t.same(signingKey('a'.repeat(64)), key, 'the same server key gives the same key in every process')
  t.not(signingKey('b'.repeat(64)).x, key.x)

  const page = oauthErrorPage({ error: 'invalid_request', error_description: '<script>x</script>' })
  t.match(page, '&#60;script&#62;x&#60;/script&#62;', 'escaped')
  t.notMatch(page, '<script>')
  t.match(oauthErrorPage({ error: 'server_error' }), 'The application sent a request that cannot be completed.')
})

t.test('expired records are swept in the background, and a failed sweep is logged', async (t) => {
  const lines: string[] = []
  const { app } = await newTestApp(t, { logStream: { write: (line) => void lines.push(line) } })
  await app.ready()
  // The first sweep runs just after start, in the background: it meets this failure.
  app.oauthRecords.sweep = async () => {
    throw new Error('sweep refused')
  }
  for (let i = 0; i < 100 && !lines.some((l) => l.includes('could not remove expired OAuth records')); i++) await new Promise((r) => setTimeout(r, 10))
  t.match(lines.find((l) => l.includes('could not remove expired OAuth records')), 'sweep refused')
})

t.test("a refresh token never outlives its grant, even when the library's two readings of the clock fall either side of a second", async (t) => {
  const grantExp = 1_000_000
  for (const now of [grantExp - 7 * 86_400, grantExp - 60, grantExp - 2]) {
    // The library asks for the lifetime at `now`, then issues the token at the next second at the latest.
    t.ok(now + 1 + refreshTokenTtl(grantExp, now) <= grantExp, `not past the grant, asked ${grantExp - now} s before its end`)
    t.ok(now + refreshTokenTtl(grantExp, now) >= grantExp - 1, 'and ends within a second of it')
  }
  t.equal(refreshTokenTtl(grantExp + REFRESH_TOKEN_TTL_S * 2, 0), REFRESH_TOKEN_TTL_S, 'a long grant: the longest a refresh token lives')
  t.equal(refreshTokenTtl(grantExp, grantExp), 1, 'a grant at its end: a second, never nothing (the library refuses a lifetime of 0)')
})
