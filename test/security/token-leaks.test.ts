import t, { type Test } from 'tap'
import { generateToken, OAUTH_ACCESS_TOKEN_PREFIX, PERSONAL_TOKEN_PREFIX } from '../../lib/token-format.ts'
import { createHmac } from 'node:crypto'
import { leakSignature, MAX_LEAKS, MAX_REPORT_AGE_S, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../routes/token-leaks.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { oauthTokens } from '../fixtures/oauth.ts'

// Engines: one: a signed report of leaked values and what it revokes, the route's rules over the token store. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// POST /token_leaks (routes/token-leaks.ts): a signed report of values found in public revokes
// every live token among them, logs it in its owner's security log, and says no more than
// revoked, already_inactive or unknown per value.

const KEY = 'k'.repeat(40)

async function leakApp(t: Test, key: string | null = KEY) {
  return buildTestApp(t, { config: { leakReportKey: key ?? undefined } })
}

type App = Awaited<ReturnType<typeof leakApp>>['app']

/** A report signed now, by the app's clock (or at `timestamp`, in Unix seconds). */
function report(app: App, body: unknown, { key = KEY, signature, timestamp }: { key?: string; signature?: string; timestamp?: string } = {}) {
  const payload = typeof body === 'string' ? body : JSON.stringify(body)
  const at = timestamp ?? String(Math.floor(app.clock() / 1000))
  return app.inject({
    method: 'POST',
    url: '/token_leaks',
    headers: { 'content-type': 'application/json', [TIMESTAMP_HEADER]: at, [SIGNATURE_HEADER]: signature ?? leakSignature(key, at, payload) },
    payload,
  })
}

t.test('without SERVICE_LEAK_REPORT_KEY the endpoint does not exist', async (t) => {
  const { app } = await leakApp(t, null)
  const res = await report(app, [])
  t.equal(res.statusCode, 404)
  t.equal(res.json().error, 'not_found')
})

t.test('a live personal token is revoked at once, logged, and refused on its next request', async (t) => {
  const { app } = await leakApp(t)
  const { value, user, site, token } = await supporterWithToken(app)
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${value}`, accept: V1 } })).statusCode, 200)
  const res = await report(app, [{ token: value, url: 'https://code.example/repo/blob/main/.env', source: 'code host scan' }])
  t.equal(res.statusCode, 200)
  t.same(res.json(), { results: [{ status: 'revoked' }] })
  const next = await app.inject({ url: '/demo', headers: { authorization: `Bearer ${value}`, accept: V1 } })
  t.equal(next.statusCode, 401)
  t.match(next.headers['www-authenticate'], 'error="invalid_token"')
  const { events } = await app.securityLog.list({ userId: user.id, offset: 0, limit: 10 })
  t.match(events[0], {
    kind: 'token_revoked',
    siteId: site.id,
    actor: 'leak_report',
    detail: { token_id: token.id, name: 'test token', url: 'https://code.example/repo/blob/main/.env', source: 'code host scan' },
  })
  t.notMatch(JSON.stringify(events), value.slice(12), 'the log never holds the value')
  t.same((await report(app, [{ token: value }])).json(), { results: [{ status: 'already_inactive' }] }, 'a second report')
})

t.test('values that are not ours, made up, expired or revoked say so and no more', async (t) => {
  const { app, clock } = await leakApp(t)
  const expired = await supporterWithToken(app, { expiresInDays: 7 })
  const revoked = await supporterWithToken(app)
  await app.tokens.revoke(revoked.site.id, revoked.token.id)
  clock.advanceDays(8)
  const live = await supporterWithToken(app)
  const body = [
    { token: expired.value },
    { token: 'ghp_notours' },
    { token: generateToken(PERSONAL_TOKEN_PREFIX) },
    // Its last character changed (to one it is not: a token ending in x stayed the same, 1 run in 62).
    { token: `${live.value.slice(0, -1)}${live.value.endsWith('x') ? 'y' : 'x'}` },
    { token: revoked.value },
    { token: live.value },
    { token: live.value },
  ]
  t.same((await report(app, body)).json().results.map((r: { status: string }) => r.status), [
    'already_inactive',
    'unknown',
    'unknown',
    'unknown',
    'already_inactive',
    'revoked',
    'already_inactive',
  ])
})

t.test('two reports at once naming one live token: one revokes it, the other finds it inactive; a failed revoke is a 500', async (t) => {
  const { app } = await leakApp(t)
  const live = await supporterWithToken(app)
  // Both reports read the token as live before either revokes it: the race the route must settle.
  const lookup = app.tokens.lookup
  let arrived = 0
  let bothRead!: () => void
  const barrier = new Promise<void>((resolve) => (bothRead = resolve))
  app.tokens.lookup = async (value) => {
    const token = await lookup(value)
    if (++arrived === 2) bothRead()
    await barrier
    return token
  }
  const answers = await Promise.all([report(app, [{ token: live.value }]), report(app, [{ token: live.value }])])
  t.same(answers.map((res) => res.json().results[0].status).sort(), ['already_inactive', 'revoked'])
  const { events } = await app.securityLog.list({ userId: live.user.id, kinds: ['token_revoked'], offset: 0, limit: 10 })
  t.equal(events.length, 1, 'logged once')

  app.tokens.lookup = lookup
  const other = await supporterWithToken(app)
  app.tokens.revoke = async () => {
    throw new Error('the database is gone')
  }
  const failed = await report(app, [{ token: other.value }])
  t.equal(failed.statusCode, 500, 'a failure that is not a lost race is not hidden')
  t.notMatch(failed.body, other.value.slice(12))
})

t.test('an OAuth token past its expiry is inactive', async (t) => {
  const { app, clock } = await leakApp(t)
  await app.sites.add('demo', 'Demo')
  const { tokens } = await oauthTokens(app, { scope: 'read' })
  // The library stamps its tokens with the real time; the app's clock is moved past that expiry.
  clock.advance(Date.now() - clock() + tokens.expires_in * 1000 + 1000)
  t.same((await report(app, [{ token: tokens.access_token }])).json(), { results: [{ status: 'already_inactive' }] })
})

t.test('an OAuth token: its whole grant is revoked', async (t) => {
  const { app } = await leakApp(t)
  await app.sites.add('demo', 'Demo')
  const { tokens: first, person, client } = await oauthTokens(app, { scope: 'read' })
  // A refresh token already used (rotated) is inactive; the one it gave is live.
  const rotated = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: client.client_id }).toString(),
  })
  const tokens = rotated.json() as typeof first
  t.same((await report(app, [{ token: first.refresh_token }])).json(), { results: [{ status: 'already_inactive' }] }, 'a spent refresh token')
  t.same((await report(app, [{ token: tokens.refresh_token, source: 'paste site' }])).json(), { results: [{ status: 'revoked' }] })
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${tokens.access_token}`, accept: V1 } })).statusCode, 401, 'its access token too')
  // A revoked grant's records are deleted with it: its tokens are no longer known at all.
  t.same((await report(app, [{ token: tokens.access_token }, { token: generateToken(OAUTH_ACCESS_TOKEN_PREFIX) }])).json(), {
    results: [{ status: 'unknown' }, { status: 'unknown' }],
  })
  const { events } = await app.securityLog.list({ userId: person.user.id, kinds: ['oauth_revoked'], offset: 0, limit: 10 })
  t.match(events, [{ actor: 'leak_report', siteId: person.site.id, detail: { source: 'paste site' } }])
  const ofSite = await app.securityLog.list({ siteId: person.site.id, kinds: ['oauth_revoked'], offset: 0, limit: 10 })
  t.equal(ofSite.total, 1, "in the site's log, where security-log <site> reads it")
})

