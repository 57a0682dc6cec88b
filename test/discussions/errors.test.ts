import t, { type Test } from 'tap'
import { discussionApp } from '../fixtures/discussions.ts'

// Engines: one: the API's error answers, field by field. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

type Problems = Array<{ field: string; problem: string }>

/** Checks a 400 invalid_request naming exactly these fields, and a message that names them too. */
function invalid(t: Test, res: { statusCode: number; json(): { error: string; message: string; fields: Problems } }, fields: Problems, what: string) {
  t.equal(res.statusCode, 400, what)
  const body = res.json()
  t.equal(body.error, 'invalid_request', what)
  t.same(body.fields, fields, what)
  for (const f of fields) t.ok(body.message.includes(`${f.field} ${f.problem}`), `${what}: the message names ${f.field}`)
}

t.test('creating: each bad field is named with its reason, all at once', async (t) => {
  const { questions, api } = await discussionApp(t)
  const url = `/demo/categories/${questions.id}/discussions`
  const cases: Array<[string, unknown, Problems]> = [
    ['missing title and body', {}, [{ field: 'title', problem: 'is required' }, { field: 'body', problem: 'is required' }]],
    ['empty body', { title: 'x', body: '' }, [{ field: 'body', problem: 'must not be empty' }]],
    ['blank title', { title: '   ', body: 'b' }, [{ field: 'title', problem: 'must not be blank' }]],
    ['title too long', { title: 'x'.repeat(201), body: 'b' }, [{ field: 'title', problem: 'must be at most 200 characters' }]],
    [
      'wrong types',
      { title: 123, body: ['b'], public: 'yes', author_name: 5 },
      [
        { field: 'title', problem: 'must be a string' },
        { field: 'body', problem: 'must be a string' },
        { field: 'public', problem: 'must be true or false' },
        { field: 'author_name', problem: 'must be a string' },
      ],
    ],
    ['"true" is not true', { title: 'x', body: 'b', public: 'true' }, [{ field: 'public', problem: 'must be true or false' }]],
    ['malformed email', { title: 'x', body: 'b', author_email: 'carol at example' }, [{ field: 'author_email', problem: 'is not an email address' }]],
    ['two @', { title: 'x', body: 'b', author_email: 'a@b@c' }, [{ field: 'author_email', problem: 'is not an email address' }]],
    ['not an object', [1, 2], [{ field: '(request body)', problem: 'must be a JSON object' }]],
  ]
  for (const [what, payload, fields] of cases) invalid(t, await api('POST', url, payload), fields, what)
  t.equal((await api('GET', '/demo/discussions')).json().total, 0, 'nothing was created')
})

t.test('replying and changing: bad fields, nothing to change, unknown category', async (t) => {
  const { api, create } = await discussionApp(t)
  await create()
  invalid(t, await api('POST', '/demo/discussions/1/comments', {}), [{ field: 'body', problem: 'is required' }], 'reply without body')
  invalid(t, await api('POST', '/demo/discussions/1/comments', { body: '\n\t ' }), [{ field: 'body', problem: 'must not be blank' }], 'blank reply')
  invalid(t, await api('POST', '/demo/discussions/1/comments', { body: 'x', internal: 1 }), [{ field: 'internal', problem: 'must be true or false' }], 'internal: 1')
  invalid(
    t,
    await api('POST', '/demo/discussions/1/comments', { body: 'x'.repeat(65_537) }),
    [{ field: 'body', problem: 'must be at most 65536 characters' }],
    'a reply over the length limit',
  )
  invalid(t, await api('PUT', '/demo/discussions/1', {}), [{ field: '(request body)', problem: 'names nothing to change: send title, public, category, assignee, tags or fields' }], 'empty PUT')
  invalid(t, await api('PUT', '/demo/discussions/1', { category: 'two' }), [{ field: 'category', problem: 'must be a category id' }], 'category not a number')
  invalid(
    t,
    await api('PUT', '/demo/discussions/1', { category: 987 }),
    [{ field: 'category', problem: 'is 987, which is not a category of this site' }],
    'unknown category',
  )
  invalid(t, await api('POST', '/demo/discussions/1/change_category'), [{ field: 'to', problem: 'is required' }], 'change_category without to')
  invalid(t, await api('POST', '/demo/discussions/1/change_category?to=0'), [{ field: 'to', problem: 'must be at least 1' }], 'to=0')
  invalid(
    t,
    await api('POST', '/demo/discussions/1/change_category?to=987'),
    [{ field: 'to', problem: 'is 987, which is not a category of this site' }],
    'to an unknown category',
  )
  t.match((await api('GET', '/demo/discussions/1')).json(), { title: 'A question', comments_count: 1 }, 'nothing changed')
})

