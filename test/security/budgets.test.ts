import t from 'tap'
import { DEFAULT_LIMITS } from '../../plugins/auth/limits.ts'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { basic, supporterWithPassword } from '../fixtures/credentials.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: both: attempts sent at once reserve the budgets before the slow check, in transactions PostgreSQL runs side by side.
// Issue 13, items 1 and 2: a locked account or address answers 429 to every password, right or
// wrong, and budgets are reserved before the slow check, so attempts sent at once cannot overrun them.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

/** Every argon2 verification waits for `open()`, and is counted. */
function slowVerifier(app: App, matches = false) {
  let calls = 0
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  app.passwordChecks.verify = async () => {
    calls++
    await gate
    return matches
  }
  return { open, calls: () => calls }
}

/**
 * Waits until each request sent at once has either been answered or is held by the password checks
 * (verifying behind the gate, or waiting for a slot), however slow the machine: a fixed pause let
 * late requests through on a busy CI run.
 */
async function allArrived(app: App, answers: Array<Promise<unknown>>) {
  let answered = 0
  for (const answer of answers) void answer.then(() => answered++)
  const held = () => app.passwordChecks.running + app.passwordChecks.waiting
  while (answered + held() < answers.length) await new Promise((resolve) => setTimeout(resolve, 5))
}

const statuses = (answers: Array<{ statusCode: number }>) => {
  const counted = new Map<number, number>()
  for (const { statusCode } of answers) counted.set(statusCode, (counted.get(statusCode) ?? 0) + 1)
  return Object.fromEntries(counted)
}

t.test('wrong passwords for one account sent at once: only the account budget reaches the verifier', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const verifier = slowVerifier(app)
  const flood = 34
  const answers = Array.from({ length: flood }, (_, i) =>
    app.inject({ url: '/demo', headers: basic(pat.user.email, `guess ${i}`), remoteAddress: `198.51.100.${i}` }),
  )
  await allArrived(app, answers)
  verifier.open()
  const done = await Promise.all(answers)
  t.equal(verifier.calls(), DEFAULT_LIMITS.perAccount, 'at most the budget is verified')
  t.same(statuses(done), { 401: DEFAULT_LIMITS.perAccount, 429: flood - DEFAULT_LIMITS.perAccount })
  t.ok(done.filter((r) => r.statusCode === 429).every((r) => Number(r.headers['retry-after']) > 0), 'every 429 says when to come back')
})

t.test('wrong passwords from one address sent at once: only the address budget reaches the verifier', async (t) => {
  const { app } = await buildTestApp(t)
  const verifier = slowVerifier(app)
  const flood = 60
  const answers = Array.from({ length: flood }, (_, i) => app.inject({ url: '/demo', headers: basic(`someone${i}@example.test`, 'guess') }))
  await allArrived(app, answers)
  verifier.open()
  const done = await Promise.all(answers)
  t.equal(verifier.calls(), DEFAULT_LIMITS.perAddress)
  t.same(statuses(done), { 401: DEFAULT_LIMITS.perAddress, 429: flood - DEFAULT_LIMITS.perAddress }, 'no 503: the queue is never reached past the budget')
})

t.test('a right password gives its reservation back; a wrong one keeps it', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  app.passwordChecks.verify = async (_hash, password) => password === pat.password
  for (let i = 0; i < DEFAULT_LIMITS.perAddress - 1; i++) {
    t.equal((await app.inject({ url: '/demo', headers: basic(`other${i}@example.test`, 'guess') })).statusCode, 401)
  }
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200, 'the last attempt of the budget, right')
  t.equal((await app.inject({ url: '/demo', headers: basic('last@example.test', 'guess') })).statusCode, 401, 'the success cost nothing')
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 429, 'now the address is spent, for the right password too')
})

t.test('the other credentials: tokens sent at once are held to the address budget', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const pat = await supporterWithPassword(app)
  const wrong = ann.value.slice(0, -1) + (ann.value.endsWith('A') ? 'B' : 'A')
  const flood = 30
  const done = await Promise.all(
    Array.from({ length: flood }, (_, i) => app.inject({ url: '/demo', headers: i % 2 ? { authorization: `Bearer ${wrong}` } : { 'x-service-auth': 'f'.repeat(40) } })),
  )
  t.same(statuses(done), { 401: DEFAULT_LIMITS.perAddress, 429: flood - DEFAULT_LIMITS.perAddress })
  t.equal((await app.inject({ url: '/demo', headers: { 'x-service-auth': 'f'.repeat(40) } })).statusCode, 429, 'a spent address: a legacy token is refused before any check')
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${wrong}` } })).statusCode, 429, 'and a wrong bearer token')
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 429, 'and a password, right or wrong')
})

t.test('a valid token is never refused because other requests from its address failed (issue 28)', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const { tokens } = await oauthTokens(app, { scope: 'read' })
  const malformed = 'service_pat_' + 'x'.repeat(40)
  for (let i = 0; i < DEFAULT_LIMITS.perAddress; i++) {
    t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${malformed}` } })).statusCode, 401)
  }
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${malformed}` } })).statusCode, 429, 'the address is spent for broken tokens')
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200, 'a valid personal token from it is served')
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${tokens.access_token}` } })).statusCode, 200, 'and a valid OAuth token')
  t.equal((await app.inject({ url: '/demo', headers: { authorization: `Bearer ${malformed}` } })).statusCode, 429, 'which reset nothing')
})

t.test('the sign-in form: a locked account answers 429 to its right password, remembered or not', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const owner = webClient(app)
  t.equal((await owner.signIn(ann.email, ann.password)).statusCode, 303, 'signed in: the password is remembered')
  for (let i = 0; i < DEFAULT_LIMITS.perAccount; i++) {
    const guesser = webClient(app)
    await guesser.get('/demo/login')
    await guesser.post('/demo/login', { email: ann.email, password: `guess ${i}` })
  }
  const guesser = webClient(app)
  const right = await guesser.signIn(ann.email, ann.password)
  t.equal(right.statusCode, 429, 'the right password is not told apart')
  t.notOk(guesser.jar.has('service_session'), 'and signs nobody in')
  t.ok(Number(right.headers['retry-after']) > 0)
})

t.test('right passwords in flight at once past the budget are told to come back in a second, not locked out', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const verifier = slowVerifier(app, true)
  const burst = DEFAULT_LIMITS.perAccount + 3
  const answers = Array.from({ length: burst }, (_, i) => app.inject({ url: '/demo', headers: pat.headers, remoteAddress: `198.51.100.${i}` }))
  await allArrived(app, answers)
  verifier.open()
  const done = await Promise.all(answers)
  t.same(statuses(done), { 200: DEFAULT_LIMITS.perAccount, 429: 3 })
  t.ok(done.filter((r) => r.statusCode === 429).every((r) => r.headers['retry-after'] === '1'), 'Retry-After: 1, the budget is not spent')
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200, 'and the next one passes')
})
