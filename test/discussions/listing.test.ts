import t from 'tap'
import { BASE_URL, V1 } from '../fixtures/app.ts'
import { addCategory, discussionApp } from '../fixtures/discussions.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: the listing's order and pages, where PostgreSQL and SQLite place NULLs and ties differently unless the query says.
// The tests that ask nothing the engines do differently run once (onSqlite).

const numbers = (res: { json(): { discussions: Array<{ number: number }> } }) => res.json().discussions.map((d) => d.number)
const link = (path: string, rel: string) => `<${BASE_URL}/demo${path}>; rel="${rel}"`

t.test('the default order is last activity; sort=created and sort=updated', async (t) => {
  const { clock, api, create } = await discussionApp(t)
  for (let i = 0; i < 3; i++) {
    await create({ title: `d${i + 1}` })
    clock.advance(60_000)
  }
  await api('POST', '/demo/discussions/1/comments', { body: 'new activity on 1' })
  clock.advance(60_000)
  await api('POST', '/demo/discussions/2/resolve')

  const listed = await api('GET', '/demo/discussions')
  t.equal(listed.statusCode, 200)
  t.match(listed.headers['content-type'], /^application\/vnd\.service-v1\+json; charset=utf-8/)
  t.match(listed.json(), { offset: 0, total: 3, per_page: 30 })
  t.same(numbers(listed), [1, 3, 2], 'newest activity first: a reply counts, a state change does not')
  t.same(numbers(await api('GET', '/demo/discussions?sort=activity')), [1, 3, 2])
  t.same(numbers(await api('GET', '/demo/discussions?sort=created')), [3, 2, 1])
  t.same(numbers(await api('GET', '/demo/discussions?sort=updated')), [2, 1, 3], 'any change counts for sort=updated')
})

t.test('pages of 30, Link headers, and a page past the end', async (t) => {
  const { app, clock, ann, api, create } = await discussionApp(t)
  const empty = await api('GET', '/demo/discussions')
  t.same(empty.json(), { offset: 0, total: 0, per_page: 30, discussions: [] })
  t.equal(empty.headers.link, `${link('/discussions?page=1', 'first')}, ${link('/discussions?page=1', 'last')}`)

  for (let i = 0; i < 65; i++) {
    await create()
    clock.advance(1_000)
  }
  const first = await api('GET', '/demo/discussions')
  t.equal(first.json().discussions.length, 30)
  t.equal(numbers(first)[0], 65)
  t.equal(first.headers.link, [link('/discussions?page=1', 'first'), link('/discussions?page=2', 'next'), link('/discussions?page=3', 'last')].join(', '))

  const second = await api('GET', '/demo/discussions?page=2')
  t.match(second.json(), { offset: 30, total: 65 })
  t.same(numbers(second), Array.from({ length: 30 }, (_, i) => 35 - i))
  t.equal(
    second.headers.link,
    [link('/discussions?page=1', 'first'), link('/discussions?page=1', 'prev'), link('/discussions?page=3', 'next'), link('/discussions?page=3', 'last')].join(', '),
  )

  const last = await api('GET', '/demo/discussions?page=3')
  t.same(numbers(last), [5, 4, 3, 2, 1])
  t.equal(last.headers.link, [link('/discussions?page=1', 'first'), link('/discussions?page=2', 'prev'), link('/discussions?page=3', 'last')].join(', '))

  const past = await api('GET', '/demo/discussions?page=9')
  t.equal(past.statusCode, 200, 'a page past the end is not an error')
  t.same(past.json(), { offset: 240, total: 65, per_page: 30, discussions: [] })
  t.equal(past.headers.link, [link('/discussions?page=1', 'first'), link('/discussions?page=3', 'prev'), link('/discussions?page=3', 'last')].join(', '))

  // Links keep the filters in a fixed order, drop anything else, and never use the Host header.
  const filtered = await app.inject({
    url: '/demo/discussions/open?user_email=Ann@Example.test&foo=bar&since=64&public=1&sort=created&page=1',
    headers: { ...ann.bearer, host: 'evil.example', 'x-forwarded-host': 'evil.example' },
  })
  t.equal(filtered.statusCode, 200)
  t.equal(
    filtered.headers.link,
    [
      link('/discussions/open?sort=created&public=1&since=64&user_email=Ann%40Example.test&page=1', 'first'),
      link('/discussions/open?sort=created&public=1&since=64&user_email=Ann%40Example.test&page=1', 'last'),
    ].join(', '),
  )
})

