import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The team's queue through the API (docs/decisions.md, "The team's queue"): owners (the resource's
// assignee, the assign action, PUT, ?assignee=), tags (the resource, PUT, ?tag=), saved replies
// (read by the staff and filled in for a discussion, written by the administrators), categories
// given in turn; each refusal with its reason, and the sites kept apart.

async function desk(t: Parameters<typeof buildTestApp>[0]) {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const general = await app.categories.add(ann.site.id, 'General', true)
  const call = async (who: { bearer: Record<string, string> }, method: string, url: string, payload?: unknown) => {
    const answer = await app.inject({ method: method as 'GET', url, headers: { ...who.bearer, accept: V1 }, ...(payload !== undefined && { payload: payload as object }) })
    return { status: answer.statusCode, body: /json/.test(String(answer.headers['content-type'])) ? answer.json() : answer.body }
  }
  const open = async (title: string) =>
    (await call(ann, 'POST', `/demo/categories/${general.id}/discussions`, { title, body: `About ${title}`, author_email: 'carol@customer.example', author_name: 'Carol Customer' })).body
  return { app, ann, bob, general, call, open }
}

t.test('owners: the resource, the assign action, PUT, and the listing by owner', async (t) => {
  const { app, ann, bob, call, open } = await desk(t)
  const first = await open('Printer')
  await open('Scanner')
  t.same(first.assignee, null, 'nobody owns a new discussion')
  t.same(first.tags, [])
  t.equal(first.assign_href, 'https://api.example.test/demo/discussions/1/assign')

  const taken = await call(bob, 'POST', '/demo/discussions/1/assign?to=me')
  t.equal(taken.status, 200)
  t.same(taken.body.assignee, { id: bob.user.id, name: bob.user.name }, 'me: the caller')
  t.same((await call(ann, 'GET', '/demo/discussions/1')).body.assignee, { id: bob.user.id, name: bob.user.name })
  t.same((await call(ann, 'POST', `/demo/discussions/2/assign?to=${ann.user.id}`)).body.assignee.id, ann.user.id, 'a user id')

  const numbers = async (who: typeof ann, query: string) => (await call(who, 'GET', `/demo/discussions${query}`)).body.discussions.map((d: { number: number }) => d.number)
  t.same(await numbers(bob, '?assignee=me'), [1])
  t.same(await numbers(ann, '?assignee=me'), [2], "me is each caller's")
  t.same(await numbers(ann, `?assignee=${bob.user.id}`), [1])
  t.same(await numbers(ann, '?assignee=none'), [])
  const linked = await app.inject({ url: '/demo/discussions?assignee=me', headers: ann.bearer })
  t.match(linked.headers.link, 'assignee=me', 'the pages keep the filter')
  t.same((await call(ann, 'POST', '/demo/discussions/2/assign?to=none')).body.assignee, null, 'none: nobody')
  t.same(await numbers(ann, '?assignee=none'), [2])
  t.same((await call(ann, 'PUT', '/demo/discussions/2', { assignee: bob.user.id })).body.assignee.id, bob.user.id, 'PUT takes it too')
  t.same((await call(ann, 'PUT', '/demo/discussions/2', { assignee: null })).body.assignee, null)

  // Refused with the reason: not a supporter of this site, not a user, not a value.
  const customer = (await app.users.find('carol@customer.example'))!
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  for (const to of [String(customer.id), String(otto.user.id), '999999']) {
    const refused = await call(ann, 'POST', `/demo/discussions/1/assign?to=${to}`)
    t.equal(refused.status, 400, `to=${to}`)
    t.match(refused.body, { error: 'invalid_request', fields: [{ field: 'to', problem: /who is not support staff of this site/ }] })
  }
  for (const to of ['', 'you', '0', '-1', '1.5', 'me,none', '12345678901234567']) {
    t.equal((await call(ann, 'POST', `/demo/discussions/1/assign?to=${encodeURIComponent(to)}`)).status, 400, `to=${to}: not a user id, me or none`)
    t.equal((await call(ann, 'GET', `/demo/discussions?assignee=${encodeURIComponent(to)}`)).status, 400, `assignee=${to}`)
  }
  t.match((await call(ann, 'PUT', '/demo/discussions/1', { assignee: String(customer.id) })).body, { fields: [{ field: 'assignee' }] })
  t.same((await call(ann, 'GET', '/demo/discussions/1')).body.assignee.id, bob.user.id, 'unchanged by every refusal')
  t.equal((await call(ann, 'POST', '/demo/discussions/99/assign?to=me')).status, 404)
  // Otto's token is for his own site: the discussion of ours is not his to give.
  t.equal((await call(otto, 'POST', '/demo/discussions/1/assign?to=me')).status, 401)
  const readOnly = await supporterWithToken(app, { access: 'read' })
  t.equal((await call(readOnly, 'POST', '/demo/discussions/1/assign?to=me')).status, 403, 'a read token cannot give')
})

