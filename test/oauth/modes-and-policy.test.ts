import t, { type Test } from 'tap'
import { BASE_URL, buildTestApp, V1 } from '../fixtures/app.ts'
import { authorizationQuery, authorize, codeOf, pkce, REDIRECT_URI, registerClient, tokenRequest } from '../fixtures/oauth.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: where an OAuth error goes and what consent gives under the site's rules; the records and the policy run on both in test/db/stores/oauth.test.ts and test/admin/api.test.ts.
// Issue 45, findings 3, 6 and 10: an error for an application nobody trusts yet is shown on our
// page in every response mode, with the pages' CSP; the site's write-token rule and longest token
// lifetime bind what consent gives; and offline_access with prompt=consent ends in a code.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

async function demoApp(t: Test) {
  const made = await buildTestApp(t)
  await made.app.sites.add('demo', 'Demo help')
  return made
}

const EVIL = 'https://evil.example/landing'
const MODES = ['query', 'fragment', 'form_post', 'jwt', 'fragment.jwt', 'form_post.jwt', 'web_message']

t.test('an error for a self-registered application is never sent to its redirect URI, whatever the response mode', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app, { redirect_uris: [EVIL] })
  for (const response_mode of MODES) {
    const query = authorizationQuery(client.client_id, { challenge: pkce().challenge, scope: 'bogus', extra: { response_mode } })
    query.set('redirect_uri', EVIL)
    const res = await app.inject({ url: `/oauth/authorize?${query}` })
    t.equal(res.statusCode, 400, response_mode)
    t.notOk(res.headers.location, `${response_mode}: no redirect`)
    t.notMatch(res.body, 'evil.example', `${response_mode}: no form to it`)
    t.notMatch(res.body, '<script', `${response_mode}: nothing that runs`)
    t.match(res.headers['content-security-policy'], "default-src 'none'", `${response_mode}: the pages' CSP`)
    t.match(res.headers['content-security-policy'], "form-action 'self';")
  }
  // prompt=none's refusal is an error of the endpoint too.
  const query = authorizationQuery(client.client_id, { challenge: pkce().challenge, extra: { prompt: 'none', response_mode: 'fragment' } })
  query.set('redirect_uri', EVIL)
  const silent = await app.inject({ url: `/oauth/authorize?${query}` })
  t.equal(silent.statusCode, 400)
  t.notOk(silent.headers.location)
  t.match(silent.body, '<code>login_required</code>')
})

t.test('an application that completed an authorization gets its errors at its redirect URI, in the mode it asked', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  const person = await personWithPassword(app)
  const done = await authorize(app, { clientId: client.client_id, person })
  const { code } = codeOf(done.res.headers.location)
  const exchanged = await tokenRequest(app, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: done.verifier, resource: `${BASE_URL}/demo` })
  t.equal(exchanged.statusCode, 200, 'trusted from now on')
  const fragment = authorizationQuery(client.client_id, { challenge: pkce().challenge, scope: 'bogus', extra: { response_mode: 'fragment' } })
  const res = await app.inject({ url: `/oauth/authorize?${fragment}` })
  t.equal(res.statusCode, 303)
  t.match(res.headers.location, `${REDIRECT_URI}#error=invalid_scope`)
  const posted = authorizationQuery(client.client_id, { challenge: pkce().challenge, scope: 'bogus', extra: { response_mode: 'form_post' } })
  const page = await app.inject({ url: `/oauth/authorize?${posted}` })
  t.equal(page.statusCode, 400)
  t.match(page.body, `action="${REDIRECT_URI}"`, "the library's form to the application")
})

async function exchange(app: App, clientId: string, done: Awaited<ReturnType<typeof authorize>>) {
  const { code } = codeOf(done.res.headers.location)
  const res = await tokenRequest(app, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI, client_id: clientId, code_verifier: done.verifier, resource: `${BASE_URL}/demo` })
  return res.json() as { access_token: string; refresh_token?: string; scope: string }
}

t.test('scope=read offline_access with prompt=consent: consent once, then the code and a refresh token', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  const person = await personWithPassword(app)
  const done = await authorize(app, { clientId: client.client_id, person, scope: 'read offline_access', extra: { prompt: 'consent' } })
  t.equal(done.res.statusCode, 303)
  t.match(done.res.headers.location, `${REDIRECT_URI}?code=`, 'back at the application, not at the consent page again')
  const tokens = await exchange(app, client.client_id, done)
  t.equal(tokens.scope, 'read')
  t.ok(tokens.refresh_token, 'a refresh token, as for any authorization')
})

t.test("consent under the site's rules: read only for a non-administrator when write tokens are for administrators, never past the longest lifetime", async (t) => {
  const { app } = await demoApp(t)
  const site = (await app.sites.find('demo'))!
  await app.sites.setPolicy(site.id, { writeTokens: 'administrators', tokenMaxDays: 7 })
  const { client } = await registerClient(app)

  // The attacker's side: ann, no administrator, asks for read and write.
  const ann = await personWithPassword(app)
  const asked = await authorize(app, { clientId: client.client_id, person: ann, scope: 'read write' })
  t.match(asked.consent!.body, /data-access>Read only/, 'the page offers read only')
  t.match(asked.consent!.body, 'data-write-refused')
  const tokens = await exchange(app, client.client_id, asked)
  t.equal(tokens.scope, 'read')
  const write = await app.inject({ method: 'POST', url: '/demo/discussions', headers: { authorization: `Bearer ${tokens.access_token}`, accept: V1 }, payload: { title: 'x', body: 'y' } })
  t.equal(write.statusCode, 403, 'its token cannot write')
  const refreshed = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: client.client_id, resource: `${BASE_URL}/demo` })
  t.equal(refreshed.json().scope, 'read', 'nor can a refreshed one')
  const grants = await app.oauthRecords.list('Grant', { accountId: String(ann.user.id), clientId: client.client_id, resource: `${BASE_URL}/demo` })
  const grant = await (await app.oauth.provider()).Grant.find(grants[0].grantId!)
  // iat and exp are two readings of the clock's seconds, which a loaded machine may take either side of a second's turn.
  const lifetime = grant!.exp! - grant!.iat!
  t.ok(lifetime >= 7 * 86_400 - 1 && lifetime <= 7 * 86_400, `the grant ends with the longest token lifetime (${lifetime} s)`)
  const refresh = await (await app.oauth.provider()).RefreshToken.find(refreshed.json().refresh_token)
  t.ok(refresh!.exp! <= grant!.exp!, 'and no refresh token outlives it')

  // The administrator's side: the same application gets what it asks.
  const boss = await personWithPassword(app)
  await app.users.setAdministrator(site.id, boss.user.id, true)
  const given = await authorize(app, { clientId: client.client_id, person: boss, scope: 'read write' })
  t.match(given.consent!.body, /data-access>Read and write/)
  t.equal((await exchange(app, client.client_id, given)).scope, 'read write')
})
