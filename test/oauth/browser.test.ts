import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { launchChromium } from '../fixtures/browser.ts'
import { freePort, startServer } from '../fixtures/server.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// The whole OAuth flow as an application and a supporter go through it: a real server process, a
// real OAuth client library (oauth4webapi), Debian's Chromium driven by playwright-core, and the
// application's own redirect URI, a small HTTP server on the loopback interface (RFC 8252).

const V1 = 'application/vnd.service-v1+json'
// The server is http://localhost: oauth4webapi refuses plain http unless told otherwise.
const insecure = { [oauth.allowInsecureRequests]: true } as const

/** The parameters of a `Bearer` challenge, all quoted (plugins/auth/challenge.ts). */
function challengeParams(header: string | null): Record<string, string> {
  const params: Record<string, string> = {}
  for (const [, name, value] of (header ?? '').matchAll(/(\w+)="([^"]*)"/g)) params[name!] = value!
  return params
}

/** The OAuth error an answer of oauth4webapi's is refused with (status and error code), or 'accepted'. */
async function outcome(answer: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof answer === 'function' ? answer() : answer)
    return 'accepted'
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return `${error.status} ${error.error}`
    if (error instanceof oauth.AuthorizationResponseError) return error.error
    throw error
  }
}

/** The application's redirect URI: records every query it receives, answers a plain page. */
async function callbackServer(t: Test) {
  const waiting: ((query: URLSearchParams) => void)[] = []
  const received: URLSearchParams[] = []
  const server = createServer((request: IncomingMessage, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1')
    if (url.pathname !== '/callback') return response.writeHead(404).end()
    received.push(url.searchParams)
    waiting.shift()?.(url.searchParams)
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('You may close this window.\n')
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return {
    uri: `http://127.0.0.1:${port}/callback`,
    received,
    /** The query of the next request to /callback. */
    next: () => new Promise<URLSearchParams>((resolve) => waiting.push(resolve)),
  }
}

t.test('an application gets, uses, refreshes and loses access through OAuth in a real browser', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-oauth-browser-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db') })
  // The first-run banner follows "Server listening": wait for it rather than race it.
  while (!/Password {9}\S+/.test(server.output())) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const email = /Sign in {10}(\S+)/.exec(server.output())![1]!
  const password = /Password {9}(\S+)/.exec(server.output())![1]!
  const resource = `${server.base}/demo`
  const api = (method: string, path: string, token?: string, body?: unknown) =>
    fetch(`${server.base}${path}`, {
      method,
      headers: {
        accept: V1,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body ? { 'content-type': V1 } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    })
  const callback = await callbackServer(t)

  // 1. The API says where to sign in: its challenge names the RFC 9728 document, which names the issuer.
  const anonymous = await api('GET', '/demo/discussions')
  t.equal(anonymous.status, 401, 'no credential: 401')
  const { resource_metadata: metadataUrl } = challengeParams(anonymous.headers.get('www-authenticate'))
  t.equal(metadataUrl, `${server.base}/.well-known/oauth-protected-resource/demo`, 'the challenge names the resource metadata')
  const metadata = (await (await fetch(metadataUrl!)).json()) as { resource: string; authorization_servers: string[] }
  t.equal(metadata.resource, resource, 'the resource is the API of the site')
  const issuer = new URL(metadata.authorization_servers[0]!)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
  t.same(as.code_challenge_methods_supported, ['S256'], 'PKCE S256 only')
  t.equal(as.registration_endpoint, `${server.base}/oauth/register`, 'dynamic registration is open')
  t.ok(as.authorization_endpoint && as.token_endpoint && as.revocation_endpoint, 'the endpoints the flow uses')

  // 2. Dynamic registration of a public client (RFC 7591).
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      { client_name: 'Nightly report', redirect_uris: [callback.uri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
      insecure,
    ),
  )
  t.match(registered.client_id, /\S{10,}/, 'a client id')
  t.equal(registered.token_endpoint_auth_method, 'none', 'a public client')
  const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' }
  const clientAuth = oauth.None()
  const withResource = { additionalParameters: { resource }, ...insecure }

  /** An authorization request with PKCE S256 and state, for read access to the demo site's API. */
  async function authorizationRequest() {
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const url = new URL(as.authorization_endpoint!)
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: callback.uri,
      scope: 'read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource,
    }).toString()
    return { url: url.href, verifier, state }
  }

  const browser = await launchChromium(t)
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })
  const consentPage = new RegExp(`^${server.base}/demo/oauth/authorize/[\\w-]+$`)

  /** From the authorization request to the application's callback, the supporter signed in: the callback's query. */
  async function decide(decision: 'Allow' | 'Deny', url: string) {
    await page.goto(url)
    await page.waitForURL(consentPage)
    const arrived = callback.next()
    await page.getByRole('button', { name: decision, exact: true }).click()
    const query = await arrived
    await page.waitForURL(`${callback.uri}?**`)
    return query
  }

  // 3. The supporter signs in on the site and allows the application.
  const first = await authorizationRequest()
  await page.goto(first.url)
  t.match(page.url(), `${server.base}/demo/login?next=`, 'the authorization starts at the sign-in page')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(consentPage)
  t.pass('signed in, on to the consent page')
  t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Authorize Nightly report', 'the consent page names the application')
  const consentText = await page.textContent('body')
  t.match(consentText, /Nightly report\s+wants to use the API of\s+Demo/, 'and the site')
  t.equal((await page.locator('[data-access]').textContent())?.trim(), 'Read only', 'the access asked for')
  t.match(consentText, new URL(callback.uri).host, 'where the application will be sent back to')
  const shot = join(dir, 'oauth-consent.png')
  await page.screenshot({ path: shot, fullPage: true })
  t.ok(existsSync(shot), 'screenshot saved')
  // SCREENSHOT_DIR keeps a copy for a person to look at (the temporary folder goes with the test).
  if (process.env.SCREENSHOT_DIR) copyFileSync(shot, join(process.env.SCREENSHOT_DIR, 'oauth-consent.png'))
  const arrived = callback.next()
  await page.getByRole('button', { name: 'Allow', exact: true }).click()
  const allowed = await arrived
  t.ok(allowed.get('code'), 'the callback receives a code')
  // Checks state and iss (RFC 9207) against what was sent and discovered; throws on an error answer.
  const params = oauth.validateAuthResponse(as, client, allowed, first.state)
  t.equal(params.get('iss'), as.issuer, 'the issuer is named in the answer')
  await page.waitForURL(`${callback.uri}?**`)
  t.match(await page.textContent('body'), 'You may close this window.', "the browser shows the application's page")

  // 4. The code for tokens, with the verifier and the resource.
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, callback.uri, first.verifier, withResource),
  )
  t.match(tokens.access_token, /^service_oat_\w+$/, 'an OAuth access token')
  t.match(tokens.refresh_token, /^service_ort_\w+$/, 'an OAuth refresh token')
  t.equal(tokens.token_type, 'bearer', 'a bearer token')
  t.equal(tokens.scope, 'read', 'read access only')

  // 5. The access token on the API: reading works, writing is beyond its scope.
  t.equal((await api('GET', '/demo/discussions', tokens.access_token)).status, 200, 'GET with the access token')
  const write = await api('POST', '/demo/discussions', tokens.access_token, { title: 'From the nightly report', body: 'Should not be created.' })
  t.equal(write.status, 403, 'POST with the read-only access token')
  const refusal = challengeParams(write.headers.get('www-authenticate'))
  t.equal(refusal.error, 'insufficient_scope', 'error="insufficient_scope"')
  t.equal(refusal.scope, 'write', 'scope="write"')

  // 6. Refresh: a new pair. The reuse of the old refresh token is checked at the very end, on a grant of
  // its own: oidc-provider ends the whole grant when a rotated refresh token comes back, which would
  // leave nothing for the API tokens page to list and revoke.
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, withResource),
  )
  t.match(refreshed.access_token, /^service_oat_\w+$/, 'a new access token')
  t.not(refreshed.access_token, tokens.access_token, 'not the old one')
  t.match(refreshed.refresh_token, /^service_ort_\w+$/, 'a new refresh token')
  t.not(refreshed.refresh_token, tokens.refresh_token, 'rotated')
  t.equal((await api('GET', '/demo/discussions', refreshed.access_token)).status, 200, 'the new access token works')

  // 7. The supporter revokes the application on the API tokens page, in the same browser session.
  await page.goto(`${server.base}/demo/profile/api_tokens`)
  t.equal(page.url(), `${server.base}/demo/profile/api_tokens`, 'still signed in')
  const row = page.locator('tr[data-application-row]', { hasText: 'Nightly report' })
  t.equal(await row.count(), 1, 'the application is listed once')
  t.equal((await row.locator('td[data-label="Access"]').textContent())?.trim(), 'Read only', 'with its access')
  t.not((await row.locator('td[data-label="Last used"]').textContent())?.trim(), 'never', 'and its use')
  await row.getByRole('button', { name: 'Revoke' }).click()
  await page.waitForURL(/app_revoked=1/)
  t.match(await page.textContent('body'), "The application's access was revoked.", 'the page says so')
  t.equal(await page.locator('tr[data-application-row]', { hasText: 'Nightly report' }).count(), 0, 'no longer listed')
  const revoked = await api('GET', '/demo/discussions', refreshed.access_token)
  t.equal(revoked.status, 401, 'the access token is refused once revoked')
  t.equal(challengeParams(revoked.headers.get('www-authenticate')).error, 'invalid_token', 'error="invalid_token"')
  const refreshRevoked = await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, withResource)
  t.equal(await outcome(oauth.processRefreshTokenResponse(as, client, refreshRevoked)), '400 invalid_grant', 'the refresh token is refused')

  // 8. Again, and the supporter denies: the application is told so.
  const second = await authorizationRequest()
  const denied = await decide('Deny', second.url)
  t.equal(denied.get('error'), 'access_denied', 'the callback receives error=access_denied')
  t.notOk(denied.get('code'), 'and no code')
  t.equal(await outcome(() => oauth.validateAuthResponse(as, client, denied, second.state)), 'access_denied', 'the library reports the denial')

  // 9. Rotation: a refresh token that was already used is refused, and its reuse ends the grant
  // (a new grant, allowed for this check alone, since the first one was revoked above).
  const third = await authorizationRequest()
  const allowedAgain = oauth.validateAuthResponse(as, client, await decide('Allow', third.url), third.state)
  const again = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, clientAuth, allowedAgain, callback.uri, third.verifier, withResource),
  )
  const rotated = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, clientAuth, again.refresh_token!, withResource),
  )
  t.equal((await api('GET', '/demo/discussions', rotated.access_token)).status, 200, 'the rotated access token works')
  const reuse = await oauth.refreshTokenGrantRequest(as, client, clientAuth, again.refresh_token!, withResource)
  t.equal(await outcome(oauth.processRefreshTokenResponse(as, client, reuse)), '400 invalid_grant', 'the used refresh token is refused')
  t.equal((await api('GET', '/demo/discussions', rotated.access_token)).status, 401, 'its reuse ended the grant')
  t.equal(callback.received.length, 3, 'the application was called back once per authorization')

  // 10. Two browsers (RFC 9700 section 4.7): an attacker starts an authorization for read and write in
  // its own browser, and sends the consent page's link to the signed-in supporter, who allows. The
  // authorization finishes in neither browser, and the attacker's redirect URI receives nothing.
  const attackerContext = await browser.newContext()
  const attacker = await attackerContext.newPage()
  const fourth = await authorizationRequest()
  await attacker.goto(fourth.url.replace('scope=read', 'scope=read+write'))
  const next = new URL(attacker.url()).searchParams.get('next')
  t.match(next, /^\/demo\/oauth\/authorize\/[\w-]+$/, "the attacker's browser is sent to sign in, on the way to the consent page")
  await page.goto(`${server.base}${next}`)
  t.equal((await page.locator('[data-access]').textContent())?.trim(), 'Read and write', 'the supporter is shown the consent page')
  t.match(await page.locator('[data-registered-by]').textContent(), 'the application itself', 'which says the application registered itself')
  await page.getByRole('button', { name: 'Allow', exact: true }).click()
  await page.waitForLoadState()
  t.match(page.url(), `${server.base}/oauth/authorize/`, "the supporter's browser goes on to the issuer")
  t.match(await page.textContent('body'), "This application's request cannot be completed", 'where it cannot finish')
  const uid = next!.split('/').pop()
  const resumed = await attacker.goto(`${server.base}/oauth/authorize/${uid}`)
  t.equal(resumed?.status(), 403, 'the attacker resumes with its cookies: refused')
  t.match(await attacker.textContent('body'), 'answered in another browser', 'and told why')
  t.equal(callback.received.length, 3, 'no code reached the redirect URI')
  await attackerContext.close()
})