t.test('tags: the resource, PUT, and the listing by tag', async (t) => {
  const { ann, call, open } = await desk(t)
  await open('One')
  await open('Two')
  const tagged = await call(ann, 'PUT', '/demo/discussions/1', { tags: ['VIP', 'Billing Issue'] })
  t.equal(tagged.status, 200)
  t.same(tagged.body.tags, ['billing-issue', 'vip'])
  await call(ann, 'PUT', '/demo/discussions/2', { tags: ['vip'] })
  const numbers = async (query: string) => (await call(ann, 'GET', `/demo/discussions${query}`)).body.discussions.map((d: { number: number }) => d.number)
  t.same(await numbers('?tag=vip'), [2, 1])
  t.same(await numbers('?tag=VIP'), [2, 1], 'asked as it is kept')
  t.same(await numbers('?tag=billing%20issue'), [1])
  t.same(await numbers('?tag=nothing'), [])
  t.match((await call(ann, 'GET', '/demo/discussions?tag=%3Bdrop')).body, { fields: [{ field: 'tag', problem: /letters, digits/ }] }, 'what cannot be a tag: 400 with the reason')
  t.equal((await call(ann, 'GET', '/demo/discussions?tag=a%00b')).status, 400, 'U+0000')
  const refused = await call(ann, 'PUT', '/demo/discussions/1', { tags: ['ok', 'not;ok'] })
  t.equal(refused.status, 400)
  t.match(refused.body, { fields: [{ field: 'tags', problem: /tag "not;ok"/ }] })
  t.equal((await call(ann, 'PUT', '/demo/discussions/1', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })).status, 400, 'at most 20')
  t.equal((await call(ann, 'PUT', '/demo/discussions/1', { tags: 'vip' })).status, 400, 'a list, not a string')
  t.same((await call(ann, 'PUT', '/demo/discussions/1', { tags: [] })).body.tags, [], 'an empty list takes them all off')
  t.match((await call(ann, 'PUT', '/demo/discussions/1', {})).body, { fields: [{ problem: /send title, public, category, assignee, tags or fields/ }] })
})

