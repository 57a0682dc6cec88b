import t, { type Test } from 'tap'
import { buildTestApp, newSite, supporterWithToken, V1 } from '../fixtures/app.ts'
import { apiDoors } from '../fixtures/doors.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { mailReader, mailServer } from '../fixtures/mail.ts'
import { totpCode } from '../fixtures/totp.ts'
import { enrollAuthenticator, personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'
import { INVITATION_DAYS } from '../../db/stores/invitations.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the invitations, memberships and sessions are the stores', which each engine must keep alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 67, item 1: an administrator invites on Administration -> Team and through the API; the
// invited person joins from the mailed link (a real SMTP server), as a newcomer or with the account
// they have (its password, then its second factor); and from the other side: someone who is not an
// administrator, another address, another site, a link used, withdrawn, replaced or too old.

const SITE = 'https://help.example.test'

async function desk(t: Test) {
  const smtp = await mailServer(t)
  const { app, clock } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@service.example>' } } })
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const mails = mailReader(app, smtp)
  const linkIn = (text: string | undefined) => new RegExp(`${SITE}(/\\w+/invitation/service_cln_\\w+)`).exec(text ?? '')?.[1]
  /** Invites on the team page as Ann: the mailed link. */
  async function invite(email: string, role = 'supporter') {
    await ann.web.get('/demo/admin/team')
    const sent = await ann.web.post('/demo/admin/team/invite', { email, role })
    t.equal(sent.statusCode, 303, sent.body)
    const mail = (await mails()).find((m) => m.envelope.includes(email.toLowerCase()) && m.subject?.startsWith('You are invited'))!
    return linkIn(mail.text)!
  }
  return { app, clock, ann, smtp, mails, linkIn, invite }
}

t.test('an administrator invites Bob as a supporter and Dee as an administrator; each joins from the mail and lands on the queue', async (t) => {
  const { app, ann, mails, linkIn, invite } = await desk(t)
  const bobLink = await invite('Bob@Example.test')
  const page = (await ann.web.get(`/demo/admin/team?invited=bob%40example.test`)).body
  t.match(page, /bob@example\.test is invited: the mail is on its way\./)
  t.match(page, /data-invitation="bob@example\.test"[\s\S]*Supporter[\s\S]*ann/)
  t.match(page, /data-person="ann@example\.test"[\s\S]*Administrator[\s\S]*No/)

  const bob = webClient(app)
  const opened = await bob.get(bobLink)
  t.equal(opened.statusCode, 200)
  t.match(opened.body, /You are invited to the support staff of Site demo as a supporter\. The invitation is for <strong>bob@example\.test<\/strong>/)
  t.equal((await bob.post(bobLink, { name: 'Bob', password: 'short', repeated: 'short' })).statusCode, 400)
  const joined = await bob.post(bobLink, { name: 'Bob', password: 'bobs own password', repeated: 'bobs own password' })
  t.equal(joined.headers.location, `${SITE}/demo/discussions`)
  t.equal((await bob.get('/demo/discussions')).statusCode, 200, 'Bob works on the queue')
  t.equal((await bob.get('/demo/admin/team')).statusCode, 403, 'as a supporter, not an administrator')
  t.equal((await webClient(app).signIn('bob@example.test', 'bobs own password')).statusCode, 303, 'his password signs him in')

  // Dee, invited as an administrator, through the API.
  const token = await supporterWithToken(app, { email: 'ann@example.test' })
  const invited = await app.inject({ method: 'POST', url: '/demo/invitations', headers: token.bearer, payload: { email: 'dee@example.test', role: 'administrator' } })
  t.equal(invited.statusCode, 201, invited.body)
  t.match(invited.json(), { email: 'dee@example.test', role: 'administrator', invited_by: 'ann' })
  const [deeMail] = await mails()
  t.equal(deeMail!.subject, "You are invited to Site demo's support team")
  t.match(deeMail!.text, /ann invites you to the support staff of Site demo, as an administrator \(who also runs the site\)\. Open this link within 7 days/)
  const dee = webClient(app)
  await dee.get(linkIn(deeMail!.text)!)
  t.equal((await dee.post(linkIn(deeMail!.text)!, { name: 'Dee', password: 'dees own password', repeated: 'dees own password' })).statusCode, 303)
  t.equal((await dee.get('/demo/admin/team')).statusCode, 200, 'Dee runs the site')

  const listed = (await app.inject({ url: '/demo/staff', headers: token.bearer })).json()
  t.same(listed.staff.map((p: { email: string; role: string }) => [p.email, p.role]), [['ann@example.test', 'administrator'], ['bob@example.test', 'supporter'], ['dee@example.test', 'administrator']])
  t.same(listed.invitations, [])
  t.match(listed.staff[0], { second_factor: false, disabled: false, last_sign_in_at: /^2026-03-01T12:00:00/ }, "Ann's last sign-in")

  // Each link works once.
  const again = await webClient(app).get(bobLink)
  t.equal(again.statusCode, 410)
  t.match(again.body, /It was used already/)
})

t.test('someone with an account proves it: its password, then its second factor', onSqlite("an account's password, then its second factor, asked before joining"), async (t) => {
  const { app, clock, invite } = await desk(t)
  await newSite(app, 'other')
  const cleo = await signedInPerson(app, { site: 'other', email: 'cleo@example.test' })
  const { secret } = await enrollAuthenticator(cleo.web, clock(), 'other')
  clock.advance(60_000)
  const link = await invite('cleo@example.test')
  const browser = webClient(app)
  t.match((await browser.get(link)).body, /You have an account with this address: enter its password to join/)
  t.equal((await browser.post(link, { password: 'not hers at all' })).statusCode, 401)
  const proven = await browser.post(link, { password: cleo.password })
  t.equal(proven.headers.location, `${SITE}/demo/login/second_step?next=${encodeURIComponent(link)}`)
  await browser.get('/demo/login/second_step')
  const signedIn = await browser.post('/demo/login/second_step', { code: totpCode(secret, clock()), next: link })
  t.equal(signedIn.headers.location, link)
  t.match((await browser.get(link)).body, /<button type="submit">Join Site demo<\/button>/)
  t.equal((await browser.post(link)).headers.location, `${SITE}/demo/discussions`)
  t.ok(await app.users.isStaff((await app.sites.get('demo')).id, cleo.user.id))
  t.equal((await browser.get('/demo/discussions')).statusCode, 200)
})

t.test('from the other side: not an administrator, another address, another site, withdrawn, replaced, too old', async (t) => {
  const { app, clock, ann, invite, mails, linkIn } = await desk(t)
  // A supporter who is no administrator can neither see the team page nor invite, on the page or the API.
  const sam = await signedInPerson(app, { email: 'sam@example.test' })
  t.equal((await sam.web.get('/demo/admin/team')).statusCode, 403)
  t.equal((await sam.web.post('/demo/admin/team/invite', { email: 'x@example.test' })).statusCode, 403)
  const samToken = await supporterWithToken(app, { email: 'sam@example.test' })
  t.equal((await app.inject({ method: 'POST', url: '/demo/invitations', headers: samToken.bearer, payload: { email: 'x@example.test' } })).statusCode, 403)
  t.equal((await app.inject({ url: '/demo/staff', headers: samToken.bearer })).statusCode, 403)
  t.same(await mails(), [])

  // Someone already on the staff; an address that is none.
  await ann.web.get('/demo/admin/team')
  const already = await ann.web.post('/demo/admin/team/invite', { email: 'sam@example.test' })
  t.equal(already.statusCode, 409)
  t.match(already.body, /sam@example\.test is already on the staff of this site/i)
  t.equal((await ann.web.post('/demo/admin/team/invite', { email: 'nope' })).statusCode, 400)

  // Signed in as someone else: the invitation is for its address only.
  const link = await invite('eve@example.test')
  const other = await sam.web.get(link)
  t.equal(other.statusCode, 403)
  t.match(other.body, /You are signed in as sam@example\.test/)
  t.equal((await sam.web.post(link)).statusCode, 403)
  // Another site's invitation does nothing on this one.
  await newSite(app, 'other')
  t.equal((await webClient(app, 'other').get(link.replace('/demo/', '/other/'))).statusCode, 410)

  // Withdrawn: the link stops working.
  const [open] = await app.invitations.open((await app.sites.get('demo')).id)
  await ann.web.get('/demo/admin/team')
  t.equal((await ann.web.post(`/demo/admin/team/invitations/${open!.id}/withdraw`)).statusCode, 303)
  t.match((await webClient(app).get(link)).body, /An administrator withdrew it, or sent a newer one\./)
  t.equal((await ann.web.post(`/demo/admin/team/invitations/${open!.id}/withdraw`)).statusCode, 404)

  // Sent again: a new link, the old one stops working.
  const first = await invite('fay@example.test')
  const [fay] = await app.invitations.open((await app.sites.get('demo')).id)
  await ann.web.get('/demo/admin/team')
  t.equal((await ann.web.post(`/demo/admin/team/invitations/${fay!.id}/resend`)).statusCode, 303)
  const second = linkIn((await mails())[0]!.text)!
  t.not(second, first)
  t.equal((await webClient(app).get(first)).statusCode, 410)
  t.equal((await webClient(app).get(second)).statusCode, 200)

  // Too old.
  clock.advance(INVITATION_DAYS * 86_400_000 + 1)
  const old = await webClient(app).get(second)
  t.equal(old.statusCode, 410)
  t.match(old.body, /It was valid for 7 days/)
  t.same(await app.invitations.open((await app.sites.get('demo')).id), [], 'nothing open any more')
})

t.test('the API withdraws and sends again; unknown ids are 404', async (t) => {
  const { app, mails } = await desk(t)
  const token = await supporterWithToken(app, { email: 'ann@example.test' })
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: token.bearer, ...(payload ? { payload } : {}) })
  const made = (await api('POST', '/demo/invitations', { email: 'gus@example.test' })).json()
  t.match(made, { role: 'supporter', href: `https://api.example.test/demo/invitations/${made.id}` })
  t.equal((await api('POST', `/demo/invitations/${made.id}/resend`)).statusCode, 200)
  t.equal((await mails()).length, 2)
  t.equal((await api('DELETE', `/demo/invitations/${made.id}`)).statusCode, 204)
  t.equal((await api('DELETE', `/demo/invitations/${made.id}`)).statusCode, 404)
  t.equal((await api('POST', `/demo/invitations/${made.id}/resend`)).statusCode, 404)
  t.equal((await api('POST', '/demo/invitations', { email: 'gus@example.test', role: 'owner' })).statusCode, 400)
})

