import { connect, type AddressInfo, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.ts'
import { processOpenFiles } from '../../lib/connections.ts'
import { newTestApp, supporterWithToken, testClock, V1, BASE_URL, SITE_URL } from '../fixtures/app.ts'
import { addCategory, discussionApp } from '../fixtures/discussions.ts'
import { logCapture } from '../fixtures/log.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.
// Issue 21: facing the internet directly. Every test here talks to a listening server over real
// loopback sockets: timeouts cut slow clients (408 where an answer can still be written), idle
// keep-alive connections close, the caps refuse new connections while requests in flight finish,
// and every refusal leaves a counted log line.

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type App = Awaited<ReturnType<typeof discussionApp>>['app']

async function listening(app: App) {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

/** A raw client connection: what it received, and when and how it ended. */
interface Raw {
  socket: Socket
  /** Taken before connecting: the server's clocks for this connection start no earlier. */
  opened: number
  received: () => string
  closed: Promise<{ at: number; data: string }>
}

async function open(port: number, localAddress?: string): Promise<Raw> {
  // Before connect(), not after its event: on a loaded machine the 'connect' callback can run
  // tens of milliseconds after the server accepted, and a cut measured from then looked early.
  const opened = Date.now()
  const socket = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) })
  socket.on('error', () => {})
  let data = ''
  socket.on('data', (chunk) => (data += chunk))
  const closed = new Promise<{ at: number; data: string }>((resolve) => socket.once('close', () => resolve({ at: Date.now(), data })))
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  return { socket, opened, received: () => data, closed }
}

/** The lines of a refusal kind in the captured log. */
const refusals = (log: ReturnType<typeof logCapture>, kind: string) => log.entries().filter((entry) => entry.refusal === kind)

