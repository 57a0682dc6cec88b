import { SQLITE_ONLY } from './fixtures/postgres.ts'
import { AjvCompiler } from '@fastify/ajv-compiler'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import t from 'tap'
import { buildApp } from '../app.ts'
import { systemClock } from '../lib/clock.ts'
import { sharedSchemaCompilers } from '../plugins/http/schema-compilers.ts'
import { compiledCheck, strictValidatorCompiler } from '../plugins/http/validation.ts'
import { BASE_URL, buildTestApp, newTestApp, sqliteOf, supporterWithToken } from './fixtures/app.ts'
import { logCapture } from './fixtures/log.ts'

// Engines: one: the app's own rules (logs without credentials, a generic 500, 404s, the clock, shared schemas); every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

t.test('no credential reaches a log line', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  const ann = await supporterWithToken(app)
  await app.inject({ url: '/demo', headers: ann.bearer })
  await app.inject({ url: '/demo', headers: { 'x-service-auth': 'legacy-secret-1' } })
  await app.inject({ url: '/demo', headers: { 'x-multipass': 'multipass-secret-2' } })
  await app.inject({ url: '/demo', headers: { authorization: `Basic ${Buffer.from('a@b.c:password-secret-3').toString('base64')}` } })
  await app.inject({ url: '/demo?auth=legacy-secret-4' })
  await app.inject({ url: '/demo?sso=multipass-secret-5' })
  await app.inject({ url: `/demo?access_token=${ann.value}` })
  await app.inject({ url: `/demo/discussions?x=${ann.value}` })
  await app.inject({ url: '/demo', headers: { cookie: 'session=cookie-secret-6' } })
  const text = log.text()
  t.match(text, '"url":"/demo?auth=[redacted]"', 'requests are logged, with the query value replaced')
  for (const secret of [ann.value, 'legacy-secret-1', 'multipass-secret-2', 'password-secret-3', 'legacy-secret-4', 'multipass-secret-5', 'cookie-secret-6', 'YUBiLmM6cGFzc3dvcmQtc2VjcmV0LTM']) {
    t.notMatch(text, secret, `${secret.slice(0, 20)} is not in the log`)
  }
})

t.test('an unexpected failure is a generic 500; the details go to the log only', async (t) => {
  const log = logCapture()
  const { app } = await newTestApp(t, { logStream: log.stream })
  app.get('/explode', async () => {
    throw new Error('SQLITE_CORRUPT: secret internals at /srv/data')
  })
  const res = await app.inject({ url: '/explode' })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { error: 'internal_error', message: 'Something went wrong on our side.' })
  t.match(log.text(), 'SQLITE_CORRUPT')
})

t.test('unknown addresses outside the API are a JSON 404', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ method: 'OPTIONS', url: '/?auth=secret' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 'not_found', message: 'There is nothing at OPTIONS /?auth=[redacted].' })
})

t.test('the bare address is a public pointer that names no site', async (t) => {
  const { app } = await buildTestApp(t)
  await supporterWithToken(app)
  const res = await app.inject({ url: '/' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'Service Desk', api_url_template: `${BASE_URL}/{site}`, openapi_url: `${BASE_URL}/openapi.json` })
  t.notMatch(res.body, 'demo')
})

t.test('a failed last-used write is logged as a warning, not thrown', { skip: SQLITE_ONLY && 'closes the SQLite connection itself' }, async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  const ann = await supporterWithToken(app)
  await app.tokens.recordUse({ id: ann.token.id, lastUsedAt: null, lastUsedFrom: null }, '203.0.113.9')
  sqliteOf(app).$client.close()
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const warning = log.entries().find((entry) => entry.msg === 'could not record when personal tokens were last used')
  t.ok(warning)
  t.equal(warning?.level, 40)
})

t.test('without a clock of its own the app keeps the system time', async (t) => {
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: 'https://help.example.test/{site}', databaseAddress: ':memory:' } })
  t.teardown(() => app.close())
  await app.ready()
  t.equal(app.clock, systemClock)
})