t.test('a customer of the site, whose account has no password, joins with a password of their own', async (t) => {
  const { app, invite } = await desk(t)
  const hal = await app.users.fromSingleSignOn((await app.sites.get('demo')).id, 'hal@example.test', 'Hal')
  t.equal(hal!.passwordHash, null)
  const link = await invite('hal@example.test')
  const browser = webClient(app)
  t.match((await browser.get(link)).body, /Choose a password/)
  t.equal((await browser.post(link, { name: 'Hal', password: 'hals new password', repeated: 'hals new password' })).headers.location, `${SITE}/demo/discussions`)
  t.ok(await app.users.isStaff((await app.sites.get('demo')).id, hal!.id))
  t.equal((await webClient(app).signIn('hal@example.test', 'hals new password')).statusCode, 303)
})

t.test('an administrator makes Bob an administrator, then takes him off the staff: his open page and his token stop working at once', async (t) => {
  const { app, ann } = await desk(t)
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  const bobToken = await supporterWithToken(app, { email: 'bob@example.test' })
  const site = await app.sites.get('demo')
  const page = async () => ann.web.get('/demo/admin/team')

  // Bob, a supporter, changes nobody; Ann changes anybody but herself.
  t.equal((await bob.web.post(`/demo/admin/team/people/${ann.user.id}`, { change: 'remove' })).statusCode, 403)
  await page()
  const self = await ann.web.post(`/demo/admin/team/people/${ann.user.id}`, { change: 'supporter' })
  t.equal(self.statusCode, 403)
  t.match(self.body, /You cannot change your own role: another administrator does/)
  t.equal((await ann.web.post('/demo/admin/team/people/999999', { change: 'remove' })).statusCode, 404)
  t.equal((await ann.web.post(`/demo/admin/team/people/${bob.user.id}`, { change: 'owner' })).statusCode, 400)

  const made = await ann.web.post(`/demo/admin/team/people/${bob.user.id}`, { change: 'administrator' })
  t.equal(made.headers.location, `${SITE}/demo/admin/team?administrator=bob%40example.test`)
  t.ok(await app.users.isAdministrator(site.id, bob.user.id))
  // His rights rose: he signs in again, and then runs the site.
  await bob.web.signIn(bob.email, bob.password)
  t.equal((await bob.web.get('/demo/admin/team')).statusCode, 200)
  t.equal((await app.inject({ url: '/demo/staff', headers: bobToken.bearer })).statusCode, 200)

  await page()
  t.equal((await ann.web.post(`/demo/admin/team/people/${bob.user.id}`, { change: 'remove' })).headers.location, `${SITE}/demo/admin/team?removed=bob%40example.test`)
  t.equal((await bob.web.get('/demo/discussions')).statusCode, 403, 'his open page: refused at his next request')
  t.equal((await bob.web.get('/demo/admin/team')).statusCode, 403)
  t.equal((await app.inject({ url: '/demo/discussions', headers: bobToken.bearer })).statusCode, 403, 'his token: refused')
  const kinds = (await app.securityLog.list({ userId: bob.user.id, offset: 0, limit: 10 })).events.map((e) => [e.kind, e.actor, e.detail])
  t.match(kinds, [['staff_removed', 'administrator', { by: 'ann@example.test', authorizations_ended: 0 }], ['sign_in_succeeded'], ['administrator_added', 'administrator', { by: 'ann@example.test' }]])

  // The API does the same, never to oneself.
  const annToken = await supporterWithToken(app, { email: 'ann@example.test' })
  const api = (method: 'PATCH' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: annToken.bearer, ...(payload ? { payload } : {}) })
  const cleo = await supporterWithToken(app, { email: 'cleo@example.test' })
  t.equal((await api('PATCH', `/demo/staff/${cleo.user.id}`, { role: 'administrator' })).statusCode, 204)
  t.ok(await app.users.isAdministrator(site.id, cleo.user.id))
  t.equal((await api('PATCH', `/demo/staff/${cleo.user.id}`, { role: 'supporter' })).statusCode, 204)
  t.notOk(await app.users.isAdministrator(site.id, cleo.user.id))
  t.equal((await api('PATCH', `/demo/staff/${ann.user.id}`, { role: 'supporter' })).statusCode, 403)
  t.equal((await api('DELETE', `/demo/staff/${bob.user.id}`)).statusCode, 404, 'off the staff already')
  t.equal((await api('DELETE', `/demo/staff/${cleo.user.id}`)).statusCode, 204)
  t.equal((await app.inject({ url: '/demo/discussions', headers: cleo.bearer })).statusCode, 403)
  t.equal((await app.inject({ method: 'PATCH', url: `/demo/staff/${ann.user.id}`, headers: cleo.bearer, payload: { role: 'supporter' } })).statusCode, 403, 'a customer changes nothing')
})

