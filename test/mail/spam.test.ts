import { simpleParser, type ParsedMail } from 'mailparser'
import t, { type Test } from 'tap'
import { rawStatement, supporterWithToken } from '../fixtures/app.ts'
import { MAX_SENDER_RULES } from '../../db/stores/senders.ts'
import { mailServer, testDns } from '../fixtures/mail.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { LOOPBACK, receiver } from '../fixtures/webhooks.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { blockChoices } from '../../routes/web/discussion.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores (the sender rules, the spam state's counts,
// listings and partial indexes), and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 65, spam stays out of the queue: mail from a blocked sender, or one the mail provider
// marked, arrives in the spam state, acknowledged to no one, notified to no one, told to webhooks
// only as discussion.spam; "Not spam" brings it back and allows its sender; an allowed sender's
// mail is never spam, whatever its headers say. Real SMTP both ways (the built-in receiver, an
// SMTP server for what leaves), a real webhook endpoint. And the attacker's side: a supporter who
// is not an administrator, another site's administrator, patterns that are not addresses.

async function desk(t: Test) {
  const smtp = await mailServer(t)
  // Senders whose SPF passes from here: their mail is one the receiver may acknowledge.
  const spf = 'v=spf1 ip4:127.0.0.1 -all'
  const dmarc = 'v=DMARC1; p=none'
  const resolver = testDns({ 'customer.example': spf, '_dmarc.customer.example': dmarc, 'mail.spammer.example': spf, 'spammer.example': spf, '_dmarc.spammer.example': dmarc })
  const mailReceiver = { host: '127.0.0.1', port: 0, resolver, limits: { perClientPerMinute: 1_000 } }
  const made = await mailDesk(t, { config: { mailReceiver, mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@acme.example>' }, webhooks: { allowed: LOOPBACK, timeoutMs: 5_000 } } })
  const { app, ann } = made
  // The address people write to, which acknowledges a new discussion: what spam must not get.
  await app.mailboxes.addMailbox(ann.site.id, 'hello@acme.example', { acknowledge: true })
  const send = (message: Parameters<typeof made.send>[0]) => made.send({ to: 'hello@acme.example', ...message })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  // The team hears of every new discussion: what spam must not reach.
  await app.sites.setPolicy(ann.site.id, { newDiscussionsToTeam: true })
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object, headers = ann.bearer) => app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
  const json = async (method: 'GET' | 'POST', url: string, payload?: object) => (await api(method, url, payload)).json()
  const hook = await receiver(t)
  await json('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created', 'discussion.spam', 'discussion.restored', 'comment.created'] })
  let seen = 0
  /** What left since the last look: the mails (parsed, with whom each went to), and the events posted. */
  const left = async () => {
    await app.sendOutbox()
    const fresh = smtp.mails.slice(seen)
    seen = smtp.mails.length
    const mails: Array<{ rcpt: string[]; mail: ParsedMail }> = await Promise.all(fresh.map(async (m) => ({ rcpt: m.to, mail: await simpleParser(m.raw) })))
    const events = hook.received.splice(0).map((r) => JSON.parse(r.body) as { type: string; data: { number: number; state: string } })
    return { mails, events }
  }
  return { ...made, send, smtp, api, json, left }
}

