import t from 'tap'
import { DEFAULT_SUDO_MINUTES } from '../../config.ts'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass } from '../fixtures/credentials.ts'
import { addCategory } from '../fixtures/discussions.ts'
import { enrollAuthenticator, personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// Issue 45, findings 1, 2, 5, 6 and 7, each from the attacker's side and the person's or the
// operator's: every door that takes a password or an account-wide secret asks the site's second
// factor rule; the legacy token is shown only after a recent confirmation and never while a site
// holds its owner; one site's multipass key reaches only that site's customers; the write-token
// rule covers every write credential; and unguessable credentials are served from a spent address.

const MINUTE = 60_000
const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })

t.test('a site that requires a second factor: the password and the legacy token of a held person open nothing on the API', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const dave = await personWithPassword(app)
  const site = dave.site
  await app.users.setAdministrator(site.id, dave.user.id, true)
  const legacy = (await legacyTokenOf(app, dave.user.id)).value
  // Before the requirement, the password and the legacy token work (the person's side).
  t.equal((await app.inject({ url: '/demo/discussions', headers: basic(dave.email, dave.password) })).statusCode, 200)
  t.equal((await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': legacy, accept: V1 } })).statusCode, 200)
  await app.sites.setPolicy(site.id, { staffSecondFactor: true })

  const basicRead = await app.inject({ url: '/demo/discussions', headers: basic(dave.email, dave.password) })
  t.equal(basicRead.statusCode, 403, 'Basic: held')
  t.match(basicRead.body, 'requires a second factor of its support staff')
  const switchOff = await app.inject({ method: 'PATCH', url: '/demo/policy', headers: json(basic(dave.email, dave.password)), payload: { staff_second_factor: false } })
  t.equal(switchOff.statusCode, 403, 'an administrator without a factor cannot switch the requirement off with the password')
  t.equal((await app.sites.find('demo'))!.staffSecondFactor, true)
  t.equal((await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': legacy, accept: V1 } })).statusCode, 403, 'the legacy token: held')

  // On another site where dave is staff, which asks nothing, the legacy token is not shown either.
  const other = await app.sites.add('other', 'Other')
  await app.users.addStaff(other.id, dave.user.id)
  const elsewhere = webClient(app, 'other')
  await elsewhere.signIn(dave.email, dave.password)
  const profile = await elsewhere.get('/other/profile')
  t.notMatch(profile.body, legacy, 'not shown on the other site')
  t.match(profile.body, 'data-legacy-held')
  await elsewhere.get('/other/profile/reset_api_token')
  t.equal((await elsewhere.post('/other/profile/reset_api_token')).statusCode, 303)
  t.equal((await legacyTokenOf(app, dave.user.id)).value, legacy, 'nor reset there')
  t.equal((await app.inject({ url: '/other/discussions', headers: { 'x-service-auth': legacy, accept: V1 } })).statusCode, 200, 'it still opens the site that asks nothing')

  // With a factor, dave is no longer held: the legacy token works again, and Basic is refused as for anyone with one.
  const web = webClient(app)
  await web.signIn(dave.email, dave.password)
  await enrollAuthenticator(web, clock())
  t.equal((await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': legacy, accept: V1 } })).statusCode, 200)
  const withFactor = await app.inject({ url: '/demo/discussions', headers: basic(dave.email, dave.password) })
  t.equal(withFactor.statusCode, 401)
  t.match(withFactor.body, 'signs in with a second factor')
  // A personal token, made on the pages behind the factor, is the API's door.
  const token = await supporterWithToken(app, { email: dave.email })
  t.equal((await app.inject({ url: '/demo/discussions', headers: token.bearer })).statusCode, 200)
  clock.advance(MINUTE)
})

t.test('the legacy token is shown and reset only after a recent sign-in or confirmation', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const legacy = (await legacyTokenOf(app, ann.user.id)).value
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  t.match((await web.get('/demo/profile')).body, legacy, 'just signed in: shown')

  // The attacker's side: a session left open for longer than the confirmation lasts.
  clock.advance((DEFAULT_SUDO_MINUTES + 1) * MINUTE)
  const later = await web.get('/demo/profile')
  t.notMatch(later.body, legacy, 'no longer shown')
  t.match(later.body, '/demo/confirm?for=legacy')
  const page = await web.get('/demo/profile/reset_api_token')
  t.equal(page.statusCode, 303)
  t.match(page.headers.location, '/demo/confirm?for=legacy&next=%2Fdemo%2Fprofile%2Freset_api_token')
  await web.get('/demo/profile')
  const reset = await web.post('/demo/profile/reset_api_token')
  t.equal(reset.statusCode, 303)
  t.match(reset.headers.location, '/demo/confirm?for=legacy')
  t.equal((await legacyTokenOf(app, ann.user.id)).value, legacy, 'nothing reset')

  // The person's side: confirming with the password shows it and lets the reset through.
  const confirm = await web.get('/demo/confirm?for=legacy&next=/demo/profile')
  t.match(confirm.body, 'see or reset your legacy API token')
  t.equal((await web.post('/demo/confirm', { password: ann.password, for: 'legacy', next: '/demo/profile' })).statusCode, 303)
  t.match((await web.get('/demo/profile')).body, legacy, 'shown again')
  await web.get('/demo/profile/reset_api_token')
  t.equal((await web.post('/demo/profile/reset_api_token')).headers.location, 'https://help.example.test/demo/profile?reset=1')
  t.not((await legacyTokenOf(app, ann.user.id)).value, legacy, 'reset')
})

t.test("one site's multipass key signs in only its customers, renames nobody others know, and follows the switch", async (t) => {
  const { app } = await buildTestApp(t)
  const demo = await app.sites.add('demo', 'Demo')
  const other = await app.sites.add('other', 'Other')
  const sso = (claims: object) => `/demo/?sso=${encodeURIComponent(makeMultipass({ expires: inDays(app, 1), ...claims }, demo.multipassKey, 'demo'))}`

  // Bob administers `other` and is nothing on demo: demo's key does not sign him in there.
  const bob = await personWithPassword(app, { site: 'other' })
  await app.users.setAdministrator(other.id, bob.user.id, true)
  await app.securityLog.append({ userId: bob.user.id, siteId: other.id, kind: 'token_created', address: '203.0.113.77', actor: 'page', detail: { name: 'bob on other' } })
  const attacker = webClient(app)
  const refused = await attacker.get(sso({ email: bob.email, name: 'Renamed Bob' }))
  t.equal(refused.statusCode, 401)
  t.notOk(attacker.jar.get('service_session'), 'no session')
  t.equal((await app.users.byId(bob.user.id))!.name, bob.user.name, 'not renamed')
  t.equal(await app.users.role(demo.id, bob.user.id), undefined, 'not made a customer of demo')

  // A customer of both sites is signed in by either, but only the first site it joined... renames it: demo does not.
  const carol = await personWithPassword(app, { site: 'other', role: 'customer' })
  await attacker.get(sso({ email: carol.email, name: 'Carol From Demo' }))
  t.ok(attacker.jar.get('service_session'), 'a customer is signed in')
  t.equal((await app.users.byId(carol.user.id))!.name, carol.user.name, 'a name other sites show is kept')
  // Her security log on demo shows nothing of `other`.
  await app.securityLog.append({ userId: carol.user.id, siteId: other.id, kind: 'sign_in_succeeded', address: '203.0.113.78', actor: 'page' })
  const log = await attacker.get('/demo/profile/security_log')
  t.equal(log.statusCode, 200)
  t.notMatch(log.body, '203.0.113.78', "another site's events are not on demo's pages")
  const own = webClient(app, 'other')
  await own.signIn(carol.email, carol.password)
  t.match((await own.get('/other/profile/security_log')).body, '203.0.113.78', 'they are on her page of the site they happened on')

  // A new customer of demo alone takes the token's name.
  const fresh = webClient(app)
  await fresh.get(sso({ email: 'newhire@example.test', name: 'New Hire' }))
  const newhire = (await app.users.find('newhire@example.test'))!
  t.equal(newhire.name, 'New Hire')
  t.equal((await fresh.get('/demo/discussions')).statusCode, 403, 'a customer session: no queue')

  // Made staff later: the customer session ends, so it never becomes a supporter's.
  await app.users.addStaff(demo.id, newhire.id)
  const after = await fresh.get('/demo/profile')
  t.equal(after.statusCode, 303, 'signed out')
  t.match(after.headers.location, '/demo/login')
  t.equal((await fresh.get('/demo/profile/api_tokens')).statusCode, 303)
  // Nor can the same multipass sign the supporter in again.
  t.equal((await fresh.get(sso({ email: 'newhire@example.test' }))).statusCode, 401)

  // An administrator made of a supporter signs in again too.
  const sam = await personWithPassword(app)
  const samWeb = webClient(app)
  await samWeb.signIn(sam.email, sam.password)
  t.equal((await samWeb.get('/demo/discussions')).statusCode, 200)
  await app.users.addStaff(demo.id, sam.user.id)
  t.equal((await samWeb.get('/demo/discussions')).statusCode, 200, 'added again as what they are: the session goes on')
  await app.users.setAdministrator(demo.id, sam.user.id, true)
  t.equal((await samWeb.get('/demo/discussions')).statusCode, 303, 'a session of lesser rights ended')
  await samWeb.signIn(sam.email, sam.password)
  await app.users.addStaff(demo.id, sam.user.id, { administrator: true })
  t.equal((await samWeb.get('/demo/admin/credentials')).statusCode, 200, 'an administrator added again as one: no rise, the session goes on')

  // Switched off, ?sso= on the pages signs nobody in, as on the API.
  await app.sites.setPolicy(demo.id, { multipassOn: false })
  const off = webClient(app)
  const res = await off.get(sso({ email: 'another@example.test' }))
  t.equal(res.statusCode, 403)
  t.match(res.body, 'switched off')
  t.notOk(off.jar.get('service_session'))
  t.equal(await app.users.find('another@example.test'), undefined, 'no account made')
})

t.test('"Read and write tokens: administrators only" covers Basic, the legacy token and multipass on the API', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const boss = await personWithPassword(app)
  const site = ann.site
  await app.users.setAdministrator(site.id, boss.user.id, true)
  await app.sites.setPolicy(site.id, { writeTokens: 'administrators' })
  const general = await addCategory(app, site.id, 'General')
  const discussion = { title: 'Printer', body: 'It is on fire.' }
  const mp = (email: string) => makeMultipass({ email, expires: inDays(app, 1) }, site.multipassKey, 'demo')
  const doors = (person: { email: string; password: string; user: { id: number } }, legacy: string) => [
    ['Basic', basic(person.email, person.password)],
    ['legacy token', { 'x-service-auth': legacy, accept: V1 }],
    ['multipass', { 'x-multipass': mp(person.email), accept: V1 }],
  ] as const
  for (const [door, headers] of doors(ann, (await legacyTokenOf(app, ann.user.id)).value)) {
    const write = await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: json(headers), payload: discussion })
    t.equal(write.statusCode, 403, `${door}: ann may not write`)
    t.match(write.headers['www-authenticate'], 'error="insufficient_scope"')
    t.match(write.body, 'leaves writes through the API with this credential to its administrators')
    t.equal((await app.inject({ url: '/demo/discussions', headers })).statusCode, 200, `${door}: ann still reads`)
  }
  for (const [door, headers] of doors(boss, (await legacyTokenOf(app, boss.user.id)).value)) {
    t.equal((await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: json(headers), payload: discussion })).statusCode, 201, `${door}: an administrator writes`)
  }
})

