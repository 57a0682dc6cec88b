import type { AddressInfo } from 'node:net'
import t from 'tap'
import {
  checkingInterval,
  connectionsAllowed,
  defaultConnectionSettings,
  defaultMaxConnections,
  openFileLimit,
  processOpenFiles,
  timeoutOptions,
} from '../../lib/connections.ts'
import { clientErrorHandler, createClientErrorHandler, refuseConnect } from '../../plugins/http/framework-errors.ts'
import { createRefusalLog, type RefusalFields, type RefusalKind, type RefusalTimers } from '../../lib/refusals.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.
// Issue 21, item 3, in parts: the counted refusal log, the classification of what Node's parser
// and timeouts refuse, and the sizes the connection settings take from the machine.

/** Timers the test moves by hand: `advance` runs what falls due, in order, at its moment. */
function manualTimers(): RefusalTimers & { advance(ms: number): void; pending(): number } {
  let now = 1_000_000
  let due: { at: number; run: () => void }[] = []
  return {
    now: () => now,
    start(run, ms) {
      const entry = { at: now + ms, run }
      due.push(entry)
      return () => void (due = due.filter((other) => other !== entry))
    },
    advance(ms) {
      const until = now + ms
      for (let next = due.sort((a, b) => a.at - b.at)[0]; next && next.at <= until; next = due.sort((a, b) => a.at - b.at)[0]) {
        due = due.filter((other) => other !== next)
        now = next.at
        next.run()
      }
      now = until
    },
    pending: () => due.length,
  }
}

function lines() {
  const written: { fields: Record<string, unknown>; message: string }[] = []
  return { written, logger: () => ({ warn: (fields: object, message: string) => void written.push({ fields: fields as Record<string, unknown>, message }) }) }
}

t.test('single lines while quiet; past a few a window, a summary per window; quiet again after a window without', async (t) => {
  const { written, logger } = lines()
  const timers = manualTimers()
  const log = createRefusalLog(logger, { windowMs: 60, linesPerWindow: 2, timers })
  log.record('headers_timeout', { address: '192.0.2.1', status: 408 })
  log.record('headers_timeout', { address: '192.0.2.1', status: 408 })
  t.same(written[0], { fields: { refusal: 'headers_timeout', address: '192.0.2.1', status: 408 }, message: 'connection closed: the request headers did not arrive in time' })
  timers.advance(10)
  for (let i = 0; i < 1000; i++) log.record('headers_timeout', { address: i % 10 === 0 ? '192.0.2.2' : '192.0.2.1' })
  log.record('connect', { method: 'CONNECT', address: '192.0.2.3', status: 405 })
  t.equal(written.length, 3, 'two lines for the burst so far, and one of another kind, which is counted apart')
  timers.advance(59)
  t.equal(written.length, 3, 'nothing more within the window')
  timers.advance(1)
  t.equal(written.length, 4, 'the summary at the end of the window')
  t.match(written[3], {
    fields: { refusal: 'headers_timeout', count: 1000, addresses: 2, top: [{ address: '192.0.2.1', count: 900 }, { address: '192.0.2.2', count: 100 }], seconds: 0.1 },
    message: '1000 more in 0.1 s: connection closed: the request headers did not arrive in time',
  })
  timers.advance(30)
  log.record('headers_timeout', { address: '192.0.2.1' })
  timers.advance(30)
  t.match(written[4], { fields: { refusal: 'headers_timeout', count: 1 } }, 'a burst goes on in summaries while refusals keep coming')
  timers.advance(60)
  t.equal(written.length, 5, 'a window without any ends the burst, silently')
  t.equal(timers.pending(), 0, 'and its timer')
  log.record('headers_timeout', { address: '192.0.2.9' })
  t.match(written[5], { fields: { refusal: 'headers_timeout', address: '192.0.2.9' } }, 'then single lines again')
})

t.test('quiet windows: the count of single lines starts again each window', async (t) => {
  const { written, logger } = lines()
  const timers = manualTimers()
  const log = createRefusalLog(logger, { windowMs: 40, linesPerWindow: 1, timers })
  log.record('not_http', { code: 'HPE_INVALID_METHOD' })
  timers.advance(40)
  log.record('not_http', { code: 'HPE_INVALID_METHOD' })
  t.equal(written.length, 2, 'one a window is not a burst')
  t.same(written[1]!.fields, { refusal: 'not_http', code: 'HPE_INVALID_METHOD' })
  timers.advance(39)
  log.record('not_http', { code: 'HPE_INVALID_METHOD' })
  t.equal(written.length, 2, 'a second in the same window starts a burst')
  t.equal(timers.pending(), 1)
  log.flush()
  t.equal(timers.pending(), 0, 'flush stops the window')
  t.match(written[2], { fields: { refusal: 'not_http', count: 1 }, message: '1 more in 0 s: request refused: not valid HTTP/1.1' })
})

