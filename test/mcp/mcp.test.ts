import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { fileResult, toolResult, writeToolsCalled } from '../../routes/api/mcp/server.ts'
import { MCP_TEXT_BYTES, MCP_TOOLS } from '../../routes/api/mcp/tools.ts'
import { movedPath } from '../../routes/api/mcp/index.ts'
import { form, PNG } from '../fixtures/files.ts'
import { supporterWithToken, V1 } from '../fixtures/app.ts'
import { legacyTokenOf, supporterWithPassword } from '../fixtures/credentials.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { oauthTokens } from '../fixtures/oauth.ts'

// Engines: one: MCP's transport and tools over the API's own routes; those routes run on both in their own tests, and an MCP write in test/team/collaborators.test.ts.
// The MCP endpoint (routes/api/mcp) through the official SDK's own client over real HTTP, and its
// HTTP answers through fetch. test/mcp/oauth.test.ts connects through the OAuth flow.

type Structured = Record<string, unknown> & { discussions?: Array<{ number: number; title: string }>; comments?: Array<{ body: string }> }

async function mcpApp(t: Test) {
  const lines: string[] = []
  const made = await discussionApp(t, { logStream: { write: (line) => void lines.push(line) } })
  await made.create({ title: 'Printer on fire', body: 'It smokes.' })
  await made.app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(made.app.server.address() as { port: number }).port}/demo/mcp`
  async function connect(authorization: string) {
    const client = new Client({ name: 'service-desk-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization } } }))
    t.teardown(() => client.close())
    return client
  }
  /** One JSON-RPC message, as a client without the SDK sends it. */
  const post = (headers: Record<string, string>, message: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: typeof message === 'string' ? message : JSON.stringify(message),
    })
  return { ...made, url, connect, post, lines }
}

const call = (name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } })

t.test('an assistant sees the SLA: the due times of each discussion, the order by them, the breached ones', async (t) => {
  const made = await mcpApp(t)
  const { app, ann, clock, connect, create } = made
  await app.slaPolicies.add(ann.site.id, { name: 'Fast', conditions: { categories: [], tags: [], domains: ['customer.test'], channels: [] }, scheduleId: null, targets: { firstReply: 60, nextReply: null, resolution: null }, warnBefore: 0 })
  const chosen = await create({ title: 'Late soon', body: 'Help.', author_email: 'carol@customer.test' })
  const client = await connect(ann.bearer.authorization)
  const byDue = (await client.callTool({ name: 'list_discussions', arguments: { sort: 'due' } })).structuredContent as { discussions: Array<{ number: number; sla: unknown }> }
  t.same(byDue.discussions.map((d) => d.number), [chosen.number, 1], 'the soonest due first, the one without a clock last')
  t.match(byDue.discussions[0]!.sla, { policy: { id: 1 }, first_reply_due_at: new Date(clock() + 3_600_000).toISOString().replace('.000', ''), breached: [] })
  t.equal(byDue.discussions[1]!.sla, null)
  t.match((await client.callTool({ name: 'list_discussions', arguments: { sla: 'breached' } })).structuredContent, { total: 0 })
  clock.advance(61 * 60_000)
  await app.slaAlerts.tellDue()
  const breached = (await client.callTool({ name: 'list_discussions', arguments: { sla: 'breached' } })).structuredContent as { total: number; discussions: Array<{ sla: { breached: string[] } }> }
  t.equal(breached.total, 1)
  t.same(breached.discussions[0]!.sla.breached, ['first_reply'])
})

t.test("an assistant says what erasing a customer would do, with a Read only token of an administrator, and erases nothing", async (t) => {
  const made = await mcpApp(t)
  const { app, create, connect } = made
  await create({ title: 'Mine', body: 'Carol writes.', author_email: 'carol@customer.test', author_name: 'Carol' })
  const admin = await supporterWithToken(app, { access: 'read', email: 'adele@example.test' })
  await app.users.setAdministrator(admin.site.id, admin.user.id, true)
  const client = await connect(admin.bearer.authorization)
  const found = (await client.callTool({ name: 'find_customer', arguments: { email: 'CAROL@customer.test' } })).structuredContent as { customers: Array<{ id: number }> }
  t.equal(found.customers.length, 1)
  const plan = await client.callTool({ name: 'plan_erasure', arguments: { customer: found.customers[0]!.id } })
  t.notOk(plan.isError)
  t.match(plan.structuredContent, { dry_run: true, erasure: 'anonymise', discussions: 1, others: 0, comments: 1, account: 'removed', done: null })
  t.equal((await app.inject({ method: 'POST', url: `/demo/customers/${found.customers[0]!.id}/erase`, headers: admin.bearer, payload: {} })).statusCode, 403, 'a Read only token erases nothing')
  t.equal(((await client.callTool({ name: 'find_customer', arguments: { email: 'carol@customer.test' } })).structuredContent as { customers: unknown[] }).customers.length, 1, 'she is still there')
  // A supporter who is not an administrator hears the API's refusal.
  const bob = await supporterWithToken(app, { access: 'read', email: 'bob@example.test' })
  t.equal((await (await connect(bob.bearer.authorization)).callTool({ name: 'plan_erasure', arguments: { customer: found.customers[0]!.id } })).isError, true)
})

t.test('the SDK client connects with a personal token, lists the tools, reads and writes', async (t) => {
  const made = await mcpApp(t)
  const { ann, connect, lines } = made
  const client = await connect(ann.bearer.authorization)
  t.match(client.getServerVersion(), { name: 'service-desk' })

  const { tools } = await client.listTools()
  t.same(tools.map((tool) => tool.name), MCP_TOOLS.map((tool) => tool.name))
  for (const tool of tools) {
    t.ok(tool.description && tool.description.length > 40, `${tool.name} is described for a model`)
    t.equal(tool.inputSchema.type, 'object')
    t.equal(tool.annotations?.destructiveHint, false)
  }
  const readOnly = tools.filter((tool) => tool.annotations?.readOnlyHint).map((tool) => tool.name)
  t.same(readOnly, ['list_discussions', 'search_discussions', 'list_changes', 'get_report', 'get_discussion', 'read_attachment', 'list_categories', 'list_participants', 'list_sender_rules', 'list_fields', 'list_saved_replies', 'list_macros', 'find_customer', 'plan_erasure'], 'the tools a Read only token may call are marked')

  const listing = await client.callTool({ name: 'list_discussions', arguments: {} })
  const structured = listing.structuredContent as Structured
  t.match(structured, { total: 1, per_page: 30 })
  t.equal(structured.discussions![0].title, 'Printer on fire')
  t.match((listing.content as Array<{ text: string }>)[0].text, '"title": "Printer on fire"', 'and as readable text')
  t.match((await client.callTool({ name: 'list_discussions', arguments: { state: 'resolved' } })).structuredContent, { total: 0 })
  const categories = (await client.callTool({ name: 'list_categories', arguments: {} })).structuredContent as { categories: Array<{ name: string }> }
  t.same((await client.callTool({ name: 'list_categories', arguments: { page: 1 } })).structuredContent, categories, 'a page asked for goes to the API as ?page=')
  t.same(categories.categories.map((c) => c.name).sort(), ['Problems', 'Questions'])

  const reply = await client.callTool({ name: 'post_reply', arguments: { number: 1, body: 'We are on our way.', internal: false } })
  t.notOk(reply.isError)
  const read = await client.callTool({ name: 'get_discussion', arguments: { number: 1 } })
  t.same((read.structuredContent as Structured).comments!.map((c) => c.body), ['It smokes.', 'We are on our way.'])
  // It says it came through an assistant; a client cannot claim that for its own writes.
  t.same(((read.structuredContent as Structured).comments as unknown as Array<{ via: string }>).map((c) => c.via), ['api', 'mcp'])
  const claimed = await made.app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...ann.bearer, 'x-service-desk-mcp-call': 'guess' }, payload: { body: 'Me, an assistant?' } })
  t.equal(claimed.json().via, 'api', 'a guessed mark is not the mark')

  t.match((await client.callTool({ name: 'resolve_discussion', arguments: { number: 1 } })).structuredContent, { state: 'resolved' })
  t.match((await client.callTool({ name: 'unresolve_discussion', arguments: { number: 1 } })).structuredContent, { state: 'open' })
  // The reports, read only (issue 69): what was just done is counted.
  const report = (await client.callTool({ name: 'get_report', arguments: { name: 'volume', by: 'week' } })).structuredContent as { by: string; total: Record<string, unknown> }
  t.match(report, { by: 'week', total: { created: 1, resolved: 1, reopened: 1, replies: 2 } })
  t.ok((await client.callTool({ name: 'get_report', arguments: { name: 'volume', from: '2026-03-05', to: '2026-03-01' } })).isError, "the API's refusal of a range is the tool's error")
  t.match((await client.callTool({ name: 'mark_spam', arguments: { number: 1 } })).structuredContent, { state: 'spam' })
  t.match((await client.callTool({ name: 'list_discussions', arguments: { state: 'spam' } })).structuredContent, { total: 1 })
  t.match((await client.callTool({ name: 'mark_not_spam', arguments: { number: 1 } })).structuredContent, { state: 'open' })
  const { problems } = made
  t.match((await client.callTool({ name: 'change_category', arguments: { number: 1, category_id: problems.id } })).structuredContent, { category_href: `https://api.example.test/demo/categories/${problems.id}` })
  const created = await client.callTool({
    name: 'create_discussion',
    arguments: { category_id: problems.id, title: 'Paper jam', body: 'Again.', customer_email: 'cora@example.test', customer_name: 'Cora' },
  })
  t.match(created.structuredContent, { number: 2, title: 'Paper jam', author_email: 'cora@example.test' }, 'on behalf of a customer')
  t.match((await client.callTool({ name: 'list_discussions', arguments: { category_id: problems.id } })).structuredContent, { total: 2 })

  const audit = lines.filter((line) => line.includes('"mcp tool call"')).map((line) => JSON.parse(line).mcp)
  t.match(audit[0], { tool: 'list_discussions', user: ann.user.id, credential: 'personal_token' }, 'who, with what, which tool')
  t.notMatch(lines.join(''), ann.value.slice(12), 'never the token')
})

