import { createHash } from 'node:crypto'
import t, { type Test } from 'tap'
import { EXPIRED_DESCRIPTION } from '../../plugins/auth/challenge.ts'
import { newClientId, siteClientMetadata } from '../../cli/oauth-clients.ts'
import { recordAdapter } from '../../plugins/oauth/adapter.ts'
import { accessLabel } from '../../routes/web/oauth.ts'
import { BASE_URL, buildTestApp, SITE_URL, START, V1 } from '../fixtures/app.ts'
import { addCategory } from '../fixtures/discussions.ts'
import { authorizationQuery, authorize, codeOf, oauthTokens, pkce, REDIRECT_URI, registerClient, tokenRequest } from '../fixtures/oauth.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: OAuth 2.1's rules over the records (discovery, PKCE, codes, refresh, consent); the records' store runs on both in test/db/stores/oauth.test.ts and test/cli/oauth-clients.test.ts.
// OAuth 2.1 for applications (plugins/oauth, routes/web/oauth.ts) through app.inject, on the
// engine the suite runs on. test/oauth/browser.test.ts runs the same flow with a real client
// library, a real server and a real browser.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

async function demoApp(t: Test, config = {}) {
  const made = await buildTestApp(t, { config })
  await made.app.sites.add('demo', 'Demo help')
  await made.app.sites.add('other', 'Other help')
  return made
}

