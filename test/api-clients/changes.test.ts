import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { cursorOf } from '../../lib/cursors.ts'
import { rawRows, supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { twoApps } from '../multiprocess/two-apps.ts'
import { personWithPassword } from '../fixtures/web.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// The change feed (docs/decisions.md, "Safe retries, cursors and the change feed"), on the suite's
// engine: every kind of change in commit order, each with its discussion as it is now; the cursor
// and the end of the stream; long polling that answers at the change; nothing of a refused write;
// a supporter taken off the staff unassigned is a change too; another site's changes never shown.

type Feed = {
  changes: Array<{ cursor: string; type: string; at: string; discussion: { number: number; title: string; state: string; assignee: unknown }; comment: { number: number; body: string } | null }>
  next_cursor: string
  end_of_stream: boolean
}

t.test('every create, change, comment, delete and restore, in order, each with its discussion as it is now', async (t) => {
  const { clock, questions, api, create } = await discussionApp(t)
  const feed = async (after?: string) => {
    const answer = await api('GET', `/demo/changes${after === undefined ? '' : `?after=${after}`}`)
    t.equal(answer.statusCode, 200)
    return { feed: answer.json() as Feed, link: answer.headers.link }
  }
  const empty = await feed()
  t.same(empty.feed, { changes: [], next_cursor: cursorOf('changes', 0), end_of_stream: true }, 'nothing yet')

  await create({ title: 'Printer on fire' })
  clock.advance(1000)
  await api('POST', '/demo/discussions/1/comments', { body: 'On our way.' })
  await api('PUT', '/demo/discussions/1', { title: 'Printer fixed', tags: ['hardware'] })
  await api('POST', '/demo/discussions/1/comments', { body: 'Warranty ran out.', internal: true })
  await api('POST', '/demo/discussions/1/resolve')
  await api('DELETE', '/demo/discussions/1')
  await api('POST', '/demo/discussions/1/restore')
  const { feed: all, link } = await feed()
  t.same(all.changes.map((c) => [c.type, c.comment?.number ?? null]), [
    ['discussion.created', 1],
    ['comment.created', 2],
    ['discussion.updated', null],
    ['comment.created', 3],
    ['discussion.updated', null],
    ['discussion.deleted', null],
    ['discussion.restored', null],
  ])
  t.ok(all.changes.every((c) => c.discussion.title === 'Printer fixed' && c.discussion.state === 'resolved'), 'each shows the discussion as it is now')
  t.same(all.changes.map((c) => c.comment?.body ?? null).filter(Boolean), ['Some words.', 'On our way.', 'Warranty ran out.'], "the staff's feed: the internal note too")
  t.equal(all.changes[0]!.at, '2026-03-01T12:00:00.000Z')
  t.equal(all.changes[1]!.at, '2026-03-01T12:00:01.000Z')
  t.equal(all.end_of_stream, true)
  t.equal(all.next_cursor, all.changes[6]!.cursor)
  t.equal(link, `<https://api.example.test/demo/changes?after=${all.next_cursor}>; rel="next"`)

  // Going on from a cursor: only what came after it.
  const after = await feed(all.changes[4]!.cursor)
  t.same(after.feed.changes.map((c) => c.type), ['discussion.deleted', 'discussion.restored'])
  const nothingNew = await feed(all.next_cursor)
  t.same(nothingNew.feed, { changes: [], next_cursor: all.next_cursor, end_of_stream: true }, 'at the end: nothing, and the same cursor to ask again with')

  // A change that changes nothing (resolving a resolved one) is not a change.
  await api('POST', '/demo/discussions/1/resolve')
  t.same((await feed(all.next_cursor)).feed.changes, [])
  void questions
})

t.test('pages of 100, in order, to the end of the stream', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  for (let i = 1; i <= 130; i++) await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: `D${i}`, body: 'x', supporterId: ann.user.id, via: 'api' })
  const first = (await api('GET', '/demo/changes')).json() as Feed
  t.equal(first.changes.length, 100)
  t.equal(first.end_of_stream, false, 'more to come')
  t.equal(first.next_cursor, cursorOf('changes', 100))
  const second = (await api('GET', `/demo/changes?after=${first.next_cursor}`)).json() as Feed
  t.same([...first.changes, ...second.changes].map((c) => c.discussion.number), Array.from({ length: 130 }, (_, i) => i + 1))
  t.equal(second.end_of_stream, true)
})

