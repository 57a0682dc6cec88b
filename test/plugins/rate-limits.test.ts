import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import Database from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.ts'
import { addressKey, DEFAULT_RATE_LIMITS, type RateLimitSettings } from '../../plugins/rate-limits.ts'
import { BASE_URL, buildTestApp, SITE_URL, START, supporterWithToken, testClock, V1 } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { logCapture } from '../fixtures/log.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { sharedDatabase, twoApps } from '../multiprocess/two-apps.ts'

// Engines: one: fair use's headers, the 429 before any route, reads and writes apart; its counters run on both in test/multiprocess/rate-limits.test.ts. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Fair use (issue 33; plugins/rate-limits.ts, lib/rate-limiter.ts), on the suite's engine: the
// headers, the 429 before any route, reads and writes apart, a 304 free, credentials and addresses
// kept apart, one count for two apps on one database, and a count that outlives a restart.

const limits = (own: Partial<RateLimitSettings>): RateLimitSettings => ({ ...DEFAULT_RATE_LIMITS, ...own })
type Answer = { statusCode: number; headers: Record<string, unknown> }
const standing = (res: Answer) => ({
  status: res.statusCode,
  remaining: res.headers['x-ratelimit-remaining'],
  used: res.headers['x-ratelimit-used'],
  ratelimit: res.headers.ratelimit,
})

t.test("a token's reads count down in both sets of headers, then 429 in the JSON shape with Retry-After", async (t) => {
  const { app, clock } = await buildTestApp(t, { config: { rateLimits: limits({ reads: 3 }) } })
  const ann = await supporterWithToken(app)
  clock.advance(15 * 60_000) // a quarter past: 45 minutes left of the hour's window
  for (let i = 1; i <= 3; i++) {
    const res = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['ratelimit-policy'], '"reads";q=3;w=3600')
    t.equal(res.headers.ratelimit, `"reads";r=${3 - i};t=2700`)
    t.equal(res.headers['x-ratelimit-limit'], '3')
    t.equal(res.headers['x-ratelimit-remaining'], String(3 - i))
    t.equal(res.headers['x-ratelimit-used'], String(i))
    t.equal(res.headers['x-ratelimit-reset'], String((START + 3600_000) / 1000), 'the end of the window, in seconds since the epoch')
    t.equal(res.headers['x-ratelimit-resource'], 'reads')
  }
  const limited = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '2700')
  t.match(limited.headers['content-type'], /^application\/vnd\.service-v1\+json/)
  t.same(limited.json(), { error: 'rate_limited', message: 'Too many requests: this credential has used all 3 reads of this window. Try again in 2700 seconds.' })
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  t.equal(limited.headers['cache-control'], 'no-store', 'still a private answer')

  clock.advance(2699_000)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).headers['retry-after'], '1', 'Retry-After counts down')
  clock.advance(1000)
  const next = await app.inject({ url: '/demo', headers: ann.bearer })
  t.same(standing(next), { status: 200, remaining: '2', used: '1', ratelimit: '"reads";r=2;t=3600' }, 'a new window, a new budget')
})

t.test('a write past its policy gets 429 and never reaches the route, while reads still pass', async (t) => {
  const { api, create, questions } = await discussionApp(t, { config: { rateLimits: limits({ writes: 2 }) } })
  await create({ title: 'First' })
  await create({ title: 'Second' })
  const refused = await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Third', body: 'Past the limit.' })
  t.equal(refused.statusCode, 429)
  t.equal(refused.json().error, 'rate_limited')
  t.equal(refused.headers['x-ratelimit-resource'], 'writes')
  const listing = await api('GET', '/demo/discussions')
  t.equal(listing.statusCode, 200, 'reads have a policy of their own')
  t.same(
    listing.json().discussions.map((d: { title: string }) => d.title).sort(),
    ['First', 'Second'],
    'the refused write wrote nothing',
  )
  t.equal(listing.headers['x-ratelimit-resource'], 'reads')
  t.equal(listing.headers['x-ratelimit-used'], '1')
})

t.test('a 304 leaves the count as it was; any other answer spends one', async (t) => {
  const { app, ann } = await discussionApp(t, { config: { rateLimits: limits({ reads: 10 }) } })
  const first = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(first.headers['x-ratelimit-remaining'], '9')
  const conditional = { ...ann.bearer, 'if-none-match': String(first.headers.etag) }
  for (let i = 0; i < 5; i++) {
    const polled = await app.inject({ url: '/demo/discussions', headers: conditional })
    t.same(standing(polled), { status: 304, remaining: '9', used: '1', ratelimit: '"reads";r=9;t=3600' })
  }
  t.equal((await app.inject({ url: '/demo/discussions', headers: ann.bearer })).headers['x-ratelimit-remaining'], '8')
  const stale = await app.inject({ url: '/demo/discussions', headers: { ...ann.bearer, 'if-none-match': '"stale"' } })
  t.same(standing(stale), { status: 200, remaining: '7', used: '3', ratelimit: '"reads";r=7;t=3600' }, 'an If-None-Match that does not match is a read like any other')
})

