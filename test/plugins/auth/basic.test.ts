import t from 'tap'
import { hashPassword, verifyPassword } from '../../../lib/password.ts'
import { PASSWORD_CHECK_CONCURRENCY, PASSWORD_CHECK_QUEUE, REMEMBER_MS } from '../../../plugins/auth/password-verifier.ts'
import { DEFAULT_LIMITS } from '../../../plugins/auth/limits.ts'
import { BASE_URL, buildTestApp, rawStatement, supporterWithToken } from '../../fixtures/app.ts'
import { basic, supporterWithPassword } from '../../fixtures/credentials.ts'

// Engines: one: Basic authentication's rules (the challenge, the remembered passwords, the second factor), above the stores. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const INVALID = `Bearer realm="Service", resource_metadata="${BASE_URL}/.well-known/oauth-protected-resource/demo", scope="read write", error="invalid_token"`

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

/** Counts the argon2 verifications that really run. */
function countVerifications(app: App) {
  const counter = { calls: 0 }
  app.passwordChecks.verify = async (hash, password) => {
    counter.calls++
    return verifyPassword(hash, password)
  }
  return counter
}

t.test('email and password in Authorization: Basic, read and write', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const res = await app.inject({ url: '/demo', headers: pat.headers })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { permalink: 'demo' })
  const write = await app.inject({ method: 'POST', url: '/demo/categories/999/discussions', headers: pat.headers, payload: { title: 'x', body: 'y' } })
  t.equal(write.statusCode, 404, 'a write reaches the route')
  t.equal((await app.inject({ url: '/demo', headers: basic('PAT@Example.test', pat.password) })).statusCode, 200, 'the email in any case')
})

t.test('failure: 401 with the challenge and "Invalid email/password", whatever was wrong', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  await app.users.insert({ email: 'nopassword@example.test' }, null)
  const cases = {
    'a wrong password': basic(pat.user.email, 'wrong horse battery'),
    'an unknown email': basic('nobody@example.test', pat.password),
    'an account without a password': basic('nopassword@example.test', ''),
  }
  for (const [name, headers] of Object.entries(cases)) {
    const res = await app.inject({ url: '/demo', headers })
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], INVALID, name)
    t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
    t.equal(res.body, 'Invalid email/password\n', name)
  }
  const unknownSite = await app.inject({ url: '/nosuchsite', headers: pat.headers })
  t.equal(unknownSite.statusCode, 401, 'right password, unknown site: the same answer, so no site is revealed')
  t.equal(unknownSite.body, 'Invalid email/password\n')
})

t.test('a disabled account, and one off the staff', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  await app.users.setDisabled(pat.user.email, true)
  const disabled = await app.inject({ url: '/demo', headers: pat.headers })
  t.equal(disabled.statusCode, 401)
  t.equal(disabled.body, 'Invalid email/password\n')
  await app.users.setDisabled(pat.user.email, false)
  await app.users.removeStaff(pat.site.id, pat.user.id)
  const customer = await app.inject({ url: '/demo', headers: pat.headers })
  t.equal(customer.statusCode, 403)
  t.equal(customer.body, "API access is limited to the site's support staff.\n")
})

t.test('a success is remembered for a few minutes; a password change or disabling forgets it at once', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const counter = countVerifications(app)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200)
  t.equal(counter.calls, 1, 'argon2 ran once for two requests')
  t.equal((await app.inject({ url: '/demo', headers: basic(pat.user.email, 'wrong horse battery') })).statusCode, 401, 'another password is checked')
  t.equal(counter.calls, 2)

  clock.advance(REMEMBER_MS)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200)
  t.equal(counter.calls, 3, 'after a few minutes it is checked again')

  await app.users.setDisabled(pat.user.email, true)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 401, 'disabled: refused at once')
  await app.users.setDisabled(pat.user.email, false)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200)

  const changed = counter.calls
  await rawStatement(app, 'UPDATE users SET password_hash = ?, password_changed_at = ? WHERE id = ?', [
    await hashPassword('a brand new password'),
    new Date(clock()),
    pat.user.id,
  ])
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 401, 'the old password stops at once')
  t.equal(counter.calls, changed + 1, 'it was checked against the new hash, not taken from memory')
  t.equal((await app.inject({ url: '/demo', headers: basic(pat.user.email, 'a brand new password') })).statusCode, 200)
})

