import t from 'tap'
import { BASE_URL, supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'

// Engines: one: a discussion's life through the API, its answers' shapes and links. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const href = (path: string) => `${BASE_URL}/demo${path}`

t.test('the whole life of a discussion through the API', async (t) => {
  const { app, clock, ann, questions, problems, api } = await discussionApp(t)

  // A supporter files a question on behalf of a customer the site has never seen.
  const created = await api('POST', `/demo/categories/${questions.id}/discussions`, {
    title: '  Invoice shows the wrong total ',
    body: 'Hello,\n\nMy March invoice adds up to more than the items.',
    author_email: 'Carol@Example.test',
    author_name: 'Carol Customer',
  })
  t.equal(created.statusCode, 201)
  t.equal(created.headers.location, href('/discussions/1'))
  t.match(created.headers['content-type'], /^application\/vnd\.service-v1\+json/)
  const d1 = created.json()
  t.match(d1, {
    href: href('/discussions/1'),
    number: 1,
    title: 'Invoice shows the wrong total',
    permalink: 'invoice-shows-the-wrong-total',
    state: 'new',
    public: true,
    created_at: '2026-03-01T12:00:00Z',
    author_email: 'Carol@Example.test',
    author_name: 'Carol Customer',
    comments_count: 1,
    category_href: href(`/categories/${questions.id}`),
    comments_href: href('/discussions/1/comments'),
    html_href: 'https://help.example.test/demo/discussions/1',
    resolve_href: href('/discussions/1/resolve'),
    unresolve_href: href('/discussions/1/unresolve'),
    toggle_href: href('/discussions/1/toggle'),
    restore_href: href('/discussions/1/restore'),
    change_category_href: href('/discussions/1/change_category'),
  })
  t.same(d1.comments.map((c: { body: string; user_is_supporter: boolean; via: string }) => [c.user_is_supporter, c.via]), [[false, 'api']])
  const carol = (await app.users.find('carol@example.test'))!
  t.ok(carol, 'the unknown address became a user')
  t.equal(carol.passwordHash, null, 'with no password')
  t.equal(carol.name, 'Carol Customer')
  t.equal(await app.users.role(ann.site.id, carol.id), 'customer', 'a customer of the site')
  t.equal(d1.user_href, href(`/discussions?user_id=${carol.id}`))

  // The supporter answers: a staff reply moves new to open.
  clock.advance(60_000)
  const answer = await api('POST', '/demo/discussions/1/comments', { body: 'Thanks, we are looking into it.' })
  t.equal(answer.statusCode, 201)
  t.equal(answer.headers.location, href('/discussions/1/comments/2'))
  t.match(answer.json(), {
    href: href('/discussions/1/comments/2'),
    number: 2,
    author_email: ann.user.email,
    user_is_supporter: true,
    internal: false,
    created_at: '2026-03-01T12:01:00Z',
    discussion_href: href('/discussions/1'),
  })
  let shown = (await api('GET', '/demo/discussions/1')).json()
  t.equal(shown.state, 'open', 'staff reply: new to open')
  t.equal(shown.comments_count, 2)
  t.equal(shown.last_updated_at, '2026-03-01T12:01:00Z', 'last activity is the newest comment')

  // Resolved; then the customer writes back, which reopens it.
  t.equal((await api('POST', '/demo/discussions/1/resolve')).json().state, 'resolved')
  clock.advance(60_000)
  const back = await api('POST', '/demo/discussions/1/comments', { body: 'It is still wrong.', author_email: 'carol@example.test' })
  t.equal(back.json().user_is_supporter, false)
  t.equal(back.json().author_name, 'Carol Customer')
  t.equal((await api('GET', '/demo/discussions/1')).json().state, 'open', 'customer reply: resolved to open')

  // Toggle flips between resolved and open; unresolve of an open one changes nothing.
  t.equal((await api('POST', '/demo/discussions/1/toggle')).json().state, 'resolved')
  t.equal((await api('POST', '/demo/discussions/1/toggle')).json().state, 'open')
  const before = (await api('GET', '/demo/discussions/1')).json().updated_at
  clock.advance(60_000)
  const unresolved = (await api('POST', '/demo/discussions/1/unresolve')).json()
  t.equal(unresolved.state, 'open')
  t.equal(unresolved.updated_at, before, 'nothing changed, so updated_at did not move')

  // Moved to another category, renamed and made private.
  const moved = await api('POST', `/demo/discussions/1/change_category?to=${problems.id}`)
  t.equal(moved.statusCode, 200)
  t.equal(moved.json().category_href, href(`/categories/${problems.id}`))
  t.equal(moved.json().updated_at, '2026-03-01T12:03:00Z', 'a change moves updated_at')
  const changed = await api('PUT', '/demo/discussions/1', { title: 'Wrong total on the March invoice', public: false })
  t.match(changed.json(), { title: 'Wrong total on the March invoice', permalink: 'wrong-total-on-the-march-invoice', public: false })

  // Resolved, deleted: gone from the listing, in the deleted one, and closed to changes.
  await api('POST', '/demo/discussions/1/resolve')
  const deleted = await api('DELETE', '/demo/discussions/1')
  t.equal(deleted.statusCode, 200)
  t.equal(deleted.json().state, 'deleted')
  t.equal((await api('GET', '/demo/discussions')).json().total, 0)
  t.same((await api('GET', '/demo/discussions/deleted')).json().discussions.map((d: { number: number }) => d.number), [1])
  for (const [method, url, payload] of [
    ['POST', '/demo/discussions/1/comments', { body: 'hello?' }],
    ['POST', '/demo/discussions/1/resolve', undefined],
    ['POST', '/demo/discussions/1/unresolve', undefined],
    ['POST', '/demo/discussions/1/toggle', undefined],
    ['PUT', '/demo/discussions/1', { title: 'x' }],
    ['POST', `/demo/discussions/1/change_category?to=${questions.id}`, undefined],
  ] as const) {
    const res = await api(method, url, payload)
    t.equal(res.statusCode, 409, `${method} ${url} on a deleted discussion`)
    t.same(res.json(), { error: 'conflict', message: 'Discussion 1 is deleted; restore it before changing it.' })
  }
  t.equal((await api('DELETE', '/demo/discussions/1')).json().state, 'deleted', 'deleting again changes nothing')

  // Restore brings back the state it was deleted from.
  const restored = await api('POST', '/demo/discussions/1/restore')
  t.equal(restored.json().state, 'resolved')
  t.equal((await api('POST', '/demo/discussions/1/restore')).json().state, 'resolved', 'restoring a live one changes nothing')

  // Every comment, in the order written.
  shown = (await api('GET', '/demo/discussions/1')).json()
  t.same(
    shown.comments.map((c: { number: number; author_email: string }) => [c.number, c.author_email]),
    [
      [1, 'Carol@Example.test'],
      [2, ann.user.email],
      [3, 'Carol@Example.test'],
    ],
  )
  const counts = (await api('GET', `/demo/categories/${problems.id}`)).json()
  t.match(counts, { discussions_count: 1, resolved_discussions_count: 1, open_discussions_count: 0, deleted_discussions_count: 0 })
  t.equal((await api('GET', `/demo/categories/${questions.id}`)).json().discussions_count, 0, 'the old category counts it no more')
})

t.test('who writes decides the first state; internal notes do not answer', async (t) => {
  const { app, ann, questions, problems, api, create } = await discussionApp(t)

  const own = await create()
  t.equal(own.state, 'open', "a supporter's own discussion is answered already")
  t.equal(own.author_email, ann.user.email)
  t.equal(own.comments[0].user_is_supporter, true)
  t.equal(own.public, true, 'public like its category')
  t.equal((await create({}, problems.id)).public, false, 'private like its category')
  t.equal((await create({ public: false }, questions.id)).public, false, 'unless the request says otherwise')

  const asked = await create({ author_email: 'dave@example.test' })
  t.equal(asked.state, 'new')
  t.equal(asked.author_name, 'dave', 'without author_name the name is the address before the @')
  const note = await api('POST', `/demo/discussions/${asked.number}/comments`, { body: 'Looks like the VAT bug.', internal: true })
  t.equal(note.json().internal, true)
  t.equal((await api('GET', `/demo/discussions/${asked.number}`)).json().state, 'new', 'an internal note is not a reply')
  const more = await api('POST', `/demo/discussions/${asked.number}/comments`, { body: 'Also this.', author_email: 'dave@example.test' })
  t.equal(more.statusCode, 201)
  t.equal((await api('GET', `/demo/discussions/${asked.number}`)).json().state, 'new', "a customer's reply leaves new as it is")

  // On behalf of another supporter: their post is a staff post.
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const byBob = await create({ author_email: 'BOB@example.test', author_name: 'Someone Else' })
  t.equal(byBob.state, 'open')
  t.equal(byBob.author_name, bob.user.name, 'an existing user keeps their name')
  t.equal(byBob.comments[0].user_is_supporter, true)

  // A user of another site becomes a customer here; their role there is untouched.
  const erin = await supporterWithToken(app, { site: 'other', email: 'erin@example.test' })
  const byErin = await create({ author_email: 'erin@example.test' })
  t.equal(byErin.state, 'new')
  t.equal(await app.users.role(ann.site.id, erin.user.id), 'customer')
  t.equal(await app.users.role(erin.site.id, erin.user.id), 'supporter')
})

t.test('a supporter reply to a resolved discussion leaves it resolved', async (t) => {
  const { api, create } = await discussionApp(t)
  const d = await create({ author_email: 'x@example.test' })
  await api('POST', `/demo/discussions/${d.number}/resolve`)
  await api('POST', `/demo/discussions/${d.number}/comments`, { body: 'Glad it works.' })
  t.equal((await api('GET', `/demo/discussions/${d.number}`)).json().state, 'resolved')
  t.equal((await api('POST', `/demo/discussions/${d.number}/resolve`)).json().state, 'resolved', 'resolving twice is harmless')
})

t.test('comments page by page, and one comment', async (t) => {
  const { api, create } = await discussionApp(t)
  const d = await create()
  for (let i = 2; i <= 31; i++) await api('POST', `/demo/discussions/${d.number}/comments`, { body: `comment ${i}` })
  const first = await api('GET', `/demo/discussions/${d.number}/comments`)
  t.match(first.json(), { offset: 0, total: 31, per_page: 30 })
  t.equal(first.json().comments.length, 30)
  t.equal(
    first.headers.link,
    `<${href('/discussions/1/comments?page=1')}>; rel="first", <${href('/discussions/1/comments?page=2')}>; rel="next", <${href('/discussions/1/comments?page=2')}>; rel="last"`,
  )
  const second = (await api('GET', `/demo/discussions/${d.number}/comments?page=2`)).json()
  t.same(second.comments.map((c: { body: string }) => c.body), ['comment 31'])
  t.same((await api('GET', `/demo/discussions/${d.number}/comments?page=3`)).json().comments, [], 'past the end: empty')
  const one = await api('GET', `/demo/discussions/${d.number}/comments/5`)
  t.equal(one.json().body, 'comment 5')
  const none = await api('GET', `/demo/discussions/${d.number}/comments/32`)
  t.equal(none.statusCode, 404)
  t.same(none.json(), { error: 'not_found', message: 'Discussion 1 has no comment 32.' })
})
