import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig } from '../../config.ts'
import { redactPostgresAddress } from '../../lib/database-address.ts'
import packageJson from '../../package.json' with { type: 'json' }
import { DEFAULT_LIMITS } from '../../plugins/auth/limits.ts'
import { main } from '../../cli/main.ts'
import { firstRunBanner, LOG_FLUSH_MS, NO_SITE_YET, startService } from '../../cli/serve.ts'
import { SETTLE_AFTER_MS } from '../../lib/memory.ts'
import { testClock } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'
import { childEnv } from '../fixtures/child.ts'
import { onSqlite, postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { BIN, startServer } from '../fixtures/server.ts'

// Engines: both: a real service process on a SQLite file or a PostgreSQL database, started as an operator starts it; a child's coverage is not collected.
// What a start refuses or says before it opens a database, and the memory it gives back, run once (onSqlite).

/** The database a server starts on: a file in a new data folder, or a fresh PostgreSQL schema with its SERVICE_SECRET. */
async function tempDb(t: Test): Promise<Record<string, string>> {
  if (TEST_ENGINE === 'postgres') return { SERVICE_DB: await postgresTestAddress(t), SERVICE_SECRET: randomBytes(32).toString('hex') }
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-serve-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { SERVICE_DB: join(dir, 'data', 'service.db') }
}

t.test('first run over a real socket: the demo site, the banner once, a working token', async (t) => {
  const db = await tempDb(t)
  const first = await startServer(t, db)
  // The banner is printed right after listening; give the write a moment.
  await new Promise((resolve) => setTimeout(resolve, 200))
  const banner = first.output()
  t.match(banner, `First run: site "demo" is ready`)
  t.match(banner, new RegExp(`\\nservice-desk \\S+ listening on ${first.base.replace('localhost', '127.0.0.1')}: the API at ${first.base}/demo, the supporter pages at ${first.base}/demo/login; database \\S+( \\(new\\))?\\n`), 'where it serves, in words')
  t.match(banner, `API              ${first.base}/demo`)
  t.match(banner, `Supporter pages  ${first.base}/demo/login`)
  t.match(banner, /Sign in          supporter@example\.com/)
  t.match(banner, /Password         [\w-]{20}/)
  const token = /API token        (service_pat_\w+)/.exec(banner)![1]
  t.match(banner, `curl -H 'Accept: application/vnd.service-v1+json' -H 'Authorization: Bearer ${token}' ${first.base}/demo/discussions`)

  const listing = await fetch(`${first.base}/demo/discussions`, {
    headers: { accept: 'application/vnd.service-v1+json', authorization: `Bearer ${token}` },
  })
  t.equal(listing.status, 200)
  t.equal(listing.headers.get('content-type'), 'application/vnd.service-v1+json; charset=utf-8')
  t.match(await listing.json(), { offset: 0, per_page: 30 })
  t.match(listing.headers.get('service-token-expiration'), / GMT$/)

  const refused = await fetch(`${first.base}/demo`)
  t.equal(refused.status, 401)
  t.equal(
    refused.headers.get('www-authenticate'),
    `Bearer realm="Service", resource_metadata="${first.base}/.well-known/oauth-protected-resource/demo", scope="read write"`,
  )
  // The log is written in batches, and at least every second (cli/serve.ts): the line of a
  // request is out within that, with nothing else happening. Without the timed flush it would wait
  // for 4 KB of lines or the shutdown; the wait here is a few flushes, not a speed check.
  const written = Date.now()
  while (!/"statusCode":401/.test(first.output()) && Date.now() - written < 5 * LOG_FLUSH_MS) await new Promise((resolve) => setTimeout(resolve, 50))
  t.match(first.output(), /"statusCode":401/, "the refusal's line is written without a shutdown to flush it")
  t.equal(await first.stop(), 0, 'SIGTERM closes gracefully')
  t.notMatch(first.output(), /"level":50/, 'no error was logged')
  t.notMatch(first.output().replace(banner, ''), token, 'the token never reached a log line')

  const second = await startServer(t, db)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notMatch(second.output(), /First run/, 'a second start prints none of that again')
  const again = await fetch(`${second.base}/demo`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(again.status, 200, 'the first-run token still works')
  await second.stop()
})

t.test('a bad configuration value stops start-up with one clear line', onSqlite('a configuration refused before any database is opened'), async (t) => {
  const db = await tempDb(t)
  const result = spawnSync(process.execPath, [BIN, 'serve'], {
    env: childEnv({ ...db, SERVICE_BASE_URL: 'not a url' }),
    encoding: 'utf8',
  })
  t.equal(result.status, 2)
  t.equal(result.stderr, 'service-desk: SERVICE_BASE_URL must be an http or https address such as https://api.example.com, not "not a url"\n')
  t.equal(result.stdout, '')
})

t.test('a real process: SERVICE_LOG_LEVEL=warn and the timeout flags, refusals logged and flushed at shutdown', onSqlite("the log and the socket's timeouts"), async (t) => {
  const db = await tempDb(t)
  const server = await startServer(t, { ...db, SERVICE_LOG_LEVEL: 'warn' }, ['--headers-timeout', '1', '--request-timeout', '2'], { ready: 'health' })
  t.equal((await fetch(`${server.base}/healthz`)).status, 200)
  const socket = connect(server.port, '127.0.0.1')
  socket.on('error', () => {})
  let answer = ''
  socket.on('data', (chunk) => (answer += chunk))
  const started = Date.now()
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('GET /demo HTTP/1.1\r\nHost: localhost\r\n')
  await new Promise((resolve) => socket.once('close', resolve))
  const took = Date.now() - started
  t.ok(took >= 900 && took < 5000, `unfinished headers cut after ${took} ms, at --headers-timeout 1`)
  t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  t.equal(await server.stop(), 0)
  const lines = server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  t.match(lines, [{ level: 40, refusal: 'headers_timeout', address: '127.0.0.1', status: 408 }], 'the refusal, written before the process ended')
  t.equal(lines.length, 1, 'and no line per request, nor the start-up lines of info')
})

t.test('a timeout or a cap that does not fit stops start-up with one clear line (exit 2)', onSqlite('a configuration refused before any database is opened'), async (t) => {
  const run = (argv: string[], env: Record<string, string> = {}) => {
    let stderr = ''
    return main(argv, { stdout: () => {}, stderr: (text) => void (stderr += text), env, readStdin: async () => '', clock: testClock() }).then((code) => ({ code, stderr }))
  }
  t.same(await run(['serve', '--headers-timeout', '60']), {
    code: 2,
    stderr: 'service-desk: --headers-timeout (60 s) must not be longer than SERVICE_REQUEST_TIMEOUT (30 s): the request timeout covers the headers too\n',
  })
  t.same(await run(['serve'], { SERVICE_KEEP_ALIVE_TIMEOUT: '0' }), {
    code: 2,
    stderr: 'service-desk: SERVICE_KEEP_ALIVE_TIMEOUT must be a whole number of seconds from 1 to 3600, not "0"\n',
  })
  t.match(await run(['serve', '--max-connections', '999999999']), { code: 2, stderr: /^service-desk: --max-connections is 999999999, but this process may open \d+ files/ })
  t.match(await run(['serve', '--log-level', 'loud']), { code: 2, stderr: /^service-desk: --log-level must be one of trace, debug, info, warn, error, fatal, silent, not "loud"\n$/ })
})

t.test('the banner uses the configured public addresses', onSqlite("the banner's words"), async (t) => {
  const banner = firstRunBanner(
    {
      ...loadConfig({ env: {}, flags: {}, openFiles: 1024 }),
      port: 1,
      host: 'h',
      databaseAddress: 'f',
      baseUrl: 'https://api.example.com',
      siteUrl: 'https://help.example.com/{site}',
      trustProxy: false,
      limits: DEFAULT_LIMITS,
      hsts: true,
    },
    { site: { permalink: 'demo' } as never, email: 'a@b', password: 'pw', token: 'service_pat_x' },
  )
  t.match(banner, 'API              https://api.example.com/demo\n')
  t.match(banner, 'Supporter pages  https://help.example.com/demo/login\n')
  t.match(banner, 'https://api.example.com/demo/discussions\n')
})

t.test('in-process start: banner on the first start only, never in the log; where it serves on every start', async (t) => {
  const config = loadConfig({ env: { ...(await tempDb(t)), PORT: '0' }, flags: {} })
  const log = logCapture()
  let printed = ''
  let said = ''
  const io = { stdout: (text: string) => void (printed += text), stderr: (text: string) => void (said += text), clock: testClock() }
  const first = await startService(config, io, log.stream)
  const { port } = first.server.address() as { port: number }
  t.ok(port > 0, 'listening')
  t.match(log.entries().find((entry) => entry.msg === 'timeouts and connection caps'), {
    level: 30,
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 15_000,
    keepAliveTimeoutMs: 5_000,
    maxConnections: config.connections.maxConnections,
    maxConnectionsPerAddress: 0,
    logLevel: 'info',
  }, 'the limits in force are logged at start')
  t.match(printed, /First run/)
  const token = /(service_pat_\w+)/.exec(printed)![1]
  t.notMatch(log.text(), token)
  // A SQLite file is new on a first start; a PostgreSQL address is shown without its password.
  const database = TEST_ENGINE === 'sqlite' ? `${config.databaseAddress} (new)` : redactPostgresAddress(config.databaseAddress)
  t.equal(
    said,
    `service-desk ${packageJson.version} listening on http://127.0.0.1:${port}: the API at http://localhost:0/demo, ` +
      `the supporter pages at http://localhost:0/demo/login; database ${database}\n`,
    'one human line on standard error: where, and which database',
  )
  await first.close()

  printed = ''
  said = ''
  const second = await startService(config, io, log.stream)
  t.equal(printed, '', 'no banner on the second start')
  const { port: again } = second.server.address() as { port: number }
  t.match(said, new RegExp(`^service-desk \\S+ listening on http://127\\.0\\.0\\.1:${again}: the API at .*/demo, .*; database \\S+\\n$`), 'the line again, the database not new')
  await second.close()
})

t.test('a started service gives back the memory its start grew, once, a second after it listens; not after it closed', onSqlite('the memory given back'), async (t) => {
  const config = loadConfig({ env: { ...(await tempDb(t)), PORT: '0', SERVICE_DEMO: 'off' }, flags: {} })
  const io = { stdout: () => {}, stderr: () => {}, clock: testClock() }
  let settled = 0
  const app = await startService(config, io, logCapture().stream, () => void settled++)
  // Asked at once: a second start on a loaded machine can take longer than the wait.
  t.equal(settled, 0, 'not at once: the first requests come first')
  const closed = await startService(config, io, logCapture().stream, () => void (settled += 100))
  await closed.close()
  await new Promise((resolve) => setTimeout(resolve, SETTLE_AFTER_MS + 200))
  t.equal(settled, 1, 'once, by the running service; the closed one does not')
  await app.close()
})

t.test('in-process start with SERVICE_DEMO=off: no demo site, no secret printed, and what to do next', async (t) => {
  const config = loadConfig({ env: { ...(await tempDb(t)), PORT: '0', SERVICE_DEMO: 'off' }, flags: {} })
  const log = logCapture()
  let printed = ''
  let said = ''
  const io = { stdout: (text: string) => void (printed += text), stderr: (text: string) => void (said += text), clock: testClock() }
  const app = await startService(config, io, log.stream)
  t.equal(printed, '', 'no banner')
  t.match(said, NO_SITE_YET)
  t.same(await app.sites.list(), [], 'no site')
  await app.close()
})
