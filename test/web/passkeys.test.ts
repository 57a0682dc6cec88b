import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { softAuthenticator } from '../fixtures/passkey.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Passkeys at the door (docs/decisions.md, "Passkeys"), without a browser: what the pages offer,
// and every answer that is not a browser's right one refused with a clear page. The ceremonies
// with a real authenticator are in test/web/passkeys-browser.test.ts; here, the store's rules on
// both engines: a credential once, a challenge answered once.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

const KEY = { id: 'Y3JlZGVudGlhbC0x', publicKey: new Uint8Array([1, 2, 3]), counter: 0, transports: ['internal', 'hybrid'] }

/** Ann, signed in, with a passkey in the store (not one a browser could use). */
async function withPasskey(app: App) {
  const ann = await personWithPassword(app)
  await app.secondFactors.addPasskey(ann.user.id, ' Laptop ', KEY)
  const web = webClient(app)
  return { ann, web }
}

t.test('the store: a credential is registered once, its key sealed; a challenge is answered once', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { ann } = await withPasskey(app)
  const bob = await personWithPassword(app)
  t.same([...(await app.secondFactors.kinds(ann.user.id))], ['passkey'])
  t.same(await app.secondFactors.passkeysOf(ann.user.id), [{ id: KEY.id, transports: ['internal', 'hybrid'] }])
  await t.rejects(app.secondFactors.addPasskey(bob.user.id, 'Stolen', KEY), { code: 'conflict', field: 'passkey' }, "Ann's credential is not Bob's to add")
  await t.rejects(app.secondFactors.addPasskey(bob.user.id, ' ', { ...KEY, id: 'b3RoZXI' }), { code: 'invalid', field: 'name' })
  await app.secondFactors.addPasskey(bob.user.id, 'Key', { id: 'Ym9iLWtleQ', publicKey: new Uint8Array([9]), counter: 3 })
  t.same(await app.secondFactors.passkeysOf(bob.user.id), [{ id: 'Ym9iLWtleQ' }], 'no transports known')

  const found = await app.secondFactors.passkey(KEY.id)
  t.equal(found?.factor.userId, ann.user.id)
  t.equal(found?.factor.name, 'Laptop')
  t.same([...found!.publicKey], [1, 2, 3], 'the public key, opened')
  t.notMatch(found!.factor.secret, 'AQID', 'kept sealed')
  t.equal(await app.secondFactors.passkey('bm9uZQ'), undefined, 'an unknown credential')

  await app.secondFactors.usedPasskey(found!.factor.id, 7)
  t.equal((await app.secondFactors.passkey(KEY.id))?.factor.signCount, 7)

  const until = new Date(clock() + 60_000)
  t.ok(await app.secondFactors.claimChallenge('c1', until), 'the first answer')
  t.notOk(await app.secondFactors.claimChallenge('c1', until), 'the second is refused')
  clock.advance(61_000)
  t.ok(await app.secondFactors.claimChallenge('c2', new Date(clock() + 60_000)), 'another')
  t.ok(await app.secondFactors.claimChallenge('c1', new Date(clock() + 60_000)), 'an expired one is forgotten (it cannot be answered anyway)')
})

