import t from 'tap'
import { cursorOf } from '../../lib/cursors.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { TEST_ENGINE } from '../fixtures/postgres.ts'
import { seededRandom } from '../../db/stores/seed.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Walks by cursor (docs/decisions.md, "Safe retries, cursors and the change feed"), on the
// suite's engine: every discussion exactly once while replies reshuffle the listing's usual
// order (and the page= walk of the same listing, under the same reshuffle, shown to skip and
// repeat), the Link header and next_cursor, filters kept, the refusals, and a discussion's
// comments walked while new ones arrive.

type Listing = { total: number; per_page: number; offset?: number; next_cursor?: string | null; discussions: Array<{ number: number }> }

const nextOf = (link: string | undefined) => /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1]
const pathOf = (href: string) => href.replace('https://api.example.test', '')

t.test('1,000 discussions walked by cursor while 200 replies reshuffle them: each exactly once', async (t) => {
  const { app, clock, ann, questions, api } = await discussionApp(t)
  const create = (i: number) =>
    app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: `Question ${i}`, body: 'Words.', supporterId: ann.user.id, onBehalfOf: { email: `c${i % 7}@customer.example` }, via: 'api' })
  for (let i = 0; i < 1000; i++) await create(i)
  const random = seededRandom(53)
  const reshuffle = async (count: number) => {
    // Replies to discussions anywhere in the listing: each moves to the top of the activity order.
    for (let i = 0; i < count; i++) {
      clock.advance(1000)
      await app.discussions.reply({ siteId: ann.site.id, number: 1 + Math.floor(random() * 1000), body: 'Bump.', internal: false, supporterId: ann.user.id, via: 'api' })
    }
  }

  const seen: number[] = []
  let url: string | undefined = '/demo/discussions?cursor='
  let pages = 0
  while (url) {
    const answer = await api('GET', url)
    t.equal(answer.statusCode, 200)
    const body = answer.json() as Listing
    seen.push(...body.discussions.map((d) => d.number))
    t.equal(body.offset, undefined, 'a cursor page has no offset')
    t.equal(body.total, 1000)
    const next = nextOf(answer.headers.link as string)
    t.equal(next === undefined ? null : new URL(next).searchParams.get('cursor'), body.next_cursor, 'next_cursor is the Link header\'s')
    url = next && pathOf(next)
    pages++
    await reshuffle(6)
  }
  t.equal(pages, 34)
  t.equal(seen.length, 1000, 'a thousand seen')
  t.equal(new Set(seen).size, 1000, 'none twice')
  t.same(seen, Array.from({ length: 1000 }, (_, i) => 1000 - i), 'newest first, in the order of creation')

  // The same listing walked by page= under the same kind of reshuffle skips and repeats: what the cursor is for.
  const byPage: number[] = []
  for (let page = 1; page <= 34; page++) {
    byPage.push(...((await api('GET', `/demo/discussions?page=${page}`)).json() as Listing).discussions.map((d) => d.number))
    await reshuffle(6)
  }
  t.not(new Set(byPage).size, 1000, 'page= paging lost some (each reply moved one up past the pages already read)')
})

