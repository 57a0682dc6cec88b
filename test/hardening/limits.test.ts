import t from 'tap'
import { DEFAULT_RATE_LIMITS } from '../../plugins/rate-limits.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, legacyTokenOf, makeMultipass, inDays, supporterWithPassword } from '../fixtures/credentials.ts'
import { webClient } from '../fixtures/web.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.

const limits = { perAddress: 3, perAccount: 2, windowSeconds: 60 }
/** The failure budget's item of the RateLimit header (`"failures";r=2;t=60`), or undefined. */
function failures(res: { headers: Record<string, unknown> }) {
  const item = /"failures";r=(\d+);t=(\d+)/.exec(String(res.headers.ratelimit ?? ''))
  return item ? { remaining: item[1], reset: item[2] } : undefined
}
const WRONG_TOKEN = { authorization: 'Bearer service_pat_not-a-real-token', accept: V1 }

t.test('failed tokens from one address: RateLimit headers count down, then 429 with Retry-After for all but a right bearer token', async (t) => {
  const { app, clock } = await buildTestApp(t, { config: { limits } })
  const ann = await supporterWithToken(app)
  const from = (remoteAddress: string, headers: Record<string, string>) => app.inject({ url: '/demo', headers, remoteAddress })

  for (let i = 1; i <= limits.perAddress; i++) {
    const res = await from('203.0.113.5', WRONG_TOKEN)
    t.equal(res.statusCode, 401)
    t.match(res.headers['www-authenticate'], 'error="invalid_token"', 'the answer of the contract is unchanged')
    t.equal(res.headers['ratelimit-policy'], `"failures";q=3;w=60, "anonymous";q=${DEFAULT_RATE_LIMITS.anonymous};w=3600`, 'the failure budget first, then the address\'s own policy')
    t.same(failures(res), { remaining: String(limits.perAddress - i), reset: '60' })
    t.equal(res.headers['x-ratelimit-resource'], 'failures', "GitHub's names tell the failure budget, which ends sooner")
    t.equal(res.headers['x-ratelimit-remaining'], String(limits.perAddress - i))
  }
  const limited = await from('203.0.113.5', WRONG_TOKEN)
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '60')
  t.equal(failures(limited)?.remaining, '0')
  t.equal(limited.body, 'Too many failed authentication attempts. Try again in 60 seconds.\n')
  t.equal((await from('203.0.113.5', { 'x-service-auth': 'f'.repeat(40) })).statusCode, 429, 'a limited address is refused a legacy token before its check')
  t.equal((await from('203.0.113.5', ann.bearer)).statusCode, 200, 'but a right bearer token, which no one can guess, is served (issue 28)')

  const other = await from('203.0.113.6', ann.bearer)
  t.equal(other.statusCode, 200, 'another address is not affected')
  t.equal(other.headers['x-ratelimit-resource'], 'reads', "successful traffic carries its credential's policy, not the failure budget")
  t.notMatch(other.headers.ratelimit, 'failures')

  clock.advance(30_000)
  t.equal((await from('203.0.113.5', WRONG_TOKEN)).headers['retry-after'], '30', 'Retry-After counts down')
  clock.advance(30_000)
  t.equal((await from('203.0.113.5', WRONG_TOKEN)).statusCode, 401, 'free again when the window ends')
})

t.test('successes never count, and a right credential after failures does not reset the address', async (t) => {
  const { app } = await buildTestApp(t, { config: { limits } })
  const ann = await supporterWithToken(app)
  for (let i = 0; i < 50; i++) t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
  t.equal(failures(await app.inject({ url: '/demo', headers: WRONG_TOKEN }))?.remaining, '2', 'fifty successes spent nothing')
  await app.inject({ url: '/demo', headers: ann.bearer })
  t.equal(failures(await app.inject({ url: '/demo', headers: WRONG_TOKEN }))?.remaining, '1')
})