t.test('two tokens, two budgets; one address cannot spend or borrow from another', async (t) => {
  const { app } = await buildTestApp(t, { config: { rateLimits: limits({ reads: 2, anonymous: 2 }) } })
  const [ann, bob] = [await supporterWithToken(app), await supporterWithToken(app)]
  const read = (headers: Record<string, string>, remoteAddress = '203.0.113.5') => app.inject({ url: '/demo', headers, remoteAddress })
  for (let i = 0; i < 2; i++) t.equal((await read(ann.bearer)).statusCode, 200)
  t.equal((await read(ann.bearer)).statusCode, 429, "Ann's token is spent")
  t.same(standing(await read(bob.bearer)), { status: 200, remaining: '1', used: '1', ratelimit: '"reads";r=1;t=3600' }, "Bob's token, from the same address, is not")
  t.equal((await read(ann.bearer, '198.51.100.7')).statusCode, 429, 'a token is counted wherever it comes from')

  // Without a credential the address is what is counted: 401 until its budget is spent, then 429.
  const anonymous = { accept: V1 }
  t.same(standing(await read(anonymous)), { status: 401, remaining: '1', used: '1', ratelimit: '"anonymous";r=1;t=3600' })
  t.equal((await read(anonymous)).statusCode, 401)
  const spent = await read(anonymous)
  t.equal(spent.statusCode, 429)
  t.equal(spent.json().message, 'Too many requests: this address has used all 2 requests without a credential of this window. Try again in 3600 seconds.')
  t.equal((await read({ ...anonymous, 'x-forwarded-for': '192.0.2.1' })).statusCode, 429, 'a header anyone can set does not make a new address')
  t.equal((await read(anonymous, '203.0.113.6')).statusCode, 401, 'another address has its own budget')
  t.equal((await read(bob.bearer)).statusCode, 200, 'and a right token from the spent address is still served')
})

t.test('the per-site override gives a site its own policies', async (t) => {
  const { app } = await buildTestApp(t, { config: { rateLimits: limits({ reads: 100, writes: 50, sites: { other: { reads: 1 }, third: { writes: 2 } } }) } })
  const ann = await supporterWithToken(app)
  const olga = await supporterWithToken(app, { site: 'other' })
  const tom = await supporterWithToken(app, { site: 'third' })
  const atOther = await app.inject({ url: '/other', headers: olga.bearer })
  t.equal(atOther.headers['ratelimit-policy'], '"reads";q=1;w=3600')
  t.equal((await app.inject({ url: '/other', headers: olga.bearer })).statusCode, 429)
  const writeAtOther = await app.inject({ method: 'POST', url: '/other/discussions/1/resolve', headers: olga.bearer })
  t.equal(writeAtOther.headers['ratelimit-policy'], '"writes";q=50;w=3600', 'a site that sets its reads keeps the default writes')
  t.equal((await app.inject({ url: '/third', headers: tom.bearer })).headers['ratelimit-policy'], '"reads";q=100;w=3600', 'and the other way round')
  t.equal((await app.inject({ method: 'POST', url: '/third/discussions/1/resolve', headers: tom.bearer })).headers['ratelimit-policy'], '"writes";q=2;w=3600')
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).headers['ratelimit-policy'], '"reads";q=100;w=3600', 'the other sites keep the default')
})

t.test('two apps on one database enforce one limit: their 200s add up to it exactly', async (t) => {
  const { one, two } = await twoApps(t, { rateLimits: limits({ reads: 7 }) })
  const ann = await supporterWithToken(one)
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).inject({ url: '/demo', headers: ann.bearer })))
  const statuses = answers.map((res) => res.statusCode)
  t.equal(statuses.filter((status) => status === 200).length, 7, 'seven served between them')
  t.equal(statuses.filter((status) => status === 429).length, 13)
  for (const app of [one, two]) t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 429, 'each refuses now')
})

