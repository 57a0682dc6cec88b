import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Search through the API and MCP (docs/decisions.md, "Search"), on the suite's engine: the index
// follows every write in its transaction (a create, a reply, a note, a new title; nothing of a
// refused one), the answer's envelope, snippets, paging and ETag, the refusals with their reasons,
// hostile queries never a 500, and another site's discussions never found.

async function desk(t: Parameters<typeof buildTestApp>[0]) {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const call = async (who: { bearer: Record<string, string> }, url: string, headers: Record<string, string> = {}) => {
    const answer = await app.inject({ url, headers: { ...who.bearer, accept: V1, ...headers } })
    return { status: answer.statusCode, headers: answer.headers, body: answer.statusCode === 304 ? null : answer.json() }
  }
  const open = async (title: string, body: string, email = 'carol@customer.example') =>
    (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title, body, supporterId: ann.user.id, onBehalfOf: { email, name: 'Carol Customer' }, via: 'api' })).discussion
  const numbers = async (q: string, who = ann) => {
    const answer = await call(who, `/demo/search?q=${encodeURIComponent(q)}`)
    t.equal(answer.status, 200, q)
    return (answer.body.results as Array<{ discussion: { number: number } }>).map((r) => r.discussion.number).sort((a, b) => a - b)
  }
  return { app, ann, general, call, open, numbers }
}

t.test('every write is searchable at once, in its transaction; a refused one leaves nothing', async (t) => {
  const { app, ann, general, open, numbers } = await desk(t)
  const first = await open('Printer on fire', 'The office printer smokes.')
  t.same(await numbers('printer'), [first.number], 'the create: title and opening post')
  t.same(await numbers('smokes'), [first.number])
  await app.discussions.reply({ siteId: ann.site.id, number: first.number, body: 'A technician is on the way.', internal: false, supporterId: ann.user.id, via: 'api' })
  t.same(await numbers('technician'), [first.number], 'a reply')
  await app.discussions.reply({ siteId: ann.site.id, number: first.number, body: 'Warranty expired last May.', internal: true, supporterId: ann.user.id, via: 'api' })
  t.same(await numbers('warranty'), [first.number], "a note, for the staff's search")
  await app.discussions.update(ann.site.id, first.number, { title: 'Scanner jammed' })
  t.same(await numbers('scanner'), [first.number], 'a new title')
  t.same(await numbers('fire'), [], 'the old one gone')
  t.same(await numbers('printer'), [first.number], 'the comments still there')

  // Refused writes: nothing of them is found.
  await t.rejects(app.discussions.create({ siteId: ann.site.id, categoryId: 999_999, title: 'Ghost kettle', body: 'Boo', supporterId: ann.user.id, via: 'api' }))
  await t.rejects(app.discussions.reply({ siteId: ann.site.id, number: first.number, body: 'Phantom reply', internal: false, supporterId: ann.user.id, via: 'api' }, () => false))
  await t.rejects(app.discussions.update(ann.site.id, first.number, { title: 'Phantom title', categoryId: 999_999 }))
  for (const word of ['ghost', 'kettle', 'phantom']) t.same(await numbers(word), [], `${word}: nothing half-written`)

  // Deleted ones only when asked for; restored ones again.
  await app.discussions.act(ann.site.id, first.number, 'delete')
  t.same(await numbers('scanner'), [])
  t.same(await numbers('scanner state:deleted'), [first.number])
  await app.discussions.act(ann.site.id, first.number, 'restore')
  t.same(await numbers('scanner'), [first.number])
  void general
})

t.test('the answer: ranked, the snippet and its matches, paging, Link and ETag', async (t) => {
  const { app, ann, call, open } = await desk(t)
  await open('Printer question', 'Where is the printer? Printer printer printer.')
  for (let i = 0; i < 32; i++) await open(`Other ${i}`, `A question about the printer number ${i}`)
  const answer = await call(ann, '/demo/search?q=printer')
  t.equal(answer.status, 200)
  t.match(answer.headers['content-type'], 'application/vnd.service-v1+json')
  t.match(answer.body, { offset: 0, total: 33, per_page: 30, capped: false })
  t.equal(answer.body.results.length, 30)
  t.equal(answer.body.results[0].discussion.title, 'Printer question', 'the best match first: in the title, four times')
  t.match(answer.body.results[0].discussion, { number: 1, href: 'https://api.example.test/demo/discussions/1', assignee: null, tags: [] }, 'the API resource of a discussion')
  t.same(answer.body.results[1].snippet.comment, 1, 'in the opening post')
  const { text, matches } = answer.body.results[0].snippet
  t.same(matches.map(([a, b]: [number, number]) => text.slice(a, b).toLowerCase()), ['printer', 'printer', 'printer', 'printer'], 'the matches, where they are in the text')
  t.match(answer.headers.link, '<https://api.example.test/demo/search?q=printer&page=2>; rel="next"')
  const second = await call(ann, '/demo/search?q=printer&page=2')
  t.match(second.body, { offset: 30, total: 33 })
  t.equal(second.body.results.length, 3)
  t.same((await call(ann, '/demo/search?q=printer&page=9')).body.results, [], 'past the end: none')

  const etag = answer.headers.etag as string
  t.equal((await call(ann, '/demo/search?q=printer', { 'if-none-match': etag })).status, 304, 'unchanged: 304')
  await open('Fresh', 'Another printer')
  t.equal((await call(ann, '/demo/search?q=printer', { 'if-none-match': etag })).status, 200, 'after a write: the new answer')

  // Filters only: the newest that they keep, no snippet.
  const filtered = await call(ann, '/demo/search?q=state:new')
  t.equal(filtered.body.total, 34)
  t.same(filtered.body.results[0].snippet, null)
  t.equal(filtered.body.results[0].discussion.number, 34, 'newest first')
  void app
})

