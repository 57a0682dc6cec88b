import t, { type Test } from 'tap'
import { Webhook } from 'standardwebhooks'
import { leakSignature, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../routes/token-leaks.ts'
import { supporterWithToken, testClock } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { form } from '../fixtures/files.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { LOOPBACK, receiver, type Received } from '../fixtures/webhooks.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The events a site's webhooks are told of (db/stores/webhooks.ts, plugins/webhooks/delivery.ts),
// posted to a real receiver on loopback (allowed as the operator's SERVICE_WEBHOOK_ALLOW allows
// it), each signed so that the standardwebhooks library verifies it, each carrying the v1 JSON of
// its resource. The clock starts now: the library checks a signature's time against its own.

const LEAK_KEY = 'k'.repeat(40)

async function webhookApp(t: Test) {
  const made = await discussionApp(t, { clock: testClock(Date.now()), config: { webhooks: { allowed: LOOPBACK, timeoutMs: 2_000 }, leakReportKey: LEAK_KEY } })
  const boss = await supporterWithToken(made.app, { email: 'boss@example.test' })
  await made.app.users.setAdministrator(made.ann.site.id, boss.user.id, true)
  const admin = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => made.api(method, url, payload, boss.bearer)
  return { ...made, boss, admin }
}

/** What the receiver got, verified with the secret: the events' types and their data, in the order sent. */
function verified(t: Test, received: Received[], secret: string) {
  const hook = new Webhook(secret)
  return received.map((r) => {
    const event = hook.verify(r.body, r.headers as Record<string, string>) as { type: string; timestamp: string; data: Record<string, unknown> }
    t.match(r.headers['webhook-id'], /^msg_[\w-]{22}$/)
    t.equal(r.headers['content-type'], 'application/json')
    return event
  })
}

t.test('each event reaches the endpoint, signed, with the v1 JSON of its resource', async (t) => {
  const { app, admin, api, create, ann, problems } = await webhookApp(t)
  const hook = await receiver(t)
  const added = await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created', 'discussion.updated', 'discussion.deleted', 'discussion.restored', 'comment.created', 'token.created', 'token.revoked', 'token.leaked', 'application.authorized'], description: 'Chat' })
  t.equal(added.statusCode, 201, added.body)
  const { secret, href } = added.json()
  t.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/)
  t.equal(added.headers.location, href)
  t.notOk('secret' in (await admin('GET', href.replace('https://api.example.test', ''))).json(), 'the secret is shown once')

  const discussion = await create({ title: 'Printer on fire' })
  t.equal((await api('POST', `/demo/discussions/${discussion.number}/comments`, { body: 'On our way.' })).statusCode, 201)
  t.equal((await api('POST', `/demo/discussions/${discussion.number}/comments`, { body: 'Note to self', internal: true })).statusCode, 201)
  t.equal((await api('PUT', `/demo/discussions/${discussion.number}`, { category: problems.id })).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${discussion.number}/resolve`)).statusCode, 200)
  t.equal((await api('DELETE', `/demo/discussions/${discussion.number}`)).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${discussion.number}/restore`)).statusCode, 200)
  const { token } = await app.tokens.create({ siteId: ann.site.id, userId: ann.user.id, name: 'deploy bot', access: 'read', expiresInDays: 30 })
  await app.tokens.revoke(ann.site.id, token.id)
  const leaked = await supporterWithToken(app, { email: 'leaky@example.test' })
  const at = String(Math.floor(app.clock() / 1000))
  const report = JSON.stringify([{ token: leaked.value }])
  t.equal((await app.inject({ method: 'POST', url: '/token_leaks', headers: { 'content-type': 'application/json', [TIMESTAMP_HEADER]: at, [SIGNATURE_HEADER]: leakSignature(LEAK_KEY, at, report) }, payload: report })).statusCode, 200)
  await oauthTokens(app)

  await app.sendOutbox()
  const events = verified(t, hook.received, secret)
  // Posted several at once: they arrive in any order, each with the moment it happened.
  t.same(events.map((e) => e.type).sort(), [
    'discussion.created', 'comment.created', 'discussion.updated', 'discussion.updated', 'discussion.deleted', 'discussion.restored',
    'token.created', 'token.revoked', 'token.created', 'token.revoked', 'token.leaked', 'application.authorized',
  ].sort(), 'every event once, the internal note not among them')
  const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data)
  const [opened] = of('discussion.created')
  t.match(opened, { href: discussion.href, number: discussion.number, title: 'Printer on fire', state: 'open', comments: [{ number: 1, body: 'Some words.', via: 'api' }] })
  t.same(Object.keys(opened!).sort(), Object.keys({ ...discussion }).sort(), 'the same fields as the API answer')
  t.match(of('comment.created'), [{ number: 2, body: 'On our way.', internal: false, discussion_href: discussion.href, attachments: [] }])
  const updated = of('discussion.updated')
  t.same(updated.map((data) => data.state).sort(), ['open', 'resolved'], 'moved to another category, then resolved')
  t.match(updated.find((data) => data.state === 'open'), { category_href: `https://api.example.test/demo/categories/${problems.id}` })
  t.match(of('discussion.deleted'), [{ state: 'deleted' }])
  t.match(of('discussion.restored'), [{ state: 'resolved' }])
  const mine = of('token.created').find((data) => data.name === 'deploy bot')
  t.match(mine, { id: `pat-${token.id}`, kind: 'personal_token', owner: 'ann@example.test', access: 'read', state: 'active' })
  t.same(of('token.revoked').map((data) => data.owner).sort(), ['ann@example.test', 'leaky@example.test'])
  t.match(of('token.revoked'), [{ state: 'revoked' }, { state: 'revoked' }])
  t.match(of('token.leaked'), [{ owner: 'leaky@example.test', state: 'revoked' }])
  t.match(of('application.authorized'), [{ id: /^oauth-/, kind: 'oauth', access: 'write', state: 'active' }])
  t.match(events[0]!.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(new Set(hook.received.map((r) => r.headers['webhook-id'])).size, events.length, 'each event its own id')

  // Delivered once: the outbox sends nothing more.
  t.equal(await app.sendOutbox(), 0)
  t.equal(hook.received.length, events.length)
})

