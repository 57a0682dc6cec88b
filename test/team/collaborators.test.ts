import t, { type Test } from 'tap'
import { buildTestApp, rawRows, supporterWithToken, V1 } from '../fixtures/app.ts'
import { apiDoors } from '../fixtures/doors.ts'
import { form, PNG } from '../fixtures/files.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { until } from '../fixtures/until.ts'
import { personWithPassword, signedInPerson } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the role is the membership's, read by every door's own query on each engine.
// The tests that ask nothing the engines do differently run once (onSqlite).
// Issue 67, item 2: a collaborator of a site (docs/decisions.md, "Collaborators") reads the queue and
// the discussions and writes internal notes only, through every door: the pages, a personal token,
// the legacy token, a password, a multipass, an OAuth application, and MCP. From their side: every
// other write tried through each door, and refused; a supporter made a collaborator is held to it
// at their next request; a collaborator owns nothing, and is given no turn.

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const NOTES_ONLY = /Collaborators of this site write internal notes only/

async function desk(t: Test) {
  const { app } = await buildTestApp(t)
  const oauth = await oauthTokens(app)
  const site = oauth.person.site
  const general = await app.categories.add(site.id, 'General', true)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const opened = await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: json(ann.bearer), payload: { title: 'Printer on fire', body: 'It smokes.' } })
  t.equal(opened.statusCode, 201)
  const cleo = await personWithPassword(app, { email: 'cleo@engineering.example' })
  t.equal(await app.users.setStaffRole(site.id, cleo.user.id, 'collaborator'), true)
  t.equal(await app.users.setStaffRole(site.id, cleo.user.id, 'collaborator'), false, 'the same role again changes nothing')
  const comments = async () => (await app.inject({ url: '/demo/discussions/1', headers: { ...ann.bearer, accept: V1 } })).json().comments as Array<{ body: string; internal: boolean }>
  return { app, site, general, ann, cleo, oauth, comments }
}

t.test('a collaborator reads and writes internal notes through every door of the API, and nothing else through any', async (t) => {
  const { app, site, general, cleo, oauth, comments } = await desk(t)
  await app.users.setStaffRole(site.id, oauth.person.user.id, 'collaborator')
  const doors: Record<string, Record<string, string>> = { ...(await apiDoors(app, site, cleo)), 'OAuth (an application)': bearer(oauth.tokens.access_token) }
  for (const [door, headers] of Object.entries(doors)) {
    const ask = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: payload ? json(headers) : { ...headers, accept: V1 }, ...(payload ? { payload } : {}) })
    t.equal((await ask('GET', '/demo/discussions')).statusCode, 200, `${door}: reads the queue`)
    t.equal((await ask('GET', '/demo/discussions/1')).statusCode, 200, `${door}: reads a discussion`)
    const note = await ask('POST', '/demo/discussions/1/comments', { body: `A note, ${door}.`, internal: true })
    t.equal(note.statusCode, 201, `${door}: writes an internal note`)
    t.match(note.json(), { internal: true, user_is_supporter: true })
    // From Cleo's side: each other write, through this door.
    for (const [what, method, url, payload] of [
      ['a reply to the customer', 'POST', '/demo/discussions/1/comments', { body: 'Hello!', internal: false }],
      ['a reply with no word of notes', 'POST', '/demo/discussions/1/comments', { body: 'Hello!' }],
      ["a note on a customer's behalf", 'POST', '/demo/discussions/1/comments', { body: 'Me?', internal: true, author_email: 'someone@example.test' }],
      ['a change of the title', 'PUT', '/demo/discussions/1', { title: 'Mine now' }],
      ['resolving it', 'POST', '/demo/discussions/1/resolve', {}],
      ['taking it', 'POST', '/demo/discussions/1/assign?to=me', {}],
      ['a new discussion', 'POST', `/demo/categories/${general.id}/discussions`, { title: 'Mine', body: 'Words.' }],
      ['deleting it', 'DELETE', '/demo/discussions/1', undefined],
      // Issues 71 and 72: a merge, a split, an undo, fields' values and definitions.
      ['merging it', 'POST', '/demo/discussions/1/merge', { into: 2 }],
      ['splitting it', 'POST', '/demo/discussions/1/split', { comment: 2 }],
      ['undoing a merge', 'POST', '/demo/discussions/1/unmerge', {}],
      ['setting its fields', 'PUT', '/demo/discussions/1', { fields: { plan: 'Pro' } }],
      ['defining a field', 'POST', '/demo/fields', { key: 'plan', name: 'Plan', kind: 'text' }],
    ] as const) {
      const refused = await ask(method, url, payload)
      t.equal(refused.statusCode, 403, `${door}: ${what} is refused`)
      t.match(refused.json(), { error: 'forbidden', message: NOTES_ONLY })
    }
  }
  const all = await comments()
  t.same(all.map((c) => c.internal), [false, true, true, true, true, true], 'the opening post and one note a door; nothing else written')
  t.match(await app.discussions.get(site.id, 1), { title: 'Printer on fire', state: 'open', assigneeId: null })

  // A public reply with a file, as a form: refused, and the file it uploaded is not kept.
  const upload = await form({ body: 'See the photo.', internal: 'false', file: { name: 'photo.png', bytes: PNG } })
  const withFile = await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...doors['personal token'], accept: V1, 'content-type': upload.type }, payload: upload.payload })
  t.equal(withFile.statusCode, 403)
  t.same(await rawRows(app, 'SELECT id FROM files'), [], 'no file of the refused reply is kept')
  const note = await form({ body: 'The log.', internal: 'true', file: { name: 'log.png', bytes: PNG } })
  t.equal((await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...doors['personal token'], accept: V1, 'content-type': note.type }, payload: note.payload })).statusCode, 201, 'a note may carry a file')
})

