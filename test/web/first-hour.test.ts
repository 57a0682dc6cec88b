import t from 'tap'
import { DEFAULT_SUDO_MINUTES } from '../../config.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { basic } from '../fixtures/credentials.ts'
import { signedInPerson, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Issue 46: what a new team met on the pages. A discussion deleted by one supporter while another
// has its page open answers 409 with the page as it is now, not a 500; not-found and forbidden
// pages speak of what was asked; a supporter changes their own name and password.

const MINUTE = 60_000

t.test('every action on the page of a discussion deleted meanwhile: 409 and the page as it is now, what was typed kept', async (t) => {
  const { app } = await buildTestApp(t)
  const { web: annWeb, ...ann } = await signedInPerson(app)
  const { web: bobWeb } = await signedInPerson(app)
  const general = await app.categories.add(ann.site.id, 'General', true)
  const other = await app.categories.add(ann.site.id, 'Billing', true)
  const { discussion } = await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'On fire', public: true, supporterId: ann.user.id, onBehalfOf: { email: 'c@example.test' }, via: 'api' })
  const page = await annWeb.get(`/demo/discussions/${discussion.number}`)
  t.match(page.body, 'Reply')

  // Bob deletes it while Ann's page is open.
  await bobWeb.get(`/demo/discussions/${discussion.number}`)
  t.equal((await bobWeb.post(`/demo/discussions/${discussion.number}/act`, { action: 'delete', confirmed: 'yes' })).statusCode, 303)

  const replied = await annWeb.post(`/demo/discussions/${discussion.number}/reply`, { body: 'We are on it & more', internal: 'no' })
  t.equal(replied.statusCode, 409, 'Reply')
  t.match(replied.body, 'is deleted; restore it before changing it')
  t.match(replied.body, 'We are on it &amp; more</textarea>', 'her text is still in the form')
  t.match(replied.body, 'data-deleted')
  await annWeb.get(`/demo/discussions/${discussion.number}`)
  const moved = await annWeb.post(`/demo/discussions/${discussion.number}/category`, { category: String(other.id) })
  t.equal(moved.statusCode, 409, 'Move')
  const deletedAgain = await annWeb.post(`/demo/discussions/${discussion.number}/act`, { action: 'delete' })
  t.equal(deletedAgain.statusCode, 409, 'Delete again')
  const comments = await app.discussions.comments(discussion.id)
  t.equal(comments.length, 1, 'nothing was written')

  // Its page now offers what can be done: Restore, and no Reply or Move.
  const now = await annWeb.get(`/demo/discussions/${discussion.number}`)
  t.notMatch(now.body, 'id="reply-title"')
  t.notMatch(now.body, '/category"')
  t.match(now.body, 'value="restore"')
})

t.test('not-found and forbidden pages speak of what was asked', async (t) => {
  const { app } = await buildTestApp(t)
  const { web } = await signedInPerson(app)
  const missing = await web.get('/demo/discussions/999')
  t.equal(missing.statusCode, 404)
  t.match(missing.body, 'Site demo has no discussion with this number.')
  t.match(missing.body, 'Back to the discussions')
  t.notMatch(missing.body, 'no such active token', 'nothing of the token page')

  const { web: shopper } = await signedInPerson(app, { role: 'customer' })
  const queue = await shopper.get('/demo/discussions')
  t.equal(queue.statusCode, 403)
  t.match(queue.body, 'This page is for the support staff of Site demo.')
  t.notMatch(queue.body, 'Personal API tokens')
  const admin = await web.get('/demo/admin')
  t.equal(admin.statusCode, 403)
  t.match(admin.body, 'This page is for the administrators of Site demo.')
})

t.test("a supporter changes their own name, and their password after confirming it is them; other sessions end", async (t) => {
  const { app, clock } = await buildTestApp(t)
  const { web, ...ann } = await signedInPerson(app)
  const elsewhere = webClient(app)
  await elsewhere.signIn(ann.email, ann.password)

  await web.get('/demo/profile')
  t.equal((await web.post('/demo/profile/name', { name: '  Ann Example  ' })).headers.location, 'https://help.example.test/demo/profile?name=1')
  t.equal((await app.users.byId(ann.user.id))!.name, 'Ann Example')
  t.match((await web.get('/demo/profile?name=1')).body, 'Your name is changed.')
  const blank = await web.post('/demo/profile/name', { name: ' ' })
  t.equal(blank.statusCode, 400)
  t.match(blank.body, 'A name must be 1 to 100 characters.')
  t.equal((await web.post('/demo/profile/name')).statusCode, 400, 'a form without the field')
  t.equal((await app.users.byId(ann.user.id))!.name, 'Ann Example', 'unchanged')
  await t.rejects(app.users.setName(ann.user.id, 'x'.repeat(101)), { code: 'invalid', field: 'name' }, 'the store keeps the rule too')

  const mismatch = await web.post('/demo/profile/password', { password: 'a new long password', repeated: 'another one' })
  t.equal(mismatch.statusCode, 400)
  t.match(mismatch.body, 'The two new passwords are not the same.')
  t.equal((await web.post('/demo/profile/password', { password: 'short', repeated: 'short' })).statusCode, 400)
  const long = 'x'.repeat(1025)
  t.match((await web.post('/demo/profile/password', { password: long, repeated: long })).body, 'A password has at most 1024 characters.')
  t.equal((await web.post('/demo/profile/password')).statusCode, 400, 'a form without the fields')

  // Long after signing in, the session must confirm first: a stolen session alone changes nothing.
  clock.advance((DEFAULT_SUDO_MINUTES + 1) * MINUTE)
  await web.get('/demo/profile')
  const asked = await web.post('/demo/profile/password', { password: 'a new long password', repeated: 'a new long password' })
  t.equal(asked.statusCode, 303)
  t.match(asked.headers.location, '/demo/confirm?for=password')
  await web.get('/demo/confirm?for=password&next=/demo/profile')
  t.equal((await web.post('/demo/confirm', { password: ann.password, for: 'password', next: '/demo/profile' })).statusCode, 303)
  await web.get('/demo/profile')
  const changed = await web.post('/demo/profile/password', { password: 'a new long password', repeated: 'a new long password' })
  t.equal(changed.headers.location, 'https://help.example.test/demo/profile?password=1')

  t.equal((await web.get('/demo/profile')).statusCode, 200, 'this session goes on')
  t.equal((await elsewhere.get('/demo/profile')).statusCode, 303, 'the other session was signed out')
  t.equal((await app.inject({ url: '/demo/discussions', headers: basic(ann.email, ann.password) })).statusCode, 401, 'the old password is refused')
  t.equal((await app.inject({ url: '/demo/discussions', headers: basic(ann.email, 'a new long password') })).statusCode, 200, 'the new one works')
  const { events } = await app.securityLog.list({ userId: ann.user.id, kinds: ['password_set'], offset: 0, limit: 5 })
  t.equal(events.length, 1)
  t.same(events[0].detail, { other_sessions_ended: 1 })
  // Again at once: nothing else to sign out, and still confirmed.
  await web.get('/demo/profile')
  t.equal((await web.post('/demo/profile/password', { password: 'a third long password', repeated: 'a third long password' })).statusCode, 303)
  t.same((await app.securityLog.list({ userId: ann.user.id, kinds: ['password_set'], offset: 0, limit: 5 })).events[0].detail, { other_sessions_ended: 0 })
})