t.test('an endpoint gets only the events it asks for; internal notes only when it asks for them; another site’s never', async (t) => {
  const { app, admin, api, create, ann } = await webhookApp(t)
  const notes = await receiver(t)
  const states = await receiver(t)
  const off = await receiver(t)
  const { secret } = (await admin('POST', '/demo/webhooks', { url: notes.url, events: ['comment.created'], internal_comments: true })).json()
  await admin('POST', '/demo/webhooks', { url: states.url, events: ['discussion.updated'] })
  t.equal((await admin('POST', '/demo/webhooks', { url: off.url, events: ['comment.created'], enabled: false })).json().enabled, false)
  // Another site with a webhook of its own: this site's events never reach it.
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  await app.users.setAdministrator(other.site.id, other.user.id, true)
  const theirs = await receiver(t)
  t.equal((await api('POST', '/other/webhooks', { url: theirs.url, events: ['comment.created', 'discussion.created'] }, other.bearer)).statusCode, 201)

  const d = await create()
  await api('POST', `/demo/discussions/${d.number}/comments`, { body: 'Internal', internal: true })
  // A reply with a file: its event carries the attachment.
  const withFile = await form({ body: 'The log.', file: { name: 'server.log', bytes: Buffer.from('line one\n'), type: 'text/plain' } })
  t.equal((await app.inject({ method: 'POST', url: `/demo/discussions/${d.number}/comments`, headers: { ...ann.bearer, 'content-type': withFile.type }, payload: withFile.payload })).statusCode, 201)
  await api('POST', `/demo/discussions/${d.number}/resolve`)
  await app.sendOutbox()
  const told = verified(t, notes.received, secret)
  t.same(told.map((e) => [e.type, e.data.internal]).sort(), [['comment.created', false], ['comment.created', true]])
  t.match(told.find((e) => !e.data.internal)!.data, { body: 'The log.', attachments: [{ name: 'server.log', size: 9, content_type: 'text/plain', href: /^https:\/\/api\.example\.test\/demo\/attachments\/\d+$/ }] })
  t.same(states.received.map((r) => JSON.parse(r.body).type), ['discussion.updated'])
  t.equal(off.received.length, 0, 'a switched-off endpoint gets nothing')
  t.equal(theirs.received.length, 0, "another site's endpoint hears nothing of this site")
  // Another site's administrator cannot see, change or test this site's webhooks.
  const [mine] = (await admin('GET', '/demo/webhooks')).json().webhooks
  t.equal((await api('GET', `/other/webhooks/${mine.id}`, undefined, other.bearer)).statusCode, 404)
  t.equal((await api('POST', `/other/webhooks/${mine.id}/test`, undefined, other.bearer)).statusCode, 404)
  t.equal((await api('GET', '/demo/webhooks', undefined, other.bearer)).statusCode, 401)
})