t.test('through MCP: the note tool goes through, a reply to the customer is a tool error', onSqlite('the MCP tools a collaborator may and may not call'), async (t) => {
  const { app, cleo } = await desk(t)
  const token = await supporterWithToken(app, { email: cleo.email })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/mcp`
  const call = async (name: string, args: Record<string, unknown>) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...token.bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    })
      t.equal(res.status, 200)
    return ((await res.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result
  }
  t.notOk((await call('get_discussion', { number: 1 })).isError, 'reads')
  t.notOk((await call('post_reply', { number: 1, body: 'Seen it in the logs.', internal: true })).isError, 'writes a note')
  const reply = await call('post_reply', { number: 1, body: 'Hello!', internal: false })
  t.equal(reply.isError, true, 'a reply to the customer is refused')
  t.match(reply.content[0]!.text, NOTES_ONLY)
  t.equal((await call('resolve_discussion', { number: 1 })).isError, true, 'so is resolving it')
  t.equal((await call('merge_discussion', { number: 1, into: 2 })).isError, true, 'merging it')
  t.equal((await call('split_discussion', { number: 1, comment: 2 })).isError, true, 'splitting it')
  t.equal((await call('set_fields', { number: 1, fields: { plan: 'Pro' } })).isError, true, 'setting its fields')
})

t.test('on the pages: the queue and the discussion read, a note sent; every other form refused', async (t) => {
  const { app, site, comments } = await desk(t)
  const { web } = await signedInPerson(app, { email: 'cleo2@engineering.example' })
  const cleo2 = (await app.users.find('cleo2@engineering.example'))!
  await app.users.setStaffRole(site.id, cleo2.id, 'collaborator')
  t.equal((await web.get('/demo/discussions')).statusCode, 200, 'her open session reads the queue: it allows that still')
  const page = await web.get('/demo/discussions/1')
  t.equal(page.statusCode, 200)
  t.match(page.body, /data-notes-only/)
  t.match(page.body, /<input type="hidden" name="internal" value="yes">/)
  t.notMatch(page.body, /\/act"|\/assign"|\/tags"|\/participants"|\/category"|\/merge"|\/split"|\/fields"|name="then" value="resolve"/, 'no form she may not send is offered')
  const noted = await web.postFiles('/demo/discussions/1/reply', { body: 'Known bug, fixed in 2.1.', internal: 'yes' })
  t.equal(noted.statusCode, 303)
  t.match(noted.headers.location, /done=noted/)
  // From her side: what the page does not offer, sent by hand.
  const reply = await web.postFiles('/demo/discussions/1/reply', { body: 'Hello customer!', internal: 'no', file: { name: 'a.png', bytes: PNG } })
  t.equal(reply.statusCode, 403)
  t.match(reply.body, /Notes only/)
  // Its uploads are dropped once the answer is sent (routes/web/discussion.ts, onResponse).
  t.ok(await until('the refused upload dropped', async () => (await rawRows(app, 'SELECT id FROM files')).length === 0), 'the refused reply keeps no file')
  for (const [path, fields] of [
    ['/demo/discussions/1/act', { action: 'resolve' }],
    ['/demo/discussions/1/assign', { to: 'me' }],
    ['/demo/discussions/1/tags', { tags: 'mine' }],
    ['/demo/discussions/1/participants', { email: 'boss@example.test' }],
    ['/demo/discussions/1/merge', { into: '#2' }],
    ['/demo/discussions/1/split', { comment: '2' }],
    ['/demo/discussions/1/unmerge', { from: '2' }],
    ['/demo/discussions/1/fields', { 'f.plan': 'Pro' }],
  ] as const) {
    t.equal((await web.post(path, fields)).statusCode, 403, `${path} is refused`)
  }
  t.same((await comments()).map((c) => [c.body, c.internal]), [['It smokes.', false], ['Known bug, fixed in 2.1.', true]])
  t.match(await app.discussions.get(site.id, 1), { state: 'open', assigneeId: null, tags: '' })
  // Her own account stays hers: her name, on the profile.
  await web.get('/demo/profile')
  t.equal((await web.post('/demo/profile/name', { name: 'Cleo from engineering' })).statusCode, 303)
  t.equal((await app.users.byId(cleo2.id))!.name, 'Cleo from engineering')
})

t.test('a collaborator owns nothing: not offered, not given; made one, what they owned goes back to the team', async (t) => {
  const { app, site, ann, cleo } = await desk(t)
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  t.equal((await app.inject({ method: 'POST', url: `/demo/discussions/1/assign?to=${cleo.user.id}`, headers: json(ann.bearer), payload: {} })).statusCode, 400, 'she cannot be given one')
  t.notOk((await app.users.staffOf(site.id)).some((s) => s.id === cleo.user.id), 'nor is she offered as an owner')
  t.equal((await app.inject({ method: 'POST', url: `/demo/discussions/1/assign?to=${bob.user.id}`, headers: json(ann.bearer), payload: {} })).statusCode, 200)
  // Bob made a collaborator: his discussion goes back to the team.
  t.equal(await app.users.setStaffRole(site.id, bob.user.id, 'collaborator'), true)
  t.match(await app.discussions.get(site.id, 1), { assigneeId: null })
  t.equal((await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: json(bob.bearer), payload: { body: 'Hi' } })).statusCode, 403, 'his token is held to notes at once')
  t.equal(await app.users.staffRole(site.id, bob.user.id), 'collaborator')
  t.equal(await app.users.staffRole(site.id, 999_999), undefined)
  await t.rejects(app.users.setStaffRole(site.id, 999_999, 'supporter'), { code: 'not_found' })
})
