import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openSqliteEngine } from '../../db/sqlite/engine.ts'
import { createSecretBox } from '../../lib/secret-box.ts'
import { addCategory, discussionApp } from '../fixtures/discussions.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { supporterWithToken } from '../fixtures/app.ts'
import { twoApps } from '../multiprocess/two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// A listing's items are serialized once per version of each discussion and kept
// (routes/api/discussions/views.ts): the page is read every time, and a kept item is never
// answered for a discussion that has changed since, by this process or another.

type Item = { number: number; state: string; author_name: string; title: string; comments_count: number }
const items = (body: string) => (JSON.parse(body) as { discussions: Item[] }).discussions

t.test('the listing is the JSON of its envelope and items, byte for byte, asked once or again', async (t) => {
  const { api, create } = await discussionApp(t)
  const made: string[] = []
  for (const title of ['Ünïcödé "quotes" \\ and \u2028 \u0007', 'Plain', 'Emoji 😀 and </script>']) made.unshift((await create({ title })).title)
  const first = await api('GET', '/demo/discussions')
  t.equal(first.body, JSON.stringify(JSON.parse(first.body)), 'compact JSON in the order of the schema')
  t.same(Object.keys(JSON.parse(first.body)), ['offset', 'total', 'per_page', 'discussions'])
  const walked = await api('GET', '/demo/discussions?cursor=')
  t.same(Object.keys(JSON.parse(walked.body)), ['total', 'per_page', 'next_cursor', 'discussions'], 'a walk by cursor: where the next page starts instead of offset')
  t.equal(walked.body, JSON.stringify(JSON.parse(walked.body)))
  t.same(items(walked.body).map((item) => item.title), made)
  t.same(Object.keys((await api('GET', '/demo/discussions/1/comments')).json()), ['offset', 'total', 'per_page', 'comments'], "a discussion's comments, in the same order")
  t.same(Object.keys((await api('GET', '/demo/discussions/1/comments?cursor=')).json()), ['total', 'per_page', 'next_cursor', 'comments'])
  t.equal((await api('GET', '/demo/discussions')).body, first.body, 'the same bytes from kept items')
  t.same(items(first.body).map((item) => item.title), made, 'the titles as their creations answered them')
  const head = await api('HEAD', '/demo/discussions')
  t.equal(head.headers['content-length'], String(Buffer.byteLength(first.body)), 'HEAD names the same length')
  t.equal(head.body, '')
})

t.test('a kept item is never answered after its discussion changed', async (t) => {
  const { app, api, create, ann } = await discussionApp(t)
  await create({ title: 'First' })
  await create({ title: 'Second' })
  const listed = async () => Object.fromEntries(items((await api('GET', '/demo/discussions')).body).map((item) => [item.number, item]))
  t.match(await listed(), { 1: { state: 'open', comments_count: 1 }, 2: { state: 'open' } })

  await api('POST', '/demo/discussions/1/resolve')
  t.match(await listed(), { 1: { state: 'resolved' }, 2: { state: 'open' } }, 'a state changed')
  await api('POST', '/demo/discussions/2/comments', { body: 'More' })
  t.match(await listed(), { 1: { state: 'resolved', comments_count: 1 }, 2: { comments_count: 2 } }, 'a reply')
  await app.users.fromSingleSignOn(ann.site.id, 'ann@example.test', 'Ann Renamed')
  t.match(await listed(), { 1: { author_name: 'Ann Renamed' }, 2: { author_name: 'Ann Renamed' } }, 'the author renamed')
})

t.test("another process's change is answered on the next listing", { skip: SQLITE_ONLY && 'one file shared by two engines is SQLite\'s' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-items-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { api, create, ann } = await discussionApp(t, { config: { databaseAddress: join(dir, 'service.db') } })
  await create({ title: 'Shared' })
  t.equal(items((await api('GET', '/demo/discussions')).body)[0].state, 'open')
  const other = openSqliteEngine(join(dir, 'service.db'))
  t.teardown(() => other.close())
  await other.discussions(() => Date.now(), createSecretBox('k'.repeat(64))).act(ann.site.id, 1, 'resolve')
  t.equal(items((await api('GET', '/demo/discussions')).body)[0].state, 'resolved')
})

t.test("a listing's total is kept by the site's version: another process's create or delete is counted by the next listing", async (t) => {
  const { one, two } = await twoApps(t)
  const ann = await supporterWithToken(one, { email: 'ann@example.test' })
  const general = await addCategory(one, ann.site.id, 'General')
  const list = async (app: typeof one, url = '/demo/discussions') => (await app.inject({ url, headers: ann.bearer })).json() as { total: number }
  const make = async (app: typeof one) => (await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: ann.bearer, payload: { title: 'Counted', body: 'Words.' } })).json() as { number: number }
  await make(one)
  t.equal((await list(one)).total, 1)
  t.equal((await list(one)).total, 1, 'kept, and still right')
  const made = await make(two)
  t.equal((await list(one)).total, 2, 'a create through the other process')
  t.equal((await two.inject({ method: 'DELETE', url: `/demo/discussions/${made.number}`, headers: ann.bearer })).statusCode, 200)
  t.same([(await list(one)).total, (await list(one, '/demo/discussions/deleted')).total], [1, 1], 'a delete through the other process')
})