t.test('mail from a blocked domain is spam: out of the queue and its counts, told to no one; "Not spam" brings it back and allows its sender', async (t) => {
  const { app, ann, send, json, api, left } = await desk(t)
  t.match(await json('POST', '/demo/sender_rules', { pattern: '*.Spammer.Example', verdict: 'block' }), { pattern: 'spammer.example', verdict: 'block', href: /\/demo\/sender_rules\/\d+$/ })
  // Before: a person's mail, acknowledged, the team mailed, the webhook told. What spam is measured against.
  await send({ subject: 'A real question', text: 'Hello.' })
  const before = await left()
  t.equal(before.mails.length, 2, "a person's new discussion: the acknowledgement and the supporter's notice")
  t.same(before.events.map((e) => e.type), ['discussion.created'])

  await send({ from: 'Cheap Pills <offers@mail.spammer.example>', cc: 'victim@elsewhere.example', subject: 'Cheap pills', messageId: '<pills@mail.spammer.example>', text: 'Buy now.' })
  const spam = await json('GET', '/demo/discussions/2')
  t.equal(spam.state, 'spam', 'a subdomain of the blocked domain is blocked')
  t.equal(spam.assignee_id ?? null, null)
  const quiet = await left()
  t.equal(quiet.mails.length, 0, 'no acknowledgement to the spammer, no notice to the team')
  t.same(quiet.events.map((e) => [e.type, e.data.number, e.data.state]), [['discussion.spam', 2, 'spam']], 'the webhook hears only that it was spam')

  // Out of the plain listing, the queue's counts and its tabs; in its own listing.
  const listing = await json('GET', '/demo/discussions')
  t.same(listing.discussions.map((d: { number: number }) => d.number), [1])
  t.equal(listing.total, 1)
  t.same((await json('GET', '/demo/discussions/spam')).discussions.map((d: { number: number }) => d.number), [2])
  t.match((await json('GET', '/demo/categories')).categories[0], { discussions_count: 1, new_discussions_count: 1, spam_discussions_count: 1 })
  t.equal((await json('GET', '/demo/search?q=pills')).results.length, 0, 'search leaves spam out unless asked')
  t.equal((await json('GET', `/demo/search?q=${encodeURIComponent('pills state:spam')}`)).results.length, 1)

  // Spam is neither resolved nor reopened: it is marked not spam first.
  t.match((await api('POST', '/demo/discussions/2/resolve')).json(), { error: 'conflict', message: /marked spam; mark it not spam before you resolve it/ })
  const replyAndResolve = { siteId: ann.site.id, number: 2, body: 'No.', internal: false, via: 'web' as const, supporterId: ann.user.id, resolve: true }
  await t.rejects(app.discussions.reply(replyAndResolve), { code: 'conflict', message: /marked spam/ }, 'nor by a reply that resolves it (the page\'s Send and resolve)')
  // The spammer writes again in the thread: it joins it, still spam, still told to no one.
  await send({ from: 'offers@mail.spammer.example', subject: 'Re: Cheap pills', text: 'Still cheap.', inReplyTo: '<pills@mail.spammer.example>' })
  const thread = await json('GET', '/demo/discussions/2')
  t.match(thread, { state: 'spam', comments_count: 2 })
  t.same(await left(), { mails: [], events: [] })

  // Not spam: back as new, the webhook told it is restored, the sender allowed.
  t.match(await json('POST', '/demo/discussions/2/not_spam'), { state: 'new' })
  t.same((await json('GET', '/demo/discussions/2/participants')).participants, [], "whom spam copied joined nothing: the team's replies go to no list a spammer made")
  t.same((await left()).events.map((e) => [e.type, e.data.number, e.data.state]), [['discussion.restored', 2, 'new']])
  const rules = (await json('GET', '/demo/sender_rules')).sender_rules
  t.same(rules.map((r: { pattern: string; verdict: string }) => [r.pattern, r.verdict]), [['offers@mail.spammer.example', 'allow'], ['spammer.example', 'block']])
  // Their next mail is a person's: the address's rule before its domain's.
  await send({ from: 'offers@mail.spammer.example', subject: 'A real order', text: 'I would like to order.' })
  const allowed = await json('GET', '/demo/discussions/3')
  t.equal(allowed.state, 'new')
  t.equal((await left()).mails.length, 2, 'acknowledged, and the team told')
  // Their colleague is still blocked.
  await send({ from: 'sales@spammer.example', subject: 'More pills', text: 'Buy.' })
  t.equal((await json('GET', '/demo/discussions/4')).state, 'spam')
})