const api = (app: App, method: 'GET' | 'POST', url: string, token: string, payload?: object) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}`, accept: V1 }, ...(payload ? { payload } : {}) })

t.test('discovery: the resource names the issuer, whose RFC 8414 metadata lists what it does', async (t) => {
  const { app } = await demoApp(t)
  const resource = await app.inject({ url: '/.well-known/oauth-protected-resource/demo' })
  t.same(resource.json().authorization_servers, [BASE_URL])
  t.same(resource.json().scopes_supported, ['read', 'write'])

  const res = await app.inject({ url: '/.well-known/oauth-authorization-server' })
  t.equal(res.statusCode, 200)
  const meta = res.json()
  t.equal(meta.issuer, BASE_URL, 'the issuer is the base URL, not the Host header')
  t.equal(meta.authorization_endpoint, `${BASE_URL}/oauth/authorize`)
  t.equal(meta.token_endpoint, `${BASE_URL}/oauth/token`)
  t.equal(meta.registration_endpoint, `${BASE_URL}/oauth/register`)
  t.equal(meta.revocation_endpoint, `${BASE_URL}/oauth/revoke`)
  t.same(meta.code_challenge_methods_supported, ['S256'])
  t.same(meta.grant_types_supported, ['authorization_code', 'refresh_token'])
  t.same(meta.response_types_supported, ['code'])
  t.match(meta.scopes_supported, ['read', 'write'], "the API's scopes")
  const openid = await app.inject({ url: '/.well-known/openid-configuration', headers: { host: 'evil.example' } })
  t.equal(openid.json().token_endpoint, `${BASE_URL}/oauth/token`, 'whatever the Host header says')
})

t.test('registration can be turned off (SERVICE_OAUTH_REGISTRATION=off)', async (t) => {
  const { app } = await demoApp(t, { oauthRegistration: false })
  t.notOk('registration_endpoint' in (await app.inject({ url: '/.well-known/oauth-authorization-server' })).json())
  t.equal((await registerClient(app)).res.statusCode, 404)
})

t.test('dynamic registration takes https and loopback redirect URIs only', async (t) => {
  const { app } = await demoApp(t)
  for (const uri of ['http://127.0.0.1:9/cb', 'http://localhost/cb', 'http://[::1]:8080/cb', 'https://app.example/cb']) {
    const { res, client } = await registerClient(app, { redirect_uris: [uri] })
    t.equal(res.statusCode, 201, uri)
    t.match(client.client_id, /\S{10,}/)
  }
  for (const uri of ['http://app.example/cb', 'com.example.app:/cb', 'https://app.example/cb#x']) {
    const { res } = await registerClient(app, { redirect_uris: [uri] })
    t.equal(res.statusCode, 400, uri)
    t.equal(res.json().error, 'invalid_redirect_uri')
  }
  const { res } = await registerClient(app, { redirect_uris: ['http://app.example/cb'] })
  t.match(res.json().error_description, 'https, or http on the loopback interface')
  const scoped = await registerClient(app, { scope: 'read write' })
  t.equal(scoped.res.statusCode, 201, 'a registration may name the scopes it will ask (MCP clients do)')
  const none = await registerClient(app, { redirect_uris: undefined })
  t.equal(none.res.statusCode, 400, 'a redirect URI is required')
  const bound = await registerClient(app, { service_site: 'demo' })
  t.equal(bound.res.statusCode, 400, 'an application cannot bind itself to a site')
  t.equal(bound.res.json().error, 'invalid_client_metadata')
})

t.test('a read grant reads and may not write; a write grant writes', async (t) => {
  const { app } = await demoApp(t)
  const read = await oauthTokens(app, { scope: 'read' })
  t.match(read.tokens, { token_type: 'Bearer', scope: 'read', expires_in: 3600 })
  t.match(read.tokens.access_token, /^service_oat_[0-9A-Za-z]{49}$/)
  t.match(read.tokens.refresh_token, /^service_ort_[0-9A-Za-z]{49}$/)
  const listing = await api(app, 'GET', '/demo/discussions', read.tokens.access_token)
  t.equal(listing.statusCode, 200)
  t.ok(listing.headers['service-token-expiration'], 'says when the token dies')
  const site = (await app.sites.find('demo'))!
  const category = await addCategory(app, site.id, 'Questions', true)
  const body = { title: 'From an app', body: 'Hello.' }
  const refused = await api(app, 'POST', `/demo/categories/${category.id}/discussions`, read.tokens.access_token, body)
  t.equal(refused.statusCode, 403)
  t.match(refused.headers['www-authenticate'], 'scope="write", error="insufficient_scope"')

  const write = await oauthTokens(app, { scope: 'read write' })
  t.equal(write.tokens.scope, 'read write')
  t.equal((await api(app, 'POST', `/demo/categories/${category.id}/discussions`, write.tokens.access_token, body)).statusCode, 201)
})

t.test('a token is for one site, and a made-up one is refused without a look-up', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, person } = await oauthTokens(app, { scope: 'read' })
  await app.users.addStaff((await app.sites.find('other'))!.id, person.user.id)
  const elsewhere = await api(app, 'GET', '/other/discussions', tokens.access_token)
  t.equal(elsewhere.statusCode, 401, 'on another site, even where its user is staff')
  t.match(elsewhere.headers['www-authenticate'], 'error="invalid_token"')
  const typo = tokens.access_token.slice(0, -1) + (tokens.access_token.endsWith('a') ? 'b' : 'a')
  t.equal((await api(app, 'GET', '/demo/discussions', typo)).statusCode, 401)
  t.equal((await api(app, 'GET', '/nope/discussions', tokens.access_token)).statusCode, 401, 'an unknown site')
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.refresh_token)).statusCode, 401, 'a refresh token is no access token')
})

t.test('an expired token gets the expiry challenge', async (t) => {
  const { app, clock } = await demoApp(t)
  const { tokens } = await oauthTokens(app, { scope: 'read' })
  // The library stamps its tokens with the real time; the app's clock is moved past that expiry.
  clock.advance(Date.now() - START + tokens.expires_in * 1000 + 1000)
  const res = await api(app, 'GET', '/demo/discussions', tokens.access_token)
  t.equal(res.statusCode, 401)
  t.match(res.headers['www-authenticate'], `error="invalid_token", error_description="${EXPIRED_DESCRIPTION}"`)
})

t.test('a token stops at once when its user is disabled or leaves the staff', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, person } = await oauthTokens(app, { scope: 'read' })
  const site = (await app.sites.find('demo'))!
  await app.users.removeStaff(site.id, person.user.id)
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 403, 'no longer staff')
  await app.users.addStaff(site.id, person.user.id)
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 200)
  await app.users.setDisabled(person.email, true)
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 401, 'disabled')
  const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: (await registerClient(app)).client.client_id })
  t.equal(refresh.statusCode, 400, 'another client cannot use the refresh token')
})

t.test('refresh tokens rotate; a reused one ends the grant', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, client } = await oauthTokens(app, { scope: 'read' })
  const refresh = (token: string) => tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id })
  const first = await refresh(tokens.refresh_token)
  t.equal(first.statusCode, 200)
  const rotated = first.json()
  t.not(rotated.refresh_token, tokens.refresh_token, 'a new refresh token')
  t.equal((await api(app, 'GET', '/demo/discussions', rotated.access_token)).statusCode, 200)
  const reused = await refresh(tokens.refresh_token)
  t.equal(reused.statusCode, 400)
  t.equal(reused.json().error, 'invalid_grant')
  t.equal((await api(app, 'GET', '/demo/discussions', rotated.access_token)).statusCode, 401, 'the grant ended with the reuse')
  t.equal((await refresh(rotated.refresh_token)).statusCode, 400)
})

t.test('a refresh with another resource is refused without spending the refresh token (issue 28)', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, client } = await oauthTokens(app, { scope: 'read' })
  const refresh = (extra: Record<string, string>) => tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, ...extra })
  for (const resource of [`${BASE_URL}/other`, `${BASE_URL}/nope`, 'https://evil.example/demo']) {
    const wrong = await refresh({ resource })
    t.equal(wrong.statusCode, 400, resource)
    t.equal(wrong.json().error, 'invalid_target')
  }
  const right = await refresh({ resource: `${BASE_URL}/demo` })
  t.equal(right.statusCode, 200, 'the refresh token was not spent: the right refresh works')
  t.equal((await api(app, 'GET', '/demo/discussions', right.json().access_token)).statusCode, 200, 'and the grant lives')
})

t.test('a code is exchanged once, with its verifier; a reused code revokes what it gave', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  const person = await personWithPassword(app)
  const done = await authorize(app, { clientId: client.client_id, scope: 'read', person })
  const { code } = codeOf(done.res.headers.location)
  const exchange = (verifier: string) =>
    tokenRequest(app, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: verifier })
  const wrong = await exchange(pkce().verifier)
  t.equal(wrong.statusCode, 400)
  t.equal(wrong.json().error, 'invalid_grant', 'a wrong verifier')
  const again = await authorize(app, { clientId: client.client_id, scope: 'read', browser: done.browser })
  const second = codeOf(again.res.headers.location).code!
  const exchangeSecond = () =>
    tokenRequest(app, { grant_type: 'authorization_code', code: second, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: again.verifier })
  const ok = await exchangeSecond()
  t.equal(ok.statusCode, 200)
  const reused = await exchangeSecond()
  t.equal(reused.json().error, 'invalid_grant')
  t.equal((await api(app, 'GET', '/demo/discussions', ok.json().access_token)).statusCode, 401, 'the tokens of a reused code are revoked')
})

t.test('bad authorization requests get the answers of OAuth 2.1, never a 5xx', async (t) => {
  const { app } = await demoApp(t)
  // An application that completed an authorization: its redirect URI is trusted with errors.
  const { client } = await oauthTokens(app, { scope: 'read' })
  const { challenge } = pkce()
  const errorOf = async (query: URLSearchParams) => {
    const res = await app.inject({ url: `/oauth/authorize?${query}` })
    t.equal(res.statusCode, 303)
    return new URL(res.headers.location!.replace('#', '?')).searchParams.get('error')
  }
  const query = (options: { scope?: string; site?: string; extra?: Record<string, string> } = {}) => authorizationQuery(client.client_id, { challenge, ...options })
  t.equal(await errorOf(query({ scope: 'read admin' })), 'invalid_scope')
  t.equal(await errorOf(query({ scope: 'offline_access' })), 'invalid_scope', 'some access to the API must be asked for')
  const withoutPkce = query()
  withoutPkce.delete('code_challenge')
  withoutPkce.delete('code_challenge_method')
  t.equal(await errorOf(withoutPkce), 'invalid_request', 'PKCE is required')
  t.equal(await errorOf(query({ extra: { code_challenge_method: 'plain' } })), 'invalid_request', 'S256 only')
  t.equal(await errorOf(query({ site: 'nope' })), 'invalid_target', 'an unknown site')
  const withoutResource = query()
  withoutResource.delete('resource')
  t.equal(await errorOf(withoutResource), 'invalid_target', 'the site must be named')
  const twoSites = query()
  twoSites.append('resource', `${BASE_URL}/other`)
  t.equal(await errorOf(twoSites), 'invalid_target', 'one site per authorization')
  t.equal(await errorOf(query({ extra: { response_type: 'token' } })), 'unsupported_response_type', 'no implicit flow')

  const wrongRedirect = await app.inject({ url: `/oauth/authorize?${query({ extra: { redirect_uri: 'https://evil.example/cb' } })}` })
  t.equal(wrongRedirect.statusCode, 400, 'a redirect URI it was not registered with')
  t.notOk(wrongRedirect.headers.location, 'an error page, never a redirect')
  t.match(wrongRedirect.body, 'redirect_uri did not match')
  const unknownClient = await app.inject({ url: `/oauth/authorize?${authorizationQuery('nobody', { challenge })}` })
  t.equal(unknownClient.statusCode, 400)
  t.notOk(unknownClient.headers.location)

  const password = await tokenRequest(app, { grant_type: 'password', username: 'a', password: 'b', client_id: client.client_id })
  t.equal(password.json().error, 'unsupported_grant_type', 'no password grant')
  const junk = await app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' }, payload: '{' })
  t.equal(junk.statusCode, 400)
})

t.test('consent: staff only, Deny answers access_denied, an interaction belongs to its site', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)

  const signedOut = await authorize(app, { clientId: client.client_id })
  t.equal(signedOut.consent, undefined)
  t.equal(signedOut.res.statusCode, 303, 'a signed-out supporter is sent to sign in')
  t.match(signedOut.res.headers.location, `${SITE_URL.replace('{site}', 'demo')}/login?next=%2Fdemo%2Foauth%2Fauthorize%2F`)

  const customer = await personWithPassword(app, { role: 'customer' })
  const refused = await authorize(app, { clientId: client.client_id, person: customer })
  t.equal(refused.res.statusCode, 403, 'a customer gets the staff-only page')

  const supporter = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(supporter.email, supporter.password)
  const shown = await authorize(app, { clientId: client.client_id, scope: 'read', browser })
  t.match(shown.consent!.body, 'Test integration')
  t.match(shown.consent!.body, 'Demo help')
  t.match(shown.consent!.body, '127.0.0.1:8765')
  t.match(shown.consent!.body, 'Read only')
  t.match(shown.consent!.headers['content-security-policy'], `form-action 'self' ${BASE_URL} http://127.0.0.1:8765`)

  const denied = await authorize(app, { clientId: client.client_id, browser, decision: 'deny' })
  t.equal(codeOf(denied.res.headers.location).error, 'access_denied')

  // The consent page of one site does not answer an authorization for another.
  const start = await browser.get(`/oauth/authorize?${authorizationQuery(client.client_id, { challenge: pkce().challenge })}`)
  const elsewhere = new URL(start.headers.location!).pathname.replace('/demo/', '/other/')
  const otherSupporter = await personWithPassword(app, { site: 'other' })
  const otherBrowser = webClient(app, 'other')
  await otherBrowser.signIn(otherSupporter.email, otherSupporter.password)
  t.equal((await otherBrowser.get(elsewhere)).statusCode, 400)
  t.equal((await browser.get('/demo/oauth/authorize/not-a-real-uid-at-all')).statusCode, 400)
  t.equal((await browser.get('/demo/oauth/authorize/<>')).statusCode, 400)
})