t.test('flush writes what is still being counted; addresses past the bound are counted as other', async (t) => {
  const { written, logger } = lines()
  const log = createRefusalLog(logger, { linesPerWindow: 0, maxAddresses: 2 })
  const kinds: [RefusalKind, RefusalFields][] = [
    ['connection_cap', { address: '192.0.2.1' }],
    ['connection_cap', { address: '192.0.2.2' }],
    ['connection_cap', { address: '192.0.2.3' }],
    ['connection_cap', { address: '192.0.2.4' }],
    ['connection_cap', {}],
    ['accept_failed', { code: 'EMFILE' }],
  ]
  for (const [kind, fields] of kinds) log.record(kind, fields)
  t.equal(written.length, 0)
  log.flush()
  t.match(written, [
    { fields: { refusal: 'connection_cap', count: 5, addresses: 3, top: [{ address: 'other', count: 3 }, { address: '192.0.2.1' }, { address: '192.0.2.2' }] } },
    { fields: { refusal: 'accept_failed', count: 1, top: [{ address: 'unknown', count: 1 }] } },
  ])
  log.flush()
  t.equal(written.length, 2, 'a second flush has nothing left to write')
  log.record('connection_cap')
  log.flush()
  t.equal(written.length, 3)
  log.record('accept_failed', { code: 'EMFILE' })
  createRefusalLog(logger).record('body_too_large')
  t.match(written[3]!.fields, { refusal: 'body_too_large' }, 'defaults: five a second one by one')
  // With Node's timers: a burst's window, stopped by the flush before it ends.
  const real = createRefusalLog(logger, { linesPerWindow: 0, windowMs: 60_000 })
  real.record('connect')
  real.flush()
  t.match(written[4], { fields: { refusal: 'connect', count: 1 }, message: /^1 more in 0 s: CONNECT refused$/ })
})

function fakeSocket(state: { destroyed?: boolean; writable?: boolean; inFlight?: { complete: boolean; headersSent?: boolean } } = {}) {
  const written: string[] = []
  let destroyed = 0
  const answer = state.inFlight && { headersSent: state.inFlight.headersSent ?? false, req: { method: 'POST', url: '/demo/discussions?auth=secret', complete: state.inFlight.complete } }
  const socket = {
    destroyed: state.destroyed ?? false,
    writable: state.writable ?? true,
    remoteAddress: '198.51.100.7',
    _httpMessage: answer ?? null,
    write: (text: string) => void written.push(text),
    destroy: () => void destroyed++,
    end: () => void destroyed++,
  }
  return { socket: socket as never, written, destroyed: () => destroyed }
}

t.test('what the parser and the timeouts refuse: each kind, its answer where one can still be written, its line', async (t) => {
  const recorded: [RefusalKind, RefusalFields][] = []
  const handler = createClientErrorHandler({ record: (kind, fields) => void recorded.push([kind, fields!]) })
  const error = (code?: string) => Object.assign(new Error('x'), code ? { code } : {})

  const headers = fakeSocket()
  handler(error('ERR_HTTP_REQUEST_TIMEOUT'), headers.socket)
  t.match(headers.written[0], /^HTTP\/1\.1 408 Request Timeout\r\n/)
  const body = fakeSocket({ inFlight: { complete: false } })
  handler(error('ERR_HTTP_REQUEST_TIMEOUT'), body.socket)
  t.match(body.written[0], /^HTTP\/1\.1 408 /, 'a request cut mid-body is answered while nothing of an answer was sent')
  const started = fakeSocket({ inFlight: { complete: false, headersSent: true } })
  handler(error('ERR_HTTP_REQUEST_TIMEOUT'), started.socket)
  t.same([started.written, started.destroyed()], [[], 1], 'an answer already begun is not corrupted: the connection is closed')
  const reset = fakeSocket({ destroyed: true, writable: false, inFlight: { complete: false } })
  handler(error('ECONNRESET'), reset.socket)
  t.same([reset.written, reset.destroyed()], [[], 0])
  handler(error('ECONNRESET'), fakeSocket({ inFlight: { complete: true } }).socket)
  handler(error('ECONNRESET'), fakeSocket().socket)
  const ended = fakeSocket({ inFlight: { complete: false } })
  handler(error('HPE_INVALID_EOF_STATE'), ended.socket)
  handler(error('HPE_INVALID_EOF_STATE'), fakeSocket().socket)
  const overflow = fakeSocket()
  handler(error('HPE_HEADER_OVERFLOW'), overflow.socket)
  t.match(overflow.written[0], /^HTTP\/1\.1 431 /)
  handler(error('HPE_INVALID_METHOD'), fakeSocket().socket)
  handler(error(), fakeSocket({ writable: false }).socket)

  t.same(recorded, [
    ['headers_timeout', { address: '198.51.100.7', status: 408 }],
    ['request_timeout', { address: '198.51.100.7', status: 408, method: 'POST', url: '/demo/discussions?auth=[redacted]' }],
    ['request_timeout', { address: '198.51.100.7', method: 'POST', url: '/demo/discussions?auth=[redacted]' }],
    ['client_gone', { address: '198.51.100.7', method: 'POST', url: '/demo/discussions?auth=[redacted]', during: 'body' }],
    ['client_gone', { address: '198.51.100.7', status: 400, method: 'POST', url: '/demo/discussions?auth=[redacted]', during: 'body' }],
    ['client_gone', { address: '198.51.100.7', status: 400, during: 'headers' }],
    ['headers_too_large', { address: '198.51.100.7', status: 431 }],
    ['not_http', { address: '198.51.100.7', status: 400, code: 'HPE_INVALID_METHOD' }],
    ['not_http', { address: '198.51.100.7', code: undefined }],
  ], 'a reset between requests or after a whole request is no refusal; no credential in a line')

  const plain = fakeSocket()
  clientErrorHandler(error('HPE_INVALID_METHOD'), plain.socket)
  t.match(plain.written[0], /^HTTP\/1\.1 400 /, 'the handler without a refusal log answers the same')
})

