import { connect } from 'node:net'
import t from 'tap'
import { clientErrorHandler } from '../../plugins/http/framework-errors.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { inDays, makeMultipass } from '../fixtures/credentials.ts'

// Engines: both: what the fuzzers found pinned, some of it in how PostgreSQL refuses a value SQLite takes.
// What the fuzzers of this folder found, each pinned by a plain example.

t.test('a path Fastify cannot route gets the JSON error shape, before any credential', async (t) => {
  const { app } = await buildTestApp(t)
  for (const url of ['/%zz/discussions', '/demo/discussions/%C0%AF', '/%ED%A0%80/login']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 400, url)
    t.same(res.json(), { error: 'invalid_path', message: 'The request path is not valid: a percent-escape in it does not decode to UTF-8 text.' }, url)
  }
  const res = await app.inject({ url: `/${'a'.repeat(101)}/discussions` })
  t.equal(res.statusCode, 414)
  t.same(res.json(), { error: 'uri_too_long', message: 'A segment of the request path is longer than the server accepts.' })
})

t.test('names of Object.prototype are neither media types nor credentials', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  for (const accept of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    const res = await app.inject({ url: '/demo', headers: { authorization: ann.bearer.authorization, accept } })
    t.equal(res.statusCode, 406, `Accept: ${accept}`)
  }
  const multipass = makeMultipass({ email: ann.user.email, expires: inDays(app, 1) }, ann.site.multipassKey, 'demo')
  for (const name of ['constructor', '__proto__']) {
    const res = await app.inject({ url: '/demo', headers: { [name]: multipass, accept: V1 } })
    t.equal(res.statusCode, 401, `a ${name} header is no credential`)
    t.notMatch(res.headers['www-authenticate'], /error=/, `a ${name} header is not even a wrong one`)
  }
  for (const name of ['toString', 'constructor', 'valueOf', '__proto__']) {
    const alone = await app.inject({ url: `/demo?${name}=${encodeURIComponent(multipass)}`, headers: { accept: V1 } })
    t.equal(alone.statusCode, 401, `?${name}= is no credential`)
    const beside = await app.inject({ url: `/demo?${name}=1`, headers: ann.bearer })
    t.equal(beside.statusCode, 200, `?${name}= beside a token is no second credential`)
  }
})

/** Sends raw bytes to the app listening on a real socket and reads everything until it closes. */
async function raw(port: number, bytes: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk) => (answer += chunk))
  socket.on('error', () => {})
  socket.write(Buffer.from(bytes, 'latin1'))
  await new Promise((resolve) => socket.on('close', resolve))
  return answer
}

t.test('bytes that are not HTTP get the JSON error shape on the socket', async (t) => {
  const { app } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const bad = await raw(port, 'GET /demo HTTP/1.1\r\nHost: x\r\nX-Multipass: a\x01b\r\n\r\n')
  t.match(bad, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(bad, /\r\n\r\n\{"error":"bad_request","message":"The request is not valid HTTP\/1\.1\."\}$/)
  const big = await raw(port, `GET /demo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`)
  t.match(big, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
  t.match(big, /"error":"headers_too_large"/)
})

t.test('the parser error handler writes nothing to a socket that is gone', async (t) => {
  const socket = (state: { destroyed: boolean; writable: boolean }) => {
    const written: string[] = []
    let destroyed = 0
    return { written, destroyed: () => destroyed, socket: { ...state, write: (s: string) => written.push(s), destroy: () => destroyed++ } }
  }
  const reset = socket({ destroyed: false, writable: true })
  clientErrorHandler(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), reset.socket as never)
  t.same([reset.written, reset.destroyed()], [[], 0], 'a reset connection is left alone')
  const gone = socket({ destroyed: true, writable: false })
  clientErrorHandler(new Error('gone'), gone.socket as never)
  t.same([gone.written, gone.destroyed()], [[], 0], 'a destroyed socket is left alone')
  const closing = socket({ destroyed: false, writable: false })
  clientErrorHandler(new Error('closing'), closing.socket as never)
  t.same([closing.written, closing.destroyed()], [[], 1], 'a socket that cannot be written is closed')
  const slow = socket({ destroyed: false, writable: true })
  clientErrorHandler(Object.assign(new Error('slow'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), slow.socket as never)
  t.match(slow.written[0], /^HTTP\/1\.1 408 Request Timeout\r\n[^]*"error":"request_timeout"/, 'a slow client is told so')
})