t.test('authorized applications on the token page, and Revoke', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, browser, client } = await oauthTokens(app, { scope: 'read' })
  const page = await browser.get('/demo/profile/api_tokens')
  t.match(page.body, 'Authorized applications')
  t.match(page.body, /Test integration<\/td>\s*<td data-label="Access">Read only/)
  t.match(page.body, 'They do not count\n    towards your 20 personal tokens')
  const grant = /profile\/applications\/([\w-]+)\/revoke/.exec(page.body)![1]
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 200)
  t.match((await browser.get('/demo/profile/api_tokens')).body, /Last used<\/th>[\s\S]*\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/td>\s*<td>\s*<form/)

  const other = await personWithPassword(app)
  const stranger = webClient(app)
  await stranger.signIn(other.email, other.password)
  await stranger.get('/demo/profile/api_tokens')
  t.equal((await stranger.post(`/demo/profile/applications/${grant}/revoke`)).statusCode, 404, "not another supporter's")

  const revoked = await browser.post(`/demo/profile/applications/${grant}/revoke`)
  t.equal(revoked.statusCode, 303)
  t.match((await browser.get(revoked.headers.location!)).body, 'access was revoked. Its tokens no longer work.')
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 401, 'its access token stops at once')
  const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id })
  t.equal(refresh.json().error, 'invalid_grant', 'and its refresh token')
  t.notMatch((await browser.get('/demo/profile/api_tokens')).body, 'Test integration')
})