t.test("a mail provider's verdict makes mail spam; an allowed sender's never is; SERVICE_MAIL_SPAM_HEADERS=off reads none", onSqlite("a mail provider's spam headers read as a verdict"), async (t) => {
  const { send, json, left } = await desk(t)
  await send({ subject: 'Flagged', text: 'x', headers: { 'X-Spam-Flag': 'YES', 'X-Spam-Status': 'Yes, score=9.1' } })
  await send({ subject: 'Status only', text: 'x', headers: { 'X-Spam-Status': 'Yes, score=7.0 required=5.0' } })
  await send({ subject: 'Microsoft', text: 'x', headers: { 'X-Forefront-Antispam-Report': 'CIP:1.2.3.4;CTRY:;LANG:en;SCL:9;SFV:SPM;' } })
  await send({ subject: 'Not flagged', text: 'x', headers: { 'X-Spam-Flag': 'NO', 'X-Spam-Status': 'No, score=0.1' } })
  t.same(
    (await json('GET', '/demo/discussions/spam')).discussions.map((d: { title: string }) => d.title).sort(),
    ['Flagged', 'Microsoft', 'Status only'],
  )
  t.equal((await json('GET', '/demo/discussions/4')).state, 'new')
  t.equal((await left()).mails.length, 2, 'only the one that is not spam was acknowledged and told')
  await json('POST', '/demo/sender_rules', { pattern: 'customer.example', verdict: 'allow' })
  await send({ subject: 'Flagged but allowed', text: 'x', headers: { 'X-Spam-Flag': 'YES' } })
  t.equal((await json('GET', '/demo/discussions/5')).state, 'new', "an allowed domain's mail is not spam, whatever a header says")

  const { send: sendOff, json: jsonOff } = await (async () => {
    const smtp = await mailServer(t)
    const made = await mailDesk(t, { config: { mail: { smtpUrl: smtp.url, from: 'Desk <desk@acme.example>' }, mailSpamHeaders: false } })
    return { send: made.send, json: async (url: string) => (await made.app.inject({ method: 'GET', url, headers: made.ann.bearer })).json() }
  })()
  await sendOff({ subject: 'Flagged', text: 'x', headers: { 'X-Spam-Flag': 'YES' } })
  t.equal((await jsonOff('/demo/discussions/1')).state, 'new', 'the operator does not trust the headers: read by no one')
})

t.test('the spam pages: the queue has a Spam tab, the discussion says it is spam and offers Not spam', async (t) => {
  const { app, send, json } = await desk(t)
  await json('POST', '/demo/sender_rules', { pattern: 'carol@customer.example', verdict: 'block' })
  await send({ subject: 'Wrongly blocked', text: 'Help.' })
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const web = webClient(app)
  await web.signIn(pat.email, pat.password)
  t.notMatch((await web.get('/demo/discussions')).body, /Wrongly blocked/, 'not in the queue')
  const tab = await web.get('/demo/discussions?state=spam')
  t.match(tab.body, /Wrongly blocked/)
  const page = await web.get('/demo/discussions/1')
  t.match(page.body, /data-spam>This discussion is marked spam/)
  t.match(page.body, /data-spam-reason>Taken for spam: its sender is blocked on this site \(carol@customer\.example\)/, 'the page says why')
  t.match(page.body, /value="not_spam"/)
  t.notMatch(page.body, /value="resolve"/, 'nothing resolves spam')
  t.equal((await web.post('/demo/discussions/1/act', { action: 'not_spam' })).statusCode, 303)
  t.match((await web.get('/demo/discussions/1?done=not_spam')).body, /its sender is allowed/)
  t.equal((await json('GET', '/demo/discussions/1')).state, 'new')
  t.same((await json('GET', '/demo/sender_rules')).sender_rules.map((r: { verdict: string }) => r.verdict), ['allow'], 'the block on the address is replaced by an allow')
  // A supporter marks a discussion spam from its page.
  await web.get('/demo/discussions/1')
  t.equal((await web.post('/demo/discussions/1/act', { action: 'spam' })).statusCode, 303)
  t.equal((await json('GET', '/demo/discussions/1')).state, 'spam')
})