t.test('refusals say why; hostile queries answer 400 or a result, never 500', async (t) => {
  const { ann, call, open } = await desk(t)
  await open('Printer', 'A printer, not a scanner.')
  const refused: Array<[string, RegExp]> = [
    ['"', /^has a quote that is not closed$/],
    ['-printer', /only what to leave out/],
    ['state:lost', /a state is one of new, open, resolved, deleted, spam, merged, todo/],
    ['category:Nowhere', /no such category/],
    ['after:2026-02-30', /not a date written YYYY-MM-DD/],
    ['tag:!!', /gives tag:!!, which cannot be a tag/],
    ['category:a\u0000b', /U\+0000/],
    // Issue 62: a long phrase of a common word was seconds of the only thread; its cost is bounded before the index.
    [`"${'the '.repeat(249)}"`, /^holds a phrase of more than 8 words$/],
    ['the.'.repeat(249), /^holds a phrase of more than 8 words$/],
  ]
  for (const [q, why] of refused) {
    const answer = await call(ann, `/demo/search?q=${encodeURIComponent(q)}`)
    t.equal(answer.status, 400, JSON.stringify(q))
    t.match(answer.body, { error: 'invalid_request', fields: [{ field: 'q', problem: why }] })
  }
  t.equal((await call(ann, '/demo/search?q=printer+after:yesterday')).body.fields[0].problem, 'gives after:yesterday, which is not a date written YYYY-MM-DD')
  t.equal((await call(ann, '/demo/search')).status, 400, 'no q')
  t.equal((await call(ann, '/demo/search?q=')).status, 400, 'an empty q')
  t.equal((await call(ann, `/demo/search?q=${'x'.repeat(10_000)}`)).status, 400, '10,000 characters')
  const hostile = ['*', 'NEAR(', 'NEAR(printer', "'); DROP TABLE discussions; --", 'printer\u0000', '\u0000', 'printer OR 1=1', '{title}: printer', 'printer^', 'AND', 'NOT printer', '"printer" AND', 'text:printer', "o'brien printer", '\\', '%_%', 'state:open\u0000']
  for (const q of hostile) {
    const answer = await call(ann, `/demo/search?q=${encodeURIComponent(q)}`)
    t.ok(answer.status === 200 || answer.status === 400, `${JSON.stringify(q)}: ${answer.status}`)
  }
  t.same((await call(ann, `/demo/search?q=${encodeURIComponent("'); DROP TABLE discussions; --")}`)).body.total, 0, 'SQL is words')
  t.same((await call(ann, `/demo/search?q=${encodeURIComponent('NOT printer')}`)).body.total, 1, "FTS5's NOT is a word: the printer still found")
})

t.test("another site's discussions are never found, nor its people by from:", async (t) => {
  const { app, ann, open, numbers } = await desk(t)
  await open('Printer here', 'Ours.')
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  const theirs = await app.categories.add(otto.site.id, 'General', true)
  await app.discussions.create({ siteId: otto.site.id, categoryId: theirs.id, title: 'Printer there', body: 'Secret printer.', supporterId: otto.user.id, onBehalfOf: { email: 'zed@customer.example' }, via: 'api' })
  t.same(await numbers('printer'), [1], 'ours only')
  t.same(await numbers('secret'), [])
  t.same(await numbers('from:zed@customer.example'), [], 'their customer wrote nothing here')
  t.same(await numbers('printer from:nobody@example.test'), [], 'nor does nobody')
  t.same(await numbers('printer assignee:nobody@example.test'), [], 'nobody owns nothing')
  await app.discussions.update(ann.site.id, 1, { assigneeId: ann.user.id })
  t.same(await numbers('printer assignee:me'), [1], "me: the caller's")
  t.same(await numbers('printer assignee:ann@example.test'), [1])
  const [found] = (await app.inject({ url: '/other/search?q=printer', headers: otto.bearer })).json().results
  t.equal(found.discussion.title, 'Printer there', 'and theirs only for them')
  t.equal((await app.inject({ url: '/other/search?q=ours', headers: otto.bearer })).json().total, 0)
  t.equal((await app.inject({ url: '/other/search?q=printer', headers: ann.bearer })).statusCode, 401, "a token of one site does not search another's")
})

t.test('MCP: search_discussions, through the SDK client', async (t) => {
  const { app, ann, open } = await desk(t)
  await open('Printer on fire', 'The printer smokes.')
  await open('Invoice', 'Where is my invoice?')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const client = new Client({ name: 'search-test', version: '1.0.0' })
  const url = new URL(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/mcp`)
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: ann.bearer.authorization } } }))
  t.teardown(() => client.close())
  const tools = (await client.listTools()).tools.map((tool) => tool.name)
  t.ok(tools.includes('search_discussions'))
  const found = (await client.callTool({ name: 'search_discussions', arguments: { q: 'smokes -invoice' } })).structuredContent as { total: number; results: Array<{ discussion: { title: string }; snippet: { text: string } }> }
  t.equal(found.total, 1)
  t.equal(found.results[0].discussion.title, 'Printer on fire')
  t.equal(found.results[0].snippet.text, 'The printer smokes.')
  const refused = await client.callTool({ name: 'search_discussions', arguments: { q: '"' } })
  t.equal(refused.isError, true, 'a query that cannot be read: a tool error with the reason')
  t.match(JSON.stringify(refused.content), 'quote that is not closed')
})
