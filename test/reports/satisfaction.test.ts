import { simpleParser } from 'mailparser'
import t, { type Test } from 'tap'
import { rawRows } from '../fixtures/app.ts'
import { mailServer } from '../fixtures/mail.ts'
import { mailDesk } from '../fixtures/mail-desk.ts'
import { webClient } from '../fixtures/web.ts'

// Engines: both: a rating is written under the discussion's row lock with its day rows, its
// change and its webhook event; each engine must keep them alike.
// Issue 69, item 3: a reply mailed while its discussion is resolved carries a signed rating link (a
// real SMTP server catches it); following it shows the question, sending records the rating once per
// discussion, changeable for 7 days; a link is never good for another discussion, nor for a
// resolution that is not the last; the site's setting turns the links off.

const DAY = 24 * 60 * 60 * 1000

async function ratingDesk(t: Test) {
  const smtp = await mailServer(t)
  const { app, clock, ann, send: customerSends } = await mailDesk(t, { config: { mail: { smtpUrl: smtp.url, from: 'Service Desk <desk@acme.example>' } } })
  const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => app.inject({ method, url, headers: ann.bearer, ...(payload ? { payload } : {}) })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  await customerSends({ subject: 'Printer on fire', messageId: '<first@customer.example>', text: 'It smokes.' })
  await customerSends({ subject: 'Another question', messageId: '<second@customer.example>', text: 'And this?' })
  /** The rating link of the last mail sent, as the customer reads it. */
  const mailedLink = async () => {
    await app.sendOutbox()
    const mail = await simpleParser(smtp.mails[smtp.mails.length - 1]!.raw)
    const good = /^Good: (\S+)$/m.exec(mail.text ?? '')?.[1]
    return { text: mail.text ?? '', good, link: good?.replace(/\?rating=good$/, '') }
  }
  return { app, clock, ann, smtp, api, mailedLink }
}

t.test('the resolving reply carries a rating link; it rates its own discussion once, changeable for 7 days', async (t) => {
  const { app, clock, api, mailedLink } = await ratingDesk(t)
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'Unplug it.' })).statusCode, 201)
  t.notMatch((await mailedLink()).text, /How did we do/, 'a reply that leaves it open asks nothing')

  // The reply, then the resolution (as an API client does): the mail leaves while it is resolved.
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'Fixed, I think.' })).statusCode, 201)
  t.equal((await api('POST', '/demo/discussions/1/resolve')).statusCode, 200)
  const { text, good, link } = await mailedLink()
  t.match(text, /How did we do\? Rate this answer:\nGood: https:\/\/help\.example\.test\/demo\/help\/rate\/\S+\?rating=good\nNot good: \S+\?rating=not_good/)
  t.ok(good)

  const customer = webClient(app)
  const page = await customer.get(good!)
  t.equal(page.statusCode, 200)
  t.match(page.body, /<input type="radio" name="rating" value="good" required checked>/, 'the choice of the link is made, not sent: following a link records nothing')
  t.equal((await api('GET', '/demo/discussions/1')).json().satisfaction, null, 'nothing recorded by following it')

  const sent = await customer.post(link!, { rating: 'good', comment: 'Quick, thanks!' })
  t.equal(sent.statusCode, 200)
  t.match(sent.body, /Thank you/)
  const rated = (await api('GET', '/demo/discussions/1')).json()
  t.match(rated.satisfaction, { rating: 'good', comment: 'Quick, thanks!', rated_at: '2026-03-01T12:00:00Z' })
  const events = await rawRows(app, "select payload from outbox where kind = 'webhook'")
  t.equal(events.length, 0, 'no endpoint: no webhook row')

  // Changed two days later: still one rating, counted on the day it was first given.
  clock.advance(2 * DAY)
  await customer.get(link!)
  t.equal((await customer.post(link!, { rating: 'not_good', comment: 'It smokes again.' })).statusCode, 200)
  const changed = (await api('GET', '/demo/discussions/1')).json().satisfaction
  t.same([changed.rating, changed.comment, changed.rated_at], ['not_good', 'It smokes again.', '2026-03-01T12:00:00Z'])
  const report = (await api('GET', '/demo/reports/satisfaction?from=2026-03-01&to=2026-03-03')).json()
  t.match(report.total, { good: 0, not_good: 1, good_percent: 0 }, 'one discussion, one rating')
  t.match(report.lines[0], { key: '2026-03-01', not_good: 1 })

  // Eight days after the resolution: closed.
  clock.advance(6 * DAY)
  await customer.get(link!)
  const late = await customer.post(link!, { rating: 'good' })
  t.equal(late.statusCode, 410)
  t.match(late.body, /more than 7 days ago/)
})

