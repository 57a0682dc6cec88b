import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { logCapture } from '../fixtures/log.ts'
import { mailServer } from '../fixtures/mail.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 34: the administrators' resources of the v1 API (docs/decisions.md, "Site
// administrators"): only an administrator of the site reads or changes them, with any credential;
// changes need write access; a revocation is all or nothing; a tightening needs a choice.

const json = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'application/json' })

t.test('only an administrator of the site reaches its credentials and policy', onSqlite("which people reach the administrators' credentials and policy"), async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const supporter = await supporterWithToken(app, { email: 'sam@example.test' })
  // An administrator of another site, on the staff here too, is a plain supporter here.
  const elsewhere = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  await app.users.setAdministrator(elsewhere.site.id, elsewhere.user.id, true)
  const hereToo = await supporterWithToken(app, { email: 'olga@example.test' })

  const calls = [
    { method: 'GET', url: '/demo/credentials' },
    { method: 'POST', url: '/demo/credentials/revoke', payload: { ids: [`pat-${admin.token.id}`], reason: 'x' } },
    { method: 'GET', url: '/demo/policy' },
    { method: 'PATCH', url: '/demo/policy', payload: { password: false } },
  ] as const
  for (const call of calls) {
    for (const who of [supporter, hereToo]) {
      const res = await app.inject({ ...call, headers: json(who.bearer) })
      t.equal(res.statusCode, 403, `${who.user.email}: ${call.method} ${call.url}`)
      t.equal(res.json().error, 'forbidden')
    }
    // Olga's own site's token is no credential here at all.
    t.equal((await app.inject({ ...call, headers: json(elsewhere.bearer) })).statusCode, 401)
  }
  t.equal((await app.tokens.find(admin.site.id, admin.token.id))?.revokedAt, null, 'nothing revoked')
  t.equal((await app.sites.get('demo')).passwordOn, true, 'nothing changed')
  t.equal((await app.inject({ url: '/demo/policy', headers: admin.bearer })).statusCode, 200, 'the administrator reads it')
  t.equal((await app.inject({ url: '/other/policy', headers: elsewhere.bearer })).statusCode, 200, 'and Olga hers')

  // A read-only token of an administrator reads, and may not change.
  const readOnly = await supporterWithToken(app, { email: 'admin@example.test', access: 'read' })
  t.equal((await app.inject({ url: '/demo/credentials', headers: readOnly.bearer })).statusCode, 200)
  const write = await app.inject({ method: 'PATCH', url: '/demo/policy', headers: json(readOnly.bearer), payload: { password: false } })
  t.equal(write.statusCode, 403)
  t.match(String(write.headers['www-authenticate']), 'insufficient_scope')
})