t.test('what counts as a failure: every wrong credential kind; not a missing one, nor a right one refused', async (t) => {
  const { app, clock } = await buildTestApp(t, { config: { limits: { ...limits, perAddress: 100 } } })
  const pat = await supporterWithPassword(app)
  const reader = await supporterWithToken(app, { access: 'read' })
  const outsider = await supporterWithToken(app, { staff: false })
  const remaining = async (request: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string> }) => {
    const res = await app.inject({ ...request, remoteAddress: '198.51.100.1' })
    return { status: res.statusCode, remaining: failures(res)?.remaining }
  }
  const expiredMultipass = makeMultipass({ email: pat.user.email, expires: inDays(app, -1) }, pat.site.multipassKey, 'demo')
  const legacy = (await legacyTokenOf(app, pat.user.id)).value

  t.same(await remaining({ url: '/demo' }), { status: 401, remaining: undefined }, 'no credential: not a failure')
  t.same(await remaining({ url: '/demo', method: 'POST', headers: { ...reader.bearer } }), { status: 403, remaining: undefined }, 'read-only token writing')
  t.same(await remaining({ url: '/demo', headers: outsider.bearer }), { status: 403, remaining: undefined }, 'not on the staff')
  t.same(await remaining({ url: '/demo', headers: { ...WRONG_TOKEN } }), { status: 401, remaining: '99' }, 'wrong personal token')
  t.same(await remaining({ url: '/demo', headers: { 'x-service-auth': 'wrong' } }), { status: 401, remaining: '98' }, 'wrong legacy token')
  t.same(await remaining({ url: '/demo', headers: { 'x-multipass': 'AAAA' } }), { status: 401, remaining: '97' }, 'bad multipass')
  t.same(await remaining({ url: '/demo', headers: { 'x-multipass': expiredMultipass } }), { status: 401, remaining: '96' }, 'expired multipass')
  t.same(await remaining({ url: '/demo', headers: basic(pat.user.email, 'wrong') }), { status: 401, remaining: '95' }, 'wrong password, counted once')
  t.same(await remaining({ url: '/demo', headers: { authorization: 'Bearer' } }), { status: 401, remaining: '94' }, 'malformed Authorization')
  clock.advanceDays(400)
  // A new window: the failures above have expired with the old one.
  t.same(await remaining({ url: '/demo', headers: { 'x-service-auth': legacy } }), { status: 401, remaining: '99' }, 'expired legacy token')
})

t.test('passwords: the per-account limit, and the address budget shared with the sign-in page', async (t) => {
  const { app } = await buildTestApp(t, { config: { limits } })
  const pat = await supporterWithPassword(app)
  const page = webClient(app)
  const failed = await page.signIn(pat.user.email, 'wrong')
  t.equal(failed.statusCode, 401)
  t.equal(failures(failed)?.remaining, '2', 'the sign-in page reports the same budget')
  const api = await app.inject({ url: '/demo', headers: basic('someone@example.test', 'x') })
  t.equal(failures(api)?.remaining, '1', 'and the API spends from it')
  await app.inject({ url: '/demo', headers: WRONG_TOKEN })
  const limited = await page.signIn(pat.user.email, pat.password)
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '60')
  t.equal(failures(limited)?.remaining, '0')
  t.match(limited.body, 'Too many failed attempts. Try again in 1 minute.')

  // The account's own limit, from addresses that are each within theirs.
  const { app: second } = await buildTestApp(t, { config: { limits } })
  const sam = await supporterWithPassword(second)
  for (const address of ['192.0.2.1', '192.0.2.2']) {
    t.equal((await second.inject({ url: '/demo', headers: basic(sam.user.email, 'guess'), remoteAddress: address })).statusCode, 401)
  }
  const account = await second.inject({ url: '/demo', headers: sam.headers, remoteAddress: '192.0.2.3' })
  t.equal(account.statusCode, 429, 'the account is limited after perAccount failures')
  t.equal(failures(account)?.remaining, '3', "the headers tell the address's own budget")
})

t.test('single sign-on on the pages spends the same address budget', async (t) => {
  const { app } = await buildTestApp(t, { config: { limits } })
  await app.sites.add('demo', 'Demo')
  const page = webClient(app)
  for (let i = 1; i <= limits.perAddress; i++) {
    const res = await page.get('/demo/login?sso=not-a-multipass')
    t.equal(res.statusCode, 401)
    t.equal(failures(res)?.remaining, String(limits.perAddress - i))
  }
  const limited = await page.get('/demo/login?sso=not-a-multipass')
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '60')
  t.match(limited.body, 'Too many failed attempts')
})

t.test('behind a trusted proxy the client address is X-Forwarded-For; from anyone else it is ignored', async (t) => {
  const { app } = await buildTestApp(t, { config: { limits, trustProxy: '10.0.0.1' } })
  const viaProxy = (client: string) =>
    app.inject({ url: '/demo', headers: { ...WRONG_TOKEN, 'x-forwarded-for': client }, remoteAddress: '10.0.0.1' })
  for (let i = 0; i < limits.perAddress; i++) await viaProxy('198.51.100.7')
  t.equal((await viaProxy('198.51.100.7')).statusCode, 429, 'the client behind the proxy is limited')
  t.equal((await viaProxy('198.51.100.8')).statusCode, 401, 'its neighbour behind the same proxy is not')

  const spoofed = (client: string) =>
    app.inject({ url: '/demo', headers: { ...WRONG_TOKEN, 'x-forwarded-for': client }, remoteAddress: '203.0.113.9' })
  for (let i = 0; i < limits.perAddress; i++) await spoofed(`192.0.2.${i}`)
  t.equal((await spoofed('192.0.2.200')).statusCode, 429, 'an untrusted peer cannot pick a new address per request')
})