t.test('a restart does not reset the window: the count lives in the database, and a closing app gives back what it held', async (t) => {
  const database = await sharedDatabase(t)
  const clock = testClock()
  const start = async () => {
    const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...database, rateLimits: limits({ reads: 5 }) }, clock })
    t.teardown(() => app.close())
    await app.ready()
    // In an object: an app is itself a promise of its readiness, which `await` would unwrap.
    return { app }
  }
  const { app: first } = await start()
  const ann = await supporterWithToken(first)
  for (let i = 0; i < 3; i++) t.equal((await first.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
  await first.close()
  const { app: second } = await start()
  const after = await second.inject({ url: '/demo', headers: ann.bearer })
  t.same(standing(after), { status: 200, remaining: '1', used: '4', ratelimit: '"reads";r=1;t=3600' }, 'the fourth of five')
  t.equal((await second.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
  t.equal((await second.inject({ url: '/demo', headers: ann.bearer })).statusCode, 429)
})

t.test("while another process holds SQLite's write lock, requests are served and counted by this process alone, and the log says so", { skip: SQLITE_ONLY && 'a lock of SQLite itself' }, async (t) => {
  const { databaseAddress } = await sharedDatabase(t)
  const log = logCapture()
  const { app } = await buildTestApp(t, { config: { databaseAddress, rateLimits: limits({ reads: 640 }) }, busyTimeoutMs: 50, logStream: log.stream })
  const ann = await supporterWithToken(app)
  const other = new Database(databaseAddress)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  for (let i = 1; i <= 3; i++) t.same(standing(await app.inject({ url: '/demo', headers: ann.bearer })), { status: 200, remaining: String(640 - i), used: String(i), ratelimit: `"reads";r=${640 - i};t=3600` })
  // The token's last use is written while the lock is away; then the lock is back for the close.
  other.exec('ROLLBACK')
  await app.tokens.flush()
  other.exec('BEGIN IMMEDIATE')
  await app.close()
  // Fair use's own lines (the service's other background work meets the lock too).
  const warnings = log.entries().filter((entry) => entry.level === 40 && /rate limit|count requests/.test(String(entry.msg))).map((entry) => entry.msg)
  t.same(warnings.sort(), [
    'could not count requests in the database; each process counts its own until it can',
    'could not forget the rate limit windows that ended; the next window tries again',
    'could not give back the rate limit leases this process held',
  ], 'one line each: the lease, the old windows, and what it held at close')
  other.exec('ROLLBACK')
})

t.test('a refusal past the limit is logged as a counted refusal, with its policy and never the token', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { config: { rateLimits: limits({ reads: 1 }) }, logStream: log.stream })
  const ann = await supporterWithToken(app)
  await app.inject({ url: '/demo', headers: ann.bearer })
  await app.inject({ url: `/demo?access_token=${ann.value}`, headers: ann.bearer })
  await app.inject({ url: '/demo', headers: ann.bearer })
  const refusals = log.entries().filter((entry) => entry.msg === 'request refused: past its rate limit')
  t.equal(refusals.length, 1, 'the 400 of a token in the URL is not a rate limit')
  t.match(refusals[0], { level: 40, address: '127.0.0.1', status: 429, method: 'GET', url: '/demo', policy: 'reads' })
  t.notMatch(log.text(), ann.value, 'no token in any line')
})

t.test('an MCP tool past the write policy is a tool error that says when to retry', async (t) => {
  const { app, ann, create, questions } = await discussionApp(t, { config: { rateLimits: limits({ writes: 1 }) } })
  await create({ title: 'Spends the only write' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/mcp`
  const client = new Client({ name: 'service-desk-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: ann.bearer.authorization } } }))
  t.teardown(() => client.close())
  const result = await client.callTool({ name: 'create_discussion', arguments: { category_id: questions.id, title: 'One too many', body: 'Past the limit.' } })
  t.equal(result.isError, true)
  t.match((result.content as Array<{ text: string }>)[0].text, /^The help desk refused \(429\): Too many requests: this credential has used all 1 writes of this window\. Try again in \d+ seconds\.$/)
  const listed = await client.callTool({ name: 'list_discussions', arguments: {} })
  t.match(listed.structuredContent, { total: 1 }, 'reads still pass, and the refused write wrote nothing')
})

t.test('an IPv6 address is counted by its /64; IPv4 and IPv4-mapped whole', async (t) => {
  t.equal(addressKey('203.0.113.5'), 'address:203.0.113.5')
  t.equal(addressKey('::ffff:203.0.113.5'), 'address:203.0.113.5')
  t.equal(addressKey('2001:db8:0:1:aaaa:bbbb:cccc:dddd'), 'address:2001:db8:0:1::/64')
  t.equal(addressKey('2001:DB8:0000:0001::1'), 'address:2001:db8:0:1::/64', 'the same block, written otherwise')
  t.equal(addressKey('2001:db8::1'), 'address:2001:db8:0:0::/64')
  t.equal(addressKey('::1'), 'address:0:0:0:0::/64')
  t.not(addressKey('2001:db8:0:2::1'), addressKey('2001:db8:0:1::1'), 'the next block is another budget')
})