t.test('HEAD answers like GET without a body', onSqlite('HEAD answered as GET without a body'), async (t) => {
  const { api, create } = await discussionApp(t)
  for (let i = 0; i < 31; i++) await create()
  for (const url of ['/demo/discussions?page=2', '/demo/discussions/open', '/demo/discussions/1', '/demo/categories', '/demo']) {
    const get = await api('GET', url)
    const head = await api('HEAD', url)
    t.equal(head.statusCode, 200, url)
    t.equal(head.body, '', `${url}: no body`)
    t.equal(head.headers.link, get.headers.link, `${url}: same Link`)
    t.equal(head.headers['content-type'], get.headers['content-type'])
  }
})

t.test('listing by state', async (t) => {
  const { api, create } = await discussionApp(t)
  await create({ author_email: 'a@example.test' }) // 1 new
  await create() // 2 open
  await create() // 3 resolved
  await create() // 4 deleted
  await api('POST', '/demo/discussions/3/resolve')
  await api('DELETE', '/demo/discussions/4')
  const expected = { new: [1], open: [2], resolved: [3], deleted: [4] }
  for (const [state, list] of Object.entries(expected)) {
    const res = await api('GET', `/demo/discussions/${state}`)
    t.same(numbers(res), list, state)
    t.equal(res.json().total, list.length, `${state}: total from the counts`)
  }
  t.same(numbers(await api('GET', '/demo/discussions')), [3, 2, 1], 'the plain listing leaves out deleted ones')
})

t.test('filters: public, since, user_id, user_email', async (t) => {
  const { app, clock, ann, problems, api, create } = await discussionApp(t)
  await create() // 1 public, by ann
  clock.advanceDays(1)
  await create({ author_email: 'carol@example.test' }, problems.id) // 2 private, by carol
  clock.advanceDays(1)
  await create({ author_email: 'carol@example.test' }) // 3 public, by carol
  clock.advanceDays(1)
  await create({ public: false }) // 4 private, by ann
  const carol = (await app.users.find('carol@example.test'))!

  t.same(numbers(await api('GET', '/demo/discussions?public=1')), [3, 1])
  t.same(numbers(await api('GET', '/demo/discussions?public=true')), [3, 1])
  t.same(numbers(await api('GET', '/demo/discussions?public=0')), [4, 2])
  t.equal((await api('GET', '/demo/discussions?public=false')).json().total, 2)

  t.same(numbers(await api('GET', '/demo/discussions?since=2')), [4, 3], 'numbers above 2')
  t.equal((await api('GET', '/demo/discussions?since=2')).json().total, 2)
  t.same(numbers(await api('GET', '/demo/discussions?since=2026-03-03')), [4, 3], 'last activity on or after the day')
  // Activity on 1 today: it counts by last activity and by update, not by creation.
  clock.advanceDays(1)
  await api('POST', '/demo/discussions/1/comments', { body: 'later' })
  t.same(numbers(await api('GET', '/demo/discussions?since=2026-03-05')), [1])
  t.same(numbers(await api('GET', '/demo/discussions?since=2026-03-05&sort=updated')), [1])
  t.same(numbers(await api('GET', '/demo/discussions?since=2026-03-03&sort=created')), [4, 3])

  t.same(numbers(await api('GET', `/demo/discussions?user_id=${carol.id}`)), [3, 2])
  t.same(numbers(await api('GET', '/demo/discussions?user_email=CAROL@example.test')), [3, 2], 'the address in any case')
  t.same(numbers(await api('GET', `/demo/discussions?user_id=${ann.user.id}&sort=created`)), [4, 1])
  t.equal((await api('GET', `/demo/discussions?user_id=${carol.id}`)).json().total, 2)
  t.same((await api('GET', '/demo/discussions?user_email=nobody@example.test')).json(), { offset: 0, total: 0, per_page: 30, discussions: [] })
  t.same(numbers(await api('GET', '/demo/discussions?user_id=999999')), [])

  // Filters combine, with a state and within a category.
  t.same(numbers(await api('GET', `/demo/discussions/open?user_id=${ann.user.id}&public=1`)), [1])
  t.same(numbers(await api('GET', `/demo/categories/${problems.id}/discussions?user_email=carol@example.test`)), [2])
  t.same(numbers(await api('GET', `/demo/categories/${problems.id}/discussions?since=3`)), [])
  t.same(numbers(await api('GET', `/demo/categories/${problems.id}/discussions?sort=created&public=0`)), [2])
})