t.test('wait=: answers as soon as a change commits, else when the time is up', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  const idle = (await api('GET', '/demo/changes?wait=1')).json() as Feed
  t.same(idle.changes, [], 'nothing within a second: an empty page')
  t.equal(idle.end_of_stream, true)
  // Waiting up to a minute: the create below ends the wait (else the page would be empty after 60 s).
  const waiting = api('GET', `/demo/changes?after=${idle.next_cursor}&wait=60`)
  await new Promise((resolve) => setTimeout(resolve, 300))
  await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'Woken', body: 'x', supporterId: ann.user.id, via: 'api' })
  const woken = (await waiting).json() as Feed
  t.same(woken.changes.map((c) => c.discussion.title), ['Woken'])
  // A wait with changes already there answers at once with them.
  t.equal(((await api('GET', '/demo/changes?wait=60')).json() as Feed).changes.length, 1)
  for (const wait of ['61', '-1', 'soon']) t.equal((await api('GET', `/demo/changes?wait=${wait}`)).statusCode, 400, `wait=${wait}`)
  // Closing the server ends a wait (its answer is the empty page, or the connection closes).
  const open = api('GET', `/demo/changes?after=${woken.next_cursor}&wait=60`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  await app.close()
  const ended = await open
  t.ok(ended.statusCode === 200 || ended.statusCode >= 500, 'the wait did not hold the close for a minute')
})

t.test('nothing of a refused write; an unassignment on leaving the staff is a change; the cursor and the site are checked', async (t) => {
  const { app, ann, questions, api, create } = await discussionApp(t)
  await create({ title: 'Kept' })
  t.equal((await api('POST', '/demo/categories/99999/discussions', { title: 'Ghost', body: 'x' })).statusCode, 404)
  t.equal((await api('POST', '/demo/discussions/1/comments', { body: 'Stale' }, { ...ann.bearer, 'if-match': '"stale"' })).statusCode, 412)
  t.equal((await api('PUT', '/demo/discussions/1', { category: 99999 })).statusCode, 400)
  const [{ n }] = await rawRows(app, 'SELECT count(*) AS n FROM discussion_changes', [])
  t.equal(Number(n), 1, 'only the create')

  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  await api('POST', `/demo/discussions/1/assign?to=${bob.user.id}`)
  const before = (await api('GET', '/demo/changes')).json() as Feed
  t.same(before.changes.at(-1)!.discussion.assignee, { id: bob.user.id, name: 'bob' })
  await app.users.removeStaff(ann.site.id, bob.user.id)
  const after = (await api('GET', `/demo/changes?after=${before.next_cursor}`)).json() as Feed
  t.same(after.changes.map((c) => [c.type, c.discussion.assignee]), [['discussion.updated', null]], 'taken off the staff: the discussion they owned is nobody\'s, and the feed says so')

  // Another site: its own feed, numbered on its own; this site's cursor shows nothing of it.
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  const otherCategory = await app.categories.add(other.site.id, 'General', true)
  await app.discussions.create({ siteId: other.site.id, categoryId: otherCategory.id, title: 'Elsewhere', body: 'x', supporterId: other.user.id, via: 'api' })
  const mine = (await api('GET', '/demo/changes')).json() as Feed
  t.notOk(mine.changes.some((c) => c.discussion.title === 'Elsewhere'), "another site's change is not in this feed")
  const theirs = (await api('GET', '/other/changes', undefined, other.bearer)).json() as Feed
  t.same(theirs.changes.map((c) => c.discussion.title), ['Elsewhere'])
  t.equal(theirs.next_cursor, cursorOf('changes', 1), 'numbered on its own')
  t.equal((await api('GET', '/other/changes', undefined, ann.bearer)).statusCode, 401, "one site's token on another's feed")

  for (const bad of [cursorOf('discussions', 1), cursorOf('comments', 1), 'garbage!', 'QUFB']) {
    const refused = await api('GET', `/demo/changes?after=${encodeURIComponent(bad)}`)
    t.equal(refused.statusCode, 400, bad)
    t.match(refused.json(), { fields: [{ field: 'after' }] })
  }
  void questions
})

t.test('the seed and a database from before the feed: every discussion starts it as created', async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  // As the migration gives the discussions already there: the same statement (db/stores/changes.ts) the seed runs.
  for (let i = 1; i <= 3; i++) await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: `Old ${i}`, body: 'x', supporterId: ann.user.id, via: 'api' })
  await rawRows(app, 'DELETE FROM discussion_changes', [])
  const migration = await import('node:fs').then((fs) =>
    fs.readFileSync(new URL(`../../db/${app.database.kind}/migrations/${app.database.kind === 'sqlite' ? '0020' : '0019'}_api_clients.sql`, import.meta.url), 'utf8'),
  )
  const backfill = migration.slice(migration.lastIndexOf('--> statement-breakpoint') + '--> statement-breakpoint'.length).replace(/^--.*$/gm, '').trim()
  await rawRows(app, backfill.replace(/;$/, ''), [])
  const feed = (await api('GET', '/demo/changes')).json() as Feed
  t.same(feed.changes.map((c) => [c.type, c.discussion.title]), [['discussion.created', 'Old 1'], ['discussion.created', 'Old 2'], ['discussion.created', 'Old 3']])
  await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'New', body: 'x', supporterId: ann.user.id, via: 'api' })
  const next = (await api('GET', `/demo/changes?after=${feed.next_cursor}`)).json() as Feed
  t.same(next.changes.map((c) => c.discussion.title), ['New'], 'numbered on after them')
})

