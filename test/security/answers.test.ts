import { connect } from 'node:net'
import t from 'tap'
import { HSTS } from '../../plugins/transport-security.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../fixtures/credentials.ts'
import { logCapture } from '../fixtures/log.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.
// Issue 13, items 3 and 5: every API answer is private; HSTS where the addresses are https; CONNECT
// gets an answer in the JSON error shape.

const VARY = 'Accept, Authorization, X-Service-Auth, X-Multipass'

t.test('every API answer, to any credential or none, is kept by no cache and varies on the credential headers', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const ann = await supporterWithToken(app)
  const legacy = (await legacyTokenOf(app, pat.user.id)).value
  const multipass = makeMultipass({ email: pat.user.email, expires: inDays(app, 1) }, pat.site.multipassKey, 'demo')
  const requests: Array<[string, { url: string; headers?: Record<string, string>; method?: 'GET' | 'POST' }]> = [
    ['personal token', { url: '/demo/discussions', headers: ann.bearer }],
    ['X-Service-Auth', { url: '/demo/discussions', headers: { 'x-service-auth': legacy } }],
    ['X-Multipass', { url: '/demo/discussions', headers: { 'x-multipass': multipass } }],
    ['auth=', { url: `/demo/discussions?auth=${legacy}` }],
    ['Basic', { url: '/demo/discussions', headers: basic(pat.user.email, pat.password) }],
    ['no credential (401)', { url: '/demo/discussions' }],
    ['a wrong token (401)', { url: '/demo', headers: { 'x-service-auth': 'f'.repeat(40) } }],
    ['an unknown address (404)', { url: '/demo/nothing/here', headers: ann.bearer }],
    ['an unacceptable version (406)', { url: '/demo', headers: { accept: 'application/vnd.service-v9+json' } }],
    ['a bad body (400)', { url: '/demo/categories/1/discussions', method: 'POST', headers: { 'x-service-auth': legacy, 'content-type': 'application/json' } }],
  ]
  for (const [name, request] of requests) {
    const res = await app.inject({ ...request, headers: { accept: V1, ...request.headers } })
    t.equal(res.headers['cache-control'], 'no-store', `${name}: ${res.statusCode}, no-store`)
    t.equal(res.headers.vary, VARY, `${name}: Vary`)
  }
})

t.test('HSTS on every answer when an address is https, unless switched off', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  for (const url of ['/demo', '/demo/login', '/.well-known/oauth-protected-resource/demo', '/nowhere']) {
    const res = await app.inject({ url, headers: url === '/demo' ? ann.bearer : {} })
    t.equal(res.headers['strict-transport-security'], HSTS, url)
  }
  const { app: off } = await buildTestApp(t, { config: { hsts: false } })
  t.notOk((await off.inject({ url: '/nowhere' })).headers['strict-transport-security'], 'SERVICE_HSTS=off')
  const { app: plain } = await buildTestApp(t, { config: { baseUrl: 'http://localhost:3000', siteUrl: 'http://localhost:3000/{site}' } })
  t.notOk((await plain.inject({ url: '/nowhere' })).headers['strict-transport-security'], 'plain http: no header')
})

t.test('CONNECT gets 405 in the JSON error shape on a real socket, and a log line', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('CONNECT /demo HTTP/1.1\r\nHost: example.test\r\n\r\n'))
    let text = ''
    socket.on('data', (chunk) => (text += chunk))
    socket.on('close', () => resolve(text))
    socket.on('error', reject)
  })
  t.match(answer, /^HTTP\/1\.1 405 Method Not Allowed\r\n/)
  t.match(answer, 'Content-Type: application/json; charset=utf-8')
  t.same(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), {
    error: 'method_not_allowed',
    message: 'This server is not a proxy: CONNECT is not allowed.',
  })
  t.match(
    log.entries().find((entry) => entry.method === 'CONNECT'),
    { msg: 'CONNECT refused', status: 405, address: '127.0.0.1' },
  )
})

t.test('TRACE and other methods no route has are answered in the JSON shape, never echoed', async (t) => {
  const { app } = await buildTestApp(t)
  for (const method of ['TRACE', 'PROPFIND', 'OPTIONS'] as const) {
    const res = await app.inject({ method, url: '/demo', headers: { cookie: 'secret=1' } })
    t.equal(res.statusCode, 404, method)
    t.same(res.json(), { error: 'not_found', message: `There is nothing at ${method} /demo.` })
    t.notMatch(res.body, 'secret', 'nothing of the request is reflected')
  }
})
