import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// The team's queue on the pages, without a browser (test/team/browser.test.ts has Chromium): the
// owners' tabs and their counts, the tag filter, the owner and tag forms, a saved reply inserted
// without JavaScript, the second click after someone else's reply, Send and resolve with the next
// discussion offered, the profile's notification choices, and Administration → Queue.

async function team(t: Parameters<typeof buildTestApp>[0]) {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@example.test' })
  const bob = await personWithPassword(app, { email: 'bob@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const general = await app.categories.add(ann.site.id, 'General', true)
  const open = async (title: string) =>
    (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title, body: `About ${title}`, supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example', name: 'Carol Customer' }, via: 'api' })).discussion
  const annWeb = webClient(app)
  await annWeb.signIn(ann.email, ann.password)
  const bobWeb = webClient(app)
  await bobWeb.signIn(bob.email, bob.password)
  return { app, ann, bob, general, open, annWeb, bobWeb, siteId: ann.site.id }
}

const rows = (body: string) => [...body.matchAll(/data-discussion="(\d+)"/g)].map((m) => Number(m[1]))
const count = (body: string, label: string) => Number(new RegExp(`>${label} <span class="count">\\((\\d+)\\)`).exec(body)?.[1])

t.test("the queue's owners' tabs, their kept counts, tags as chips and as a filter", async (t) => {
  const { app, ann, bob, open, annWeb, siteId } = await team(t)
  for (const title of ['One', 'Two', 'Three']) await open(title)
  await app.discussions.update(siteId, 1, { assigneeId: ann.user.id, tags: ['vip'] })
  await app.discussions.update(siteId, 2, { assigneeId: bob.user.id })
  const all = await annWeb.get('/demo/discussions')
  t.same(rows(all.body), [3, 2, 1])
  t.equal(count(all.body, 'Mine'), 1)
  t.equal(count(all.body, 'Unassigned'), 1)
  t.equal(count(all.body, 'Everyone&#39;s'), 3)
  t.match(all.body, /data-discussion="1"[\s\S]*?<a class="chip" href="[^"]*tag=vip" data-tag>vip<\/a>[\s\S]*?data-owner-name>You</, "the tag's chip, and Ann's own as You")
  t.match(all.body, new RegExp(`data-discussion="2"[\\s\\S]*?data-owner-name>${bob.user.name}<`))
  t.same(rows((await annWeb.get('/demo/discussions?owner=mine')).body), [1])
  t.same(rows((await annWeb.get('/demo/discussions?owner=none')).body), [3])
  const tagged = await annWeb.get('/demo/discussions?tag=VIP')
  t.same(rows(tagged.body), [1], 'a tag, as it is kept')
  t.match(tagged.body, /data-tag-filter>Tagged <span class="chip">vip<\/span>/)
  const odd = await annWeb.get('/demo/discussions?tag=%3Bx')
  t.same(rows(odd.body), [3, 2, 1], 'what cannot be a tag filters nothing')
  t.match(odd.body, /role="alert">Tag: /, 'and says why')
  await app.discussions.act(siteId, 1, 'resolve')
  const mine = await annWeb.get('/demo/discussions?owner=mine')
  t.same(rows(mine.body), [], 'the default tab needs an answer: resolved is not in it')
  t.equal(count(mine.body, 'Resolved'), 1, "the states' counts follow the owner shown")
  t.same(rows((await annWeb.get('/demo/discussions?owner=mine&state=resolved')).body), [1])
})

t.test('a discussion page: owner, tags, a saved reply inserted, the second click, Send and resolve, the next one', async (t) => {
  const { app, bob, open, annWeb, bobWeb, siteId } = await team(t)
  const d = await open('Printer on fire')
  await open('Second question')
  const path = `/demo/discussions/${d.number}`

  await bobWeb.get(path)
  t.equal((await bobWeb.post(`${path}/assign`, { to: 'me' })).headers.location, `https://help.example.test${path}?done=assigned`)
  t.equal((await app.discussions.get(siteId, d.number)).assigneeId, bob.user.id)
  t.match((await bobWeb.get(`${path}?done=assigned`)).body, /data-owner>You \(/)
  await annWeb.get(path)
  const refused = await annWeb.post(`${path}/assign`, { to: '999999' })
  t.equal(refused.statusCode, 400)
  t.match(refused.body, 'That was not done: the owner is 999999, who is not support staff of this site.')
  await annWeb.get(path)
  t.equal((await annWeb.post(`${path}/assign`, { to: 'someone' })).statusCode, 400)
  for (const action of ['assign', 'tags']) {
    await annWeb.get(path)
    t.equal((await annWeb.post(`/demo/discussions/999/${action}`, { to: 'me', tags: 'x' })).statusCode, 404, `${action} of no discussion`)
  }
  await annWeb.get(path)
  await annWeb.post(`${path}/tags`, { tags: 'gone' })
  await annWeb.get(path)
  t.equal((await annWeb.post(`${path}/tags`, {})).statusCode, 303)
  t.equal((await app.discussions.get(siteId, d.number)).tags, '', 'a form without tags takes them all off')
  await annWeb.get(path)
  t.equal((await annWeb.post(`${path}/tags`, { tags: 'Printer, urgent  hardware' })).statusCode, 303)
  t.equal((await app.discussions.get(siteId, d.number)).tags, 'hardware printer urgent')
  await annWeb.get(path)
  const badTag = await annWeb.post(`${path}/tags`, { tags: 'fine, not;fine' })
  t.equal(badTag.statusCode, 400)
  t.match(badTag.body, /That was not done: tag &quot;not;fine&quot;/)

  // A saved reply, chosen with a GET form: the reply form holds it, filled in for Carol and Bob.
  const saved = await app.savedReplies.add(siteId, { title: 'On it', body: 'Hello {{customer.first_name}}, {{supporter.name}} here: on it.' })
  const inserted = await bobWeb.get(`${path}?saved_reply=${saved.id}`)
  t.match(inserted.body, `<textarea id="reply-body" name="body" rows="6" required >Hello Carol, ${bob.user.name} here: on it.</textarea>`)
  t.match(inserted.body, new RegExp(`<option value="${saved.id}" selected>On it</option>`))
  t.notMatch((await bobWeb.get(`${path}?saved_reply=999`)).body, /Hello Carol/, 'an unknown one inserts nothing')

  // Ann opens the page; Bob answers meanwhile; Ann's reply waits for her second click.
  const annPage = await annWeb.get(path)
  const seen = /name="seen" value="(\d+)"/.exec(annPage.body)![1]
  t.equal((await bobWeb.post(`${path}/reply`, { body: `Hello Carol, ${bob.user.name} here: on it.`, internal: 'no', seen: String(d.commentsCount) })).statusCode, 303)
  const waiting = await annWeb.post(`${path}/reply`, { body: 'Have you tried turning it off?', internal: 'no', seen })
  t.equal(waiting.statusCode, 409)
  t.match(waiting.body, `${bob.user.name} wrote since you opened this page: read it above. Your reply was not sent yet`)
  t.match(waiting.body, '>Have you tried turning it off?</textarea>', 'the draft kept')
  t.equal((await app.discussions.get(siteId, d.number)).commentsCount, 2, 'not sent')
  const seenNow = /name="seen" value="(\d+)"/.exec(waiting.body)![1]
  t.equal(seenNow, '2', 'what she has now seen')
  const second = await annWeb.post(`${path}/reply`, { body: 'Have you tried turning it off?', internal: 'no', seen: seenNow })
  t.equal(second.statusCode, 303, 'the second click sends it')
  // Her own comments since the page was loaded do not hold her up.
  await annWeb.get(path)
  t.equal((await annWeb.post(`${path}/reply`, { body: 'A note.', internal: 'yes', seen: seenNow })).statusCode, 303)
  t.match((await annWeb.get(`${path}?done=noted`)).body, 'Your internal note was added.')

  // Send and resolve: one form, both done; the page offers the next discussion to do.
  await annWeb.get(path)
  const resolved = await annWeb.post(`${path}/reply`, { body: 'Fixed.', internal: 'no', then: 'resolve', seen: '4' })
  t.equal(resolved.headers.location, `https://help.example.test${path}?done=sent-resolved#comment-5`)
  t.equal((await app.discussions.get(siteId, d.number)).state, 'resolved')
  const after = await annWeb.get(`${path}?done=sent-resolved`)
  t.match(after.body, /data-done>Your reply was sent and the discussion resolved\. Next to do: <a href="[^"]+\/demo\/discussions\/2" data-next>#2 Second question<\/a>/)
  t.notMatch(after.body, 'Send and resolve', 'not offered on a resolved discussion')
  await annWeb.get('/demo/discussions/2')
  await annWeb.post('/demo/discussions/2/assign', { to: 'none' })
  t.equal((await app.discussions.get(siteId, 2)).assigneeId, null, 'none: nobody')
  await annWeb.get('/demo/discussions/2')
  t.equal((await annWeb.post('/demo/discussions/2/act', { action: 'resolve' })).headers.location, 'https://help.example.test/demo/discussions/2?done=resolve')
  const last = await annWeb.get('/demo/discussions/2?done=resolve')
  t.match(last.body, /data-done>The discussion is resolved\.<\/p>/, 'nothing left to do: no next one offered')
  await annWeb.get(path)
  t.equal((await annWeb.post(`${path}/reply`, { body: 'Only a note.', internal: 'yes', then: 'resolve', seen: '5' })).headers.location, `https://help.example.test${path}?done=noted#comment-6`, 'a note never resolves')
})

t.test('the profile: what a supporter is mailed about', async (t) => {
  const { app, bob, bobWeb, siteId } = await team(t)
  const profile = await bobWeb.get('/demo/profile')
  t.match(profile.body, /<input type="checkbox" name="new_discussions" value="yes" > every new discussion/)
  t.match(profile.body, /<input type="checkbox" name="owned" value="yes" checked> replies and notes/)
  const saved = await bobWeb.post('/demo/profile/notifications', { new_discussions: 'yes' })
  t.equal(saved.headers.location, 'https://help.example.test/demo/profile?notifications=1#notifications-title')
  t.same(await app.users.notifications(siteId, bob.user.id), { newDiscussions: true, owned: false, digest: false })
  t.match((await bobWeb.get('/demo/profile?notifications=1')).body, 'What you are mailed about is saved.')
  const customer = await personWithPassword(app, { role: 'customer' })
  const shopper = webClient(app)
  await shopper.signIn(customer.email, customer.password)
  t.notMatch((await shopper.get('/demo/profile')).body, 'Mail about the queue', 'not for a customer')
  await shopper.get('/demo/profile')
  t.equal((await shopper.post('/demo/profile/notifications', { new_discussions: 'yes' })).statusCode, 403)
})

t.test('Administration → Queue: saved replies and categories in turn, for administrators only', async (t) => {
  const { app, general, annWeb, bobWeb, siteId } = await team(t)
  const page = await annWeb.get('/demo/admin/queue?done=unheard-of')
  t.equal(page.statusCode, 200)
  t.notMatch(page.body, 'role="status"', 'an unknown done says nothing')
  t.match(page.body, '<code>{{customer.name}}</code>')
  t.equal((await annWeb.post('/demo/admin/queue/replies', { title: 'Thanks', body: 'Thanks, {{customer.name}}.' })).headers.location, 'https://help.example.test/demo/admin/queue?done=added')
  const [reply] = await app.savedReplies.list(siteId)
  t.match(reply, { title: 'Thanks', body: 'Thanks, {{customer.name}}.' })
  await annWeb.get('/demo/admin/queue')
  const taken = await annWeb.post('/demo/admin/queue/replies', { title: 'Thanks', body: 'Again' })
  t.equal(taken.statusCode, 409)
  t.match(taken.body, /role="alert">The title is &quot;Thanks&quot;, which another saved reply of this site has\./)
  t.match(taken.body, '>Again</textarea>', 'what was typed is kept')
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post(`/demo/admin/queue/replies/${reply.id}`, { title: 'Thank you', body: 'Thank you.' })).statusCode, 303)
  t.equal((await app.savedReplies.find(siteId, reply.id))!.title, 'Thank you')
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post(`/demo/admin/queue/replies/${reply.id}`, { title: '', body: 'x' })).statusCode, 400)
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post('/demo/admin/queue/replies/999', { remove: 'yes' })).statusCode, 404)
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post('/demo/admin/queue/replies/abc', { title: 'x', body: 'y' })).statusCode, 404, 'not a number: no such reply')
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post('/demo/admin/queue/turns', { [`turn-${general.id}`]: 'yes' })).statusCode, 303)
  t.equal((await app.categories.find(siteId, general.id))!.roundRobin, true)
  await annWeb.get('/demo/admin/queue')
  await annWeb.post('/demo/admin/queue/turns', {})
  t.equal((await app.categories.find(siteId, general.id))!.roundRobin, false, 'unticked: no longer')

  // Bob is a supporter, not an administrator.
  t.equal((await bobWeb.get('/demo/admin/queue')).statusCode, 403)
  await bobWeb.get('/demo/discussions')
  t.equal((await bobWeb.post(`/demo/admin/queue/replies/${reply.id}`, { remove: 'yes' })).statusCode, 403)
  t.ok(await app.savedReplies.find(siteId, reply.id), 'still there')
  await annWeb.get('/demo/admin/queue')
  t.equal((await annWeb.post(`/demo/admin/queue/replies/${reply.id}`, { remove: 'yes' })).headers.location, 'https://help.example.test/demo/admin/queue?done=removed')
  t.equal(await app.savedReplies.find(siteId, reply.id), undefined)
})