t.test("participants and sender rules: whom a discussion's replies copy, and the senders an administrator blocks or allows", async (t) => {
  const { app, ann, connect } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  t.match((await client.callTool({ name: 'add_participant', arguments: { number: 1, email: 'Boss@Customer.Example', name: 'The Boss' } })).structuredContent, { email: 'boss@customer.example', name: 'The Boss', added_by: 'team' })
  t.match((await client.callTool({ name: 'list_participants', arguments: { number: 1 } })).structuredContent, { participants: [{ email: 'boss@customer.example' }] })
  t.same((await client.callTool({ name: 'remove_participant', arguments: { number: 1, email: 'boss@customer.example' } })).content, [{ type: 'text', text: 'Done.' }])
  t.same((await client.callTool({ name: 'list_participants', arguments: { number: 1 } })).structuredContent, { participants: [] })
  const gone = await client.callTool({ name: 'remove_participant', arguments: { number: 1, email: 'boss@customer.example' } })
  t.equal(gone.isError, true, 'someone not there is a refusal the model reads')

  // The rules are the administrators': Ann is not one yet.
  const refused = await client.callTool({ name: 'set_sender_rule', arguments: { pattern: 'spammer.example', verdict: 'block' } })
  t.equal(refused.isError, true)
  t.match((refused.content as Array<{ text: string }>)[0].text, /^The help desk refused \(403\)/)
  t.equal((await app.senders.list(ann.site.id)).length, 0)
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const rule = (await client.callTool({ name: 'set_sender_rule', arguments: { pattern: '*.Spammer.Example', verdict: 'block' } })).structuredContent as { id: number }
  t.match(rule, { pattern: 'spammer.example', verdict: 'block' })
  t.match((await client.callTool({ name: 'list_sender_rules', arguments: {} })).structuredContent, { sender_rules: [{ id: rule.id, pattern: 'spammer.example' }] })
  t.equal((await client.callTool({ name: 'set_sender_rule', arguments: { pattern: 'spammer.example', verdict: 'maybe' } })).isError, true, 'a verdict that is not one is refused before any request')
  t.same((await client.callTool({ name: 'remove_sender_rule', arguments: { id: rule.id } })).content, [{ type: 'text', text: 'Done.' }])
  t.same(await app.senders.list(ann.site.id), [])
})