t.test('failures slow an account down: 429 with Retry-After, then free again', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const wrong = basic(pat.user.email, 'wrong horse battery')
  for (let i = 0; i < DEFAULT_LIMITS.perAccount; i++) {
    // Each from its own address, so only the account's count grows.
    const res = await app.inject({ url: '/demo', headers: wrong, remoteAddress: `198.51.100.${i}` })
    t.equal(res.statusCode, 401)
  }
  const counter = countVerifications(app)
  const limited = await app.inject({ url: '/demo', headers: pat.headers, remoteAddress: '198.51.100.99' })
  t.equal(limited.statusCode, 429, 'even the right password waits')
  t.equal(limited.headers['retry-after'], String(DEFAULT_LIMITS.windowSeconds))
  t.match(limited.body, /Too many failed authentication attempts/)
  t.equal(counter.calls, 0, 'and costs no argon2')
  t.equal((await app.inject({ url: '/demo', headers: basic('other@example.test', 'x') })).statusCode, 401, 'other accounts are not slowed')
  clock.advance(DEFAULT_LIMITS.windowSeconds * 1000)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200, 'the window has passed')
})

t.test('failures slow a client address down, across accounts', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  app.passwordChecks.verify = async () => false
  for (let i = 0; i < DEFAULT_LIMITS.perAddress; i++) {
    const res = await app.inject({ url: '/demo', headers: basic(`guess${i}@example.test`, 'x'), remoteAddress: '203.0.113.7' })
    t.equal(res.statusCode, 401)
  }
  const limited = await app.inject({ url: '/demo', headers: basic('guess-more@example.test', 'x'), remoteAddress: '203.0.113.7' })
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], String(DEFAULT_LIMITS.windowSeconds))
  const elsewhere = await app.inject({ url: '/demo', headers: basic(pat.user.email, pat.password), remoteAddress: '203.0.113.8' })
  t.equal(elsewhere.statusCode, 401, 'another address is still checked (here by a verifier that says no)')
})

t.test('a locked account answers 429 to the right password too, even one remembered a moment ago', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  t.equal((await app.inject({ url: '/demo', headers: pat.headers })).statusCode, 200, 'the password is remembered')
  for (let i = 0; i < DEFAULT_LIMITS.perAccount; i++) await app.inject({ url: '/demo', headers: basic(pat.user.email, 'guess'), remoteAddress: `198.51.100.${i}` })
  t.equal((await app.inject({ url: '/demo', headers: basic(pat.user.email, 'guess') })).statusCode, 429, 'guessing is slowed')
  const right = await app.inject({ url: '/demo', headers: pat.headers, remoteAddress: '203.0.113.9' })
  t.equal(right.statusCode, 429, 'a guesser is not told that a guess is right')
  t.ok(Number(right.headers['retry-after']) > 0, 'with Retry-After')
})

t.test('the concurrency bound: a flood of wrong passwords runs at most the bound at once and starves nothing', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  let running = 0
  let most = 0
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  app.passwordChecks.verify = async () => {
    most = Math.max(most, ++running)
    await gate
    await new Promise((resolve) => setTimeout(resolve, 2))
    running--
    return false
  }
  const flood = 60
  const beyond = flood - PASSWORD_CHECK_CONCURRENCY - PASSWORD_CHECK_QUEUE
  let answered = 0
  const answers = Array.from({ length: flood }, (_, i) =>
    app
      .inject({ url: '/demo', headers: basic(`flood${i}@example.test`, 'wrong'), remoteAddress: `10.0.${Math.floor(i / 200)}.${i % 200}` })
      .finally(() => answered++),
  )
  // Let every request reach the queue or its answer (the first unknown email also hashes the decoy
  // once; on PostgreSQL the account look-ups wait for the pool, so the queue fills before the last
  // request arrives, and the gate opened then would let the late ones in).
  for (let waited = 0; (app.passwordChecks.waiting < PASSWORD_CHECK_QUEUE || answered < beyond) && waited < 10_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(app.passwordChecks.running, PASSWORD_CHECK_CONCURRENCY, 'the bound is reached')
  t.equal(app.passwordChecks.waiting, PASSWORD_CHECK_QUEUE, 'the queue is full')

  // Answered while every verification is still held (the gate opens only at release() below): a
  // token request does not queue behind the flood, however slow the machine.
  const other = await app.inject({ url: '/demo/discussions', headers: ann.bearer })
  t.equal(other.statusCode, 200, 'a token request is answered while the flood waits')
  t.equal(app.passwordChecks.running, PASSWORD_CHECK_CONCURRENCY, 'the flood was still under way')

  release()
  const results = await Promise.all(answers)
  const busy = results.filter((r) => r.statusCode === 503)
  t.equal(most, PASSWORD_CHECK_CONCURRENCY, `never more than ${PASSWORD_CHECK_CONCURRENCY} verifications at once`)
  t.equal(busy.length, beyond, 'beyond the queue: 503 at once')
  t.equal(busy[0].headers['retry-after'], '1')
  t.match(busy[0].body, /Too many password checks are under way/)
  t.equal(results.filter((r) => r.statusCode === 401).length, PASSWORD_CHECK_CONCURRENCY + PASSWORD_CHECK_QUEUE, 'the rest were checked')
  t.equal(app.passwordChecks.running, 0)
})

