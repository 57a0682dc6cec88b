import t from 'tap'
import { buildApp } from '../../app.ts'
import { MAX_SECOND_STEP_FAILURES } from '../../db/stores/second-factors.ts'
import { addressBlock } from '../../lib/address-block.ts'
import { BASE_URL, buildTestApp, SITE_URL } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { basic } from '../fixtures/credentials.ts'
import { totpCode } from '../fixtures/totp.ts'
import { enrollAuthenticator, personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'

// Engines: one: what a guesser meets: budgets per address folded to IPv6's /64, the second step's end after wrong codes in a row, and what a failure says. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03); the count of wrong codes of an account that is not there in test/web/second-factors.test.ts.
// Issue 45, findings 4, 8 and 9: every budget kept per address folds IPv6 to its /64; wrong
// authenticator and recovery codes end after MAX_SECOND_STEP_FAILURES in a row; and a failed
// sign-in writes the same whether or not the account exists.

const MINUTE = 60_000
const inBlock = (i: number) => `2001:db8:0:1:${(i + 1).toString(16)}::${i + 7}`

t.test('one function folds an address to its budget: IPv4 whole, IPv6 by its /64', async (t) => {
  t.equal(addressBlock('203.0.113.5'), '203.0.113.5')
  t.equal(addressBlock('::ffff:203.0.113.5'), '203.0.113.5')
  t.equal(addressBlock('2001:db8:0:1:aaaa:bbbb:cccc:dddd'), '2001:db8:0:1::/64')
  t.equal(addressBlock('2001:DB8:0000:0001::1'), '2001:db8:0:1::/64')
  t.equal(addressBlock(addressBlock('2001:db8:0:1::1')), '2001:db8:0:1::/64', 'a folded key folds to itself')
  t.not(addressBlock('2001:db8:0:2::1'), addressBlock('2001:db8:0:1::1'))
})

t.test('25 addresses of one /64 share one failure budget on the API, the sign-in page and registration', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await personWithPassword(app)
  const api = []
  for (let i = 0; i < 25; i++) api.push((await app.inject({ url: '/demo/discussions', headers: basic(pat.email, `guess ${i}`), remoteAddress: inBlock(i) })).statusCode)
  t.same(api.slice(0, 5), [401, 401, 401, 401, 401])
  t.ok(api.includes(429), 'Basic from the block is stopped')
  t.equal(api.filter((s) => s === 401).length, 5, 'after the account budget of 5')

  // The sign-in page, with its form's CSRF token as a browser sends it.
  const web = webClient(app)
  let refused = 0
  for (let i = 0; i < 25; i++) {
    await web.get('/demo/login')
    const res = await app.inject({
      method: 'POST',
      url: '/demo/login',
      headers: { cookie: [...web.jar].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: web.field('_csrf'), email: `nobody${i}@example.test`, password: 'wrong' }).toString(),
      remoteAddress: `2001:db8:0:2::${i + 1}`,
    })
    if (res.statusCode === 429) refused++
  }
  t.equal(refused, 5, 'the sign-in page: 20 failures of one /64, then 429')

  const registered = []
  for (let i = 0; i < 25; i++) registered.push((await app.inject({ method: 'POST', url: '/oauth/register', payload: { redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }, remoteAddress: `2001:db8:0:3::${i + 1}` })).statusCode)
  t.equal(registered.filter((s) => s === 201).length, 20, '20 registrations an hour for the whole block')
  t.equal(registered.filter((s) => s === 429).length, 5)
  // Another /64 has budgets of its own.
  t.equal((await app.inject({ method: 'POST', url: '/oauth/register', payload: { redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }, remoteAddress: '2001:db8:0:4::1' })).statusCode, 201)
})