t.test('the operator invites, lists and withdraws on the command line; the mail goes with the running service', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  const added = await cli.run(['invitation', 'add', 'acme', 'Ivy@Example.test', '--administrator'])
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^invitation (\d+): ivy@example\.test invited to acme as an administrator \(who also runs the site\); its mail is queued, and its link works until 2026-03-08T12:00:00\.000Z\n$/)
  t.equal((await cli.run(['invitation', 'add', 'acme', 'jo@example.test'])).code, 0)
  const listed = (await cli.run(['invitation', 'list', 'acme'])).stdout.split('\n').filter(Boolean).map((line) => line.split('\t').slice(1, 4))
  t.same(listed, [['jo@example.test', 'supporter', '-'], ['ivy@example.test', 'administrator', '-']])
  const [queued] = await cli.query<{ payload: string }>("SELECT payload FROM outbox WHERE kind = 'invitation'")
  // Her address or the link in the clear, not three letters a sealed box may hold by chance (it held "ivy" once).
  t.notMatch(queued!.payload, /service_cln_|ivy@example\.test|Ivy@Example/i, 'the mail waits sealed')
  const id = /^invitation (\d+)/.exec(added.stdout)![1]!
  t.equal((await cli.run(['invitation', 'withdraw', 'acme', id])).stdout, `invitation ${id} of acme withdrawn\n`)
  for (const [argv, said] of [
    [['invitation', 'withdraw', 'acme', id], `acme has no open invitation ${id}`],
    [['invitation', 'withdraw', 'acme', 'x'], 'an invitation id is a number, not "x"'],
    [['invitation', 'add', 'acme', 'not an address'], 'is not an email address'],
  ] as const) {
    const refused = await cli.run([...argv])
    t.not(refused.code, 0)
    t.match(refused.stderr, said)
  }
  t.equal((await cli.run(['invitation', 'list', 'acme'])).stdout.split('\n').filter(Boolean).length, 1)
})