t.test('RFC 7009 revocation by the application', async (t) => {
  const { app } = await demoApp(t)
  const { tokens, client } = await oauthTokens(app, { scope: 'read' })
  const revoke = (token: string) =>
    app.inject({ method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token, client_id: client.client_id }).toString() })
  t.equal((await revoke(tokens.access_token)).statusCode, 200)
  t.equal((await api(app, 'GET', '/demo/discussions', tokens.access_token)).statusCode, 401)
  t.equal((await revoke(tokens.refresh_token)).statusCode, 200)
  const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id })
  t.equal(refresh.json().error, 'invalid_grant')
})

t.test('the records hold no token, and no log line holds one', async (t) => {
  const lines: string[] = []
  const { app } = await buildTestApp(t, { logStream: { write: (line) => void lines.push(line) } })
  await app.sites.add('demo', 'Demo help')
  const { tokens } = await oauthTokens(app, { scope: 'read' })
  await api(app, 'GET', '/demo/discussions', tokens.access_token)
  const rows = [...(await app.oauthRecords.list('AccessToken', {})), ...(await app.oauthRecords.list('RefreshToken', {}))]
  t.equal(rows.length, 2)
  const stored = JSON.stringify(rows)
  for (const value of [tokens.access_token, tokens.refresh_token]) {
    t.notMatch(stored, value.slice(12), 'not in the table')
    t.notMatch(lines.join(''), value.slice(12), 'not in the log')
  }
  t.ok(rows.some((row) => row.id === createHash('sha256').update(tokens.access_token).digest('hex')), 'kept as its fingerprint')
  t.ok(lines.length > 0, 'the log was written')
})