t.test(`authenticator codes stop after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row, until an operator unlocks them`, async (t) => {
  const runner = await cliRunner(t)
  await runner.run(['site', 'add', 'demo'])
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...runner.appDatabase }, clock: runner.clock })
  t.teardown(() => app.close())
  await app.ready()
  const clock = runner.clock
  const ann = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  const { secret, codes } = await enrollAuthenticator(web, clock())
  const recovery = codes[0]

  // The attacker has the password and guesses codes, five per window, window after window. The
  // windows before the last three are counted as the page counts a wrong code (the same store
  // call), so the test does not spend half a minute on 80 page requests; the last fifteen go
  // through the page, across window ends.
  const wrong = (n: number) => String((Number(totpCode(secret, clock())) + 1 + n) % 1_000_000).padStart(6, '0')
  let guesses = MAX_SECOND_STEP_FAILURES - 15
  for (let i = 0; i < guesses; i++) await app.secondFactors.failCode(ann.user.id)
  let answer = 0
  while (guesses < MAX_SECOND_STEP_FAILURES) {
    const thief = webClient(app)
    await thief.signIn(ann.email, ann.password)
    for (let i = 0; i < 5 && guesses < MAX_SECOND_STEP_FAILURES; i++, guesses++) answer = (await thief.post('/demo/login/second_step', { code: wrong(i) })).statusCode
    clock.advance(5 * MINUTE + 1000)
  }
  t.equal(answer, 401, 'each guess was checked')
  const thief = webClient(app)
  await thief.signIn(ann.email, ann.password)
  const stopped = await thief.post('/demo/login/second_step', { code: totpCode(secret, clock()) })
  t.equal(stopped.statusCode, 403, 'even the right code is refused now')
  t.match(stopped.body, `after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row`)
  t.notOk(thief.jar.get('service_session'))
  t.equal((await thief.post('/demo/login/second_step', { recovery_code: recovery })).statusCode, 403, 'a recovery code too')
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['lockout'], offset: 0, limit: 5 })
  t.equal(events.length, 1, 'the stop is in her security log, once')

  // Ann's side: an operator unlocks her codes, after which the right code signs her in.
  const unlocked = await runner.run(['user', 'unlock-codes', ann.email])
  t.same(unlocked, { code: 0, stdout: `the codes of ${ann.email} work again\n`, stderr: '' })
  t.same((await runner.run(['user', 'unlock-codes', ann.email])).stdout, `the codes of ${ann.email} were not stopped; nothing to do\n`)
  clock.advance(MINUTE)
  const back = webClient(app)
  await back.signIn(ann.email, ann.password)
  t.equal((await back.post('/demo/login/second_step', { code: totpCode(secret, clock()) })).statusCode, 303, 'signed in')
  t.equal(await app.secondFactors.failedCodes(ann.user.id), 0)

  // A right code ends a run of wrong ones: wrong codes that are not in a row never stop anything.
  await app.secondFactors.failCode(ann.user.id)
  clock.advance(MINUTE)
  const again = webClient(app)
  await again.signIn(ann.email, ann.password)
  await again.post('/demo/login/second_step', { code: totpCode(secret, clock()) })
  t.equal(await app.secondFactors.failedCodes(ann.user.id), 0)
})

t.test('stopped codes cannot confirm it is you either; a passkey would, and a right code after a wrong one clears the count', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { web, ...ann } = await signedInPerson(app)
  const { secret } = await enrollAuthenticator(web, clock())
  for (let i = 0; i < MAX_SECOND_STEP_FAILURES; i++) await app.secondFactors.failCode(ann.user.id)
  clock.advance(20 * MINUTE)
  await web.get('/demo/confirm?for=token&next=/demo/profile/api_tokens')
  const refused = await web.post('/demo/confirm', { code: totpCode(secret, clock()), for: 'token', next: '/demo/profile/api_tokens' })
  t.equal(refused.statusCode, 403)
  t.match(refused.body, `after ${MAX_SECOND_STEP_FAILURES} wrong ones in a row`)
  t.equal(await app.secondFactors.failedCodes(999_999), 0, 'an account that is not there has no count')
  t.equal(await app.secondFactors.failCode(999_999), 0)
})

t.test('a failed sign-in writes the same whether or not the account exists (no timing tell)', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await personWithPassword(app)
  const known = webClient(app)
  await known.signIn(pat.email, 'wrong password')
  const unknown = webClient(app)
  await unknown.signIn('nobody@example.test', 'wrong password')
  const { events } = await app.securityLog.list({ siteId: pat.site.id, kinds: ['sign_in_failed'], offset: 0, limit: 5 })
  t.equal(events.length, 2, 'one event each')
  const [forUnknown, forKnown] = events
  t.equal(forKnown.userId, pat.user.id)
  t.equal(forUnknown.userId, null, 'the unknown address names no account')
  t.same(forUnknown.detail, { account: 'none with that address' })
  t.notMatch(JSON.stringify(forUnknown), 'nobody', 'and the address typed is not kept')
})