t.test('a walk by cursor: its links, the last page, filters kept, a new discussion on top, and the refusals', async (t) => {
  const { app, ann, questions, problems, api } = await discussionApp(t)
  for (let i = 1; i <= 65; i++) {
    await app.discussions.create({ siteId: ann.site.id, categoryId: i % 5 === 0 ? problems.id : questions.id, title: `D${i}`, body: 'x', supporterId: ann.user.id, via: 'api' })
  }
  const first = await api('GET', '/demo/discussions?cursor=')
  const page1 = first.json() as Listing
  t.same(page1.discussions.map((d) => d.number), Array.from({ length: 30 }, (_, i) => 65 - i))
  t.equal(page1.next_cursor, cursorOf('discussions', 36))
  t.equal(first.headers.link, `<https://api.example.test/demo/discussions?cursor=>; rel="first", <https://api.example.test/demo/discussions?cursor=${page1.next_cursor}>; rel="next"`)
  // A discussion created during the walk is above it: the walk goes on below where it stopped.
  await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'D66', body: 'x', supporterId: ann.user.id, via: 'api' })
  const page2 = (await api('GET', `/demo/discussions?cursor=${page1.next_cursor}`)).json() as Listing
  t.same(page2.discussions.map((d) => d.number), Array.from({ length: 30 }, (_, i) => 35 - i))
  const last = await api('GET', `/demo/discussions?cursor=${page2.next_cursor}`)
  const page3 = last.json() as Listing
  t.same(page3.discussions.map((d) => d.number), [5, 4, 3, 2, 1])
  t.equal(page3.next_cursor, null, 'the last page says so')
  t.equal(last.headers.link, '<https://api.example.test/demo/discussions?cursor=>; rel="first"', 'and has no next')
  // Exactly a page's worth left: no empty page after it.
  const exact = (await api('GET', `/demo/discussions?cursor=${cursorOf('discussions', 31)}`)).json() as Listing
  t.equal(exact.discussions.length, 30)
  t.equal(exact.next_cursor, null)

  // Filters: kept in the links; a state's listing; sort=created is the walk's own order.
  const filtered = await api('GET', `/demo/discussions?cursor=&user_id=${ann.user.id}&sort=created`)
  t.equal(filtered.statusCode, 200)
  t.match(filtered.headers.link, /rel="next"/)
  t.equal(new URL(nextOf(filtered.headers.link as string)!).searchParams.get('user_id'), String(ann.user.id))
  t.equal(new URL(nextOf(filtered.headers.link as string)!).searchParams.get('sort'), 'created')
  const category = (await api('GET', `/demo/categories/${problems.id}/discussions?cursor=`)).json() as Listing
  t.same(category.discussions.map((d) => d.number), [65, 60, 55, 50, 45, 40, 35, 30, 25, 20, 15, 10, 5])
  await app.discussions.act(ann.site.id, 10, 'delete')
  const deleted = (await api('GET', '/demo/discussions/deleted?cursor=')).json() as Listing
  t.same(deleted.discussions.map((d) => d.number), [10])
  const live = (await api('GET', `/demo/discussions?cursor=${cursorOf('discussions', 12)}`)).json() as Listing
  t.same(live.discussions.map((d) => d.number), [11, 9, 8, 7, 6, 5, 4, 3, 2, 1], 'the deleted one not in the live walk')

  // A date: created on or after it, walked by cursor like any filter.
  const dated = (await api('GET', '/demo/discussions?cursor=&since=2026-03-01')).json() as Listing
  t.equal(dated.total, 65)
  t.same(dated.discussions.slice(0, 2).map((d) => d.number), [66, 65])
  t.same(((await api('GET', '/demo/discussions?cursor=&since=2026-03-02')).json() as Listing).discussions, [], 'none created since')

  // Refusals, each naming its field.
  const refused = async (query: string, field: string) => {
    const answer = await api('GET', `/demo/discussions?${query}`)
    t.equal(answer.statusCode, 400, query)
    t.match(answer.json(), { fields: [{ field }] }, query)
  }
  await refused('cursor=&page=2', 'page')
  await refused('cursor=&sort=activity', 'sort')
  await refused('cursor=&sort=updated', 'sort')
  await refused(`cursor=${cursorOf('comments', 3)}`, 'cursor')
  await refused(`cursor=${cursorOf('changes', 3)}`, 'cursor')
  await refused('cursor=bm90IGEgY3Vyc29y', 'cursor')
  await refused('cursor=a%20b', 'cursor')
  await refused(`cursor=${'A'.repeat(65)}`, 'cursor')
  await refused(`cursor=${Buffer.from('v1.d.99999999999999999999').toString('base64url')}`, 'cursor')
  // page= as before.
  const paged = (await api('GET', '/demo/discussions?page=2')).json() as Listing
  t.equal(paged.offset, 30)
  t.equal(paged.next_cursor, undefined)
})

t.test("a discussion's comments walked by cursor, new ones arriving during the walk", async (t) => {
  const { app, ann, questions, api } = await discussionApp(t)
  const { discussion } = await app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'Long one', body: 'Comment 1', supporterId: ann.user.id, via: 'api' })
  const reply = (i: number) => app.discussions.reply({ siteId: ann.site.id, number: discussion.number, body: `Comment ${i}`, internal: false, supporterId: ann.user.id, via: 'api' })
  for (let i = 2; i <= 40; i++) await reply(i)
  const bodies: string[] = []
  let url: string | undefined = `/demo/discussions/${discussion.number}/comments?cursor=`
  let added = 40
  while (url) {
    const answer = await api('GET', url)
    t.equal(answer.statusCode, 200)
    const page = answer.json() as { next_cursor: string | null; comments: Array<{ body: string }> }
    bodies.push(...page.comments.map((c) => c.body))
    url = nextOf(answer.headers.link as string)
    url = url && pathOf(url)
    // Four more arrive after the first page.
    if (added < 44) for (let i = 0; i < 4; i++) await reply(++added)
  }
  t.same(bodies, Array.from({ length: 44 }, (_, i) => `Comment ${i + 1}`), 'every comment once, in order, the new ones at the end')
  const refused = await api('GET', `/demo/discussions/${discussion.number}/comments?cursor=${cursorOf('discussions', 3)}`)
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { fields: [{ field: 'cursor' }] })
  t.equal((await api('GET', `/demo/discussions/${discussion.number}/comments?cursor=&page=1`)).statusCode, 400)
  const past = (await api('GET', `/demo/discussions/${discussion.number}/comments?cursor=${cursorOf('comments', 500)}`)).json()
  t.same(past, { total: 44, per_page: 30, next_cursor: null, comments: [] }, 'past the end: nothing, and no next')
})

t.test('a walk by cursor reads its page from the index, at any depth (SQLite plan)', { skip: TEST_ENGINE === 'postgres' && "SQLite's plan; PostgreSQL's planner decides its own" }, async (t) => {
  const { app, ann } = await discussionApp(t)
  const query = { siteId: ann.site.id, state: 'live' as const, sort: 'number' as const, before: 500, offset: 0, limit: 31 }
  const plan = (await app.discussions.explain(query, 1_000_000)).join('\n')
  t.match(plan, /USING INDEX discussions_site_number_unique \(site_id=\? AND number<\?\)/, 'the number index, from where the cursor stopped')
  t.equal(plan.match(/TEMP B-TREE/g)?.length, 1, 'no sort of the matches: only the page of 31 is put in order again')
})