/** Headers of a create that announces `length` bytes of body, as the supporter of discussionApp. */
function createHead(made: Awaited<ReturnType<typeof discussionApp>>, length: number) {
  return (
    `POST /demo/categories/${made.questions.id}/discussions HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${made.ann.bearer.authorization}\r\n` +
    `Accept: ${V1}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
  )
}

async function waitFor(condition: () => boolean, ms = 3000) {
  const until = Date.now() + ms
  while (!condition() && Date.now() < until) await pause(10)
}

t.test('the defaults are those of a service facing the internet', async (t) => {
  const made = await discussionApp(t)
  const { server } = made.app
  t.equal(server.requestTimeout, 30_000, 'a whole request, its body included, within 30 s')
  t.equal(server.headersTimeout, 15_000, 'the headers within 15 s')
  t.equal(server.keepAliveTimeout, 5_000, 'an idle keep-alive connection kept 5 s')
  t.ok(server.maxConnections >= 1 && server.maxConnections <= Math.min(10_000, processOpenFiles() - 64), `a connection cap (${server.maxConnections})`)
  const port = await listening(made.app)
  const client = await open(port)
  client.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
  await waitFor(() => client.received().includes('"status":"ok"'))
  t.match(client.received(), /\r\nkeep-alive: timeout=5\r\n/i, 'clients are told the keep-alive timeout')
  client.socket.destroy()
})

t.test('a trickled body is cut at the request timeout with a 408 and a log line', async (t) => {
  const log = logCapture()
  const made = await discussionApp(t, { logStream: log.stream, config: { connections: { requestTimeoutMs: 1000, headersTimeoutMs: 500 } } })
  const port = await listening(made.app)
  const client = await open(port)
  // 200,000 bytes announced, one sent every 100 ms: 55 hours at that pace.
  client.socket.write(`${createHead(made, 200_000)}{"title":"`)
  const trickle = setInterval(() => client.socket.writable && client.socket.write('x'), 100)
  const { at, data } = await client.closed
  clearInterval(trickle)
  const took = at - client.opened
  t.ok(took >= 950 && took < 4000, `cut after ${took} ms, at the 1 s request timeout`)
  t.match(data, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  t.match(data, /\r\nconnection: close\r\n/i)
  t.match(data, /\{"error":"request_timeout","message":"The request was not received in time\."\}$/)
  t.match(refusals(log, 'request_timeout'), [
    { level: 40, address: '127.0.0.1', status: 408, method: 'POST', url: `/demo/categories/${made.questions.id}/discussions`, msg: /did not arrive in full in time/ },
  ])
  t.same(
    log.entries().filter((entry) => !/^Server listening/.test(String(entry.msg))).map((entry) => entry.refusal),
    ['request_timeout'],
    'one line, and no other',
  )
  t.notMatch(log.text(), made.ann.value, 'no credential in the log')
  t.notMatch(log.text(), /"title"|xxxx/, 'nor any of the body')
})

t.test('unfinished headers, or none at all, are cut at the headers timeout', async (t) => {
  const log = logCapture()
  const made = await discussionApp(t, { logStream: log.stream, config: { connections: { requestTimeoutMs: 5000, headersTimeoutMs: 500 } } })
  const port = await listening(made.app)
  const partial = await open(port)
  partial.socket.write(`GET /demo/discussions HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${made.ann.bearer.authorization}\r\n`)
  const silent = await open(port)
  for (const [name, client] of [['partial headers', partial], ['nothing sent', silent]] as const) {
    const { at, data } = await client.closed
    const took = at - client.opened
    t.ok(took >= 450 && took < 3000, `${name}: cut after ${took} ms, at the 0.5 s headers timeout, not the 5 s request timeout`)
    t.match(data, /^HTTP\/1\.1 408 Request Timeout\r\n[^]*"error":"request_timeout"/, name)
  }
  const lines = refusals(log, 'headers_timeout')
  t.equal(lines.length, 2)
  t.match(lines, [{ address: '127.0.0.1', status: 408, msg: /headers did not arrive in time/ }, { address: '127.0.0.1', status: 408 }])
  t.notMatch(log.text(), made.ann.value, 'the headers that did arrive are not logged')
})

t.test('a client that goes away mid-body is logged; the request changed nothing', async (t) => {
  const log = logCapture()
  const made = await discussionApp(t, { logStream: log.stream })
  const port = await listening(made.app)
  const before = (await made.api('GET', '/demo/discussions')).json().total
  for (const leave of [(s: Socket) => s.end(), (s: Socket) => s.resetAndDestroy()]) {
    const client = await open(port)
    client.socket.write(`${createHead(made, 5000)}{"title":"Half`)
    await pause(100)
    leave(client.socket)
    await client.closed
  }
  await waitFor(() => refusals(log, 'client_gone').length === 2)
  t.match(refusals(log, 'client_gone'), [
    { address: '127.0.0.1', during: 'body', method: 'POST', msg: /went away before sending the whole request/ },
    { address: '127.0.0.1', during: 'body', method: 'POST' },
  ])
  t.equal((await made.api('GET', '/demo/discussions')).json().total, before)
})

t.test('idle keep-alive connections close at their setting; a busy one stays open', async (t) => {
  const made = await discussionApp(t, { config: { connections: { keepAliveTimeoutMs: 1000 } } })
  const port = await listening(made.app)
  const idle = await open(port)
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
  await waitFor(() => idle.received().includes('"status":"ok"'))
  const answered = Date.now()
  t.match(idle.received(), /\r\nkeep-alive: timeout=1\r\n/i)
  const { at } = await idle.closed
  // Node closes one second after the advertised timeout, so that a client never reuses a
  // connection the server is closing at that very moment.
  t.ok(at - answered >= 950 && at - answered < 4000, `closed ${at - answered} ms after the answer (1 s + Node's 1 s margin)`)

  const busy = await open(port)
  for (let i = 0; i < 3; i++) {
    busy.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await pause(700)
  }
  t.equal(busy.received().match(/HTTP\/1\.1 200 OK/g)!.length, 3, 'each request resets the idle timer')
  t.notOk(busy.socket.destroyed, 'still open after 2.1 s of use')
  busy.socket.destroy()
})

t.test('at the cap a new connection is refused at once, while the request in flight completes', async (t) => {
  const log = logCapture()
  const made = await discussionApp(t, { logStream: log.stream, config: { connections: { maxConnections: 2 } } })
  const port = await listening(made.app)
  const body = JSON.stringify({ title: 'Sent at the cap', body: 'words' })
  const inFlight = await open(port)
  inFlight.socket.write(`${createHead(made, Buffer.byteLength(body))}${body.slice(0, 10)}`)
  const idle = await open(port)
  await waitFor(() => (made.app.server as unknown as { _connections: number })._connections === 2)

  const refused = await open(port)
  const { at, data } = await refused.closed
  t.equal(data, '', 'closed without an answer')
  t.ok(at - refused.opened < 1000, `at once (${at - refused.opened} ms)`)
  await waitFor(() => refusals(log, 'connection_cap').length === 1)
  t.match(refusals(log, 'connection_cap'), [{ level: 40, address: '127.0.0.1', msg: /at its connection limit/ }])

  inFlight.socket.write(body.slice(10))
  await waitFor(() => inFlight.received().includes('\r\n\r\n{'))
  t.match(inFlight.received(), /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight completed')
  inFlight.socket.destroy()
  idle.socket.destroy()
  await waitFor(() => (made.app.server as unknown as { _connections: number })._connections === 0)
  const after = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(after.status, 200, 'below the cap again, new connections are served')
})

t.test('the cap per client address refuses that address only', async (t) => {
  const log = logCapture()
  const made = await discussionApp(t, { logStream: log.stream, config: { connections: { maxConnectionsPerAddress: 2 } } })
  const port = await listening(made.app)
  const held = [await open(port), await open(port)]
  const refused = await open(port)
  const { data } = await refused.closed
  t.equal(data, '', 'a third connection from 127.0.0.1 is closed')
  t.match(refusals(log, 'address_cap'), [{ address: '127.0.0.1', msg: /this address is at its own connection limit/ }])

  // Linux routes all of 127.0.0.0/8 to the loopback; elsewhere 127.0.0.2 may not exist.
  const other = await open(port, '127.0.0.2').catch((error: Error & { code?: string }) => error)
  if (other instanceof Error) t.comment(`no second loopback address here (${other.code}): another address is not tried`)
  else {
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
    t.match((await other.closed).data, /^HTTP\/1\.1 200 OK\r\n/, 'another address is served')
  }

  held[0]!.socket.destroy()
  await held[0]!.closed
  await pause(50)
  const again = await open(port)
  again.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
  t.match((await again.closed).data, /^HTTP\/1\.1 200 OK\r\n/, 'a place freed by a closed connection is taken again')
  held[1]!.socket.destroy()
})

t.test('a burst of refusals writes a few lines and a summary, not a line each', async (t) => {
  // The log's windows are driven by hand, so a slow machine that takes longer than a window to open
  // 200 connections counts them in one window all the same (lib/refusals.ts takes its timers).
  let now = 0
  const due = new Set<{ at: number; callback: () => void }>()
  const timers = {
    now: () => now,
    start(callback: () => void, ms: number) {
      const entry = { at: now + ms, callback }
      due.add(entry)
      return () => void due.delete(entry)
    },
  }
  const advance = (ms: number) => {
    now += ms
    for (const entry of [...due].filter((e) => e.at <= now)) {
      due.delete(entry)
      entry.callback()
    }
  }
  const log = logCapture()
  const app = buildApp({
    config: { baseUrl: BASE_URL, siteUrl: SITE_URL, databaseAddress: ':memory:', connections: { maxConnectionsPerAddress: 1 } },
    clock: testClock(),
    logStream: log.stream,
    refusalLog: { windowMs: 300, linesPerWindow: 3, timers },
  })
  t.teardown(() => app.close())
  const port = await listening(app)
  const held = await open(port)
  const burst = await Promise.all(Array.from({ length: 200 }, () => open(port)))
  await Promise.all(burst.map((client) => client.closed))
  await waitFor(() => refusals(log, 'address_cap').length === 3)
  advance(300)
  await waitFor(() => refusals(log, 'address_cap').length === 4)
  const lines = refusals(log, 'address_cap')
  t.equal(lines.filter((line) => line.count === undefined).length, 3, 'the first three one by one')
  t.match(lines[3], { level: 40, count: 197, addresses: 1, top: [{ address: '127.0.0.1', count: 197 }], msg: /^197 more in 0.3 s: connection refused/ })
  held.socket.destroy()
  await held.closed
  // Refused again after the burst has quietened (a window without any): single lines again.
  advance(300)
  const one = await open(port)
  const two = await open(port)
  await two.closed
  await waitFor(() => refusals(log, 'address_cap').length === 5)
  t.match(refusals(log, 'address_cap')[4], { address: '127.0.0.1', count: undefined })
  one.socket.destroy()
})

t.test('during 2,000 slow connections a normal authenticated request is answered', async (t) => {
  const log = logCapture()
  // Timeouts longer than the test, however loaded the machine: the slow connections must be held
  // throughout. How fast the answer comes is the benchmark's to show, not a test's.
  const made = await discussionApp(t, { logStream: log.stream, config: { connections: { headersTimeoutMs: 300_000, requestTimeoutMs: 300_000 } } })
  const port = await listening(made.app)
  // Each connection is two file descriptors in this process (client and server side).
  const count = Math.min(2000, Math.floor((processOpenFiles() - 400) / 2))
  if (count < 2000) t.comment(`the open-file limit allows ${count} slow connections here, not 2,000`)
  const slow: Socket[] = []
  t.teardown(() => slow.forEach((socket) => socket.destroy()))
  for (let i = 0; i < count; i += 200) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, count - i) }, () => open(port)))
    batch.forEach((client, j) => {
      // Half send their headers a little at a time, half a body of 200,000 bytes a byte at a time.
      if ((i + j) % 2 === 0) client.socket.write('GET /demo/discussions HTTP/1.1\r\nHost: localhost\r\n')
      else client.socket.write(`${createHead(made, 200_000)}{`)
      slow.push(client.socket)
    })
  }
  const trickle = setInterval(() => {
    for (const [i, socket] of slow.entries()) if (socket.writable) socket.write(i % 2 === 0 ? 'X-Slow: 1\r\n' : ' ')
  }, 500)
  t.teardown(() => clearInterval(trickle))
  await pause(500)

  const times: number[] = []
  for (let i = 0; i < 7; i++) {
    const started = performance.now()
    const res = await fetch(`http://127.0.0.1:${port}/demo/discussions`, { headers: made.ann.bearer })
    t.ok(Array.isArray(((await res.json()) as { discussions?: unknown }).discussions), 'the listing, whole')
    times.push(performance.now() - started)
    t.equal(res.status, 200)
  }
  t.comment(`${count} slow connections; listing times: ${times.map((ms) => ms.toFixed(1)).join(', ')} ms`)
  t.equal(slow.filter((socket) => socket.destroyed).length, 0, 'every slow connection is still held (their timeouts are not reached)')
  t.equal(refusals(log, 'connection_cap').length, 0, 'and none was refused at the cap')
  clearInterval(trickle)
  slow.forEach((socket) => socket.destroy())
})