t.test('the signature, the shape and the size of a report', async (t) => {
  const { app } = await leakApp(t)
  t.equal((await report(app, [], { signature: 'sha256=00' })).statusCode, 401, 'a wrong signature')
  t.equal((await report(app, [], { key: 'another key of forty characters at least' })).statusCode, 401, 'another key')
  const unsigned = await app.inject({ method: 'POST', url: '/token_leaks', headers: { 'content-type': 'application/json' }, payload: '[]' })
  t.equal(unsigned.statusCode, 401)
  t.match(unsigned.json().message, 'sha256=')
  t.same((await report(app, [])).json(), { results: [] })
  for (const bad of ['{', '{}', '[1]', '[{"url":"x"}]', '[{"token":1}]', '[{"token":"a","extra":"b"}]', `[{"token":"${'a'.repeat(501)}"}]`]) {
    t.equal((await report(app, bad)).statusCode, 400, bad.slice(0, 30))
  }
  const many = Array.from({ length: MAX_LEAKS + 1 }, () => ({ token: 'x' }))
  t.equal((await report(app, many)).statusCode, 400, `more than ${MAX_LEAKS}`)
  const most = Array.from({ length: MAX_LEAKS }, () => ({ token: 'x' }))
  t.equal((await report(app, most)).json().results.length, MAX_LEAKS)
  const text = await app.inject({ method: 'POST', url: '/token_leaks', headers: { 'content-type': 'text/plain' }, payload: '[]' })
  t.equal(text.statusCode, 415)
})

t.test('a report is signed with its time, and one older than five minutes is refused: no replay (issue 28)', async (t) => {
  const { app, clock } = await leakApp(t)
  const { value } = await supporterWithToken(app)
  const body = JSON.stringify([{ token: value }])
  const now = Math.floor(clock() / 1000)
  const bodyOnly = `sha256=${createHmac('sha256', KEY).update(body).digest('hex')}`
  t.equal((await report(app, body, { signature: bodyOnly })).statusCode, 401, 'a signature of the body alone')
  const noTime = await app.inject({ method: 'POST', url: '/token_leaks', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: leakSignature(KEY, '', body) }, payload: body })
  t.equal(noTime.statusCode, 401, 'no timestamp')
  t.match(noTime.json().message, TIMESTAMP_HEADER)
  for (const at of [now - MAX_REPORT_AGE_S - 1, now + MAX_REPORT_AGE_S + 1]) {
    t.equal((await report(app, body, { timestamp: String(at) })).statusCode, 401, `signed at ${at - now} s`)
  }
  const signedAt = String(now - MAX_REPORT_AGE_S)
  const replayed = { timestamp: signedAt, signature: leakSignature(KEY, signedAt, body) }
  const changedTime = await report(app, body, { timestamp: String(now), signature: replayed.signature })
  t.equal(changedTime.statusCode, 401, 'the timestamp is part of what is signed')
  t.same((await report(app, body, replayed)).json(), { results: [{ status: 'revoked' }] }, 'five minutes old: still taken')
  clock.advance(1000)
  t.equal((await report(app, body, replayed)).statusCode, 401, 'the same report a second later: refused')
})

t.test('an OAuth token reported without url or source is revoked and logged with neither', async (t) => {
  const { app } = await leakApp(t)
  const { tokens, person } = await oauthTokens(app, { scope: 'read' })
  t.same((await report(app, [{ token: tokens.refresh_token }])).json(), { results: [{ status: 'revoked' }] })
  const { events } = await app.securityLog.list({ userId: person.user.id, kinds: ['oauth_revoked'], offset: 0, limit: 10 })
  t.match(events, [{ actor: 'leak_report', siteId: person.site.id, detail: { url: null, source: null } }])
})