t.test('the store keeps its rules whatever the page checks first: once, the invited address only, a name, nothing to resend', async (t) => {
  const { app, ann, mails, linkIn } = await desk(t)
  const site = await app.sites.get('demo')
  const mail = (value: string) => ({ subject: 'x', text: `${SITE}/demo/invitation/${value}` })
  await app.invitations.invite(site.id, { email: 'kim@example.test', role: 'supporter', invitedBy: null }, mail)
  const value = /invitation\/(\S+)/.exec(linkIn((await mails())[0]!.text)!)![1]!
  const other = await app.users.insert({ email: 'lee@example.test' }, null)
  await t.rejects(app.invitations.accept(site.id, value, { userId: other.id }), { message: 'this invitation is for another address' })
  await t.rejects(app.invitations.accept(site.id, value, { newcomer: { name: '  ', passwordHash: 'x' } }), { message: 'a name must be 1 to 100 characters' })
  t.match(await app.invitations.accept(site.id, value, { newcomer: { name: 'Kim', passwordHash: 'x' } }), { kind: 'accepted' })
  t.same(await app.invitations.accept(site.id, value, { newcomer: { name: 'Kim', passwordHash: 'x' } }), { kind: 'used' }, 'taken once, even past the page')
  t.same(await app.invitations.accept(site.id, 'service_cln_nothing', { userId: ann.user.id }), { kind: 'invalid' })
  t.equal(await app.invitations.resend(site.id, 1, mail), false, 'a taken invitation is not sent again')
  const empty = await newSite(app, 'empty')
  t.same(await app.invitations.team(empty.id), [], 'a site without staff')
})

