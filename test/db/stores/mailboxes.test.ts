import t from 'tap'
import { buildTestApp, supporterWithToken } from '../../fixtures/app.ts'

// Engines: both: a fetch's lease, its place and a message taken are each one conditional statement,
// which each engine must make all-or-nothing alike.
// The mail store's side of fetching (db/stores/mail.ts), asked directly with the clock moved by
// hand: one process fetches a mailbox at a time (the lease, taken over from a holder known to be
// gone, let go at once), the place moves only from where its holder read it, what is put off is
// written by the holder only, and a message is taken once. Dovecot and real processes ask the same
// through the fetcher: test/mail/imap.test.ts, test/mail/imap-process.test.ts.

/** The app (it never looks at its mailboxes by itself here), a site with a category, and a mailbox fetched over IMAP from nowhere. */
async function mailbox(t: Parameters<typeof buildTestApp>[0]) {
  const { app, clock } = await buildTestApp(t, { config: { mailFetchSeconds: 86_400 } })
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const category = await app.categories.add(ann.site.id, 'General', true)
  const settings = { host: '127.0.0.1', port: 1, secure: false, user: 'support', password: 'support-password', folder: 'INBOX' }
  const box = await app.mailboxes.addMailbox(ann.site.id, 'support@acme.example', { imap: settings })
  return { app, clock, ann, category, box }
}

t.test("a lease is one process's while it lasts; taken when it ends, from a holder known gone, or at once when let go", async (t) => {
  const { app, clock, box } = await mailbox(t)
  const lease = (owner: string, gone?: string) => app.mailboxes.lease(box.id, owner, 60_000, gone)
  t.match(await lease('one'), { id: box.id, leaseOwner: 'one' })
  t.equal(await lease('two'), undefined, 'not while the lease of one lasts')
  t.match(await lease('one'), { leaseOwner: 'one' }, 'its holder renews it')
  t.equal(await lease('two', 'someone else'), undefined, 'a holder said gone that is not the holder changes nothing')
  t.match(await lease('two', 'one'), { leaseOwner: 'two' }, 'taken over from a holder known gone')
  clock.advance(60_001)
  t.match(await lease('three'), { leaseOwner: 'three' }, 'an ended lease is anyone’s')
  await app.mailboxes.release(box.id, 'two')
  t.equal(await lease('two'), undefined, 'let go by one that no longer holds it: nothing changes')
  await app.mailboxes.release(box.id, 'three')
  t.match(await lease('two'), { leaseOwner: 'two' }, 'let go by its holder: taken at once')
  t.equal(await app.mailboxes.lease(999_999, 'two', 60_000), undefined, 'no such mailbox')
})

t.test('the place moves only for the holder, only from where it was read; what is put off is written by the holder only', async (t) => {
  const { app, box } = await mailbox(t)
  await app.mailboxes.lease(box.id, 'one', 60_000)
  const move = (owner: string, from: string | null, to: string) => app.mailboxes.advance(box.id, { owner, from, to, leaseMs: 60_000 })
  await t.rejects(move('two', null, '7:1'), { code: 'conflict', field: 'imap_position' }, 'not the holder')
  await move('one', null, '7:1')
  await t.rejects(move('one', null, '7:2'), { code: 'conflict', field: 'imap_position' }, 'the place is no longer what was read')
  await move('one', '7:1', '7:2')
  const moved = (await app.mailboxes.byId(box.id))!
  t.equal(moved.imapPosition, '7:2')

  await t.rejects(app.mailboxes.defer(box.id, 'two', '7', [[3, 'dan@customer.example']]), { code: 'conflict', field: 'imap_position' }, 'put off by another: refused')
  await app.mailboxes.defer(box.id, 'one', '7', [[3, 'dan@customer.example'], [4, 'eve@customer.example']])
  const deferred = (await app.mailboxes.byId(box.id))!
  t.same(await app.mailboxes.deferred(deferred, '7'), [[3, 'dan@customer.example'], [4, 'eve@customer.example']])
  t.same(await app.mailboxes.deferred(deferred, '8'), [], 'another UIDVALIDITY: none of them')
  await app.mailboxes.defer(box.id, 'one', '7', [])
  t.same(await app.mailboxes.deferred((await app.mailboxes.byId(box.id))!, '7'), [], 'none left')
})

t.test('a message passed over is said on the mailbox, the newest only, within 500 characters', async (t) => {
  const { app, clock, box } = await mailbox(t)
  await app.mailboxes.passedOver(box.id, 'uid 3: 1,001 parts')
  t.equal((await app.mailboxes.byId(box.id))!.passedOver, `${new Date(clock()).toISOString()} uid 3: 1,001 parts`)
  clock.advance(1000)
  await app.mailboxes.passedOver(box.id, `uid 4: ${'x'.repeat(600)}`)
  const said = (await app.mailboxes.byId(box.id))!.passedOver!
  t.equal(said.length, 500)
  t.ok(said.startsWith(`${new Date(clock()).toISOString()} uid 4: xxx`), 'the newest')
})

t.test('a message is taken once: the second record of its Message-ID is a conflict', async (t) => {
  const { app, ann, category, box } = await mailbox(t)
  const made = await app.discussions.create({ siteId: ann.site.id, categoryId: category.id, title: 'By mail', body: 'Hello', supporterId: ann.user.id, via: 'email' })
  const taken = { siteId: ann.site.id, mailboxId: box.id, messageId: '<one@customer.example>', discussionId: made.discussion.id, commentId: made.comment.id, sender: 'dan@customer.example', automatic: false, senderVerified: null }
  await app.mailboxes.record(taken)
  await t.rejects(app.mailboxes.record(taken), { code: 'conflict', field: 'message_id' })
  await app.mailboxes.record({ ...taken, messageId: '<two@customer.example>' })
  t.pass('another Message-ID is taken')
})