t.test('the inventory, a revocation all or nothing, and a policy change with its dry run', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const ann = await supporterWithToken(app, { email: 'ann@example.test', access: 'read', expiresInDays: 365 })
  const bob = await supporterWithToken(app, { email: 'bob@example.test', expiresInDays: 30 })
  const other = await supporterWithToken(app, { site: 'other', email: 'carl@example.test' })

  const list = await app.inject({ url: '/demo/credentials?kind=personal_token&sort=owner&direction=asc', headers: admin.bearer })
  t.equal(list.statusCode, 200)
  t.same(
    list.json().credentials.map((c: { id: string }) => c.id),
    [`pat-${admin.token.id}`, `pat-${ann.token.id}`, `pat-${bob.token.id}`],
  )
  t.match(list.json().credentials[1], { owner: 'ann@example.test', access: 'read', state: 'active', revocable: true, expires_at: /Z$/ })
  t.same((await app.inject({ url: '/demo/credentials?kind=legacy_token', headers: admin.bearer })).json().total, 3, "each supporter's legacy token")
  t.equal((await app.inject({ url: '/demo/credentials?kind=nothing', headers: admin.bearer })).statusCode, 400, 'a kind that is none')

  const revoke = (ids: string[], reason = 'rotation') =>
    app.inject({ method: 'POST', url: '/demo/credentials/revoke', headers: json(admin.bearer), payload: { ids, reason } })
  t.equal((await revoke([`pat-${ann.token.id}`, `pat-${other.token.id}`])).statusCode, 404, "another site's token: nothing revoked")
  t.equal((await revoke([`pat-${ann.token.id}`, `legacy-${bob.user.id}`])).statusCode, 400, 'a legacy token: nothing revoked')
  t.equal((await revoke([`pat-${ann.token.id}`], '')).statusCode, 400, 'no reason')
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200, 'ann still works')
  const done = await revoke([`pat-${ann.token.id}`, `pat-${bob.token.id}`])
  t.equal(done.statusCode, 200)
  t.same(done.json().revoked.map((c: { state: string }) => c.state), ['revoked', 'revoked'])
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 401)
  t.equal((await app.inject({ url: '/demo', headers: bob.bearer })).statusCode, 401)
  t.equal((await app.inject({ url: '/other', headers: other.bearer })).statusCode, 200, "the other site's token untouched")
  t.equal((await revoke([`pat-${ann.token.id}`])).statusCode, 409, 'already revoked')

  const kept = await supporterWithToken(app, { email: 'dan@example.test', expiresInDays: 365 })
  const tighten = (payload: object) => app.inject({ method: 'PATCH', url: '/demo/policy', headers: json(admin.bearer), payload })
  const dry = await tighten({ max_token_days: 30 })
  t.equal(dry.statusCode, 409)
  t.same(dry.json().dry_run, { max_token_days: 30, tokens: 2, people: 2 }, "dan's and the administrator's own")
  t.equal((await app.sites.get('demo')).tokenMaxDays, 365, 'nothing saved')
  t.equal((await tighten({ max_token_days: 400, existing_tokens: 'leave' })).statusCode, 400)
  const left = await tighten({ max_token_days: 30, existing_tokens: 'leave', multipass: false })
  t.equal(left.statusCode, 200)
  t.same(left.json(), { policy: { max_token_days: 30, write_tokens: 'everyone', legacy_token: true, multipass: false, password: true, staff_second_factor: false, visitor_discussions: true, public_discussions: true, new_discussions_to_team: false, satisfaction: true, company_sign_in_only: false }, shortened: 0, left_over: 2 })
  t.equal((await app.tokens.find(kept.site.id, kept.token.id))!.expiresAt.getTime(), kept.token.expiresAt.getTime(), 'left as it was')
  const shortened = await tighten({ max_token_days: 7, existing_tokens: 'shorten' })
  t.equal(shortened.json().shortened, 2)
  t.equal((await app.tokens.find(kept.site.id, kept.token.id))!.expiresAt.getTime(), clock() + 7 * 86_400_000)
  const { events } = await app.securityLog.list({ siteId: admin.site.id, kinds: ['policy_changed', 'token_shortened'], offset: 0, limit: 10 })
  t.same(events.map((e) => e.kind).sort(), ['policy_changed', 'policy_changed', 'token_shortened', 'token_shortened'])
  t.match(events.find((e) => e.kind === 'policy_changed' && e.detail.multipass), { userId: admin.user.id, actor: 'api', detail: { max_token_days: '365 -> 30', multipass: 'true -> false', by: 'admin@example.test' } })
  const created = await app.inject({ method: 'GET', url: '/demo/policy', headers: { ...admin.bearer, accept: V1 } })
  t.equal(created.json().max_token_days, 7)
})

t.test('the administrators\' reads answer with an ETag, 304 while nothing changed, a new tag after a change', onSqlite("the administrators' reads' ETags and 304s"), async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const other = await supporterWithToken(app, { email: 'ann@example.test' })
  for (const url of ['/demo/policy', '/demo/credentials']) {
    const first = await app.inject({ url, headers: admin.bearer })
    const tag = String(first.headers.etag)
    t.match(tag, /^"[cp][\w-]+-[\w-]{16}"$/, `${url}: a strong tag`)
    const again = await app.inject({ url, headers: { ...admin.bearer, 'if-none-match': tag } })
    t.equal(again.statusCode, 304, `${url}: 304 while nothing changed`)
    t.equal(again.body, '')
    t.not(String((await app.inject({ url: `${url}?page=1`, headers: admin.bearer })).headers.etag), tag, 'another address, another tag')
  }
  const policyTag = String((await app.inject({ url: '/demo/policy', headers: admin.bearer })).headers.etag)
  const listTag = String((await app.inject({ url: '/demo/credentials', headers: admin.bearer })).headers.etag)
  await app.sites.setPolicy(admin.site.id, { multipassOn: false })
  await app.tokens.revoke(other.site.id, other.token.id)
  t.equal((await app.inject({ url: '/demo/policy', headers: { ...admin.bearer, 'if-none-match': policyTag } })).statusCode, 200, 'the policy changed')
  t.equal((await app.inject({ url: '/demo/credentials', headers: { ...admin.bearer, 'if-none-match': listTag } })).statusCode, 200, 'a token was revoked')
})