t.test('MCP: list_changes, through the SDK client: what changed since the cursor it gave last time', onSqlite("the change feed's MCP tool and its tool error"), async (t) => {
  const { app, ann, create } = await discussionApp(t)
  await create({ title: 'Before' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const client = new Client({ name: 'changes-test', version: '1.0.0' })
  const url = new URL(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/demo/mcp`)
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: ann.bearer.authorization } } }))
  t.teardown(() => client.close())
  const first = (await client.callTool({ name: 'list_changes', arguments: {} })).structuredContent as Feed
  t.same(first.changes.map((c) => [c.type, c.discussion.title]), [['discussion.created', 'Before']])
  await create({ title: 'After' })
  const since = (await client.callTool({ name: 'list_changes', arguments: { after: first.next_cursor } })).structuredContent as Feed
  t.same(since.changes.map((c) => c.discussion.title), ['After'], 'only what is new')
  const refused = await client.callTool({ name: 'list_changes', arguments: { after: cursorOf('discussions', 1) } })
  t.equal(refused.isError, true, 'a cursor of another walk: a tool error with the reason')
  t.match(JSON.stringify(refused.content), 'not a cursor of this change feed')
})

t.test("a wait whose token is revoked, or whose owner is disabled or taken off the staff, through another app answers no row written after: the refusal instead", async (t) => {
  const { one, two } = await twoApps(t)
  const ann = await supporterWithToken(one, { email: 'ann@example.test' })
  const questions = await one.categories.add(ann.site.id, 'Questions', true)
  await one.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'Printer', body: 'x', supporterId: ann.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  const note = (body: string) => one.discussions.reply({ siteId: ann.site.id, number: 1, body, internal: true, supporterId: ann.user.id, via: 'api' })
  const cases: Array<[string, (who: Awaited<ReturnType<typeof supporterWithToken>>) => Promise<unknown>, number]> = [
    ['revoked', (who) => one.tokens.revoke(who.site.id, who.token.id), 401],
    ['its owner disabled', (who) => one.users.setDisabled(who.user.email, true), 401],
    ['its owner taken off the staff', (who) => one.users.removeStaff(who.site.id, who.user.id), 403],
  ]
  for (const [what, end, status] of cases) {
    const bob = await supporterWithToken(one, { email: `bob-${status}-${what.length}@example.test` })
    const start = (await two.inject({ url: '/demo/changes?wait=1', headers: bob.bearer })).json() as Feed
    // Bob's wait, on the other app; a colleague's beside it.
    const waiting = two.inject({ url: `/demo/changes?after=${start.next_cursor}&wait=60`, headers: bob.bearer })
    const colleagues = two.inject({ url: `/demo/changes?after=${start.next_cursor}&wait=60`, headers: ann.bearer })
    await new Promise((resolve) => setTimeout(resolve, 300))
    await end(bob)
    await note(`Secret after Bob's token was ${what}`)
    const answer = await waiting
    t.equal(answer.statusCode, status, `${what}: refused`)
    t.notMatch(answer.body, /Secret/, `${what}: nothing written after`)
    const shown = (await colleagues).json() as Feed
    t.match(shown.changes.at(-1)!.comment!.body, /^Secret after/, `${what}: a colleague's wait still answers with it`)
  }
})

t.test('a wait by password whose kind of credential the site switches off meanwhile answers the refusal, not the rows', async (t) => {
  const { app, ann, questions } = await discussionApp(t)
  const pat = await personWithPassword(app, { email: 'pat@example.test' })
  const basic = { accept: 'application/vnd.service-v1+json', authorization: `Basic ${Buffer.from(`${pat.email}:${pat.password}`).toString('base64')}` }
  const start = (await app.inject({ url: '/demo/changes?wait=1', headers: basic })).json() as Feed
  const waiting = app.inject({ url: `/demo/changes?after=${start.next_cursor}&wait=60`, headers: basic })
  await new Promise((resolve) => setTimeout(resolve, 300))
  await app.sites.setPolicy(ann.site.id, { passwordOn: false })
  await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'Written after the switch', body: 'x', supporterId: ann.user.id, via: 'api' })
  const answer = await waiting
  const anew = await app.inject({ url: '/demo/changes', headers: basic })
  t.equal(anew.statusCode, 401, 'a new request with it is refused')
  t.equal(answer.statusCode, anew.statusCode, 'and so is the wait, as a new request would be')
  t.equal(answer.body, anew.body, 'in the same words')
  t.notMatch(answer.body, /Written after the switch/)
})