t.test("a spam discussion's page blocks its sender in one click, for an administrator: the address, or everyone at its domain", onSqlite("the page's block buttons and who may press them"), async (t) => {
  const { app, ann, send, json } = await desk(t)
  await send({ from: 'offers@mail.spammer.example', subject: 'Pills', text: 'Buy.', headers: { 'X-Spam-Flag': 'YES' } })
  await send({ subject: 'A question', text: 'Hello.' })
  // A supporter who is not an administrator sees no block, and the form posted anyway is refused.
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const supporter = webClient(app)
  await supporter.signIn(pat.email, pat.password)
  t.notMatch((await supporter.get('/demo/discussions/1')).body, /data-block/)
  t.equal((await supporter.post('/demo/discussions/1/block', { sender: 'domain' })).statusCode, 403)
  t.same((await json('GET', '/demo/sender_rules')).sender_rules, [], 'nothing blocked by them')

  const admin = await personWithPassword(app, { email: 'ada@example.test' })
  await app.users.setAdministrator(ann.site.id, admin.user.id, true)
  const web = webClient(app)
  await web.signIn(admin.email, admin.password)
  const page = (await web.get('/demo/discussions/1')).body
  t.match(page, /<button type="submit" name="sender" value="address"[^>]*>Block offers@mail\.spammer\.example<\/button>/)
  t.match(page, /<button type="submit" name="sender" value="domain"[^>]*>Block everyone at mail\.spammer\.example<\/button>/)
  t.notMatch((await web.get('/demo/discussions/2')).body, /data-block/, 'a discussion that is not spam offers no block')
  t.equal((await web.post('/demo/discussions/2/block', { sender: 'address' })).statusCode, 409, 'nor takes one')
  t.equal((await web.post('/demo/discussions/1/block', { sender: 'everyone' })).statusCode, 409)
  t.equal((await web.post('/demo/discussions/1/block', { sender: 'domain' })).statusCode, 303)
  t.match((await web.get('/demo/discussions/1?done=blocked')).body, /The sender is blocked/)
  t.same((await json('GET', '/demo/sender_rules')).sender_rules.map((r: { pattern: string; verdict: string }) => [r.pattern, r.verdict]), [['mail.spammer.example', 'block']])
  // Their next mail, with no header to give it away, is spam for the rule's reason.
  await send({ from: 'sales@mail.spammer.example', subject: 'More pills', text: 'Buy more.' })
  t.equal((await json('GET', '/demo/discussions/3')).state, 'spam')
  t.same(blockChoices('root@localhost'), {}, 'an address of no domain a rule may name offers nothing')
  t.same(blockChoices('Ann@Example.COM'), { address: 'ann@example.com', domain: 'example.com' })
})