t.test('an assistant lists the macros and applies one: the reply, the tags and the state at once (issue 70)', async (t) => {
  const { app, ann, connect } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  const macro = await app.savedReplies.add(ann.site.id, { title: 'Done', body: 'Fixed for you.', actions: [{ type: 'add_tags', tags: ['fixed'] }, { type: 'set_state', state: 'resolved' }] })
  const listed = (await client.callTool({ name: 'list_macros', arguments: { number: 1 } })).structuredContent as { macros: Array<{ id: number; filled: string; actions: unknown[] }> }
  t.match(listed.macros, [{ id: macro.id, filled: 'Fixed for you.', actions: [{ type: 'add_tags', tags: ['fixed'] }, { type: 'set_state', state: 'resolved' }] }])
  const applied = await client.callTool({ name: 'apply_macro', arguments: { number: 1, macro: macro.id, internal: true } })
  t.match(applied.structuredContent, { state: 'resolved', tags: ['fixed'], comments_count: 2 })
  const note = (await app.inject({ url: '/demo/discussions/1/comments/2', headers: ann.bearer })).json()
  t.match(note, { body: 'Fixed for you.', internal: true, via: 'mcp' }, 'an internal note, by the assistant')
  t.equal((await client.callTool({ name: 'apply_macro', arguments: { number: 1, macro: 999 } })).isError, true, 'an unknown macro is a refusal the model reads')
})

