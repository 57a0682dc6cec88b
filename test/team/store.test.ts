import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { NO_ASSIGNEE } from '../../db/stores/discussion-counts.ts'
import type { ListingQuery } from '../../db/stores/discussion-listing.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The team's queue in the stores (docs/decisions.md, "The team's queue"), on the suite's engine:
// owners among the site's staff only, the counts kept per owner as the listing finds them, owners
// let go when they leave, the turns of a round-robin category, tags, and the notifications queued
// with their cause.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

async function team(t: Parameters<typeof buildTestApp>[0]) {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test', teamHearsOfNew: true })
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const billing = await app.categories.add(ann.site.id, 'Billing', false)
  const open = (title: string, categoryId = general.id, email = 'carol@customer.example') =>
    app.discussions.create({ siteId: ann.site.id, categoryId, title, body: `About ${title}`, supporterId: ann.user.id, onBehalfOf: { email, name: 'Carol Customer' }, via: 'api' }).then((r) => r.discussion)
  return { app, clock, ann, bob, general, billing, open, siteId: ann.site.id }
}

/** What the listing finds, by number, and the total it says. */
async function listed(app: App, query: Omit<ListingQuery, 'sort' | 'offset' | 'limit'>) {
  const { total, discussions } = await app.discussions.list({ sort: 'activity', offset: 0, limit: 100, ...query })
  return { total, numbers: discussions.map((d) => d.number).sort((a, b) => a - b) }
}

t.test('an owner is a supporter of the site whose account is on; the counts follow each owner', async (t) => {
  const { app, ann, bob, general, billing, open, siteId } = await team(t)
  const [d1, d2, d3] = [await open('One'), await open('Two', billing.id), await open('Three')]
  const given = await app.discussions.update(siteId, d1.number, { assigneeId: bob.user.id, actor: ann.user })
  t.equal(given.assigneeId, bob.user.id)
  t.equal(given.assigneeName, bob.user.name, 'the owner read with the discussion')
  t.equal((await app.discussions.get(siteId, d1.number)).assigneeName, bob.user.name)
  await app.discussions.update(siteId, d2.number, { assigneeId: bob.user.id })
  await app.discussions.update(siteId, d3.number, { assigneeId: ann.user.id })

  // The attacker's side: a customer, another site's supporter, an unknown id, a switched-off account.
  const customer = (await app.discussions.get(siteId, d1.number)).authorId
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  const dora = await supporterWithToken(app, { email: 'dora@example.test' })
  await app.users.setDisabled('dora@example.test', true)
  for (const [who, id] of [['a customer', customer], ["another site's supporter", otto.user.id], ['nobody', 999_999], ['a switched-off supporter', dora.user.id], ['past every id', 2 ** 53]] as const) {
    await t.rejects(app.discussions.update(siteId, d1.number, { assigneeId: id }), { code: 'invalid', field: 'assignee' }, who)
  }
  t.equal((await app.discussions.get(siteId, d1.number)).assigneeId, bob.user.id, 'unchanged')

  for (const state of ['todo', 'live', 'new'] as const) {
    for (const [assignee, numbers] of [[bob.user.id, [1, 2]], [ann.user.id, [3]], [NO_ASSIGNEE, []]] as const) {
      const found = await listed(app, { siteId, state, assignee })
      t.same(found.numbers, numbers, `${state}, owner ${assignee}`)
      t.equal(await app.discussions.counts.total({ siteId, state, assignee }), numbers.length, 'the kept count says the same')
    }
  }
  t.same((await listed(app, { siteId, state: 'todo', assignee: bob.user.id, categoryId: general.id })).numbers, [1], 'with a category')
  t.equal(await app.discussions.counts.total({ siteId, state: 'todo', assignee: bob.user.id, categoryId: general.id }), 1)
  // The queue's counts by state and owner (routes/web/queue.ts), for the site and for one category.
  const owned = async (categoryId?: number) =>
    (await app.discussions.counts.byStateAndOwner(siteId, categoryId)).filter((row) => row.n > 0).map((row) => `${row.state} ${row.assigneeId} ${row.n}`).sort()
  const { state } = await app.discussions.get(siteId, d1.number)
  t.same(await owned(), [`${state} ${ann.user.id} 1`, `${state} ${bob.user.id} 2`].sort())
  t.same(await owned(general.id), [`${state} ${ann.user.id} 1`, `${state} ${bob.user.id} 1`].sort(), 'one category: Two is in billing')
  t.same(await owned(billing.id), [`${state} ${bob.user.id} 1`])

  // Resolved, moved, given to nobody: each count moves with it.
  await app.discussions.act(siteId, d1.number, 'resolve')
  await app.discussions.update(siteId, d3.number, { assigneeId: null })
  t.same((await listed(app, { siteId, state: 'todo', assignee: bob.user.id })).numbers, [2])
  t.same((await listed(app, { siteId, state: 'resolved', assignee: bob.user.id })).numbers, [1])
  t.same((await listed(app, { siteId, state: 'todo', assignee: NO_ASSIGNEE })).numbers, [3])
  t.equal(await app.discussions.counts.total({ siteId, state: 'todo', assignee: NO_ASSIGNEE }), 1)
  t.equal(await app.discussions.counts.total({ siteId, state: 'live' }), 3, 'the counts without an owner sum every owner')

  // Bob leaves the staff: what he owned is nobody's, counts included, in the same transaction.
  t.ok(await app.users.removeStaff(siteId, bob.user.id))
  t.same((await listed(app, { siteId, state: 'live', assignee: NO_ASSIGNEE })).numbers, [1, 2, 3])
  t.equal(await app.discussions.counts.total({ siteId, state: 'live', assignee: NO_ASSIGNEE }), 3)
  t.equal(await app.discussions.counts.total({ siteId, state: 'live', assignee: bob.user.id }), 0)
  t.equal(await app.discussions.counts.total({ siteId, state: 'resolved', assignee: NO_ASSIGNEE }), 1)

  // So does a switched-off account, on every site.
  await app.discussions.update(siteId, d2.number, { assigneeId: ann.user.id })
  const elsewhere = await app.categories.add(otto.site.id, 'Elsewhere', true)
  await app.users.addStaff(otto.site.id, ann.user.id)
  const theirs = (await app.discussions.create({ siteId: otto.site.id, categoryId: elsewhere.id, title: 'There', body: 'x', supporterId: otto.user.id, via: 'api' })).discussion
  await app.discussions.update(otto.site.id, theirs.number, { assigneeId: ann.user.id })
  await app.users.setDisabled(ann.user.email, true)
  t.equal((await app.discussions.get(siteId, d2.number)).assigneeId, null)
  t.equal((await app.discussions.get(otto.site.id, theirs.number)).assigneeId, null, 'on the other site too')
  t.equal(await app.discussions.counts.total({ siteId: otto.site.id, state: 'live', assignee: ann.user.id }), 0)
})