t.test('CONNECT on a socket that cannot be written any more is still refused, and counted', async (t) => {
  const recorded: RefusalKind[] = []
  const gone = fakeSocket({ writable: false })
  refuseConnect({ record: (kind) => void recorded.push(kind) })({} as never, gone.socket)
  t.same([gone.written, gone.destroyed(), recorded], [[], 1, ['connect']])
})

t.test('the server: a drop without a peer, and a failed accept, are logged, not thrown', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.ok((app.server.address() as AddressInfo).port > 0)
  app.server.emit('drop')
  app.server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' }))
  t.match(
    log.entries().filter((entry) => entry.refusal),
    [
      { refusal: 'connection_cap', address: undefined },
      { refusal: 'accept_failed', code: 'EMFILE', msg: 'a connection could not be accepted' },
    ],
  )
  const before = log.entries().length
  for (let i = 0; i < 20; i++) app.server.emit('drop', { remoteAddress: '192.0.2.1' })
  await app.close()
  const after = log.entries().slice(before)
  t.match(after.at(-1), { refusal: 'connection_cap', count: 16, top: [{ address: '192.0.2.1', count: 16 }] }, 'closing writes the summary still counted')
})

t.test('the sizes taken from the machine', async (t) => {
  const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            20000                20000                files\n'
  t.equal(openFileLimit(() => limits), 20000)
  t.equal(openFileLimit(() => limits.replace('20000                20000', 'unlimited            unlimited')), 1024, 'the usual limit when none is said')
  t.equal(openFileLimit(() => {
    throw new Error('ENOENT: no /proc here')
  }), 1024, 'and when none can be read')
  t.equal(processOpenFiles(), processOpenFiles(), 'read once')
  t.ok(processOpenFiles() > 0)
  t.same([1024, 20_000, 1_048_576, 100, 10].map(connectionsAllowed), [921, 18_000, 943_718, 36, 1])
  t.same([1024, 20_000, 1_048_576].map(defaultMaxConnections), [921, 10_000, 10_000])
  t.same(defaultConnectionSettings(1024), { requestTimeoutMs: 30_000, headersTimeoutMs: 15_000, keepAliveTimeoutMs: 5_000, maxConnections: 921, maxConnectionsPerAddress: 0 })
  t.equal(checkingInterval({ requestTimeoutMs: 30_000, headersTimeoutMs: 15_000 }), 1000, 'at most a second')
  t.equal(checkingInterval({ requestTimeoutMs: 1000, headersTimeoutMs: 500 }), 50)
  t.equal(checkingInterval({ requestTimeoutMs: 100, headersTimeoutMs: 100 }), 25, 'at least 25 ms')
  t.same(timeoutOptions(defaultConnectionSettings(1024)), {
    requestTimeout: 30_000,
    keepAliveTimeout: 5_000,
    http: { headersTimeout: 15_000, connectionsCheckingInterval: 1000 },
  })
})