t.test('an assistant merges a discussion into another, reads it at its old number, and undoes the merge (issue 71)', async (t) => {
  const { ann, connect, create } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  await create({ title: 'Printers down', body: 'All of them.' })
  const merged = await client.callTool({ name: 'merge_discussion', arguments: { number: 1, into: 2 } })
  t.match(merged.structuredContent, { number: 2, comments_count: 2 })
  const read = await client.callTool({ name: 'get_discussion', arguments: { number: 1 } })
  t.notOk(read.isError)
  t.match(read.structuredContent, { number: 2, title: 'Printers down', comments: [{ body: 'All of them.' }, { body: 'It smokes.', moved_from: { discussion: 1, comment: 1 } }] }, 'the old number reads where the comments are')
  t.equal((await client.callTool({ name: 'merge_discussion', arguments: { number: 2, into: 2 } })).isError, true, 'a refusal the model reads')
  const undone = await client.callTool({ name: 'unmerge_discussion', arguments: { number: 1 } })
  t.match(undone.structuredContent, { number: 1, state: 'open', comments_count: 1, merged_into: null })
  await client.callTool({ name: 'post_reply', arguments: { number: 1, body: 'And the toner is out.' } })
  const split = await client.callTool({ name: 'split_discussion', arguments: { number: 1, comment: 2, title: 'Toner' } })
  t.match(split.structuredContent, { number: 3, title: 'Toner', split_from: { number: 1 }, comments_count: 1 })
  t.equal(movedPath('https://api.example.test/demo/discussions/2', 'https://api.example.test/demo'), '/discussions/2')
  t.equal(movedPath('https://elsewhere.example/demo/discussions/2', 'https://api.example.test/demo'), undefined, 'a redirect elsewhere is not followed')
})