t.test("the sender rules are the site's administrators': a supporter, another site's administrator and odd patterns are refused", async (t) => {
  const { app, api, json } = await desk(t)
  const { id } = await json('POST', '/demo/sender_rules', { pattern: 'spammer.example', verdict: 'block' })
  const supporter = await supporterWithToken(app, { email: 'sam@example.test' })
  t.equal((await api('GET', '/demo/sender_rules', undefined, supporter.bearer)).statusCode, 403)
  t.equal((await api('POST', '/demo/sender_rules', { pattern: 'x.example', verdict: 'allow' }, supporter.bearer)).statusCode, 403)
  t.equal((await api('DELETE', `/demo/sender_rules/${id}`, undefined, supporter.bearer)).statusCode, 403)
  const olga = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  await app.users.setAdministrator(olga.site.id, olga.user.id, true)
  t.equal((await api('DELETE', `/other/sender_rules/${id}`, undefined, olga.bearer)).statusCode, 404, "another site's rule is not found from there")
  t.equal((await api('GET', '/other/sender_rules', undefined, olga.bearer)).json().sender_rules.length, 0)
  for (const pattern of ['com', 'a@b', 'not an address', 'ann@exa mple.com', 'ünïcödé.example', 'x\u0000.example', '@', '-bad.example']) {
    const res = await api('POST', '/demo/sender_rules', { pattern, verdict: 'block' })
    t.equal(res.statusCode, 400, `"${pattern}" is refused`)
    t.match(res.json(), { error: 'invalid_request' })
  }
  t.equal((await api('POST', '/demo/sender_rules', { pattern: 'x.example', verdict: 'maybe' })).statusCode, 400)
  // A rule set again replaces the one it had: one rule a pattern.
  await json('POST', '/demo/sender_rules', { pattern: 'SPAMMER.example', verdict: 'allow' })
  t.same((await json('GET', '/demo/sender_rules')).sender_rules.map((r: { pattern: string; verdict: string }) => [r.pattern, r.verdict]), [['spammer.example', 'allow']])
  t.equal((await api('DELETE', `/demo/sender_rules/${id}`)).statusCode, 204)
  t.equal((await api('DELETE', `/demo/sender_rules/${id}`)).statusCode, 404)
  t.equal(await app.senders.verdictFor(1, 'no address at all'), undefined, 'what is not an address has no rule')

  // At most MAX_SENDER_RULES a site: the next is refused, a rule set again is not a new one.
  const site = (await app.sites.find('demo'))!
  const generated = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${MAX_SENDER_RULES})
    INSERT INTO sender_rules (site_id, pattern, verdict, created_at) SELECT ?, 'd' || i || '.example', 'block', ? FROM n`
  await rawStatement(app, generated, [site.id, new Date()])
  t.equal((await json('GET', '/demo/sender_rules')).sender_rules.length, MAX_SENDER_RULES)
  t.match((await api('POST', '/demo/sender_rules', { pattern: 'one-more.example', verdict: 'block' })).json(), { error: 'conflict', message: /has 2000 sender rules, the most it keeps/ })
  t.equal((await api('POST', '/demo/sender_rules', { pattern: 'd7.example', verdict: 'allow' })).statusCode, 201, 'one it has, set again')
})

t.test('the sender rules on the command line: block, allow, list, remove, and what is refused', onSqlite("the sender commands' output and refusals"), async (t) => {
  const { run } = await cliRunner(t)
  await run(['site', 'add', 'acme'])
  const blocked = await run(['sender', 'block', 'acme', '*.Spammer.Example'])
  t.match(blocked, { code: 0, stdout: /^1\tblock\tspammer\.example\t\d{4}-\d\d-\d\dT/ })
  t.match(await run(['sender', 'allow', 'acme', 'Offers@Spammer.example']), { code: 0, stdout: /^2\tallow\toffers@spammer\.example\t/ })
  const listed = await run(['sender', 'list', 'acme'])
  t.same(listed.stdout.split('\n').filter(Boolean).map((l) => l.split('\t').slice(0, 3)), [['2', 'allow', 'offers@spammer.example'], ['1', 'block', 'spammer.example']], 'by pattern')
  t.match(await run(['sender', 'block', 'acme', 'com']), { code: 1, stderr: /must be an email address .* or a domain/ })
  t.match(await run(['sender', 'remove', 'acme', 'one']), { code: 2, stderr: /a sender rule id is a number, not "one"/ })
  t.match(await run(['sender', 'remove', 'acme', '9']), { code: 1, stderr: /there is no sender rule 9 on this site/ })
  t.same(await run(['sender', 'remove', 'acme', '1']), { code: 0, stdout: 'sender rule 1 of acme removed\n', stderr: '' })
  t.equal((await run(['sender', 'list', 'acme'])).stdout.split('\n').filter(Boolean).length, 1)
})