t.test('saved replies: the staff reads them filled in, the administrators write them, each site its own', async (t) => {
  const { app, ann, bob, call, open } = await desk(t)
  await open('Refund')
  const added = await call(ann, 'POST', '/demo/saved_replies', { title: 'Refund sent', body: 'Hello {{customer.first_name}}, your refund for #{{discussion.number}} is on its way. {{supporter.name}}, {{site.name}}. {{unknown}}' })
  t.equal(added.status, 201)
  t.match(added.body, { id: Number, title: 'Refund sent', filled: null, href: /\/demo\/saved_replies\/\d+$/ })
  const listedByBob = await call(bob, 'GET', '/demo/saved_replies?discussion=1')
  t.equal(listedByBob.status, 200, 'every supporter reads them')
  t.equal(listedByBob.body.saved_replies[0].filled, `Hello Carol, your refund for #1 is on its way. ${bob.user.name}, Site demo. {{unknown}}`, 'filled for the discussion and the reader; an unknown placeholder stays as written')
  t.equal((await call(bob, 'GET', `/demo/saved_replies/${added.body.id}?discussion=1`)).body.filled, listedByBob.body.saved_replies[0].filled)
  t.equal((await call(bob, 'GET', '/demo/saved_replies?discussion=99')).status, 404, 'no such discussion')

  // Bob is not an administrator: he writes none.
  t.equal((await call(bob, 'POST', '/demo/saved_replies', { title: 'Mine', body: 'x' })).status, 403)
  t.equal((await call(bob, 'PATCH', `/demo/saved_replies/${added.body.id}`, { title: 'Hijacked' })).status, 403)
  t.equal((await call(bob, 'DELETE', `/demo/saved_replies/${added.body.id}`)).status, 403)
  t.equal((await call(ann, 'GET', `/demo/saved_replies/${added.body.id}`)).body.title, 'Refund sent', 'unchanged')

  t.equal((await call(ann, 'POST', '/demo/saved_replies', { title: 'Refund sent', body: 'again' })).status, 409, 'a title once a site')
  t.equal((await call(ann, 'POST', '/demo/saved_replies', { title: '   ', body: 'x' })).status, 400, 'a blank title')
  t.equal((await call(ann, 'POST', '/demo/saved_replies', { title: 'x', body: 'a\u0000b' })).status, 400, 'U+0000')
  t.equal((await call(ann, 'PATCH', `/demo/saved_replies/${added.body.id}`, {})).status, 400, 'nothing to change')
  t.equal((await call(ann, 'PATCH', `/demo/saved_replies/${added.body.id}`, { body: 'Changed.' })).body.body, 'Changed.')

  // Another site's administrator sees and touches none of ours.
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  await app.users.setAdministrator(otto.site.id, otto.user.id, true)
  t.same((await call(otto, 'GET', '/other/saved_replies')).body.saved_replies, [])
  t.equal((await call(otto, 'GET', `/other/saved_replies/${added.body.id}`)).status, 404)
  t.equal((await call(otto, 'DELETE', `/other/saved_replies/${added.body.id}`)).status, 404)
  t.equal((await call(otto, 'GET', '/demo/saved_replies')).status, 401, 'his token is not for our site')
  t.equal((await call(ann, 'DELETE', `/demo/saved_replies/${added.body.id}`)).status, 204)
  t.equal((await call(ann, 'GET', `/demo/saved_replies/${added.body.id}`)).status, 404)
})

t.test('categories given in turn: set by an administrator through the API', async (t) => {
  const { app, ann, bob, general, call, open } = await desk(t)
  t.equal((await call(bob, 'PATCH', `/demo/categories/${general.id}`, { round_robin: true })).status, 403, 'a supporter may not')
  const set = await call(ann, 'PATCH', `/demo/categories/${general.id}`, { round_robin: true })
  t.equal(set.status, 200)
  t.equal(set.body.round_robin, true)
  t.equal((await call(ann, 'PATCH', '/demo/categories/999', { round_robin: true })).status, 404)
  t.equal((await call(ann, 'PATCH', `/demo/categories/${general.id}`, { round_robin: 'yes' })).status, 400)
  const owners = [(await open('A')).assignee.id, (await open('B')).assignee.id]
  t.same(owners.sort(), [ann.user.id, bob.user.id].sort(), 'one each')
  void app
})

t.test('MCP: give, tag, and the saved replies filled in, through the SDK client', async (t) => {
  const { app, ann, call, open } = await desk(t)
  await open('Printer')
  await call(ann, 'POST', '/demo/saved_replies', { title: 'Hello', body: 'Hi {{customer.name}}!' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const client = new Client({ name: 'team-test', version: '1.0.0' })
  const url = new URL(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/mcp`)
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: ann.bearer.authorization } } }))
  t.teardown(() => client.close())
  const tool = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })).structuredContent as Record<string, any>
  t.same((await tool('assign_discussion', { number: 1, to: 'me' })).assignee.id, ann.user.id)
  t.same((await tool('tag_discussion', { number: 1, tags: ['Printer', 'urgent'] })).tags, ['printer', 'urgent'])
  t.equal((await tool('list_saved_replies', { number: 1 })).saved_replies[0].filled, 'Hi Carol Customer!')
  t.same((await tool('list_discussions', { assignee: 'me', tag: 'urgent' })).discussions.map((d: { number: number }) => d.number), [1])
  const replied = await tool('post_reply', { number: 1, body: 'Hi Carol Customer!' })
  t.equal(replied.via, 'mcp', 'a reply through MCP says so')
})