t.test("an assistant lists the custom fields and sets a discussion's values by key; a wrong value is a refusal it reads (issue 72)", async (t) => {
  const { app, ann, connect } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  const by = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  await app.fields.add(ann.site.id, { key: 'order_number', name: 'Order number', kind: 'text' }, by)
  await app.fields.add(ann.site.id, { key: 'plan', name: 'Plan', kind: 'choice', choices: ['Basic', 'Pro'] }, by)
  const listed = (await client.callTool({ name: 'list_fields', arguments: {} })).structuredContent as { fields: Array<{ key: string; kind: string }> }
  t.same(listed.fields.map((f) => [f.key, f.kind]), [['order_number', 'text'], ['plan', 'choice']])
  const set = await client.callTool({ name: 'set_fields', arguments: { number: 1, fields: { order_number: 'A-1002', plan: 'Pro' } } })
  t.match(set.structuredContent, { number: 1, fields: { order_number: 'A-1002', plan: 'Pro' } })
  const wrong = await client.callTool({ name: 'set_fields', arguments: { number: 1, fields: { plan: 'Gold' } } })
  t.equal(wrong.isError, true)
  t.match(JSON.stringify(wrong.content), /fields\.plan must be one of Basic, Pro/)
})

t.test('a discussion lists its attachments; read_attachment reads a text one, capped, and no other', async (t) => {
  const { app, ann, connect } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  const upload = async (name: string, bytes: Buffer) => {
    const body = await form({ body: `Here is ${name}.`, file: { name, bytes } })
    const res = await app.inject({ method: 'POST', url: '/demo/discussions/1/comments', headers: { ...ann.bearer, 'content-type': body.type }, payload: body.payload })
    return res.json().attachments[0] as { id: number }
  }
  const log = await upload('server.log', Buffer.from('12:00 error: disk full\n'))
  const big = await upload('big.csv', Buffer.from(`${'é'.repeat(MCP_TEXT_BYTES / 2 - 1)}é,tail`))
  const image = await upload('shot.png', PNG)

  const read = (await client.callTool({ name: 'get_discussion', arguments: { number: 1 } })).structuredContent as { comments: Array<{ attachments: Array<{ name: string; content_type: string }> }> }
  t.same(read.comments.flatMap((c) => c.attachments.map((a) => [a.name, a.content_type])), [['server.log', 'text/plain'], ['big.csv', 'text/plain'], ['shot.png', 'image/png']])

  const text = await client.callTool({ name: 'read_attachment', arguments: { id: log.id } })
  t.notOk(text.isError)
  t.same(text.content, [{ type: 'text', text: '12:00 error: disk full\n' }])
  const capped = ((await client.callTool({ name: 'read_attachment', arguments: { id: big.id } })).content as Array<{ text: string }>)[0].text
  t.match(capped, /\n\n\[Cut: these are the first 100 KB of 102405 bytes\.\]$/)
  t.notMatch(capped, /tail|\ufffd/, 'cut at a whole character, before the tail')
  const binary = await client.callTool({ name: 'read_attachment', arguments: { id: image.id } })
  t.equal(binary.isError, true)
  t.match((binary.content as Array<{ text: string }>)[0].text, 'This attachment is image/png, not text')
  const missing = await client.callTool({ name: 'read_attachment', arguments: { id: 9999 } })
  t.match((missing.content as Array<{ text: string }>)[0].text, 'The help desk refused (404): There is no attachment 9999 on this site.')
  t.same(fileResult({ status: 200, body: '', bytes: Buffer.alloc(0), type: undefined }), { isError: true, content: [{ type: 'text', text: 'This attachment is of no type, not text: it is not read here. Its href downloads it.' }] })
})

t.test('bad arguments and refusals of the API are tool errors a model can read', async (t) => {
  const { ann, connect } = await mcpApp(t)
  const client = await connect(ann.bearer.authorization)
  const unknown = await client.callTool({ name: 'get_discussion', arguments: { number: 99 } })
  t.equal(unknown.isError, true)
  t.match((unknown.content as Array<{ text: string }>)[0].text, 'The help desk refused (404): There is no discussion 99')
  const long = await client.callTool({ name: 'post_reply', arguments: { number: 1, body: '' } })
  t.match((long.content as Array<{ text: string }>)[0].text, 'The help desk refused (400): Invalid request: body must not be empty.', "the API's own validation")
  const wrongType = await client.callTool({ name: 'get_discussion', arguments: { number: 'one' } })
  t.equal(wrongType.isError, true, 'a wrong type is refused before any request')
  t.match((wrongType.content as Array<{ text: string }>)[0].text, 'expected number')
  const missing = await client.callTool({ name: 'delete_everything', arguments: {} })
  t.equal(missing.isError, true)
  t.match((missing.content as Array<{ text: string }>)[0].text, 'delete_everything not found')
})

