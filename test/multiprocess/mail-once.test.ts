import t from 'tap'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL, supporterWithToken } from '../fixtures/app.ts'
import { mailServer } from '../fixtures/mail.ts'
import { sharedDatabase } from './two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Issue 63: an SMTP server slower than the outbox's lease, and two processes sending the outbox:
// the one that took the row keeps its lease while the server takes its time, so the other never
// sends it too, and only the claim that still holds the lease writes the outcome. On the suite's
// engine, two apps on one database with the wall clock (leases are wall time).

// Long enough that a loaded machine's pauses (a third of it between renewals) do not end a lease that is held.
const LEASE_MS = 1_500

t.test('an SMTP server slower than the lease, two processes sending: the customer gets one copy', async (t) => {
  const smtp = await mailServer(t, { answerAfterMs: 4 * LEASE_MS })
  const database = await sharedDatabase(t)
  const config = { baseUrl: BASE_URL, siteUrl: SITE_URL, ...database, mail: { smtpUrl: smtp.url, from: 'Desk <desk@acme.example>' }, outboxSend: false }
  const [one, two] = [0, 1].map(() => buildApp({ config, clock: Date.now, outboxLeaseMs: LEASE_MS }))
  for (const app of [one!, two!]) t.teardown(() => app.close())
  await one!.ready()
  await two!.ready()
  const ann = await supporterWithToken(one!, { email: 'ann@example.test' })
  const general = await one!.categories.add(ann.site.id, 'General', true)
  // A customer's discussion of the web pages: the staff's reply to it is mailed to them.
  const { discussion } = await one!.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'It smokes.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'web' })
  await one!.discussions.reply({ siteId: ann.site.id, number: discussion.number, body: 'Unplug it.', internal: false, supporterId: ann.user.id, via: 'api' })

  const first = one!.sendOutbox()
  // The other process looks twice while the server still takes the first send, each time past the first lease's end.
  await new Promise((resolve) => setTimeout(resolve, 1.5 * LEASE_MS))
  t.equal(await two!.sendOutbox(), 0, 'the other process finds the row held')
  await new Promise((resolve) => setTimeout(resolve, LEASE_MS))
  t.equal(await two!.sendOutbox(), 0, 'and still held')
  t.equal(await first, 1, 'sent by the first')
  t.equal(smtp.mails.length, 1, 'one copy reached the customer')
  const reply = (await one!.inject({ url: `/demo/discussions/${discussion.number}/comments/2`, headers: ann.bearer })).json()
  t.match(reply.delivery, { state: 'sent', attempts: 1, to: 'carol@customer.example' })
})

t.test("a send whose lease another took meanwhile writes no outcome; a renewal the database refuses keeps the lease it had", async (t) => {
  const smtp = await mailServer(t, { answerAfterMs: 4 * LEASE_MS })
  const config = { baseUrl: BASE_URL, siteUrl: SITE_URL, ...(await sharedDatabase(t)), mail: { smtpUrl: smtp.url, from: 'Desk <desk@acme.example>' }, outboxSend: false }
  const app = buildApp({ config, clock: Date.now, outboxLeaseMs: LEASE_MS })
  t.teardown(() => app.close())
  await app.ready()
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const { discussion } = await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'It smokes.', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'web' })
  await app.discussions.reply({ siteId: ann.site.id, number: discussion.number, body: 'Unplug it.', internal: false, supporterId: ann.user.id, via: 'api' })
  // The first renewal meets a database away (the lease it had is kept); the second finds the row claimed by another.
  const renew = app.outbox.renew
  const asked: string[] = []
  app.outbox.renew = async () => {
    asked.push(asked.length === 0 ? 'refused' : 'lost')
    if (asked.length === 1) throw new Error('the database cannot be reached')
    return undefined
  }
  t.teardown(() => void (app.outbox.renew = renew))
  t.equal(await app.sendOutbox(), 0, 'not counted as sent by this claim')
  t.same(asked.slice(0, 2), ['refused', 'lost'])
  t.equal(smtp.mails.length, 1, 'the server took it')
  const reply = (await app.inject({ url: `/demo/discussions/${discussion.number}/comments/2`, headers: ann.bearer })).json()
  t.match(reply.delivery, { state: 'queued', attempts: 0 }, 'its outcome is the new claim\'s to write, not this one\'s')
})