t.test('a round-robin category gives the discussions customers start to each supporter in turn', async (t) => {
  const { app, ann, bob, general, billing, open, siteId } = await team(t)
  t.ok(await app.categories.change(siteId, general.id, { roundRobin: true }))
  t.equal(await app.categories.change(siteId, 999_999, { roundRobin: true }), undefined, 'no such category')
  const owners = []
  for (let i = 0; i < 5; i++) owners.push((await open(`Turn ${i}`)).assigneeId)
  const [first, second] = [ann.user.id, bob.user.id].sort((a, b) => a - b)
  t.same(owners, [first, second, first, second, first], 'in the order of their ids, from the first again at the end')
  t.equal((await open('Elsewhere', billing.id)).assigneeId, null, 'another category: nobody')
  const bySupporter = await app.discussions.create({ siteId, categoryId: general.id, title: 'Mine', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.equal(bySupporter.discussion.assigneeId, null, 'a discussion a supporter starts is not given in turn')
  // Neither a collaborator nor a switched-off account is given a turn: two in a row to Ann.
  t.equal(await app.users.setStaffRole(siteId, bob.user.id, 'collaborator'), true)
  t.same([(await open('Bob a collaborator')).assigneeId, (await open('Still one')).assigneeId], [ann.user.id, ann.user.id], 'a collaborator is skipped')
  t.equal(await app.users.setStaffRole(siteId, bob.user.id, 'supporter'), true)
  await app.users.setDisabled(bob.user.email, true)
  t.same([(await open('Bob switched off')).assigneeId, (await open('Still off')).assigneeId], [ann.user.id, ann.user.id], 'a switched-off account is skipped')
  await app.users.setDisabled(bob.user.email, false)
  await app.users.removeStaff(siteId, bob.user.id)
  t.equal((await open('After Bob left')).assigneeId, ann.user.id, 'who left is skipped')
  await app.users.removeStaff(siteId, ann.user.id)
  t.equal((await open('Nobody left')).assigneeId, null, 'no supporter: nobody')
})

t.test('tags: kept in one form, found by the listing, refused with the reason', async (t) => {
  const { app, open, siteId } = await team(t)
  const [d1, d2] = [await open('One'), await open('Two')]
  const tagged = await app.discussions.update(siteId, d1.number, { tags: ['VIP', 'Billing Issue', 'vip', ' café '] })
  t.equal(tagged.tags, 'billing-issue café vip', 'lower case, spaces as -, repeats once, sorted')
  await app.discussions.update(siteId, d2.number, { tags: ['vip'] })
  t.same((await listed(app, { siteId, state: 'live', tag: 'vip' })).numbers, [1, 2])
  t.same((await listed(app, { siteId, state: 'live', tag: 'café' })), { total: 1, numbers: [1] })
  t.same((await listed(app, { siteId, state: 'todo', tag: 'billing-issue', assignee: NO_ASSIGNEE })).numbers, [1], 'with the other filters')
  await app.discussions.update(siteId, d1.number, { tags: ['billing-issue'] })
  t.same((await listed(app, { siteId, state: 'live', tag: 'vip' })).numbers, [2], 'a tag taken off is no longer found')
  await app.discussions.update(siteId, d2.number, { tags: [] })
  t.same((await listed(app, { siteId, state: 'live', tag: 'vip' })), { total: 0, numbers: [] })
  const version = (await app.discussions.get(siteId, d1.number)).version
  await app.discussions.update(siteId, d1.number, { tags: ['Billing Issue'] })
  t.equal((await app.discussions.get(siteId, d1.number)).version, version, 'the same tags again change nothing')
  for (const [tags, problem] of [[['a b c'.repeat(20)], /at most 40 characters/], [['-start'], /starting with a letter or digit/], [['semi;colon'], /letters, digits/], [[''], /must not be empty/], [Array.from({ length: 21 }, (_, i) => `t${i}`), /at most 20 tags/]] as const) {
    await t.rejects(app.discussions.update(siteId, d1.number, { tags: [...tags] }), { code: 'invalid', field: 'tags', message: problem })
  }
  // Another site's tag rows are its own.
  const other = await supporterWithToken(app, { site: 'other' })
  const there = await app.categories.add(other.site.id, 'General', true)
  const theirs = (await app.discussions.create({ siteId: other.site.id, categoryId: there.id, title: 'Theirs', body: 'x', supporterId: other.user.id, via: 'api' })).discussion
  await app.discussions.update(other.site.id, theirs.number, { tags: ['billing-issue'] })
  t.same((await listed(app, { siteId, state: 'live', tag: 'billing-issue' })).numbers, [1], "not the other site's")
})

t.test('the listing reads every owner, tag and state scope as a plain filter would, on either engine', async (t) => {
  const { app, ann, bob, billing, open, siteId } = await team(t)
  const states = ['new', 'open', 'resolved', 'deleted'] as const
  const made: Array<{ number: number; owner: number | null; tag: string | null; state: string; category: number }> = []
  for (let i = 0; i < 24; i++) {
    const d = await open(`D${i}`, i % 4 === 0 ? billing.id : undefined)
    const owner = [null, ann.user.id, bob.user.id][i % 3]
    const tag = i % 5 === 0 ? 'vip' : null
    await app.discussions.update(siteId, d.number, { assigneeId: owner, ...(tag && { tags: [tag] }) })
    const state = states[i % 4]
    if (state === 'open') await app.discussions.reply({ siteId, number: d.number, body: 'On it', internal: false, supporterId: ann.user.id, via: 'api' })
    if (state === 'resolved') await app.discussions.act(siteId, d.number, 'resolve')
    if (state === 'deleted') await app.discussions.act(siteId, d.number, 'delete')
    made.push({ number: d.number, owner, tag, state, category: d.categoryId })
  }
  const scopes = { todo: ['new', 'open'], live: ['new', 'open', 'resolved'], new: ['new'], open: ['open'], resolved: ['resolved'], deleted: ['deleted'] } as const
  for (const [scope, inScope] of Object.entries(scopes) as Array<[keyof typeof scopes, readonly string[]]>) {
    for (const owner of [undefined, NO_ASSIGNEE, ann.user.id, bob.user.id]) {
      for (const tag of [undefined, 'vip']) {
        for (const categoryId of [undefined, billing.id]) {
          const expected = made
            .filter((d) => inScope.includes(d.state) && (owner === undefined || (d.owner ?? NO_ASSIGNEE) === owner) && (tag === undefined || d.tag === tag) && (categoryId === undefined || d.category === categoryId))
            .map((d) => d.number)
          const found = await listed(app, { siteId, state: scope, assignee: owner, tag, categoryId })
          t.same(found, { total: expected.length, numbers: expected }, `${scope}, owner ${owner}, tag ${tag}, category ${categoryId}`)
        }
      }
    }
  }
})

t.test('notifications are queued with their cause, to those who chose them, never to who acted', async (t) => {
  const { app, ann, bob, open, siteId } = await team(t)
  const queued = async () =>
    (await app.outbox.dueMail(100)).filter((r) => r.kind === 'notification').map((r) => {
      const mail = JSON.parse(r.payload) as { to: string; subject: string; text: string; page: { staff: boolean } }
      return { to: mail.to, subject: mail.subject, text: mail.text, staff: mail.page.staff }
    })
  await app.users.setNotifications(siteId, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  t.same(await app.users.notifications(siteId, bob.user.id), { newDiscussions: true, owned: true, digest: false })
  await app.users.setNotifications(siteId, ann.user.id, { newDiscussions: false, owned: true, digest: false })
  const d = await open('Printer on fire')
  t.match(await queued(), [{ to: 'bob@example.test', subject: '[Site demo] New discussion #1: Printer on fire', text: /Carol Customer started a discussion[\s\S]*About Printer on fire/, staff: true }])
  t.equal((await queued()).length, 1, 'Ann did not ask for new discussions')

  await app.discussions.update(siteId, d.number, { assigneeId: bob.user.id, actor: ann.user })
  t.match((await queued()).at(-1), { to: 'bob@example.test', subject: '[Site demo] #1 is yours: Printer on fire', text: `${ann.user.name} gave you discussion #1 of Site demo.` })
  const before = (await queued()).length
  await app.discussions.reply({ siteId, number: d.number, body: 'Noted, Bob.', internal: true, supporterId: bob.user.id, via: 'api' })
  t.equal((await queued()).length, before, 'his own note is not mailed to him')
  await app.discussions.reply({ siteId, number: d.number, body: 'It is still burning.', internal: false, supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  t.match((await queued()).at(-1), { to: 'bob@example.test', subject: '[Site demo] Reply on #1: Printer on fire', text: /Carol Customer replied on a discussion you own:[\s\S]*still burning/ })
  await open('é'.repeat(3000))
  t.match((await queued()).at(-1)!.text, /^Carol Customer started a discussion on Site demo:\n\nAbout é{1994}…$/, 'a long text quoted in part')
  await app.users.setNotifications(siteId, bob.user.id, { newDiscussions: false, owned: false, digest: false })
  const quiet = (await queued()).length
  await app.discussions.reply({ siteId, number: d.number, body: 'Still?', internal: false, supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  await open('Another')
  t.equal((await queued()).length, quiet, 'nothing once he chose nothing')
  await app.users.setNotifications(siteId, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  await app.users.setDisabled(bob.user.email, true)
  await open('Third')
  t.equal((await queued()).length, quiet, 'nothing to a switched-off account')
})

t.test('a supporter who has not chosen hears of new discussions as the site says: on for a new site, off when an administrator says so', async (t) => {
  const { app, ann, bob, open, siteId } = await team(t)
  const told = async () => (await app.outbox.dueMail(100)).filter((r) => r.kind === 'notification').map((r) => (JSON.parse(r.payload) as { to: string }).to)
  t.same(await app.users.notifications(siteId, ann.user.id), { newDiscussions: true, owned: true, digest: false }, "the defaults of a new site's supporter")
  await open('First')
  t.same((await told()).sort(), ['ann@example.test', 'bob@example.test'], 'the whole team hears of it')
  await app.users.setNotifications(siteId, bob.user.id, { newDiscussions: true, owned: true, digest: false })
  await app.administration.setPolicy(await app.sites.get('demo'), { newDiscussionsToTeam: false }, undefined, { id: ann.user.id, name: ann.user.email, via: 'api' })
  t.same(await app.users.notifications(siteId, ann.user.id), { newDiscussions: false, owned: true, digest: false }, 'Ann, who never chose, follows the site')
  await open('Second')
  t.same((await told()).slice(2), ['bob@example.test'], 'Bob chose to hear of them: his choice holds')
})

t.test('saved replies: at most 200 a site, a change to none is refused', async (t) => {
  const { app, siteId } = await team(t)
  for (let i = 0; i < 200; i++) await app.savedReplies.add(siteId, { title: `Reply ${i}`, body: 'x' })
  await t.rejects(app.savedReplies.add(siteId, { title: 'One more', body: 'x' }), { code: 'limit' })
  await t.rejects(app.savedReplies.update(siteId, 999_999, { body: 'y' }), { code: 'not_found' })
  await t.rejects(app.savedReplies.remove(siteId, 999_999), { code: 'not_found' })
  t.equal((await app.savedReplies.list(siteId)).length, 200)
})

t.test('Send and resolve: the reply and the state in one transaction', async (t) => {
  const { app, ann, open, siteId } = await team(t)
  const d = await open('Done soon')
  const { discussion } = await app.discussions.reply({ siteId, number: d.number, body: 'Fixed.', internal: false, resolve: true, supporterId: ann.user.id, via: 'web' })
  t.equal(discussion.state, 'resolved')
  t.equal(await app.discussions.counts.total({ siteId, state: 'resolved' }), 1)
  t.equal(await app.discussions.counts.total({ siteId, state: 'todo' }), 0)
})
