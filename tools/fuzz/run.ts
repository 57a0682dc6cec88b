// The long fuzz run of issue 6, item 1: `npm run fuzz -- --seconds N [--seed S]`. It seeds a
// database in a temporary folder, starts `service-desk serve` on it as a real process, and for N
// seconds sends it the hostile requests of test/fuzz/arbitraries.ts over raw sockets (so the bytes
// reach Node's HTTP parser as they are), checking every answer and the database after each one.
// It prints what it tried and got, and exits 1 on a 5xx, a crash, a hang, a wrong answer or a
// refused request that changed the database, with the input that did it.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { buildApp } from '../../app.ts'
import { childEnv } from '../../test/fixtures/child.ts'
import { BIN, freePort } from '../../test/fixtures/server.ts'
import { answerProblem, changedTables, jsonErrorProblem, snapshot, type Answer } from '../../test/fuzz/answers.ts'
import { authenticatedRequest, rawRequest, refusedRequest, webRequest, type FuzzRequest, type WebKnown } from '../../test/fuzz/arbitraries.ts'
import { FUZZ_PASSWORD, seedFuzzData } from '../../test/fuzz/seed.ts'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string' } } })
const seconds = Number(values.seconds)
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed)

const dir = mkdtempSync(join(tmpdir(), 'service-desk-fuzz-'))
const databaseAddress = join(dir, 'service.db')
const secret = randomBytes(32).toString('hex')
const port = await freePort()
const base = `http://localhost:${port}`

// ---- the database and the server

const seeding = buildApp({ config: { baseUrl: base, siteUrl: `${base}/{site}`, databaseAddress, secret } })
await seeding.ready()
const known = await seedFuzzData(seeding)
await seeding.tokens.flush()
await seeding.close()

const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--db', databaseAddress], {
  // The address limit would soon answer every failed credential with 429 and hide the rest.
  env: childEnv({ SERVICE_SECRET: secret, SERVICE_AUTH_FAILURES_PER_ADDRESS: '1000000', SERVICE_AUTH_FAILURES_PER_ACCOUNT: '1000000' }),
  stdio: ['ignore', 'pipe', 'pipe'],
})
let tail: string[] = []
const keep = (chunk: Buffer) => {
  tail = [...tail, ...chunk.toString().split('\n')].slice(-30)
}
child.stdout!.on('data', keep)
child.stderr!.on('data', keep)
await new Promise<void>((resolve, reject) => {
  const check = () => {
    if (tail.some((line) => line.includes('Server listening'))) return resolve()
    if (child.exitCode !== null) return reject(new Error(`the server did not start:\n${tail.join('\n')}`))
    setTimeout(check, 50)
  }
  check()
})

// ---- raw HTTP/1.1

interface Sent {
  answer: Answer | null
  /** Why no answer was read: the server closed without one, or did not answer in time. */
  outcome?: 'closed' | 'timeout'
}

function parse(bytes: Buffer, head: boolean): Answer | null {
  const split = bytes.indexOf('\r\n\r\n')
  const lines = bytes.subarray(0, split === -1 ? bytes.length : split).toString('latin1')
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines)
  if (!status) return null
  const headers: Record<string, string> = {}
  for (const line of lines.split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).toLowerCase()
    headers[name] = headers[name] === undefined ? line.slice(colon + 1).trim() : `${headers[name]}, ${line.slice(colon + 1).trim()}`
  }
  // The answer to HEAD has a length but no body.
  let body = split === -1 || head ? Buffer.alloc(0) : bytes.subarray(split + 4)
  // Bytes after the answer are the server's answer to what it read as a second, pipelined request.
  if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']))
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = []
    let rest = body
    for (;;) {
      const eol = rest.indexOf('\r\n')
      const size = parseInt(rest.subarray(0, eol).toString(), 16)
      if (eol === -1 || !(size > 0)) break
      parts.push(rest.subarray(eol + 2, eol + 2 + size))
      rest = rest.subarray(eol + 4 + size)
    }
    body = Buffer.concat(parts)
  }
  return { status: Number(status[1]), headers, body: body.toString('utf8') }
}

function sendBytes(bytes: Buffer, timeoutMs = 10_000): Promise<Sent> {
  const head = bytes.subarray(0, 5).toString('latin1') === 'HEAD '
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1')
    const timer = setTimeout(() => {
      socket.destroy()
      resolve({ answer: parse(Buffer.concat(chunks), head), outcome: 'timeout' })
    }, timeoutMs)
    // A request whose bytes promise more than they hold (a length, a chunk, an unfinished head)
    // has the server waiting: after a while the client half-closes, and the server sees the end.
    // Not at once: Node drops a request whose client has half-closed before its answer is sent.
    const halfClose = setTimeout(() => socket.end(), 2_000)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      clearTimeout(halfClose)
      const answer = parse(Buffer.concat(chunks), head)
      resolve(answer ? { answer } : { answer, outcome: 'closed' })
    })
    socket.write(bytes)
  })
}