t.test('a link is good for its own discussion only: another number, an altered digest, a reopened discussion', async (t) => {
  const { app, api, mailedLink } = await ratingDesk(t)
  await api('POST', '/demo/discussions/1/comments', { body: 'Done.' })
  await api('POST', '/demo/discussions/1/resolve')
  const { link } = await mailedLink()
  t.equal((await api('POST', '/demo/discussions/2/resolve')).statusCode, 200)
  const stranger = webClient(app)
  // The same token with discussion 2's number in it (both resolved): its digest is discussion 1's.
  const [, number, rest] = /\/rate\/([0-9a-z]+)(-.*)$/.exec(link!)!
  t.equal(number, '1')
  const other = link!.replace(`/rate/1${rest}`, `/rate/2${rest}`)
  t.equal((await stranger.get(other)).statusCode, 404, "discussion 1's token names discussion 2: refused")
  const altered = link!.slice(0, -1) + (link!.endsWith('0') ? '1' : '0')
  t.equal((await stranger.get(altered)).statusCode, 404, 'an altered digest: refused')
  t.equal((await stranger.get(link!.replace(/\/rate\/.*/, '/rate/nonsense'))).statusCode, 404)
  await stranger.get(link!)
  t.equal((await stranger.post(other, { rating: 'good' })).statusCode, 404, 'nor sent, with a form of the right page')
  t.equal((await api('GET', '/demo/discussions/2')).json().satisfaction, null)

  // Reopened by the customer's next mail, the link of that resolution no longer rates it.
  t.equal((await api('POST', '/demo/discussions/1/unresolve')).statusCode, 200)
  await stranger.get(link!)
  const reopened = await stranger.post(link!, { rating: 'good' })
  t.equal(reopened.statusCode, 410)
  t.match(reopened.body, /opened again since this link was sent/)
  t.equal((await api('GET', '/demo/discussions/1')).json().satisfaction, null)
})

t.test('the site turns ratings off: no links in the mail, and the links sent before stop working', async (t) => {
  const { app, api, mailedLink } = await ratingDesk(t)
  await api('POST', '/demo/discussions/1/comments', { body: 'Done.' })
  await api('POST', '/demo/discussions/1/resolve')
  const { link } = await mailedLink()
  t.equal((await api('PATCH', '/demo/policy', { satisfaction: false })).statusCode, 200)
  t.equal((await api('GET', '/demo/policy')).json().satisfaction, false)
  t.equal((await webClient(app).get(link!)).statusCode, 410)
  await api('POST', '/demo/discussions/2/comments', { body: 'Also done.' })
  await api('POST', '/demo/discussions/2/resolve')
  t.notMatch((await mailedLink()).text, /How did we do/)
})

t.test('a bad rating form is refused with its reason; a webhook hears satisfaction.rated', async (t) => {
  const { app, ann, api, mailedLink } = await ratingDesk(t)
  const hook = await api('POST', '/demo/webhooks', { url: 'https://hooks.example.test/in', events: ['satisfaction.rated'] })
  t.equal(hook.statusCode, 201, hook.body)
  await api('POST', '/demo/discussions/1/comments', { body: 'Done.' })
  await api('POST', '/demo/discussions/1/resolve')
  const { link } = await mailedLink()
  const customer = webClient(app)
  await customer.get(link!)
  t.equal((await customer.post(link!, { rating: 'excellent' })).statusCode, 400)
  await customer.get(link!)
  t.equal((await customer.post(link!, { comment: 'No choice made.' })).statusCode, 400, 'no rating chosen')
  await customer.get(link!)
  t.equal((await customer.post(link!, { rating: 'good', comment: 'x'.repeat(2001) })).statusCode, 400)
  t.equal((await customer.request('POST', link!, { rating: 'good' })).statusCode, 403, 'without the form\'s CSRF token')
  await customer.get(link!)
  t.equal((await customer.post(link!, { rating: 'good' })).statusCode, 200)
  await customer.get(link!)
  t.equal((await customer.post(link!, { rating: 'good' })).statusCode, 200, 'the same rating again')
  const events = (await rawRows(app, "select payload from outbox where kind = 'webhook'")).map((r) => JSON.parse(String(r.payload)))
  t.same(events.map((e) => e.type), ['satisfaction.rated'], 'told once: the same rating again changes nothing')
  t.match(events[0].data, { number: 1, satisfaction: { rating: 'good', comment: '' } })

  // Made again from the facts, the rating is still counted (the rebuild reads `rating`).
  t.equal(await app.reports.rebuild(ann.site.id), 2)
  t.match((await api('GET', '/demo/reports/satisfaction?from=2026-03-01&to=2026-03-01')).json().total, { good: 1, not_good: 0 })
  // The weekly digest goes from the site's mailbox, to the administrator who asked.
  await app.users.setNotifications(ann.site.id, ann.user.id, { newDiscussions: false, owned: true, digest: true })
  t.equal(await app.reportDigest.sendDue(), 1)
  const digest = (await rawRows(app, "select payload from outbox where kind = 'notification' order by id desc limit 1")).map((r) => JSON.parse(String(r.payload)))[0]
  t.match(digest, { to: ann.user.email, from: 'Site demo <support@acme.example>', subject: '[Site demo] The week of 2026-02-16' })
})
