import t, { type Test } from 'tap'
import { METADATA_LIMITS, OAUTH_PACE, UNUSED_CLIENT_TTL_S } from '../../plugins/oauth/anti-automation.ts'
import { INTERACTION_TTL_S } from '../../plugins/oauth/settings.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { buildTestApp, START } from '../fixtures/app.ts'
import { authorizationQuery, oauthTokens, pkce, REDIRECT_URI, registerClient } from '../fixtures/oauth.ts'

// Engines: one: pacing kept in memory and limits checked before any write; the records' expiry and sweep run on both in test/db/stores/oauth.test.ts.
// Issue 28, item 3: registration and authorization starts answer anyone, so they are paced per
// client address, registration metadata is bounded, and what nobody completed is forgotten.

async function demoApp(t: Test) {
  const made = await buildTestApp(t)
  await made.app.sites.add('demo', 'Demo help')
  return made
}

t.test('registration metadata is bounded: the name, the redirect URIs, the whole', async (t) => {
  const { app } = await demoApp(t)
  const refused = [
    { client_name: 'n'.repeat(METADATA_LIMITS.name + 1) },
    { client_name: 'x'.repeat(20_000) },
    { redirect_uris: Array.from({ length: METADATA_LIMITS.redirectUris + 1 }, (_, i) => `https://app.example/cb${i}`) },
    { redirect_uris: [`https://app.example/${'p'.repeat(METADATA_LIMITS.uri)}`] },
    { client_uri: `https://app.example/${'q'.repeat(METADATA_LIMITS.total)}` },
  ]
  for (const metadata of refused) {
    const { res } = await registerClient(app, metadata)
    t.equal(res.statusCode, 400, Object.keys(metadata)[0])
    t.equal(res.json().error, 'invalid_client_metadata')
  }
  t.same(await app.oauthRecords.list('Client', {}), [], 'nothing was written')
  const { res } = await registerClient(app, { client_name: 'n'.repeat(METADATA_LIMITS.name) })
  t.equal(res.statusCode, 201, 'the largest name allowed')
})

t.test('registrations per address are paced; another address is not affected', async (t) => {
  const { app } = await demoApp(t)
  const register = (remoteAddress: string) =>
    app.inject({ method: 'POST', url: '/oauth/register', remoteAddress, headers: { 'content-type': 'application/json' }, payload: { redirect_uris: [REDIRECT_URI] } })
  for (let i = 0; i < OAUTH_PACE.registrations.max; i++) t.equal((await register('203.0.113.9')).statusCode, 201)
  const limited = await register('203.0.113.9')
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().error, 'too_many_requests')
  t.equal(limited.headers['retry-after'], String(OAUTH_PACE.registrations.windowMs / 1000))
  t.equal((await register('203.0.113.10')).statusCode, 201)
  t.equal((await app.oauthRecords.list('Client', {})).length, OAUTH_PACE.registrations.max + 1)
})

t.test('authorization starts per address are paced, and an abandoned one is swept', async (t) => {
  const { app, clock } = await demoApp(t)
  const { client } = await registerClient(app)
  const start = (remoteAddress: string) => app.inject({ url: `/oauth/authorize?${authorizationQuery(client.client_id, { challenge: pkce().challenge })}`, remoteAddress })
  for (let i = 0; i < OAUTH_PACE.authorizations.max; i++) t.equal((await start('203.0.113.9')).statusCode, 303)
  const limited = await start('203.0.113.9')
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['content-type'], 'text/html')
  t.match(limited.body, 'Too many requests from this address')
  t.equal((await start('203.0.113.10')).statusCode, 303, 'another address')
  t.equal((await app.oauthRecords.list('Interaction', {})).length, OAUTH_PACE.authorizations.max + 1)
  // The library stamps its records with the real time; the app's clock is moved past that expiry.
  clock.advance(Date.now() - START + INTERACTION_TTL_S * 1000 + 1000)
  await app.oauthRecords.sweep()
  t.same(await app.oauthRecords.list('Interaction', {}), [], 'abandoned authorizations are swept once they expire')
})

t.test('a self-registered application is forgotten after a day unless an authorization of it completed', async (t) => {
  const { app, clock } = await demoApp(t)
  const { client: unused } = await registerClient(app, { client_name: 'Never used' })
  const { client: used } = await oauthTokens(app, { scope: 'read' })
  const kept = (id: string) => app.oauthRecords.find('Client', fingerprint(id))
  clock.advance(Date.now() - START + UNUSED_CLIENT_TTL_S * 1000 + 1000)
  t.notOk(await kept(unused.client_id), 'the unused one is gone')
  t.ok(await kept(used.client_id), 'the one whose code was exchanged is kept')
  t.equal((await kept(used.client_id))!.expiresAt, null)
  const again = await app.inject({ url: `/oauth/authorize?${authorizationQuery(unused.client_id, { challenge: pkce().challenge })}` })
  t.equal(again.statusCode, 400, 'the forgotten one is an unknown client')
})