t.test('listing: page, sort, state and filters', async (t) => {
  const { api } = await discussionApp(t)
  const cases: Array<[string, Problems]> = [
    ['/demo/discussions?page=0', [{ field: 'page', problem: 'must be at least 1' }]],
    ['/demo/discussions?page=abc', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/discussions?page=1.5', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/discussions?page=-1', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/discussions?page=', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/discussions?page=1&page=2', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/discussions?page=99999999999', [{ field: 'page', problem: 'must be at most 1000000000' }]],
    ['/demo/discussions?sort=oldest', [{ field: 'sort', problem: 'must be one of: activity, created, updated, due' }]],
    ['/demo/discussions?public=yes', [{ field: 'public', problem: 'must be one of: 1, 0, true, false' }]],
    ['/demo/discussions?since=last-week', [{ field: 'since', problem: 'must be a discussion number or a date as YYYY-MM-DD' }]],
    ['/demo/discussions?since=2026-02-30', [{ field: 'since', problem: 'is not a date of the calendar' }]],
    ['/demo/discussions?since=2026-13-01', [{ field: 'since', problem: 'is not a date of the calendar' }]],
    ['/demo/discussions?user_id=me', [{ field: 'user_id', problem: 'must be a user id' }]],
    ['/demo/discussions?user_email=nobody', [{ field: 'user_email', problem: 'is not an email address' }]],
    ['/demo/discussions?user_id=1&user_email=a@b.c', [{ field: 'user_email', problem: 'cannot be combined with user_id: send one of them' }]],
    [
      '/demo/discussions?page=0&sort=x&public=2',
      [
        { field: 'page', problem: 'must be at least 1' },
        { field: 'sort', problem: 'must be one of: activity, created, updated, due' },
        { field: 'public', problem: 'must be one of: 1, 0, true, false' },
      ],
    ],
    ['/demo/discussions/pending', [{ field: 'number', problem: 'must be a discussion number or a state: new, open, resolved, deleted, spam, merged' }]],
    ['/demo/discussions/open?page=0', [{ field: 'page', problem: 'must be at least 1' }]],
    ['/demo/categories?page=x', [{ field: 'page', problem: 'must be a whole number' }]],
    ['/demo/categories/abc', [{ field: 'id', problem: 'must be a category id' }]],
    ['/demo/discussions/1/comments/first', [{ field: 'comment', problem: 'must be a comment number' }]],
  ]
  for (const [url, fields] of cases) invalid(t, await api('GET', url), fields, url)
  invalid(t, await api('POST', '/demo/discussions/one/resolve'), [{ field: 'number', problem: 'must be a discussion number' }], 'POST on a non-number')
})

t.test('404 for unknown numbers and categories, as JSON', async (t) => {
  const { questions, api, create } = await discussionApp(t)
  await create()
  const cases: Array<[Parameters<typeof api>[0], string, unknown, string]> = [
    ['GET', '/demo/discussions/2', undefined, 'There is no discussion 2 on this site.'],
    ['GET', '/demo/discussions/2/comments', undefined, 'There is no discussion 2 on this site.'],
    ['GET', '/demo/discussions/2/comments/1', undefined, 'There is no discussion 2 on this site.'],
    ['POST', '/demo/discussions/2/comments', { body: 'x' }, 'There is no discussion 2 on this site.'],
    ['PUT', '/demo/discussions/2', { title: 'x' }, 'There is no discussion 2 on this site.'],
    ['DELETE', '/demo/discussions/2', undefined, 'There is no discussion 2 on this site.'],
    ['POST', '/demo/discussions/2/restore', undefined, 'There is no discussion 2 on this site.'],
    ['POST', `/demo/discussions/2/change_category?to=${questions.id}`, undefined, 'There is no discussion 2 on this site.'],
    ['GET', '/demo/categories/999', undefined, 'There is no category 999 on this site.'],
    ['GET', '/demo/categories/999/discussions', undefined, 'There is no category 999 on this site.'],
    ['POST', '/demo/categories/999/discussions', { title: 'x', body: 'y' }, 'There is no category 999 on this site.'],
  ]
  for (const [method, url, payload, message] of cases) {
    const res = await api(method, url, payload)
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.same(res.json(), { error: 'not_found', message })
  }
})

t.test('413 over the body limit, 415 for anything but JSON, 400 for broken JSON: never a 500', async (t) => {
  const { app, ann, questions } = await discussionApp(t)
  const post = (payload: string, contentType?: string) =>
    app.inject({
      method: 'POST',
      url: `/demo/categories/${questions.id}/discussions`,
      headers: { ...ann.bearer, ...(contentType && { 'content-type': contentType }) },
      payload,
    })
  const big = JSON.stringify({ title: 'big', body: 'x'.repeat(256 * 1024) })
  const tooBig = await post(big, 'application/json')
  t.equal(tooBig.statusCode, 413)
  t.same(tooBig.json(), { error: 'payload_too_large', message: 'The request body is larger than the limit of 262144 bytes.' })

  for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
    const res = await post('title=x&body=y', type)
    t.equal(res.statusCode, 415, type)
    t.same(res.json(), { error: 'unsupported_media_type', message: 'Send the request body as JSON, with "Content-Type: application/json".' })
  }
  // A post may come as a form with its files (test/discussions/attachments.test.ts); one that is
  // not a form at all is the client's mistake.
  for (const payload of ['title=x&body=y', '--x\r\ncontent-disposition: form-data; name="title"\r\n\r\nunfinished']) {
    const broken = await post(payload, 'multipart/form-data; boundary=x')
    t.equal(broken.statusCode, 400, 'a broken form')
    t.match(broken.json(), { error: 'invalid_multipart', message: /^The multipart\/form-data body could not be read: / })
  }
  const vendor = await post(JSON.stringify({ title: 'v1 body', body: 'y' }), 'application/vnd.service-v1+json; charset=utf-8')
  t.equal(vendor.statusCode, 201, 'the v1 media type is JSON too')

  for (const [what, payload] of [
    ['truncated', '{"title": "x", '],
    ['empty', ''],
    ['a prototype pollution attempt', '{"title": "x", "body": "y", "__proto__": {"admin": true}}'],
  ]) {
    const res = await post(payload, 'application/json')
    t.equal(res.statusCode, 400, what)
    t.same(res.json().fields, [{ field: '(request body)', problem: 'is not valid JSON' }], what)
  }
  const none = await app.inject({ method: 'POST', url: `/demo/categories/${questions.id}/discussions`, headers: ann.bearer })
  t.same(none.json().fields, [{ field: '(request body)', problem: 'must be a JSON object' }], 'no body at all')
})