t.test("a script's parallel calls with one right password are checked once, not refused by the account's budget", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  let compared = 0
  let release!: () => void
  let gate = new Promise<void>((resolve) => (release = resolve))
  app.passwordChecks.verify = async (hash, password) => {
    compared++
    await gate
    return verifyPassword(hash, password)
  }
  const send = (headers = pat.headers, remoteAddress = '192.0.2.10') => app.inject({ url: '/demo', headers, remoteAddress })
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setImmediate(resolve))
  }
  const parallel = 3 * DEFAULT_LIMITS.perAccount
  clock.advance(REMEMBER_MS)
  const calls = Array.from({ length: parallel }, () => send())
  // From another address the same pair is its own guess, checked on its own.
  const elsewhere = send(pat.headers, '192.0.2.11')
  await until(() => compared === 2)
  // The rest of the calls reach the check under way meanwhile (on PostgreSQL after their look-up).
  await new Promise((resolve) => setTimeout(resolve, 50))
  release()
  t.same(
    (await Promise.all(calls)).map((res) => res.statusCode),
    Array(parallel).fill(200),
    `${parallel} calls at once, more than the account's budget of ${DEFAULT_LIMITS.perAccount}: all answered`,
  )
  t.equal((await elsewhere).statusCode, 200)
  t.equal(compared, 2, 'one comparison for the parallel calls, one for the other address')

  // Disabled while a check is under way: a call that starts then reads the disabled account and is
  // refused; it does not wait for the check it would otherwise have shared.
  clock.advance(REMEMBER_MS)
  gate = new Promise<void>((resolve) => (release = resolve))
  const before = send()
  await until(() => compared === 3)
  await app.users.setDisabled(pat.user.email, true)
  const after = send()
  await until(() => compared === 4)
  release()
  t.equal((await after).statusCode, 401, 'the call after the disabling is refused')
  t.equal((await before).statusCode, 200, 'the one that read the account before, as it was')

  // Wrong guesses sent together are one guess: one failure counted, so the right password still passes after them.
  // The comparison is held until every call has reached the verifier (and, 50 ms later, had its
  // look-up), so the calls overlap on a loaded machine too, as they do in a script.
  await app.users.setDisabled(pat.user.email, false)
  const verifier = app.passwords.verify
  let arrived = 0
  app.passwords.verify = (...args) => {
    arrived++
    return verifier(...args)
  }
  gate = new Promise<void>((resolve) => (release = resolve))
  const comparedBefore = compared
  const guesses = Array.from({ length: parallel }, () => send(basic(pat.user.email, 'one wrong guess'), '192.0.2.12'))
  await until(() => arrived === parallel && compared === comparedBefore + 1)
  await new Promise((resolve) => setTimeout(resolve, 50))
  release()
  const wrong = await Promise.all(guesses)
  t.same(new Set(wrong.map((res) => res.statusCode)), new Set([401]))
  t.equal(compared, comparedBefore + 1, 'one comparison for the guesses sent together')
  t.equal((await send(pat.headers, '192.0.2.12')).statusCode, 200, 'one failure counted, not fifteen')
})