t.test('what the consent page says of the access asked', async (t) => {
  t.same(accessLabel('read'), { label: 'Read only', scopes: 'read' })
  t.same(accessLabel('read write'), { label: 'Read and write', scopes: 'read write' })
  t.same(accessLabel('write'), { label: 'Read and write', scopes: 'read write' }, 'write includes read')
  t.same(accessLabel(''), { label: 'Read only', scopes: 'read' })
})

t.test('edges of the consent page and of the token exchange', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app, { client_name: undefined })
  const person = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(person.email, person.password)
  const shown = await authorize(app, { clientId: client.client_id, scope: 'read', browser })
  t.match(shown.consent!.body, `Authorize ${client.client_id}`, 'an application without a name is named by its id')
  const exchange = (c: string, verifier: string) =>
    tokenRequest(app, { grant_type: 'authorization_code', code: c, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: verifier })
  t.notOk((await exchange(codeOf(shown.res.headers.location).code!, shown.verifier)).json().id_token, 'no ID token')
  const openid = await app.inject({ url: `/oauth/authorize?${authorizationQuery(client.client_id, { challenge: pkce().challenge, scope: 'openid read' })}` })
  t.equal(codeOf(openid.headers.location).error, 'invalid_scope', 'the service is no identity provider')
  const jwks = (await app.inject({ url: '/oauth/jwks' })).json()
  t.match(jwks.keys, [{ kty: 'OKP', crv: 'Ed25519' }], 'the signing key the library asks for, from the server key')

  await browser.get('/demo/profile/api_tokens')
  t.equal((await browser.post('/demo/oauth/authorize/not-a-real-uid-at-all', { decision: 'allow' })).statusCode, 400, 'an answer to nothing')

  // The supporter is disabled between the consent and the exchange: no tokens.
  const again = await authorize(app, { clientId: client.client_id, scope: 'read', browser })
  await app.users.setDisabled(person.email, true)
  const refused = await exchange(codeOf(again.res.headers.location).code!, again.verifier)
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().error, 'invalid_grant')
})