function toBytes(request: FuzzRequest): Buffer {
  const lines = [`${request.method} ${request.url} HTTP/1.1`, `Host: localhost:${port}`, 'Connection: close']
  for (const [name, value] of Object.entries(request.headers)) for (const v of [value].flat()) lines.push(`${name}: ${v}`)
  const payload = request.payload === undefined ? Buffer.alloc(0) : Buffer.from(request.payload)
  if (request.payload !== undefined) lines.push(`Content-Length: ${payload.length}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), payload])
}

// ---- signing in, for the web target

function cookiesOf(answer: Answer | null): Record<string, string> {
  const found: Record<string, string> = {}
  for (const cookie of String(answer?.headers['set-cookie'] ?? '').split(/, (?=[a-z_]+=)/)) {
    const [pair] = cookie.split(';')
    const eq = pair.indexOf('=')
    if (eq > 0) found[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return found
}

async function signIn(): Promise<WebKnown> {
  const page = (await sendBytes(toBytes({ method: 'GET', url: '/demo/login', headers: {} }))).answer
  const csrfCookie = `service_csrf=${cookiesOf(page).service_csrf}`
  const token = /name="_csrf" value="([^"]+)"/.exec(page?.body ?? '')?.[1] ?? ''
  const form = new URLSearchParams({ _csrf: token, email: known.webEmail, password: FUZZ_PASSWORD }).toString()
  const headers = { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' }
  const signedIn = (await sendBytes(toBytes({ method: 'POST', url: '/demo/login', headers, payload: form }))).answer
  if (signedIn?.status !== 303) throw new Error(`signing in failed: ${signedIn?.status} ${signedIn?.body.slice(0, 200)}`)
  return { site: 'demo', session: `service_session=${cookiesOf(signedIn).service_session}`, csrfCookie, csrfToken: token }
}

// ---- the run

type Target = 'credentials' | 'routes' | 'web' | 'raw bytes'
const tried: Record<Target, number> = { credentials: 0, routes: 0, web: 0, 'raw bytes': 0 }
const statuses: Record<Target, Record<string, number>> = { credentials: {}, routes: {}, web: {}, 'raw bytes': {} }
const failures: Array<{ target: Target; problem: string; input: unknown }> = []
const reader = new Database(databaseAddress, { readonly: true })
const dataVersion = () => reader.pragma('data_version', { simple: true }) as number
let baseline = snapshot(reader)
let version = dataVersion()

async function attempt(target: Target, input: FuzzRequest | string, refused: boolean, expectation: 'contract' | 'bytes', oneCredential = false) {
  const sent = await sendBytes(typeof input === 'string' ? Buffer.from(input) : toBytes(input))
  tried[target]++
  const key = sent.answer ? String(sent.answer.status) : sent.outcome!
  statuses[target][key] = (statuses[target][key] ?? 0) + 1
  const fail = (problem: string) => failures.push({ target, problem, input })
  if (sent.outcome === 'timeout') fail('no answer within 10 seconds')
  if (sent.answer) {
    const problem =
      expectation === 'bytes'
        ? sent.answer.status >= 500
          ? `server error ${sent.answer.status}`
          : sent.answer.status >= 400 && sent.answer.body !== '' && /json/.test(String(sent.answer.headers['content-type']))
            ? jsonErrorProblem(sent.answer)
            : null
        : answerProblem((input as FuzzRequest).method, (input as FuzzRequest).url, sent.answer, { baseUrl: base, siteOrigin: base, refused, oneCredential })
    if (problem) fail(`${problem} (answer ${sent.answer.status} ${sent.answer.body.slice(0, 200)})`)
  }
  if (child.exitCode !== null || child.signalCode !== null) fail(`the server died: ${child.exitCode ?? child.signalCode}\n${tail.join('\n')}`)
  // Only commits of the server move data_version; only then are the rows compared.
  const now = dataVersion()
  if (now !== version) {
    version = now
    const after = snapshot(reader)
    if (after !== baseline && (!sent.answer || sent.answer.status >= 400)) fail(`a refused request changed the tables ${changedTables(baseline, after).join(', ')}`)
    baseline = after
  }
}

const started = Date.now()
const deadline = started + seconds * 1000
let web = await signIn()
/** Signing in writes a session: what the database holds now is the new normal. */
function rebaseline() {
  version = dataVersion()
  baseline = snapshot(reader)
}
rebaseline()
let round = 0
const host = `localhost:${port}`
while (Date.now() < deadline && child.exitCode === null && failures.length < 20) {
  const batch = { seed: seed + round, numRuns: 25 }
  round++
  for (const request of fc.sample(refusedRequest(known), batch)) await attempt('credentials', request, true, 'contract')
  for (const request of fc.sample(authenticatedRequest(known), batch)) await attempt('routes', request, false, 'contract', true)
  for (const request of fc.sample(webRequest(web), batch)) await attempt('web', request, false, 'contract')
  for (const bytes of fc.sample(rawRequest(known, host), batch)) await attempt('raw bytes', bytes, false, 'bytes')
  // A fuzzed form may have signed the session out: sign in afresh now and then.
  if (round % 10 === 0) {
    web = await signIn()
    rebaseline()
  }
}
const elapsed = (Date.now() - started) / 1000

// A last plain request: the server is still up and still right.
const last = await sendBytes(toBytes({ method: 'GET', url: '/demo', headers: { authorization: `Bearer ${known.token}` } }))
if (last.answer?.status !== 200) failures.push({ target: 'routes', problem: `the genuine token no longer works: ${last.answer?.status ?? last.outcome}`, input: 'GET /demo' })

child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))
reader.close()
rmSync(dir, { recursive: true, force: true })

const total = Object.values(tried).reduce((a, b) => a + b, 0)
console.log(`fuzz: ${total} inputs in ${elapsed.toFixed(1)} s (${Math.round(total / elapsed)}/s), seed ${seed}, ${round} rounds`)
for (const target of Object.keys(tried) as Target[]) {
  const by = Object.entries(statuses[target])
    .sort()
    .map(([status, n]) => `${status}: ${n}`)
    .join(', ')
  console.log(`  ${target.padEnd(12)} ${String(tried[target]).padStart(6)} tried   ${by}`)
}
console.log(`failures: ${failures.length}`)
for (const { target, problem, input } of failures) console.log(`- [${target}] ${problem}\n  input: ${JSON.stringify(input).slice(0, 2_000)}`)
process.exitCode = failures.length ? 1 : 0
