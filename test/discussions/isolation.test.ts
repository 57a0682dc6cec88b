import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { addCategory, discussionApp } from '../fixtures/discussions.ts'

// Engines: one: every write route with another site's ids: the routes' scoping, one query for both engines. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Every write route of the discussions resource, with a body that would be valid.
const WRITES = (categoryId: number) =>
  [
    ['POST', `/demo/categories/${categoryId}/discussions`, { title: 'x', body: 'y' }],
    ['POST', '/demo/discussions/1/comments', { body: 'y' }],
    ['PUT', '/demo/discussions/1', { title: 'changed' }],
    ['DELETE', '/demo/discussions/1', undefined],
    ['POST', '/demo/discussions/1/resolve', undefined],
    ['POST', '/demo/discussions/1/unresolve', undefined],
    ['POST', '/demo/discussions/1/toggle', undefined],
    ['POST', '/demo/discussions/1/restore', undefined],
    ['POST', `/demo/discussions/1/change_category?to=${categoryId}`, undefined],
  ] as const

t.test('a read-only token is refused on every write route, before anything changes', async (t) => {
  const { app, questions, api, create } = await discussionApp(t)
  await create({ title: 'untouched' })
  const reader = await supporterWithToken(app, { access: 'read' })
  for (const [method, url, payload] of WRITES(questions.id)) {
    const res = await api(method, url, payload, reader.bearer)
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.match(res.headers['www-authenticate'], /scope="write", error="insufficient_scope"/)
    t.match(res.body, /lacks the write scope/)
  }
  const after = (await api('GET', '/demo/discussions/1', undefined, reader.bearer)).json()
  t.match(after, { title: 'untouched', state: 'open', comments_count: 1 }, 'nothing changed')
  t.equal((await api('GET', '/demo/discussions', undefined, reader.bearer)).json().total, 1, 'and nothing was created')
})

t.test("a token of one site neither sees nor changes another site's discussions", async (t) => {
  const { app, ann, questions, api, create } = await discussionApp(t)
  await create({ title: 'demo secret' })
  const other = await supporterWithToken(app, { site: 'other' })
  const otherCategory = await addCategory(app, other.site.id, 'Elsewhere', true)
  const mine = await api('POST', `/other/categories/${otherCategory.id}/discussions`, { title: 'other one', body: 'b' }, other.bearer)
  t.equal(mine.json().number, 1, 'numbers are per site: both sites have a discussion 1')

  // Other's token on demo's paths: refused as a token of another site.
  for (const url of ['/demo/discussions', '/demo/discussions/1', '/demo/categories']) {
    const res = await api('GET', url, undefined, other.bearer)
    t.equal(res.statusCode, 401, url)
  }
  // Other's token on its own paths never reaches demo's rows, even by demo's ids and numbers.
  const listed = (await api('GET', '/other/discussions', undefined, other.bearer)).json()
  t.same(listed.discussions.map((d: { title: string }) => d.title), ['other one'])
  t.equal((await api('GET', '/other/discussions/1', undefined, other.bearer)).json().title, 'other one')
  t.equal((await api('GET', '/other/discussions/2', undefined, other.bearer)).statusCode, 404)
  const foreignCategory = await api('GET', `/other/categories/${questions.id}`, undefined, other.bearer)
  t.equal(foreignCategory.statusCode, 404, "demo's category id is unknown on other")
  t.same(foreignCategory.json(), { error: 'not_found', message: `There is no category ${questions.id} on this site.` })
  t.equal((await api('GET', `/other/categories/${questions.id}/discussions`, undefined, other.bearer)).statusCode, 404)
  const posted = await api('POST', `/other/categories/${questions.id}/discussions`, { title: 'x', body: 'y' }, other.bearer)
  t.equal(posted.statusCode, 404, "no discussion can be filed in demo's category from other")
  const moved = await api('POST', `/other/discussions/1/change_category?to=${questions.id}`, undefined, other.bearer)
  t.equal(moved.statusCode, 400, "nor moved into it")
  t.same(moved.json().fields, [{ field: 'to', problem: `is ${questions.id}, which is not a category of this site` }])
  const put = await api('PUT', '/other/discussions/1', { category: questions.id }, other.bearer)
  t.same(put.json().fields, [{ field: 'category', problem: `is ${questions.id}, which is not a category of this site` }])
  const byEmail = await api('GET', `/other/discussions?user_email=${ann.user.email}`, undefined, other.bearer)
  t.equal(byEmail.json().total, 0, "demo's author has no discussions on other")
  t.same(
    (await api('GET', '/other/categories', undefined, other.bearer)).json().categories.map((c: { name: string }) => c.name),
    ['Elsewhere'],
  )

  // Demo's discussion 1 is exactly as it was.
  const demo = (await api('GET', '/demo/discussions/1')).json()
  t.match(demo, { title: 'demo secret', state: 'open', comments_count: 1 })
  t.equal((await api('GET', '/demo/discussions')).json().total, 1)
})

t.test('a supporter who leaves the staff can no longer reach the discussions', async (t) => {
  const { app, ann, api, create } = await discussionApp(t)
  await create()
  await app.users.removeStaff(ann.site.id, ann.user.id)
  const res = await api('GET', '/demo/discussions/1')
  t.equal(res.statusCode, 403)
  t.match(res.body, /support staff/)
})