t.test('a client removed while its consent page is open', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  const person = await personWithPassword(app)
  const browser = webClient(app)
  await browser.signIn(person.email, person.password)
  const start = await browser.get(`/oauth/authorize?${authorizationQuery(client.client_id, { challenge: pkce().challenge })}`)
  t.equal((await browser.get(start.headers.location!)).statusCode, 200)
  await app.oauthRecords.destroy('Client', createHash('sha256').update(client.client_id).digest('hex'))
  t.equal((await browser.get(start.headers.location!)).statusCode, 400)
})

t.test('consent finishes only in the browser that started the authorization (RFC 9700 section 4.7)', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  // The attacker starts an authorization in its own browser and keeps its cookies.
  const attacker = webClient(app)
  const { verifier, challenge } = pkce()
  const start = await attacker.get(`/oauth/authorize?${authorizationQuery(client.client_id, { challenge, scope: 'read write' })}`)
  const consentUrl = start.headers.location!
  const resumeUrl = `/oauth/authorize/${consentUrl.split('/').pop()}`
  const resumeCookie = attacker.jar.get('_interaction_resume')!
  const resumeSignature = attacker.jar.get('_interaction_resume.sig')!
  // It sends the consent page's link to a signed-in supporter, who allows.
  const supporter = await personWithPassword(app)
  const victim = webClient(app)
  await victim.signIn(supporter.email, supporter.password)
  const page = await victim.get(consentUrl)
  t.equal(page.statusCode, 200)
  t.match(page.body, /data-registered-by>the application itself: anyone can register one/, 'a self-registered application says so')
  t.match(page.body, /data-redirect-host>127\.0\.0\.1:8765</)
  const allowed = await victim.post(consentUrl, { decision: 'allow' })
  t.equal(allowed.statusCode, 303)
  t.match(allowed.headers.location, /\/oauth\/authorize\/[\w-]+\?consent=[\w-]{43}$/, 'the answer goes on with a proof')
  const victimResumes = await victim.get(allowed.headers.location!)
  t.notOk(codeOf(victimResumes.headers.location).code, "the supporter's browser did not start it: no code")

  // The attacker resumes with its own cookies, without the proof or with a made-up one: refused.
  for (const url of [resumeUrl, `${resumeUrl}?consent=${'A'.repeat(43)}`, `${resumeUrl}?consent=a&consent=b`]) {
    const resumed = await attacker.get(url)
    t.equal(resumed.statusCode, 403, url)
    t.match(resumed.body, 'answered in another browser')
    t.notOk(codeOf(resumed.headers.location).code)
  }
  // The library resumes what its resume cookie names, whatever the address says: an address of
  // another authorization, or of none, with the attacker's cookie is refused all the same.
  const { challenge: other } = pkce()
  const second = await attacker.get(`/oauth/authorize?${authorizationQuery(client.client_id, { challenge: other, scope: 'read' })}`)
  const secondResume = `/oauth/authorize/${second.headers.location!.split('/').pop()}`
  attacker.jar.set('_interaction_resume', resumeCookie)
  attacker.jar.set('_interaction_resume.sig', resumeSignature)
  for (const url of [secondResume, '/oauth/authorize/not-a-waiting-authorization-at-all']) {
    const elsewhere = await attacker.get(url)
    t.equal(elsewhere.statusCode, 403, `${url}, with the first authorization's cookie`)
    t.notOk(codeOf(elsewhere.headers.location).code)
  }
  // Nothing it could exchange: no code was ever issued.
  t.same(await app.oauthRecords.list('AuthorizationCode', {}), [])
  const exchange = await tokenRequest(app, { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: verifier })
  t.equal(exchange.json().error, 'invalid_grant')
})