t.test('the pages offer passkeys where the person has one, and refuse every answer that is not right', async (t) => {
  const { app } = await buildTestApp(t)
  const { ann, web } = await withPasskey(app)

  const login = await web.get('/demo/login')
  t.match(login.body, 'Sign in with a passkey')
  t.match(login.body, '/assets/passkeys.js', 'with its scripts')
  const options = JSON.parse(/data-options="([^"]+)"/.exec(login.body)![1].replaceAll('&quot;', '"'))
  t.match(options, { rpId: 'help.example.test', userVerification: 'required', allowCredentials: [] }, 'any passkey of the site, verified')
  for (const passkey of ['', 'not json', '[1]', 'null', '{"id":1}', '{"id":"a\\u0000b"}', JSON.stringify({ id: 'x'.repeat(2000) }), JSON.stringify({ id: KEY.id, rawId: KEY.id, type: 'public-key', response: {} }), JSON.stringify({ id: 'bm9uZQ' })]) {
    const res = await web.post('/demo/login/passkey', { passkey })
    t.equal(res.statusCode, 401, `refused: ${passkey || 'nothing'}`)
    t.match(res.body, 'That passkey does not sign in to an account of this site.')
  }

  // The password, then the second step offers her passkey and the recovery codes only.
  const step = await web.signIn(ann.email, ann.password)
  t.match(step.body, 'Use your passkey for Site demo.')
  t.notMatch(step.body, 'Code from the app')
  t.match(JSON.parse(/data-options="([^"]+)"/.exec(step.body)![1].replaceAll('&quot;', '"')), { allowCredentials: [{ id: KEY.id, transports: ['internal', 'hybrid'] }], userVerification: 'preferred' })
  const wrong = await web.post('/demo/login/second_step', { passkey: JSON.stringify({ id: KEY.id, rawId: KEY.id, type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: '', signature: '' } }) })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.body, 'That passkey did not work. Try again, or use another way.')
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['second_factor_failed'], offset: 0, limit: 5 })
  t.equal(events.length, 1, 'counted and logged')
})

t.test('adding a passkey: the page asks the browser, and an answer that is not a registration adds nothing', async (t) => {
  const { app } = await buildTestApp(t)
  const { ann, web } = await withPasskey(app)
  await app.secondFactors.remove(ann.user.id, (await app.secondFactors.passkey(KEY.id))!.factor.id)
  const bob = await personWithPassword(app)
  await web.signIn(bob.email, bob.password)
  await web.get('/demo/profile')
  const unnamed = await web.post('/demo/profile/two_factor/passkey', { name: ' ' })
  t.equal(unnamed.statusCode, 400, 'a name first, before the browser makes a passkey that could not be kept')
  t.match(unnamed.body, 'Give the passkey a name of 1 to 60 characters.')
  await web.get('/demo/profile')
  const page = await web.post('/demo/profile/two_factor/passkey', { name: ' Laptop ' })
  t.equal(page.statusCode, 200)
  t.match(page.body, 'The passkey is called "Laptop" here.')
  const options = JSON.parse(/data-options="([^"]+)"/.exec(page.body)![1].replaceAll('&quot;', '"'))
  t.match(options, { rp: { id: 'help.example.test', name: 'Site demo Service Desk' }, user: { name: bob.email }, attestation: 'none', excludeCredentials: [] })
  t.equal(Buffer.from(options.user.id, 'base64url').length, 32, 'an opaque handle for the person, not the account id')

  for (const passkey of ['', '{}', JSON.stringify({ id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'e30', attestationObject: '' } })]) {
    const res = await web.post('/demo/profile/two_factor/passkey/register', { name: 'Laptop', passkey })
    t.equal(res.statusCode, 400)
    t.match(res.body, 'The passkey could not be added')
  }
  t.same(await app.secondFactors.passkeysOf(bob.user.id), [], 'nothing added')

  // With a passkey only, confirming asks for it; a wrong answer is counted.
  await app.secondFactors.addPasskey(bob.user.id, 'Laptop', { ...KEY, id: 'Ym9i' })
  const confirm = await web.get('/demo/confirm?for=factor')
  t.match(confirm.body, 'To add or remove a second factor, or make new recovery codes, use your passkey.')
  t.notMatch(confirm.body, 'name="password"')
  const refused = await web.post('/demo/confirm', { passkey: '{"id":"Ym9i"}', for: 'factor' })
  t.equal(refused.statusCode, 401)
  t.match(refused.body, 'That passkey did not work. Try again.')
})

/** The options a page offers, as its script reads them. */
const optionsIn = (body: string) => JSON.parse(/data-options="([^"]+)"/.exec(body)![1].replaceAll('&quot;', '"')) as { challenge: string; excludeCredentials?: Array<{ id: string }> }