t.test('a merge is told: the one merged as discussion.merged, the one merged into as updated, an undo as restored; the change feed says the same', async (t) => {
  const { app, admin, api, create } = await webhookApp(t)
  const hook = await receiver(t)
  const { secret } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.merged', 'discussion.updated', 'discussion.restored'] })).json()
  const [one, two] = [await create({ title: 'One' }), await create({ title: 'Two' })]
  t.equal((await api('POST', `/demo/discussions/${one.number}/merge`, { into: two.number })).statusCode, 200)
  t.equal((await api('POST', `/demo/discussions/${one.number}/unmerge`)).statusCode, 200)
  await app.sendOutbox()
  const events = verified(t, hook.received, secret).map((e) => [e.type, e.data.number, e.data.state, (e.data.merged_into as { number: number } | null)?.number ?? null, e.data.comments_count])
  t.same(events.sort((a, b) => String(a).localeCompare(String(b))), [
    ['discussion.merged', one.number, 'merged', two.number, 0],
    ['discussion.restored', one.number, 'open', null, 1],
    ['discussion.updated', two.number, 'open', null, 1],
    ['discussion.updated', two.number, 'open', null, 2],
  ].sort((a, b) => String(a).localeCompare(String(b))), 'each once, each with the discussion as it was then')
  const feed = (await api('GET', '/demo/changes')).json().changes as Array<{ type: string; discussion: { number: number } }>
  t.same(feed.slice(2).map((c) => [c.type, c.discussion.number]), [
    ['discussion.merged', one.number],
    ['discussion.updated', two.number],
    ['discussion.updated', two.number],
    ['discussion.restored', one.number],
  ], 'in the order they were made')
})

t.test("a field's value set, changed and cleared is told as discussion.updated, with the values as the API shows them; the change feed says the same", async (t) => {
  const { admin, api, create, app } = await webhookApp(t)
  const hook = await receiver(t)
  const { secret } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.updated'] })).json()
  t.equal((await admin('POST', '/demo/fields', { key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] })).statusCode, 201)
  t.equal((await admin('POST', '/demo/fields', { key: 'seats', name: 'Seats', kind: 'number' })).statusCode, 201)
  const d = await create({ title: 'Upgrade', fields: { plan: 'Basic' } })
  for (const fields of [{ plan: 'Pro', seats: 12 }, { seats: 12 }, { plan: null }]) t.equal((await api('PUT', `/demo/discussions/${d.number}`, { fields })).statusCode, 200)
  await app.sendOutbox()
  // Sent each on its own (an endpoint gets them in any order): the values of each change, once.
  const told = verified(t, hook.received, secret).map((e) => JSON.stringify([e.type, e.data.fields]))
  t.same(told.sort(), [JSON.stringify(['discussion.updated', { plan: 'Pro', seats: 12 }]), JSON.stringify(['discussion.updated', { seats: 12 }])].sort(), 'each change once; the same value again is no change, and tells nothing')
  // The feed names each change, with the discussion as it is now.
  const feed = (await api('GET', '/demo/changes')).json().changes as Array<{ type: string; discussion: { fields: object } }>
  t.same(feed.map((c) => c.type), ['discussion.created', 'discussion.updated', 'discussion.updated'])
  t.same(feed.at(-1)!.discussion.fields, { seats: 12 })
})
