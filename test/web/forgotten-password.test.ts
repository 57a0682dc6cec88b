import t, { type Test } from 'tap'
import { buildTestApp, newSite, rawRows } from '../fixtures/app.ts'
import { mailReader, mailServer } from '../fixtures/mail.ts'
import { totpCode } from '../fixtures/totp.ts'
import { enrollAuthenticator, personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'
import { LINK_MINUTES, LINKS_PER_EMAIL } from '../../db/stores/customer-links.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the links and the sessions are the stores', which each engine must keep alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 67, item 4: "Forgot your password?" on the sign-in page, as a supporter and as a stranger
// would use it: the link is mailed (a real SMTP server) only to a supporter of the site, the page
// says the same for any address, the link works once, for 15 minutes, on its own site, asks for the
// second factor of a person who has one, and the new password ends the other sessions.

const SITE = 'https://help.example.test'

async function desk(t: Test) {
  const smtp = await mailServer(t)
  const { app, clock } = await buildTestApp(t, { config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@service.example>' } } })
  const ann = await personWithPassword(app, { email: 'ann@example.test' })
  const mails = mailReader(app, smtp)
  /** Asks for a link in a new browser, as `email`: the page's answer. */
  async function ask(email: string, web = webClient(app)) {
    t.match((await web.get('/demo/login')).body, /href="[^"]*\/demo\/login\/forgot">Forgot your password\?/)
    await web.get('/demo/login/forgot')
    return web.post('/demo/login/forgot', { email })
  }
  /** Follows a link in a new browser, as a person does: its page, then its button. */
  async function follow(link: string, site = 'demo') {
    const web = webClient(app, site)
    await web.get(link)
    return web.post(link)
  }
  const linkIn = (text: string | undefined) => new RegExp(`${SITE}(/demo/login/reset/service_cln_\\w+)`).exec(text ?? '')?.[1]
  return { app, clock, ann, mails, ask, follow, linkIn }
}

t.test('the link goes to a supporter only, the page says the same for anyone, and it sets a new password that ends the other sessions', async (t) => {
  const { app, ann, mails, ask, follow, linkIn } = await desk(t)
  const elsewhere = webClient(app)
  await elsewhere.signIn(ann.email, ann.password)
  t.equal((await elsewhere.get('/demo/discussions')).statusCode, 200, 'Ann is signed in on another computer')

  const asked = await ask('Ann@Example.test')
  t.equal(asked.statusCode, 200)
  t.match(asked.body, /data-sent>If <strong>ann@example\.test<\/strong> is the address of someone of Site demo's support staff/)
  // Waiting in the outbox, the mail is sealed.
  const [queued] = await rawRows(app, "select payload from outbox where kind = 'password_reset'")
  t.notMatch(String(queued!.payload), /service_cln_|ann@example/)
  const [mail] = await mails()
  t.same(mail!.envelope, ['ann@example.test'])
  t.equal(mail!.subject, 'Set a new password for Site demo')
  t.match(mail!.text, `within ${LINK_MINUTES} minutes`)
  const link = linkIn(mail!.text)!

  // A stranger, a customer and someone of another site only are told the same, and mailed nothing.
  const carol = await personWithPassword(app, { email: 'carol@customer.example', role: 'customer' })
  await newSite(app, 'other')
  const bob = await personWithPassword(app, { site: 'other', email: 'bob@example.test' })
  for (const email of ['nobody@example.test', carol.email, bob.email]) {
    const answer = await ask(email)
    t.equal(answer.statusCode, 200)
    t.match(answer.body, `data-sent>If <strong>${email}</strong> is the address`)
  }
  t.same(await mails(), [], 'no mail but to the supporter')
  const wrong = await ask('not an address')
  t.equal(wrong.statusCode, 400)
  t.match(wrong.body, /Enter the email address you sign in with/)

  // The link: a page with a button (a mail scanner opening it uses nothing up), then its POST.
  const browser = webClient(app)
  const opened = await browser.get(link)
  t.equal(opened.statusCode, 200)
  t.match(opened.body, /<button type="submit">Go on<\/button>/)
  const followed = await browser.post(link)
  t.equal(followed.headers.location, `${SITE}/demo/profile?forgotten=1#password`)
  t.match((await browser.get('/demo/profile?forgotten=1')).body, /You are signed in with the link\. Choose your new password below/)
  const set = await browser.post('/demo/profile/password', { password: 'a brand new password', repeated: 'a brand new password' })
  t.equal(set.headers.location, `${SITE}/demo/profile?password=1`)
  t.equal((await elsewhere.get('/demo/discussions')).statusCode, 303, 'the other session is signed out')
  t.equal((await webClient(app).signIn(ann.email, ann.password)).statusCode, 401, 'the old password no longer works')
  t.equal((await webClient(app).signIn(ann.email, 'a brand new password')).statusCode, 303)
  const events = (await app.securityLog.list({ userId: ann.user.id, offset: 0, limit: 10 })).events.map((e) => [e.kind, e.detail])
  t.match(events, [['sign_in_succeeded'], ['sign_in_failed'], ['password_set', { other_sessions_ended: 1 }], ['sign_in_succeeded', { with: 'password reset link' }]], 'newest first')

  // Once.
  const again = await follow(link)
  t.equal(again.statusCode, 410)
  t.match(again.body, /It was used already: each link works once\./)
})

t.test('not after 15 minutes, not on another site, and not for someone who left the staff', async (t) => {
  const { app, clock, ann, mails, ask, follow, linkIn } = await desk(t)
  await ask(ann.email)
  const late = linkIn((await mails())[0]!.text)!
  clock.advance(LINK_MINUTES * 60_000 + 1)
  const expired = await follow(late)
  t.equal(expired.statusCode, 410)
  t.match(expired.body, `It was valid for ${LINK_MINUTES} minutes.`)

  // Ann is support staff of another site too: a link of demo does nothing there.
  const other = await newSite(app, 'other')
  await app.users.addStaff(other.id, ann.user.id)
  await ask(ann.email)
  const link = linkIn((await mails())[0]!.text)!
  const crossed = await follow(link.replace('/demo/', '/other/'), 'other')
  t.equal(crossed.statusCode, 410)
  t.match(crossed.body, 'It is not a link of this site, or it was changed.')

  // Taken off the staff after asking: the link signs nobody in.
  await app.users.removeStaff((await app.sites.get('demo')).id, ann.user.id)
  const left = await follow(link)
  t.equal(left.statusCode, 410)
  t.equal((await follow(link)).statusCode, 410)
})

t.test('a person with a second factor is asked for it after the link, as after a password', onSqlite('the second step asked after a link, as after a password'), async (t) => {
  const { app, clock, mails, ask, linkIn } = await desk(t)
  const dana = await signedInPerson(app, { email: 'dana@example.test' })
  const { secret } = await enrollAuthenticator(dana.web, clock())
  clock.advance(60_000)
  await ask(dana.email)
  // (The mail saying an authenticator app was added went first.)
  const link = linkIn((await mails()).find((mail) => mail.subject === 'Set a new password for Site demo')!.text)!
  const browser = webClient(app)
  await browser.get(link)
  const followed = await browser.post(link)
  t.equal(followed.headers.location, `${SITE}/demo/login/second_step?next=${encodeURIComponent('/demo/profile?forgotten=1')}`)
  t.equal((await browser.get('/demo/profile')).statusCode, 303, 'not signed in before the second step')
  await browser.get('/demo/login/second_step')
  const wrong = await browser.post('/demo/login/second_step', { code: '000000', next: '/demo/profile?forgotten=1' })
  t.equal(wrong.statusCode, 401)
  const right = await browser.post('/demo/login/second_step', { code: totpCode(secret, clock()), next: '/demo/profile?forgotten=1' })
  t.equal(right.headers.location, '/demo/profile?forgotten=1')
  t.match((await browser.get('/demo/profile?forgotten=1')).body, /Choose your new password below/)
})

t.test('a person or a client asking too often is told to wait', async (t) => {
  const { ann, ask, mails } = await desk(t)
  for (let i = 0; i < LINKS_PER_EMAIL; i++) t.equal((await ask(ann.email)).statusCode, 200)
  const limited = await ask(ann.email)
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.match(limited.body, /Too many links were asked for/)
  t.equal((await mails()).length, LINKS_PER_EMAIL)
})

t.test("on a site whose staff sign in with the company's account only, a mailed link signs no supporter in", onSqlite("a link refused to the staff of a site of the company's account only"), async (t) => {
  const { app, ann, mails, ask, follow, linkIn } = await desk(t)
  await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'google', clientId: 'c', clientSecret: 's' })
  t.equal((await ask(ann.email)).statusCode, 200)
  const link = linkIn((await mails())[0]!.text)!
  await app.sites.setPolicy(ann.site.id, { companySignInOnly: true })
  const followed = await follow(link)
  t.equal(followed.statusCode, 403)
  t.match(followed.body, /sign in with the company.{1,5}s account/)
  t.equal((await app.securityLog.list({ userId: ann.user.id, kinds: ['sign_in_failed'], offset: 0, limit: 1 })).events[0]!.detail.with, 'password reset link')
})
