import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import t from 'tap'
import ts from 'typescript'
import { buildApp } from '../../app.ts'
import { authErrorOf, challengeParams, tokenExpiration } from '../../clients/typescript/index.ts'
import { CLIENT, writeClient } from '../../tools/client/generate.ts'
import { childEnv } from '../fixtures/child.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 19: the typed client in clients/typescript/, generated from the live OpenAPI document by
// openapi-typescript, its example run against a real server, and the document linted by Redocly.
// Nothing here can tell the engines apart (the document is the same on both, the real server runs
// on a SQLite file), so it runs once; the wrapper against each engine is typescript.test.ts.

const REPO = join(import.meta.dirname, '..', '..')
// What `npm run client:generate` writes today, into a folder of the test's own.
const generated = mkdtempSync(join(tmpdir(), 'client-generated-'))
t.teardown(() => rmSync(generated, { recursive: true, force: true }))
const live = writeClient(generated).then(([documentFile, typesFile]) => ({ document: readFileSync(documentFile!, 'utf8'), types: readFileSync(typesFile!, 'utf8') }))

t.test('the committed document and types are what the live API generates today', async (t) => {
  const { document, types } = await live
  const hint = 'the API changed: run `npm run client:generate` and commit clients/typescript/'
  t.equal(readFileSync(join(CLIENT, 'openapi.json'), 'utf8'), document, `openapi.json: ${hint}`)
  t.equal(readFileSync(join(CLIENT, 'schema.d.ts'), 'utf8'), types, `schema.d.ts: ${hint}`)
  t.match(types, /listDiscussions: \{/, 'operations by name')
  t.match(types, /Discussion: \{/, 'named schemas')
})

t.test('a change of the API that breaks the example fails the type check, with that error alone', async (t) => {
  // `npm run check` compiles the example against the committed types, and the test above holds
  // those to the live document; here, the same compile catches a breaking change. A copy of the
  // client beside the repository's node_modules (openapi-fetch, @types/node), compiled with the
  // repository's settings, once (a compile is most of this file's time): the live types less one
  // field give exactly the one error that field makes, so the rest of the example compiles.
  const { types } = await live
  mkdirSync(join(REPO, 'node_modules', '.cache'), { recursive: true })
  const dir = mkdtempSync(join(REPO, 'node_modules', '.cache', 'client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const file of ['index.ts', 'example.ts', 'package.json']) copyFileSync(join(CLIENT, file), join(dir, file))
  const { config } = ts.readConfigFile(join(REPO, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, REPO)
  const withoutTitle = types.replace(/(\n {8}Discussion: \{\n(?: {12}.*\n)*?) {12}title: string;\n/, '$1')
  t.not(withoutTitle, types, 'a Discussion without its title')
  writeFileSync(join(dir, 'schema.d.ts'), withoutTitle)
  const program = ts.createProgram([join(dir, 'example.ts')], options, ts.createCompilerHost(options))
  const errors = ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName.slice(dir.length + 1)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)
  t.equal(errors.length, 1, errors.join('\n'))
  t.match(errors[0], /^example\.ts: Property 'title' does not exist on type '\{ href: string;/)
})

t.test('Redocly lints the live document (recommended-strict: every rule an error) with no problem', async (t) => {
  // As a deployment serves it: its own public address, not the generator's localhost.
  const app = buildApp({ config: { baseUrl: 'https://support.acme.test', siteUrl: 'https://support.acme.test/{site}', databaseAddress: ':memory:' } })
  t.teardown(() => app.close())
  const source = (await app.inject({ url: '/openapi.json' })).body
  const config = await createConfig({ extends: ['recommended-strict'] })
  const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config })
  t.same(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`), [])

  const seeded = await lintFromString({ source: source.replace('"operationId":"listDiscussions",', ''), absoluteRef: 'openapi.json', config })
  t.match(seeded.map((p) => p.ruleId), ['operation-operationId'], 'the linter does find a missing operationId')
})

t.test('the example lists the demo site from the first-run banner and posts a reply, as a real process', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'client-example-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { SERVICE_DB: join(dir, 'service.db') })
  const token = await bannerToken(server)
  const { stdout } = await promisify(execFile)(process.execPath, [join(CLIENT, 'example.ts')], {
    env: childEnv({ SERVICE_URL: server.base, SERVICE_SITE: 'demo', SERVICE_TOKEN: token }),
  })
  t.match(stdout, /^#1 \[new\] Welcome to Service Desk\nreplied as comment 2 to #1; the token expires \d{4}-\d\d-\d\dT/)
  const thread = (await (await fetch(`${server.base}/demo/discussions/1`, { headers: { authorization: `Bearer ${token}` } })).json()) as { comments: Array<{ body: string }> }
  t.equal(thread.comments[1].body, 'Thanks, we are on it.', 'the reply is there')
})

t.test("the guide's example is example.ts, line for line", async (t) => {
  const readme = readFileSync(join(REPO, 'docs', 'guide.md'), 'utf8')
  const shown = /The\s+example, in full:\n\n```ts\n([\s\S]*?)```/.exec(readme)![1]
  const code = readFileSync(join(CLIENT, 'example.ts'), 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('//'))
  t.same(shown.trimEnd().split('\n'), code)
  t.ok(code.length <= 10, `${code.length} lines`)
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