t.test('SERVICE_LOG_LEVEL=warn drops the line per answered request and keeps refusals and errors', async (t) => {
  async function run(t: Test, logLevel: 'info' | 'warn') {
    const log = logCapture()
    const { app } = await newTestApp(t, { logStream: log.stream, config: { logLevel, connections: { headersTimeoutMs: 300 } } })
    app.get('/boom', async () => {
      throw new Error('boom')
    })
    await app.ready()
    const ann = await supporterWithToken(app)
    const questions = await addCategory(app, ann.site.id, 'Questions', true)
    t.equal((await app.inject({ url: '/demo/discussions', headers: ann.bearer })).statusCode, 200)
    t.equal((await app.inject({ url: '/demo' })).statusCode, 401)
    const tooLarge = await app.inject({
      method: 'POST',
      url: `/demo/categories/${questions.id}/discussions`,
      headers: ann.bearer,
      payload: { title: 'x', body: 'y'.repeat(300_000) },
    })
    t.equal(tooLarge.statusCode, 413)
    t.equal((await app.inject({ url: '/boom' })).statusCode, 500)
    const port = await listening(app)
    const slow = await open(port)
    await slow.closed
    return log.entries().filter((entry) => !/^Server listening/.test(String(entry.msg)))
  }
  const info = await run(t, 'info')
  t.same(
    info.filter((entry) => entry.msg === 'request completed').map((entry) => (entry.res as { statusCode: number }).statusCode),
    [200, 401, 500],
    'at info: a line per answered request',
  )
  t.match(refusals({ entries: () => info } as never, 'body_too_large'), [{ level: 40, status: 413, method: 'POST', address: '127.0.0.1' }])
  t.notOk(info.some((entry) => entry.msg === 'request completed' && (entry.res as { statusCode: number }).statusCode === 413), 'the 413 is one refusal line, not two')

  const warn = await run(t, 'warn')
  t.same(warn.filter((entry) => (entry.level as number) < 40), [], 'at warn: nothing below warn')
  t.notOk(warn.some((entry) => entry.msg === 'request completed'), 'no line per request')
  t.same(
    warn.map((entry) => entry.refusal ?? entry.msg),
    ['body_too_large', 'request failed', 'headers_timeout'],
    'the refusals and the error are still written',
  )
})