t.test('"Read and write tokens: administrators only" holds at the MCP door: an OAuth token of a non-administrator reads and does not write (issue 45)', async (t) => {
  const { app, ann, post } = await mcpApp(t)
  const { person, tokens } = await oauthTokens(app, { scope: 'read write' })
  const bearer = { authorization: `Bearer ${tokens.access_token}` }
  t.equal((await post(bearer, call('post_reply', { number: 1, body: 'Before the rule.' }))).status, 200, 'granted write, it writes')
  await app.sites.setPolicy(ann.site.id, { writeTokens: 'administrators' })
  t.equal((await post(bearer, call('list_discussions'))).status, 200, 'a read tool goes on')
  const write = await post(bearer, call('post_reply', { number: 1, body: 'Hi' }))
  t.equal(write.status, 403, 'a write tool of a non-administrator is refused')
  t.match(write.headers.get('www-authenticate'), 'error="insufficient_scope"')
  await app.users.setAdministrator(ann.site.id, person.user.id, true)
  t.equal((await post(bearer, call('post_reply', { number: 1, body: 'Hi' }))).status, 200, "an administrator's write goes through")
})

t.test('a Read only token reads, and a write tool gets the step-up 403', async (t) => {
  const { app, connect, post } = await mcpApp(t)
  const reader = await supporterWithToken(app, { access: 'read' })
  const client = await connect(reader.bearer.authorization)
  t.notOk((await client.callTool({ name: 'list_discussions', arguments: {} })).isError)
  const refused = await client.callTool({ name: 'post_reply', arguments: { number: 1, body: 'Hi' } }).then(
    () => undefined,
    (error: unknown) => error,
  )
  t.match(refused, { code: 403 }, "the SDK's client gets the 403")
  const res = await post({ authorization: reader.bearer.authorization }, call('resolve_discussion', { number: 1 }))
  t.equal(res.status, 403)
  t.match(res.headers.get('www-authenticate'), 'scope="write", error="insufficient_scope"')
  const batch = await post({ authorization: reader.bearer.authorization }, [call('list_discussions'), call('post_reply', { number: 1, body: 'x' })])
  t.equal(batch.status, 403, 'also inside a batch')
})

t.test('the same door: the API challenge without a token, Bearer tokens only, one site', async (t) => {
  const { app, ann, post, url } = await mcpApp(t)
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
  const none = await post({}, init)
  t.equal(none.status, 401)
  t.equal(none.headers.get('www-authenticate'), `Bearer realm="Service", resource_metadata="https://api.example.test/.well-known/oauth-protected-resource/demo", scope="read write"`)
  const wrong = await post({ authorization: 'Bearer service_pat_nope' }, init)
  t.equal(wrong.status, 401)
  t.match(wrong.headers.get('www-authenticate'), 'error="invalid_token"')

  const legacy = await legacyTokenOf(app, ann.user.id)
  const legacyAnswer = await post({ 'x-service-auth': legacy.value }, init)
  t.equal(legacyAnswer.status, 401, 'the legacy token is refused here')
  t.match(legacyAnswer.headers.get('www-authenticate'), 'error="invalid_token"')
  const person = await supporterWithPassword(app)
  t.equal((await post({ authorization: person.headers.authorization }, init)).status, 401, 'so is a password')

  const elsewhere = await supporterWithToken(app, { site: 'other' })
  t.equal((await post({ authorization: elsewhere.bearer.authorization }, init)).status, 401, "another site's token")

  for (const method of ['GET', 'DELETE']) {
    const res = await fetch(url, { method, headers: { authorization: ann.bearer.authorization, accept: V1 } })
    t.equal(res.status, 405, method)
    t.equal(res.headers.get('allow'), 'POST')
  }
  const huge = await post({ authorization: ann.bearer.authorization }, JSON.stringify({ ...call('post_reply', { number: 1, body: 'x'.repeat(1_100_000) }) }))
  t.equal(huge.status, 413, 'bodies are limited like the API')
  const junk = await post({ authorization: ann.bearer.authorization }, '{"jsonrpc":')
  t.equal(junk.status, 400)
  const ok = await post({ authorization: ann.bearer.authorization }, init)
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('cache-control'), 'no-store', 'private, as every answer of the API')
})

