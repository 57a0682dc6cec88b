import t from 'tap'
import { newTestApp, sharedDatabase, supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'

// Engines: both: an ETag changes with a change made by another process, which each engine tells its own way.
// Issue 32, item 5: conditional requests (RFC 9110, section 13). Every GET of the v1 API has an
// ETag; If-None-Match that names it gets 304 before the page is read; the tag changes with every
// change to what the answer shows, made by this process or another; If-Match keeps two
// supporters from overwriting each other.

t.test('If-None-Match: 304 with no body while nothing changed, 200 with a new tag after each kind of change', async (t) => {
  const database = await sharedDatabase(t)
  const { app, api, create, ann, questions, problems } = await discussionApp(t, { config: database })
  const first = await create({ title: 'First' })

  // Every GET the v1 API has, each with the tags it had before a change.
  const reads = [
    '/demo',
    '/demo/discussions',
    '/demo/discussions?page=2',
    '/demo/discussions/open',
    '/demo/discussions/new',
    `/demo/discussions/${first.number}`,
    `/demo/discussions/${first.number}/comments`,
    `/demo/discussions/${first.number}/comments/1`,
    '/demo/categories',
    `/demo/categories/${questions.id}`,
    `/demo/categories/${questions.id}/discussions`,
  ]
  async function tags() {
    const seen = new Map<string, string>()
    for (const url of reads) {
      const res = await api('GET', url)
      t.equal(res.statusCode, 200, url)
      t.match(res.headers.etag, /^"[sd]\d+-[\w-]{16}"$/, `${url}: a strong tag`)
      const again = await api('GET', url, undefined, { ...ann.bearer, 'if-none-match': String(res.headers.etag) })
      t.equal(again.statusCode, 304, `${url}: unchanged, 304`)
      t.equal(again.body, '', 'without a body')
      t.equal(again.headers.etag, res.headers.etag, 'naming the tag')
      t.equal(again.headers['cache-control'], res.headers['cache-control'], 'and private as the 200 is')
      seen.set(url, String(res.headers.etag))
    }
    return seen
  }
  t.equal(new Set((await tags()).values()).size, reads.length, 'no two answers share a tag')

  const other = await newTestApp(t, { config: database })
  await other.app.ready()
  const changes: Array<[string, () => Promise<unknown>, string[]]> = [
    ['a reply', () => api('POST', `/demo/discussions/${first.number}/comments`, { body: 'On it.' }), reads],
    ['resolve', () => api('POST', `/demo/discussions/${first.number}/resolve`), reads],
    ['a new title', () => api('PUT', `/demo/discussions/${first.number}`, { title: 'Renamed' }), reads],
    ['another category', () => api('POST', `/demo/discussions/${first.number}/change_category?to=${problems.id}`), reads],
    ['delete', () => api('DELETE', `/demo/discussions/${first.number}`), reads],
    ['restore', () => api('POST', `/demo/discussions/${first.number}/restore`), reads],
    ['a new discussion', () => create({ title: 'Second' }), reads.filter((url) => !url.includes(`/discussions/${first.number}`))],
    ['a new category', () => app.categories.add(ann.site.id, 'Billing', true), ['/demo', '/demo/categories', `/demo/categories/${questions.id}`]],
    ["another process's write", () => other.app.discussions.create({ siteId: ann.site.id, categoryId: questions.id, title: 'From elsewhere', body: 'x', supporterId: ann.user.id, via: 'api' }), ['/demo/discussions', '/demo/categories']],
    ['an author renamed by single sign-on', () => app.users.fromSingleSignOn(ann.site.id, ann.user.email, 'Ann Renamed'), [`/demo/discussions/${first.number}`, '/demo/discussions']],
  ]
  for (const [what, change, changed] of changes) {
    const before = new Map<string, string>()
    for (const url of changed) before.set(url, String((await api('GET', url)).headers.etag))
    await change()
    for (const url of changed) {
      const res = await api('GET', url, undefined, { ...ann.bearer, 'if-none-match': before.get(url)! })
      t.equal(res.statusCode, 200, `after ${what}: ${url} is answered anew`)
      t.not(res.headers.etag, before.get(url), 'with a new tag')
    }
  }
})

t.test('a tag names one representation: the media type, the page and the filters are in it', async (t) => {
  const { api, ann, create } = await discussionApp(t)
  await create()
  const v1 = await api('GET', '/demo/discussions')
  const json = await api('GET', '/demo/discussions', undefined, { authorization: ann.bearer.authorization, accept: 'application/json' })
  t.not(json.headers.etag, v1.headers.etag, 'another media type, another tag')
  const crossed = await api('GET', '/demo/discussions', undefined, { authorization: ann.bearer.authorization, accept: 'application/json', 'if-none-match': String(v1.headers.etag) })
  t.equal(crossed.statusCode, 200, "the other type's tag does not make a 304")
  const filtered = await api('GET', '/demo/discussions?public=1')
  t.not(filtered.headers.etag, v1.headers.etag)
  const listed = await api('GET', '/demo/discussions', undefined, { ...ann.bearer, 'if-none-match': `"x", W/${v1.headers.etag}` })
  t.equal(listed.statusCode, 304, 'a list, and a weak form of the tag, match (weak comparison)')
  t.equal((await api('GET', '/demo/discussions', undefined, { ...ann.bearer, 'if-none-match': '*' })).statusCode, 304, '* matches')
  t.equal((await api('GET', '/demo/discussions', undefined, { ...ann.bearer, 'if-none-match': 'not a tag' })).statusCode, 200, 'a malformed field matches nothing')
  const head = await api('HEAD', '/demo/discussions', undefined, { ...ann.bearer, 'if-none-match': String(v1.headers.etag) })
  t.equal(head.statusCode, 304, 'HEAD answers the same validators')
  t.match((await api('GET', '/demo/personal_tokens/self')).headers.etag, /^"t-[\w-]{16}"$/, 'the token record has a tag too (a digest of the answer, which names this very use)')
})

t.test('If-Match: a change goes ahead only for the version the supporter saw', async (t) => {
  const { app, api, create, ann } = await discussionApp(t)
  const bob = (await supporterWithToken(app, { email: 'bob@example.test' })).bearer
  const d = await create({ title: 'Shared' })
  const url = `/demo/discussions/${d.number}`
  const seenByAnn = String((await api('GET', url)).headers.etag)
  const seenByBob = String((await api('GET', url, undefined, bob)).headers.etag)
  t.equal(seenByBob, seenByAnn, 'both saw one version')

  const annWrites = await api('PUT', url, { title: "Ann's title" }, { ...ann.bearer, 'if-match': seenByAnn })
  t.equal(annWrites.statusCode, 200, 'the first change, made for the current version, goes ahead')
  const bobWrites = await api('PUT', url, { title: "Bob's title" }, { ...bob, 'if-match': seenByBob })
  t.equal(bobWrites.statusCode, 412, "Bob's change, made for the version Ann changed, is refused")
  t.match(bobWrites.json(), { error: 'precondition_failed', message: /^Discussion \d+ has changed since the version this change was made for/ })
  const now = await api('GET', url)
  t.equal(bobWrites.headers.etag, now.headers.etag, 'the refusal names the current tag')
  t.equal(now.json().title, "Ann's title", "Ann's change stands")

  for (const [method, path, payload] of [
    ['POST', `${url}/resolve`, undefined],
    ['POST', `${url}/comments`, { body: 'late' }],
    ['POST', `${url}/change_category?to=${d.category_id ?? 1}`, undefined],
    ['DELETE', url, undefined],
  ] as const) {
    const stale = await api(method, path, payload, { ...bob, 'if-match': seenByBob })
    t.equal(stale.statusCode, 412, `${method} ${path}: refused for a stale tag`)
  }
  t.equal((await api('GET', url)).json().comments.length, 1, 'nothing was written')
  t.equal((await api('POST', `${url}/resolve`, undefined, { ...bob, 'if-match': `W/${now.headers.etag}` })).statusCode, 412, 'a weak tag never matches (strong comparison)')
  t.equal((await api('POST', `${url}/resolve`, undefined, { ...bob, 'if-match': '*' })).statusCode, 200, '* goes ahead while it exists')
  t.equal((await api('POST', '/demo/discussions/999/resolve', undefined, { ...bob, 'if-match': '*' })).statusCode, 404, 'and not for one that does not')
  t.equal((await api('POST', `${url}/unresolve`)).statusCode, 200, 'without If-Match, as before')
})

t.test('two changes sent at once for one version: exactly one goes ahead', async (t) => {
  const { api, create, ann } = await discussionApp(t)
  const d = await create()
  const url = `/demo/discussions/${d.number}`
  const seen = String((await api('GET', url)).headers.etag)
  const results = await Promise.all(['A', 'B', 'C', 'D'].map((title) => api('PUT', url, { title }, { ...ann.bearer, 'if-match': seen })))
  t.same(results.map((r) => r.statusCode).sort(), [200, 412, 412, 412], 'one 200, the others 412: the version is checked under the row lock')
  const winner = results.find((r) => r.statusCode === 200)!.json().title
  t.equal((await api('GET', url)).json().title, winner, 'the one that went ahead is what stands')
})