t.test("an application's authorization is in the inventory, and revoked from it", async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const { person, tokens } = await oauthTokens(app, { scope: 'read write' })
  const app_ = { authorization: `Bearer ${tokens.access_token}`, accept: V1 }
  t.equal((await app.inject({ url: '/demo', headers: app_ })).statusCode, 200)
  const [grant] = (await app.inject({ url: '/demo/credentials?kind=oauth', headers: admin.bearer })).json().credentials
  t.match(grant, { id: /^oauth-/, kind: 'oauth', owner: person.email, name: 'Test integration', access: 'write', state: 'active', revocable: true })
  const done = await app.inject({ method: 'POST', url: '/demo/credentials/revoke', headers: json(admin.bearer), payload: { ids: [grant.id], reason: 'not ours' } })
  t.equal(done.statusCode, 200)
  t.equal((await app.inject({ url: '/demo', headers: app_ })).statusCode, 401, "the application's token is refused")
  t.equal((await app.inject({ url: '/demo/credentials?kind=oauth', headers: admin.bearer })).json().total, 0, 'gone from the inventory')
  const { events } = await app.securityLog.list({ userId: person.user.id, kinds: ['oauth_revoked'], offset: 0, limit: 5 })
  t.match(events, [{ actor: 'administrator', detail: { application: 'Test integration', reason: 'not ours', by: 'admin@example.test' } }])
})

t.test('a policy change for a site that is gone, and a shortening that finds nothing', async (t) => {
  const { app } = await buildTestApp(t)
  await t.rejects(app.sites.setPolicy(9999, { passwordOn: false }), { code: 'not_found' })
  const site = await app.sites.add('empty')
  t.same(await app.tokens.shorten(site.id, 7), [])
})

t.test('a mail the server refuses is logged, without the address of the server, and the revocation stands', onSqlite('a mail the server refuses, and the log line it leaves'), async (t) => {
  const smtp = await mailServer(t)
  smtp.state.refuse = true
  const log = logCapture()
  const { app } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: 'Desk <desk@example.test>' } }, logStream: log.stream })
  const admin = await supporterWithToken(app, { email: 'admin@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const done = await app.inject({ method: 'POST', url: '/demo/credentials/revoke', headers: json(admin.bearer), payload: { ids: [`pat-${ann.token.id}`], reason: 'x' } })
  t.equal(done.statusCode, 200)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 401)
  const warning = log.entries().find((entry) => entry.msg === 'could not mail the owner of a credential an administrator changed')
  t.match(warning, { level: 40, err: { message: /mailbox unavailable/ } })
  t.notMatch(log.text(), 's3cret-smtp', 'never the SMTP credentials')
})

t.test('an unexpected failure of a policy change is a 500, on the API and the page', onSqlite('a failure of ours shown as a 500 on the API and the page'), async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await personWithPassword(app)
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const token = await supporterWithToken(app, { email: admin.email })
  app.administration.setPolicy = async () => {
    throw new Error('the disk is on fire')
  }
  const api = await app.inject({ method: 'PATCH', url: '/demo/policy', headers: json(token.bearer), payload: { password: false } })
  t.equal(api.statusCode, 500)
  t.equal(api.json().error, 'internal_error')
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  await web.get('/demo/admin/policy')
  const page = await web.post('/demo/admin/policy', { max_token_days: '30', write_tokens: 'everyone', legacy_token: 'on', multipass: 'on', password: 'on' })
  t.equal(page.statusCode, 500)
  t.match(page.body, 'Something went wrong on our side.')
  t.notMatch(page.body, 'the disk is on fire')
})

t.test("the inventory's other states: a disabled owner's application, a token used from an address, the policy page with switches off, a failed revocation", async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await personWithPassword(app)
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const token = await supporterWithToken(app, { email: admin.email })
  const { person } = await oauthTokens(app)
  await app.users.setDisabled(person.email, true)
  const [grant] = (await app.inject({ url: '/demo/credentials?kind=oauth', headers: token.bearer })).json().credentials
  t.equal(grant.state, 'unusable', "a disabled owner's application")
  await app.inject({ url: '/demo', headers: token.bearer })
  await app.tokens.flush()
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  t.match((await web.get('/demo/admin/credentials?kind=personal_token')).body, / UTC from 127\.0\.0\.1</)
  await app.sites.setPolicy(admin.site.id, { multipassOn: false, passwordOn: false })
  const policy = await web.get('/demo/admin/policy')
  t.match(policy.body, /name="multipass" value="off" checked/)
  t.match(policy.body, /name="password" value="off" checked/)
  t.match((await web.get('/demo/admin/policy?saved=1&shortened=3')).body, '3 tokens were shortened')
  app.administration.revoke = async () => {
    throw new Error('the disk is on fire')
  }
  await web.get('/demo/admin/credentials')
  const failed = await web.post('/demo/admin/credentials/revoke', { ids: `pat-${token.token.id}`, reason: 'x' })
  t.equal(failed.statusCode, 500)
  t.notMatch(failed.body, 'the disk is on fire')
})
