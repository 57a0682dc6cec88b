import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import t from 'tap'
import { launchChromium } from '../fixtures/browser.ts'
import { freePort, startServer } from '../fixtures/server.ts'
import { MCP_TOOLS } from '../../routes/api/mcp/tools.ts'

// Engines: one: Chromium cannot tell the engines apart; what the pages store runs on both in their app.inject tests.
// The MCP SDK's own client signs in through OAuth against a real server: from the 401 of /demo/mcp
// it finds the authorization server (RFC 9728, RFC 8414), registers itself (RFC 7591), sends the
// supporter to the consent page (headless Chromium signs in and allows), exchanges the code, and
// then lists and calls the tools with the token it got.

t.test('an MCP client connects through the OAuth flow', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-mcp-oauth-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db') })
  await new Promise((resolve) => setTimeout(resolve, 200))
  const email = /Sign in {10}(\S+)/.exec(server.output())![1]
  const password = /Password {9}(\S+)/.exec(server.output())![1]

  // The application's redirect URI: a small server that keeps what it is sent.
  const port = await freePort()
  const received: URLSearchParams[] = []
  const callback = createServer((req, res) => {
    received.push(new URL(req.url!, 'http://127.0.0.1').searchParams)
    res.end('You can close this window.')
  })
  await new Promise<void>((resolve) => callback.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => callback.close(resolve)))
  const redirectUrl = `http://127.0.0.1:${port}/callback`

  let client: OAuthClientInformationMixed | undefined
  let tokens: OAuthTokens | undefined
  let verifier = ''
  let authorizationUrl: URL | undefined
  const provider: OAuthClientProvider = {
    redirectUrl,
    clientMetadata: {
      client_name: 'Assistant',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'read write',
    },
    clientInformation: () => client,
    saveClientInformation: (info) => void (client = info),
    tokens: () => tokens,
    saveTokens: (saved) => void (tokens = saved),
    redirectToAuthorization: (url) => void (authorizationUrl = url),
    saveCodeVerifier: (value) => void (verifier = value),
    codeVerifier: () => verifier,
  }

  const endpoint = new URL(`${server.base}/demo/mcp`)
  const first = new StreamableHTTPClientTransport(endpoint, { authProvider: provider })
  const mcp = new Client({ name: 'assistant', version: '1.0.0' })
  await t.rejects(mcp.connect(first), { message: 'Unauthorized' }, 'no token yet: the client is sent to authorize')
  t.ok(client?.client_id, 'it registered itself')
  t.equal(authorizationUrl!.origin + authorizationUrl!.pathname, `${server.base}/oauth/authorize`)
  t.equal(authorizationUrl!.searchParams.get('code_challenge_method'), 'S256')
  t.equal(authorizationUrl!.searchParams.get('resource'), `${server.base}/demo`)

  const browser = await launchChromium(t)
  const page = await browser.newPage()
  await page.goto(authorizationUrl!.href)
  t.match(page.url(), `${server.base}/demo/login?next=`, 'sign in first')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.waitForURL(/\/demo\/oauth\/authorize\//)
  const consent = await page.locator('main').innerText()
  t.match(consent, 'Authorize Assistant')
  t.match(consent, 'Read and write')
  await page.getByRole('button', { name: 'Allow' }).click()
  for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  const code = received[0]?.get('code')
  t.ok(code, 'the code reached the application')

  await first.finishAuth(code!)
  t.match(tokens, { token_type: /bearer/i, access_token: /^service_oat_/, refresh_token: /^service_ort_/ })
  const connected = new Client({ name: 'assistant', version: '1.0.0' })
  await connected.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }))
  t.teardown(() => connected.close())
  t.equal((await connected.listTools()).tools.length, MCP_TOOLS.length)
  const listing = (await connected.callTool({ name: 'list_discussions', arguments: {} })).structuredContent as { total: number; discussions: Array<{ number: number }> }
  t.ok(listing.total >= 1, 'the first run made a discussion')
  const reply = await connected.callTool({ name: 'post_reply', arguments: { number: listing.discussions[0].number, body: 'Looking into it.' } })
  t.notOk(reply.isError, 'a write with a read write grant')
  const read = (await connected.callTool({ name: 'get_discussion', arguments: { number: listing.discussions[0].number } })).structuredContent as { comments: Array<{ body: string }> }
  t.equal(read.comments.at(-1)!.body, 'Looking into it.')
  const api = await fetch(`${server.base}/demo/discussions`, { headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${tokens!.access_token}` } })
  t.equal(api.status, 200, 'the same token on the plain API')
})