t.test('someone with an account and no second factor joins with its password; a nameless newcomer is told', async (t) => {
  const { app, invite } = await desk(t)
  await newSite(app, 'other')
  const max = await signedInPerson(app, { site: 'other', email: 'max@example.test' })
  const link = await invite('max@example.test')
  const browser = webClient(app)
  await browser.get(link)
  t.equal((await browser.post(link, { password: max.password })).headers.location, `${SITE}/demo/discussions`)
  const newcomer = await invite('nel@example.test')
  const fresh = webClient(app)
  await fresh.get(newcomer)
  const nameless = await fresh.post(newcomer, { name: '   ', password: 'nels own password', repeated: 'nels own password' })
  t.equal(nameless.statusCode, 400)
  t.match(nameless.body, /A name must be 1 to 100 characters/)
})

t.test("a session alone is no proof for an account with a password; a role is never lowered; a removed person's old link is withdrawn; the link never leaves by the site's mailbox", async (t) => {
  const { app, ann, invite, mails } = await desk(t)
  const site = await app.sites.get('demo')
  // The site has a mailbox: the invitation still leaves by the service's own mailer, not its Sent folder.
  await app.mailboxes.addMailbox(site.id, 'support@acme.example')
  // Pat, a customer of the site with a password, signed in: the invitation asks for the password all the same.
  const pat = await personWithPassword(app, { email: 'pat@example.test', role: 'customer' })
  const patWeb = webClient(app)
  await patWeb.signIn(pat.email, pat.password)
  await ann.web.get('/demo/admin/team')
  await ann.web.post('/demo/admin/team/invite', { email: pat.email })
  const [patMail] = await mails()
  t.match(patMail!.from?.text ?? '', 'desk@service.example', "from the service's mailer")
  const link = new RegExp(`${SITE}(/demo/invitation/\\S+)`).exec(patMail!.text!)![1]!
  t.match((await patWeb.get(link)).body, /enter its password to join/)
  t.equal((await patWeb.post(link)).statusCode, 401, 'no password, no joining')
  t.notOk(await app.users.isStaff(site.id, pat.user.id))
  t.equal((await patWeb.post(link, { password: pat.password })).headers.location, `${SITE}/demo/discussions`)

  // Invited as a supporter, made an administrator meanwhile: taking the invitation keeps them one.
  const quinn = await invite('quinn@example.test')
  const q = await app.users.insert({ email: 'quinn@example.test', name: 'Quinn' }, null)
  await app.users.addStaff(site.id, q.id, { administrator: true })
  const qWeb = webClient(app)
  await qWeb.get(quinn)
  t.equal((await qWeb.post(quinn, { name: 'Quinn', password: 'quinns own password', repeated: 'quinns own password' })).statusCode, 303)
  t.ok(await app.users.isAdministrator(site.id, q.id), 'still an administrator')

  // Invited, added by the operator, then taken off the staff: the old link no longer brings them back.
  const rayLink = await invite('ray@example.test')
  const ray = await supporterWithToken(app, { email: 'ray@example.test' })
  const annToken = await supporterWithToken(app, { email: 'ann@example.test' })
  t.equal((await app.inject({ method: 'DELETE', url: `/demo/staff/${ray.user.id}`, headers: annToken.bearer })).statusCode, 204)
  t.match((await webClient(app).get(rayLink)).body, /An administrator withdrew it/)
})

