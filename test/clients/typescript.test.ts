import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import t from 'tap'
import ts from 'typescript'
import { authErrorOf, challengeParams, createServiceDeskClient, ServiceDeskAuthError, tokenExpiration } from '../../clients/typescript/index.ts'
import { CLIENT, generateClient, writeClient } from '../../tools/client/generate.ts'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { childEnv } from '../fixtures/child.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'

// Issue 19: the typed client in clients/typescript/, generated from the live OpenAPI document by
// openapi-typescript, its example run against a real server, and the document linted by Redocly.

const REPO = join(import.meta.dirname, '..', '..')

t.test('the committed document and types are what the live API generates today', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'client-generated-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const [documentFile, typesFile] = await writeClient(dir)
  const [document, types] = [readFileSync(documentFile!, 'utf8'), readFileSync(typesFile!, 'utf8')]
  const hint = 'the API changed: run `npm run client:generate` and commit clients/typescript/'
  t.equal(readFileSync(join(CLIENT, 'openapi.json'), 'utf8'), document, `openapi.json: ${hint}`)
  t.equal(readFileSync(join(CLIENT, 'schema.d.ts'), 'utf8'), types, `schema.d.ts: ${hint}`)
  t.match(types, /listDiscussions: \{/, 'operations by name')
  t.match(types, /Discussion: \{/, 'named schemas')
})

t.test('the wrapper and the example type-check against the types generated from the live document', async (t) => {
  const { types } = await generateClient()
  // A copy of the client beside the repository's node_modules (openapi-fetch, @types/node), with
  // the freshly generated types, compiled with the repository's settings.
  mkdirSync(join(REPO, 'node_modules', '.cache'), { recursive: true })
  const dir = mkdtempSync(join(REPO, 'node_modules', '.cache', 'client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const file of ['index.ts', 'example.ts', 'package.json']) copyFileSync(join(CLIENT, file), join(dir, file))
  const { config } = ts.readConfigFile(join(REPO, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, REPO)
  const typeErrors = (schema: string) => {
    writeFileSync(join(dir, 'schema.d.ts'), schema)
    const program = ts.createProgram([join(dir, 'example.ts')], options)
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  }
  t.same(typeErrors(types), [], 'no type error')
  // A change of the API that breaks the example is caught: a Discussion without its title.
  const withoutTitle = types.replace(/(\n {8}Discussion: \{\n(?: {12}.*\n)*?) {12}title: string;\n/, '$1')
  t.not(withoutTitle, types)
  t.match(typeErrors(withoutTitle), [/Property 'title' does not exist/])
})

t.test('Redocly lints the live document (recommended-strict: every rule an error) with no problem', async (t) => {
  const { app } = await buildTestApp(t, { config: { baseUrl: 'https://support.acme.test', siteUrl: 'https://support.acme.test/{site}' } })
  const source = (await app.inject({ url: '/openapi.json' })).body
  const config = await createConfig({ extends: ['recommended-strict'] })
  const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config })
  t.same(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`), [])

  const seeded = await lintFromString({ source: source.replace('"operationId":"listDiscussions",', ''), absoluteRef: 'openapi.json', config })
  t.match(seeded.map((p) => p.ruleId), ['operation-operationId'], 'the linter does find a missing operationId')
})

t.test('the README example lists the demo site from the first-run banner and posts a reply, as a real process', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'client-example-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db') })
  const token = await bannerToken(server)
  // Node runs the TypeScript file as it is where it can (Node 22.18 and later); tsx elsewhere.
  const loader = (process.features as { typescript?: string }).typescript ? [] : ['--import', 'tsx']
  const { stdout } = await promisify(execFile)(process.execPath, [...loader, join(CLIENT, 'example.ts')], {
    env: childEnv({ SERVICE_URL: server.base, SERVICE_SITE: 'demo', SERVICE_TOKEN: token }),
  })
  t.match(stdout, /^#1 \[new\] Welcome to Service Desk\nreplied as comment 2 to #1; the token expires \d{4}-\d\d-\d\dT/)
  const thread = (await (await fetch(`${server.base}/demo/discussions/1`, { headers: { authorization: `Bearer ${token}` } })).json()) as { comments: Array<{ body: string }> }
  t.equal(thread.comments[1].body, 'Thanks, we are on it.', 'the reply is there')
})

t.test("the README's example is example.ts, line for line", async (t) => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8')
  const shown = /The\s+example, in full:\n\n```ts\n([\s\S]*?)```/.exec(readme)![1]
  const code = readFileSync(join(CLIENT, 'example.ts'), 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('//'))
  t.same(shown.trimEnd().split('\n'), code)
  t.ok(code.length <= 10, `${code.length} lines`)
})

t.test('the wrapper against a real socket: v1, the token, its expiry, and the typed 401 and 403', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { expiresInDays: 7 })
  const reader = await supporterWithToken(app, { access: 'read' })
  const gone = await supporterWithToken(app)
  await app.users.removeStaff(gone.site.id, gone.user.id)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`
  const client = (token: string) => createServiceDeskClient({ baseUrl, token })

  const desk = client(ann.value)
  t.equal(desk.tokenExpiresAt, undefined, 'nothing known before the first answer')
  const { data, response } = await desk.GET('/{site}', { params: { path: { site: 'demo' } } })
  t.equal(data?.permalink, 'demo')
  t.match(response.headers.get('content-type'), 'application/vnd.service-v1+json', 'the v1 media type was asked for')
  t.equal(desk.tokenExpiresAt?.getTime(), Math.floor(ann.token.expiresAt.getTime() / 1000) * 1000, 'Service-Token-Expiration read')
  const missing = await desk.GET('/{site}/discussions/{number}', { params: { path: { site: 'demo', number: 999 } } })
  t.match(missing.error, { error: 'not_found' }, 'a refusal after authentication is an error value, not a throw')
  const asked: string[] = []
  const traced = createServiceDeskClient({ baseUrl, token: ann.value, fetch: (input) => (asked.push((input as Request).url), fetch(input)) })
  t.equal((await traced.GET('/{site}/categories', { params: { path: { site: 'demo' } } })).response.status, 200)
  t.same(asked, [`${baseUrl}demo/categories`], 'a fetch of the caller\'s own')

  const refusal = async (call: Promise<unknown>) => {
    try {
      await call
    } catch (error) {
      return error as ServiceDeskAuthError
    }
    throw new Error('not refused')
  }
  const wrong = await refusal(client('service_pat_wrong').GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.ok(wrong instanceof ServiceDeskAuthError)
  t.match(wrong, { status: 401, kind: 'invalid_token', description: undefined, message: /The access token is invalid/ })
  const readOnly = await refusal(client(reader.value).POST('/{site}/discussions/{number}/resolve', { params: { path: { site: 'demo', number: 1 } } }))
  t.match(readOnly, { status: 403, kind: 'insufficient_scope', scope: 'write', challenge: /error="insufficient_scope"/ })
  // A second credential (here added by the caller's fetch) is the authentication's 400, with its challenge.
  const twice = createServiceDeskClient({ baseUrl, token: ann.value, fetch: (input) => fetch(new Request(input as Request, { headers: { ...Object.fromEntries((input as Request).headers), 'x-service-auth': 'legacy' } })) })
  const sentTwice = await refusal(twice.GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(sentTwice, { status: 400, kind: 'invalid_request', description: undefined, challenge: /error="invalid_request"/, message: 'Send exactly one credential: this request carries more than one.' })
  const badField = await desk.GET('/{site}/discussions', { params: { path: { site: 'demo' }, query: { since: 'yesterday' } } })
  t.match(badField, { response: { status: 400 }, error: { error: 'invalid_request', fields: [{ field: 'since' }] } }, "a route's 400 is an error value")
  const offStaff = await refusal(client(gone.value).GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(offStaff, { status: 403, kind: 'forbidden', challenge: undefined, message: "API access is limited to the site's support staff." })
  clock.advanceDays(8)
  const expired = await refusal(desk.GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(expired, { status: 401, kind: 'expired', description: 'The access token has expired', name: 'ServiceDeskAuthError' })
})

t.test('the challenge and header readers', async (t) => {
  t.same(challengeParams('Bearer realm="Service", scope="read write", error="invalid_request", error_description="two"'), {
    realm: 'Service',
    scope: 'read write',
    error: 'invalid_request',
    error_description: 'two',
  })
  t.equal(authErrorOf(200, null, ''), undefined)
  t.equal(authErrorOf(404, 'Bearer error="invalid_token"', ''), undefined)
  t.equal(authErrorOf(400, null, '{"error":"invalid_request"}'), undefined, "a route's 400 has no challenge")
  t.equal(authErrorOf(400, 'Bearer realm="Service"', ''), undefined)
  t.match(authErrorOf(400, 'Bearer error="invalid_request"', 'two\n'), { status: 400, kind: 'invalid_request', message: 'two' })
  t.match(authErrorOf(400 + 1, 'Bearer error="invalid_request"', ''), { kind: 'invalid_request', message: 'HTTP 401' })
  t.match(authErrorOf(401, null, 'no\n'), { kind: 'invalid_token', message: 'no', challenge: undefined })
  t.equal(tokenExpiration(new Headers({ 'service-token-expiration': 'not a date' })), undefined)
  t.equal(tokenExpiration(new Headers())?.getTime(), undefined)
  t.equal(tokenExpiration(new Headers({ 'service-token-expiration': 'Sat, 20 Feb 2027 05:40:08 GMT' }))?.toISOString(), '2027-02-20T05:40:08.000Z')
})