t.test('an application registered by an administrator is named so on the consent page', async (t) => {
  const { app } = await demoApp(t)
  const clientId = newClientId()
  const Adapter = recordAdapter(app.oauthRecords, () => START)
  await new Adapter('Client').upsert(clientId, siteClientMetadata({ clientId, name: 'Acme', redirectUris: [REDIRECT_URI], permalink: 'demo', issuedAt: START }))
  const person = await personWithPassword(app)
  const shown = await authorize(app, { clientId, scope: 'read', person })
  t.match(shown.consent!.body, /data-registered-by>an administrator of this service</)
  t.ok(codeOf(shown.res.headers.location).code, 'and the same browser finishes it')
})

t.test('errors for a self-registered application that never completed an authorization are shown here, not redirected (RFC 9700 section 4.11.2)', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app, { redirect_uris: ['https://evil.example/landing'] })
  const query = authorizationQuery(client.client_id, { challenge: pkce().challenge, scope: 'read admin' })
  query.set('redirect_uri', 'https://evil.example/landing')
  const res = await app.inject({ url: `/oauth/authorize?${query}` })
  t.equal(res.statusCode, 400)
  t.notOk(res.headers.location, 'no redirect to the address it registered')
  t.match(res.headers['content-type'], 'text/html')
  t.match(res.body, '<code>invalid_scope</code>')
  t.match(res.body, 'the scopes of this API are read and write')
  // A good request still goes on to the consent page, where a supporter sees whose it is.
  query.set('scope', 'read')
  t.match((await app.inject({ url: `/oauth/authorize?${query}` })).headers.location, '/demo/oauth/authorize/')
})

t.test('a resume whose authorization is gone goes on to the library, which says it expired', async (t) => {
  const { app } = await demoApp(t)
  const { client } = await registerClient(app)
  const browser = webClient(app)
  const start = await browser.get(`/oauth/authorize?${authorizationQuery(client.client_id, { challenge: pkce().challenge })}`)
  const uid = start.headers.location!.split('/').pop()!
  await app.oauthRecords.destroy('Interaction', createHash('sha256').update(uid).digest('hex'))
  const resumed = await browser.get(`/oauth/authorize/${uid}`)
  t.equal(resumed.statusCode, 400, 'its own browser, with its cookie')
  t.match(resumed.body, 'interaction session not found')
  t.notOk(codeOf(resumed.headers.location).code)
})