t.test("the apps of one process share Fastify's compiled schemas: one function per schema, shared schemas and options", async (t) => {
  const { buildSerializer, buildValidator } = sharedSchemaCompilers!.compilersFactory!
  const schema = { type: 'object', properties: { id: { type: 'integer' } } }
  const route = { schema, method: 'GET', url: '/x', httpStatus: '200' }
  const serializer = buildSerializer!({}, {})(route)
  t.equal(buildSerializer!({}, {})(route), serializer, 'a second app gets the function the first compiled')
  t.equal(serializer({ id: 7, token: 'never shown' }), '{"id":7}', 'and it writes what the schema says')
  t.not(buildSerializer!({}, {})({ ...route, schema: { ...schema } }), serializer, 'another schema object is compiled on its own')
  const shared = { Other: { $id: 'Other', type: 'string' } }
  t.not(buildSerializer!(shared, {})(route), serializer, 'so is one among other shared schemas')
  t.not(buildSerializer!({}, { rounding: 'ceil' })(route), serializer, 'or with other options')

  const part = { schema, method: 'POST', url: '/x', httpPart: 'body' }
  const validate = buildValidator!({}, { customOptions: {} })(part)
  t.equal(buildValidator!({}, { customOptions: {} })(part), validate, 'a validator is compiled once too')
  t.equal(validate({ id: 'seven' }), false)
  t.match(validate.errors, [{ instancePath: '/id', keyword: 'type' }], 'its errors where Fastify reads them')
  t.equal(validate({ id: 7 }), true)
  t.equal(validate.errors, null, 'and none after a value that passes')
  t.not(buildValidator!({}, { customOptions: {} })({ ...part, httpPart: 'querystring' }), validate, 'another part of the request is its own')
})

t.test('a schema is compiled at its first use: a start compiles none, and a schema that cannot be compiled fails where it is used', async (t) => {
  const { buildSerializer, buildValidator } = sharedSchemaCompilers!.compilersFactory!
  const broken = { type: 'object', properties: { id: { type: 'no such type' } } }
  const serializer = buildSerializer!({}, {})({ schema: broken, method: 'GET', url: '/broken', httpStatus: '200' })
  t.throws(() => serializer({ id: 1 }), 'the serializer fails at its first call, not when the route was added')
  const validate = buildValidator!({}, { customOptions: {} })({ schema: broken, method: 'POST', url: '/broken', httpPart: 'body' })
  t.throws(() => validate({ id: 1 }), 'the validator likewise')
})

t.test("the service's Ajv compiles a schema without checking it against JSON Schema's own first: the suite checks every route's (below)", async (t) => {
  const { buildValidator } = sharedSchemaCompilers!.compilersFactory!
  let made: { opts: { validateSchema?: unknown } } | undefined
  // Options of their own (Ajv's default, written out), so that this test's Ajv is a new one, made before its eyes.
  const validate = buildValidator!({}, { customOptions: { allErrors: false }, onCreate: (ajv) => void (made = ajv) })({ schema: { type: 'object', properties: { n: { type: 'integer' } } }, method: 'POST', url: '/meta', httpPart: 'body' })
  t.equal(validate({ n: 1 }), true)
  t.equal(validate({ n: 'one' }), false)
  t.equal(made?.opts.validateSchema, false, 'its Ajv validates no schema')
})

t.test("every route's schemas compile: what a first request would find broken, the suite finds first", async (t) => {
  const { app } = await newTestApp(t)
  const routes: Array<{ method: string; url: string; schema: Record<string, unknown>; typebox: boolean }> = []
  app.addHook('onRoute', function (route) {
    // TypeBox's compiler where the route's plugin set it (plugins/http/validation.ts), Ajv's elsewhere.
    const typebox = this.validatorCompiler === strictValidatorCompiler
    if (route.schema) routes.push({ method: String(route.method), url: route.url, schema: route.schema as Record<string, unknown>, typebox })
  })
  await app.ready()
  // The compilers the shared ones defer to, which compile as they are asked.
  const serializers = SerializerSelector()({}, {})
  const validators = AjvCompiler()({}, { customOptions: {} })
  let compiled = 0
  for (const route of routes) {
    for (const httpPart of ['body', 'querystring', 'params', 'headers'] as const) {
      const schema = route.schema[httpPart] as object | undefined
      if (schema === undefined) continue
      if (route.typebox) compiledCheck(schema as never)
      else validators({ schema, method: route.method, url: route.url, httpPart })
      compiled++
    }
    for (const [httpStatus, schema] of Object.entries((route.schema.response ?? {}) as Record<string, object>)) {
      serializers({ schema, method: route.method, url: route.url, httpStatus })
      compiled++
    }
  }
  t.ok(routes.some((route) => route.typebox) && routes.some((route) => !route.typebox), 'both compilers have routes')
  t.ok(routes.length > 150, `${routes.length} routes with schemas`)
  t.ok(compiled > 700, `${compiled} schemas compiled`)
  t.throws(() => validators({ schema: { type: 'string', minLength: 'five' }, method: 'POST', url: '/meta', httpPart: 'body' }), /schema is invalid/, "each checked against JSON Schema's own rules: one outside them fails here")
})