t.test('categories: listed by name with their counts, one by one, and their discussions', async (t) => {
  const { app, ann, questions, problems, api, create } = await discussionApp(t)
  await create()
  await create({ author_email: 'c@example.test' }, problems.id)
  await create({}, problems.id)
  await api('DELETE', '/demo/discussions/3')

  const listed = await api('GET', '/demo/categories')
  t.equal(listed.statusCode, 200)
  t.match(listed.json(), { offset: 0, total: 2, per_page: 30 })
  t.same(listed.json().categories, [
    {
      id: problems.id,
      href: `${BASE_URL}/demo/categories/${problems.id}`,
      name: 'Problems',
      permalink: 'problems',
      public: false,
      created_at: '2026-03-01T12:00:00Z',
      discussions_href: `${BASE_URL}/demo/categories/${problems.id}/discussions`,
      round_robin: false,
      discussions_count: 1,
      new_discussions_count: 1,
      open_discussions_count: 0,
      resolved_discussions_count: 0,
      deleted_discussions_count: 1,
      spam_discussions_count: 0,
    },
    {
      id: questions.id,
      href: `${BASE_URL}/demo/categories/${questions.id}`,
      name: 'Questions',
      permalink: 'questions',
      public: true,
      created_at: '2026-03-01T12:00:00Z',
      discussions_href: `${BASE_URL}/demo/categories/${questions.id}/discussions`,
      round_robin: false,
      discussions_count: 1,
      new_discussions_count: 0,
      open_discussions_count: 1,
      resolved_discussions_count: 0,
      deleted_discussions_count: 0,
      spam_discussions_count: 0,
    },
  ])
  const one = await api('GET', `/demo/categories/${questions.id}`)
  t.same(one.json(), listed.json().categories[1])

  const inProblems = await api('GET', `/demo/categories/${problems.id}/discussions`)
  t.same(numbers(inProblems), [2], 'deleted ones are left out here too')
  t.equal(inProblems.headers.link, [link(`/categories/${problems.id}/discussions?page=1`, 'first'), link(`/categories/${problems.id}/discussions?page=1`, 'last')].join(', '))

  const empty = await addCategory(app, ann.site.id, 'Empty')
  t.match((await api('GET', `/demo/categories/${empty.id}`)).json(), { discussions_count: 0, deleted_discussions_count: 0 })

  for (let i = 0; i < 30; i++) await addCategory(app, ann.site.id, `Topic ${String(i).padStart(2, '0')}`)
  const page2 = await api('GET', '/demo/categories?page=2')
  t.match(page2.json(), { offset: 30, total: 33 })
  t.same(page2.json().categories.map((c: { name: string }) => c.name), ['Topic 27', 'Topic 28', 'Topic 29'])
  t.match(page2.headers.link, /rel="prev"/)
})

t.test('V1 and plain JSON clients get the same listing', onSqlite('the same listing for v1 and plain JSON clients'), async (t) => {
  const { app, ann, create } = await discussionApp(t)
  await create()
  const v1 = await app.inject({ url: '/demo/discussions', headers: { authorization: ann.bearer.authorization, accept: V1 } })
  const json = await app.inject({ url: '/demo/discussions', headers: { authorization: ann.bearer.authorization, accept: 'application/json' } })
  t.equal(json.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(v1.body, json.body)
})