t.test('taken off the staff through the team API: every door of the API refuses them at once (personal token, legacy token, Basic, multipass)', async (t) => {
  const { app } = await desk(t)
  const site = await app.sites.get('demo')
  const annToken = await supporterWithToken(app, { email: 'ann@example.test' })
  const uma = await personWithPassword(app, { email: 'uma@example.test' })
  const doors = await apiDoors(app, site, uma)
  for (const [door, headers] of Object.entries(doors)) t.equal((await app.inject({ url: '/demo/discussions', headers: { ...headers, accept: V1 } })).statusCode, 200, `on the staff, ${door}`)
  t.equal((await app.inject({ method: 'DELETE', url: `/demo/staff/${uma.user.id}`, headers: annToken.bearer })).statusCode, 204)
  for (const [door, headers] of Object.entries(doors)) t.equal((await app.inject({ url: '/demo/discussions', headers: { ...headers, accept: V1 } })).statusCode, 403, `off the staff, ${door}`)
})

t.test("on a site whose staff sign in with the company's account only, taking an invitation signs nobody in: the sign-in page is next", onSqlite("where a newcomer goes after joining a site of the company's account only"), async (t) => {
  const { app, ann, invite } = await desk(t)
  await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'google', clientId: 'c', clientSecret: 's' })
  const link = await invite('erin@example.test')
  await app.sites.setPolicy(ann.site.id, { companySignInOnly: true })
  const erin = webClient(app)
  await erin.get(link)
  const joined = await erin.post(link, { name: 'Erin', password: 'erins own password', repeated: 'erins own password' })
  t.equal(joined.headers.location, `${SITE}/demo/login`)
  t.equal((await erin.get('/demo/discussions')).statusCode, 303, 'not signed in: she signs in with the company account')
  t.same(await app.users.staffRole(ann.site.id, (await app.users.find('erin@example.test'))!.id), 'supporter', 'on the team')
})