t.test('pure parts: which write tools a body calls, and an answer as a tool result', async (t) => {
  t.same(writeToolsCalled(call('post_reply')), ['post_reply'])
  t.same(writeToolsCalled(call('list_discussions')), [])
  t.same(writeToolsCalled([call('resolve_discussion'), { method: 'tools/list' }, null]), ['resolve_discussion'])
  t.same(writeToolsCalled({ method: 'tools/call', params: { name: 42 } }), [])
  t.same(writeToolsCalled(undefined), [])
  t.match(toolResult(200, '{"a":1}'), { structuredContent: { a: 1 } })
  t.match(toolResult(409, '{"error":"conflict","message":"It is deleted."}'), { isError: true, content: [{ text: 'The help desk refused (409): It is deleted.' }] })
  t.match(toolResult(502, 'Bad gateway\n'), { isError: true, content: [{ text: 'The help desk refused (502): Bad gateway' }] })
  t.match(toolResult(400, 'null'), { content: [{ text: 'The help desk refused (400): no reason given' }] })
})

t.test("Origin, Host and MCP-Protocol-Version (MCP 2025-11-25, transports' security warning)", async (t) => {
  const made = await discussionApp(t, { config: { mcpAllowedOrigins: ['https://assistant.example'] } })
  const { app, ann, questions } = made
  const note = (headers: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url: '/demo/mcp',
      headers: { ...ann.bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      payload: call('create_discussion', { category_id: questions.id, title: 'Written from a page', body: 'x' }),
    })
  const written = async () => (await made.app.inject({ url: '/demo/discussions', headers: { ...ann.bearer, accept: V1 } })).json().total as number
  const before = await written()
  // A page of another origin, or an opaque one, holding a valid token: refused before any tool runs.
  for (const origin of ['http://evil.example', 'null', 'https://api.example.test.evil.example']) {
    const res = await note({ origin })
    t.equal(res.statusCode, 403, origin)
    t.same(res.json().error, 'forbidden_origin')
  }
  const twice = await app.inject({
    method: 'POST',
    url: '/demo/mcp',
    headers: { ...ann.bearer, 'content-type': 'application/json', accept: 'application/json, text/event-stream', origin: ['https://api.example.test', 'http://evil.example'] } as Record<string, string | string[]>,
    payload: call('list_categories'),
  })
  t.equal(twice.statusCode, 403, 'two Origin headers are no origin of ours')
  // A name that is not the service's own (a DNS-rebinding page on the loopback interface).
  const rebound = await note({ host: 'evil.example:3000' })
  t.equal(rebound.statusCode, 403)
  t.equal(rebound.json().error, 'forbidden_host')
  const unsupported = await note({ 'mcp-protocol-version': '1999-01-01' })
  t.equal(unsupported.statusCode, 400)
  t.equal(unsupported.json().error, 'unsupported_protocol_version')
  t.match(unsupported.json().message, '2025-11-25')
  t.equal(await written(), before, 'nothing was written by a refused request')

  // The service's own origins, one a setting allows, no Origin at all (not a browser), and the configured host.
  const allowed: Record<string, string>[] = [{ origin: 'https://api.example.test' }, { origin: 'https://help.example.test' }, { origin: 'https://assistant.example' }, {}, { host: 'api.example.test' }, { 'mcp-protocol-version': '2025-11-25' }]
  for (const headers of allowed) t.equal((await note(headers)).statusCode, 200, JSON.stringify(headers))
  t.equal(await written(), before + allowed.length)
})