t.test('valid legacy tokens and multipass are served from an address that spent its failure budget', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const legacy = (await legacyTokenOf(app, ann.user.id)).value
  const from = { remoteAddress: '198.51.100.20' }
  for (let i = 0; i < 21; i++) await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': `wrong${i}`, accept: V1 }, ...from })
  const spent = await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': 'wrong again', accept: V1 }, ...from })
  t.equal(spent.statusCode, 429, "the guesser's next wrong value is refused")
  t.equal((await app.inject({ url: '/demo/discussions', headers: { 'x-service-auth': legacy, accept: V1 }, ...from })).statusCode, 200, 'the right legacy token is served')
  const mp = makeMultipass({ email: ann.email, expires: inDays(app, 1) }, ann.site.multipassKey, 'demo')
  t.equal((await app.inject({ url: '/demo/discussions', headers: { 'x-multipass': mp, accept: V1 }, ...from })).statusCode, 200, 'a valid multipass is served')
  // On the pages too: a customer's valid single sign-on link from that address signs in.
  const link = makeMultipass({ email: 'shopper@example.test', expires: inDays(app, 1) }, ann.site.multipassKey, 'demo')
  const signedIn = await app.inject({ url: `/demo/?sso=${encodeURIComponent(link)}`, ...from })
  t.equal(signedIn.statusCode, 303)
  const bad = await app.inject({ url: '/demo/?sso=bogus', ...from })
  t.equal(bad.statusCode, 429, 'a bad link from there is not')
})