t.test('without a browser, an independent authenticator: registered once, and each challenge answered once', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const bob = await personWithPassword(app)
  const key = softAuthenticator('https://help.example.test', 'help.example.test')
  const web = webClient(app)
  await web.signIn(bob.email, bob.password)
  await web.get('/demo/profile')
  const registered = await web.post('/demo/profile/two_factor/passkey/register', { name: 'Soft key', passkey: key.register(optionsIn((await web.post('/demo/profile/two_factor/passkey', { name: 'Soft key' })).body)) })
  t.equal(registered.statusCode, 200, 'added, with the recovery codes')
  t.match(registered.body, 'The passkey is added.')
  const again = optionsIn((await web.post('/demo/profile/two_factor/passkey', { name: 'Again' })).body)
  t.same(again.excludeCredentials?.map((c) => c.id), [key.id], 'the next registration leaves it out')
  const twice = await web.post('/demo/profile/two_factor/passkey/register', { name: 'Again', passkey: key.register(again) })
  t.equal(twice.statusCode, 409, 'the same credential twice is refused')
  t.match(twice.body, 'This passkey is registered already.')

  // Signed out: a forged signature uses the challenge up, so its right answer is refused after it.
  const visitor = webClient(app)
  const login = optionsIn((await visitor.get('/demo/login')).body)
  const forged = await visitor.post('/demo/login/passkey', { passkey: key.answer(login, { forged: true }) })
  t.equal(forged.statusCode, 401, 'a signature of other data')
  await visitor.get('/demo/login')
  t.equal((await visitor.post('/demo/login/passkey', { passkey: key.answer(login) })).statusCode, 401, 'that challenge was answered already')
  const unverified = optionsIn((await visitor.get('/demo/login')).body)
  t.equal((await visitor.post('/demo/login/passkey', { passkey: key.answer(unverified, { verified: false }) })).statusCode, 401, 'alone, the passkey must verify the person')
  const fresh = optionsIn((await visitor.get('/demo/login')).body)
  const signedIn = await visitor.post('/demo/login/passkey', { passkey: key.answer(fresh) })
  t.equal(signedIn.statusCode, 303, 'a fresh challenge, answered right, signs in')
  t.equal((await visitor.get('/demo/profile/api_tokens')).statusCode, 200)

  // On a site whose staff sign in with the company's account only, a passkey signs no member of the staff in.
  await app.signInProviders.add(bob.site.id, { name: 'Acme', kind: 'google', clientId: 'c', clientSecret: 's' })
  await app.sites.setPolicy(bob.site.id, { companySignInOnly: true })
  const company = webClient(app)
  const offered = optionsIn((await company.get('/demo/login')).body)
  const refused = await company.post('/demo/login/passkey', { passkey: key.answer(offered) })
  t.equal(refused.statusCode, 403)
  t.match(refused.body, /sign in with the company.{1,5}s account/)
  t.equal((await company.get('/demo/profile/api_tokens')).statusCode, 303, 'not signed in')
  await app.sites.setPolicy(bob.site.id, { companySignInOnly: false })

  // A disabled account's passkey opens nothing.
  await app.users.setDisabled(bob.email, true)
  const late = webClient(app)
  const options = optionsIn((await late.get('/demo/login')).body)
  const disabled = await late.post('/demo/login/passkey', { passkey: key.answer(options) })
  t.equal(disabled.statusCode, 401)
  t.match(disabled.body, 'That passkey does not sign in to an account of this site.')

  // Wrong answers spend the address's budget; then even a right one waits.
  await app.users.setDisabled(bob.email, false)
  clock.advance(10 * 60_000)
  const guesser = webClient(app)
  let last = 0
  for (let i = 0; i < 25 && last !== 429; i++) {
    await guesser.get('/demo/login')
    last = (await guesser.post('/demo/login/passkey', { passkey: '{"id":"bm9uZQ"}' })).statusCode
  }
  t.equal(last, 429, 'the address is slowed down')
  const right = optionsIn((await guesser.get('/demo/login')).body)
  const waits = await guesser.post('/demo/login/passkey', { passkey: key.answer(right) })
  t.equal(waits.statusCode, 429)
  t.ok(Number(waits.headers['retry-after']) > 0, 'with Retry-After')
})
