import t from 'tap'
import { allComments, allDiscussions, changesOf, createServiceDeskClient, rateLimitErrorOf, rateLimitOf, ServiceDeskAuthError, ServiceDeskRateLimitError, verifyWebhook } from '../../clients/typescript/index.ts'
import { DEFAULT_RATE_LIMITS } from '../../plugins/rate-limits.ts'
import { buildTestApp, START, supporterWithToken, testClock } from '../fixtures/app.ts'
import { LOOPBACK, receiver } from '../fixtures/webhooks.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.
// Issue 19: the typed client's wrapper against the service on each engine, through a real socket.
// The generated document and types, the example and the header readers are
// typescript-document.test.ts, which runs once.

t.test('the wrapper against a real socket: v1, the token, its expiry, and the typed 401 and 403', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { expiresInDays: 7 })
  const reader = await supporterWithToken(app, { access: 'read' })
  const gone = await supporterWithToken(app)
  await app.users.removeStaff(gone.site.id, gone.user.id)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`
  const client = (token: string) => createServiceDeskClient({ baseUrl, token })

  const desk = client(ann.value)
  t.equal(desk.tokenExpiresAt, undefined, 'nothing known before the first answer')
  const { data, response } = await desk.GET('/{site}', { params: { path: { site: 'demo' } } })
  t.equal(data?.permalink, 'demo')
  t.match(response.headers.get('content-type'), 'application/vnd.service-v1+json', 'the v1 media type was asked for')
  t.equal(desk.tokenExpiresAt?.getTime(), Math.floor(ann.token.expiresAt.getTime() / 1000) * 1000, 'Service-Token-Expiration read')
  const missing = await desk.GET('/{site}/discussions/{number}', { params: { path: { site: 'demo', number: 999 } } })
  t.match(missing.error, { error: 'not_found' }, 'a refusal after authentication is an error value, not a throw')
  const asked: string[] = []
  const traced = createServiceDeskClient({ baseUrl, token: ann.value, fetch: (input) => (asked.push((input as Request).url), fetch(input)) })
  t.equal((await traced.GET('/{site}/categories', { params: { path: { site: 'demo' } } })).response.status, 200)
  t.same(asked, [`${baseUrl}demo/categories`], 'a fetch of the caller\'s own')

  // Conditional requests through the typed client: the header parameters and the 304 and 412 answers are in its types.
  const site = { path: { site: 'demo' } }
  const polled = await desk.GET('/{site}/discussions', { params: site })
  const tag = polled.response.headers.get('etag')!
  const unchanged = await desk.GET('/{site}/discussions', { params: { ...site, header: { 'If-None-Match': tag } } })
  t.equal(unchanged.response.status, 304, 'a poll of an unchanged listing is 304')
  t.equal(unchanged.data, undefined, 'with no data')
  await app.discussions.create({ siteId: ann.site.id, categoryId: (await app.categories.add(ann.site.id, 'Questions', true)).id, title: 'New', body: 'x', supporterId: ann.user.id, via: 'api' })
  const changed = await desk.GET('/{site}/discussions', { params: { ...site, header: { 'If-None-Match': tag } } })
  t.equal(changed.data?.total, 1, 'a changed one is answered in full')
  const one = { path: { site: 'demo', number: 1 } }
  const seen = (await desk.GET('/{site}/discussions/{number}', { params: one })).response.headers.get('etag')!
  t.equal((await desk.POST('/{site}/discussions/{number}/resolve', { params: { ...one, header: { 'If-Match': seen } } })).response.status, 200)
  const stale = await desk.POST('/{site}/discussions/{number}/unresolve', { params: { ...one, header: { 'If-Match': seen } } })
  t.equal(stale.response.status, 412, 'a change for a version that is gone')
  t.match(stale.error, { error: 'precondition_failed' }, 'is an error value')

  const refusal = async (call: Promise<unknown>) => {
    try {
      await call
    } catch (error) {
      return error as ServiceDeskAuthError
    }
    throw new Error('not refused')
  }
  const wrong = await refusal(client('service_pat_wrong').GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.ok(wrong instanceof ServiceDeskAuthError)
  t.match(wrong, { status: 401, kind: 'invalid_token', description: undefined, message: /The access token is invalid/ })
  const readOnly = await refusal(client(reader.value).POST('/{site}/discussions/{number}/resolve', { params: { path: { site: 'demo', number: 1 } } }))
  t.match(readOnly, { status: 403, kind: 'insufficient_scope', scope: 'write', challenge: /error="insufficient_scope"/ })
  // A second credential (here added by the caller's fetch) is the authentication's 400, with its challenge.
  const twice = createServiceDeskClient({ baseUrl, token: ann.value, fetch: (input) => fetch(new Request(input as Request, { headers: { ...Object.fromEntries((input as Request).headers), 'x-service-auth': 'legacy' } })) })
  const sentTwice = await refusal(twice.GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(sentTwice, { status: 400, kind: 'invalid_request', description: undefined, challenge: /error="invalid_request"/, message: 'Send exactly one credential: this request carries more than one.' })
  const badField = await desk.GET('/{site}/discussions', { params: { path: { site: 'demo' }, query: { since: 'yesterday' } } })
  t.match(badField, { response: { status: 400 }, error: { error: 'invalid_request', fields: [{ field: 'since' }] } }, "a route's 400 is an error value")
  const offStaff = await refusal(client(gone.value).GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(offStaff, { status: 403, kind: 'forbidden', challenge: undefined, message: "API access is limited to the site's support staff." })
  clock.advanceDays(8)
  const expired = await refusal(desk.GET('/{site}', { params: { path: { site: 'demo' } } }))
  t.match(expired, { status: 401, kind: 'expired', description: 'The access token has expired', name: 'ServiceDeskAuthError' })
})

t.test('the rate limit through the typed client: what is left after each answer, then a typed 429 with Retry-After', async (t) => {
  const { app } = await buildTestApp(t, { config: { rateLimits: { ...DEFAULT_RATE_LIMITS, reads: 2 }, limits: { perAddress: 1, perAccount: 1, windowSeconds: 60 } } })
  const ann = await supporterWithToken(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const desk = createServiceDeskClient({ baseUrl, token: ann.value })
  const site = { params: { path: { site: 'demo' } } }
  t.equal(desk.rateLimit, undefined, 'nothing known before the first answer')
  await desk.GET('/{site}', site)
  t.match(desk.rateLimit, { policy: 'reads', limit: 2, remaining: 1, used: 1 })
  t.equal(desk.rateLimit!.resetAt.getTime(), START + 3_600_000, 'the end of the window (the test clock stands at its start)')
  await desk.GET('/{site}', site)
  const limited = await desk.GET('/{site}', site).then(
    () => undefined,
    (error: unknown) => error,
  )
  t.ok(limited instanceof ServiceDeskRateLimitError)
  t.match(limited, { status: 429, rateLimit: { policy: 'reads', remaining: 0, used: 2 }, message: /^Too many requests: this credential has used all 2 reads/ })
  t.ok((limited as ServiceDeskRateLimitError).retryAfter >= 1)

  // The failed-authentication budget's 429 (plain text) is the same error, with the failures policy.
  const wrong = createServiceDeskClient({ baseUrl, token: 'service_pat_wrong' })
  await wrong.GET('/{site}', site).catch(() => {})
  const spent = await wrong.GET('/{site}', site).then(
    () => undefined,
    (error: unknown) => error,
  )
  t.match(spent, { name: 'ServiceDeskRateLimitError', retryAfter: 60, rateLimit: { policy: 'failures', limit: 1, remaining: 0 }, message: 'Too many failed authentication attempts. Try again in 60 seconds.' })
})

t.test('rateLimitOf reads the five headers, or nothing when one is missing', async (t) => {
  const headers = new Headers({ 'x-ratelimit-resource': 'writes', 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '7', 'x-ratelimit-used': '3', 'x-ratelimit-reset': '1800000000' })
  t.same(rateLimitOf(headers), { policy: 'writes', limit: 10, remaining: 7, used: 3, resetAt: new Date(1_800_000_000_000) })
  headers.delete('x-ratelimit-used')
  t.equal(rateLimitOf(headers), undefined)
})

t.test('a 429 as a typed error: the JSON message, else the text, else the status; Retry-After, at least 1', async (t) => {
  const limited = new Headers({ 'retry-after': '30' })
  t.match(rateLimitErrorOf(limited, '{"error":"rate_limited","message":"Try again in 30 seconds."}'), { retryAfter: 30, rateLimit: undefined, message: 'Try again in 30 seconds.' })
  t.match(rateLimitErrorOf(limited, '{"error":"rate_limited"}'), { message: '{"error":"rate_limited"}' }, 'a JSON body without a message is shown whole')
  t.match(rateLimitErrorOf(new Headers(), ''), { retryAfter: 1, message: 'HTTP 429' }, 'a bare 429')
})

t.test("the client keeps the last rate limit it was told when an answer tells none (a 406 comes before counting)", async (t) => {
  const told = { 'x-ratelimit-resource': 'reads', 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9', 'x-ratelimit-used': '1', 'x-ratelimit-reset': '1800000000' }
  const answers = [new Response('{}', { headers: { 'content-type': 'application/json', ...told } }), new Response('{}', { status: 406, headers: { 'content-type': 'application/json' } })]
  const desk = createServiceDeskClient({ baseUrl: 'http://desk.example.test', token: 'service_pat_x', fetch: async () => answers.shift()! })
  await desk.GET('/{site}', { params: { path: { site: 'demo' } } })
  await desk.GET('/{site}', { params: { path: { site: 'demo' } } })
  t.match(desk.rateLimit, { policy: 'reads', remaining: 9 })
})

t.test('files through the typed client: an upload as FormData, carried by a reply, downloaded as bytes', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const category = await app.categories.add(ann.site.id, 'Questions', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: category.id, title: 'Receipt', body: 'x', supporterId: ann.user.id, via: 'api' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const desk = createServiceDeskClient({ baseUrl: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`, token: ann.value })
  const site = { path: { site: 'demo' } }
  const bytes = Buffer.from('%PDF-1.7\nthe receipt')
  const form = new FormData()
  form.append('file', new Blob([bytes]), 'receipt.pdf')
  // The document says multipart/form-data: the form goes as it is, its boundary set by fetch.
  const uploaded = await desk.POST('/{site}/uploads', { params: site, body: { file: [] }, bodySerializer: () => form })
  t.equal(uploaded.response.status, 201)
  const [upload] = uploaded.data!.uploads
  t.match(upload, { name: 'receipt.pdf', size: bytes.length, content_type: 'application/pdf' })
  const reply = await desk.POST('/{site}/discussions/{number}/comments', { params: { path: { site: 'demo', number: 1 } }, body: { body: 'Attached.', uploads: [upload!.id] } })
  t.same(reply.data?.attachments.map((a) => a.id), [upload!.id], 'typed: attachments of a comment')
  const file = await desk.GET('/{site}/attachments/{id}', { params: { path: { site: 'demo', id: upload!.id } }, parseAs: 'arrayBuffer' })
  t.ok(Buffer.from(file.data as ArrayBuffer).equals(bytes), 'the bytes')
  t.equal(file.response.headers.get('content-disposition'), 'attachment; filename="receipt.pdf"')
})

t.test('webhooks through the typed client: an administrator adds one, and verifyWebhook checks what it posts', async (t) => {
  const { app } = await buildTestApp(t, { clock: testClock(Date.now()), config: { webhooks: { allowed: LOOPBACK, timeoutMs: 2_000 } } })
  const boss = await supporterWithToken(app)
  await app.users.setAdministrator(boss.site.id, boss.user.id, true)
  const category = await app.categories.add(boss.site.id, 'Questions', true)
  const hook = await receiver(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const desk = createServiceDeskClient({ baseUrl: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, token: boss.value })
  const { data: made } = await desk.POST('/{site}/webhooks', { params: { path: { site: 'demo' } }, body: { url: hook.url, events: ['discussion.created'] } })
  t.match(made, { url: hook.url, events: ['discussion.created'], enabled: true, secret: /^whsec_/ })
  await desk.POST('/{site}/categories/{id}/discussions', { params: { path: { site: 'demo', id: category.id } }, body: { title: 'Hello', body: 'Words.' } })
  await app.sendOutbox()
  const [delivery] = hook.received
  const event = verifyWebhook(made!.secret, delivery!.body, delivery!.headers)
  t.equal(event.type, 'discussion.created')
  if (event.type === 'discussion.created') t.equal(event.data.comments[0]!.body, 'Words.', 'data typed by the event type')
  t.equal(verifyWebhook(made!.secret, delivery!.body, new Headers(delivery!.headers as Record<string, string>)).type, 'discussion.created', 'Headers too')
  t.equal(verifyWebhook(made!.secret, delivery!.body, { ...delivery!.headers, 'X-Forwarded-For': ['192.0.2.1', '198.51.100.2'], 'x-absent': undefined }).type, 'discussion.created', "Node's headers as they come: repeated ones, absent ones, any case")
  t.throws(() => verifyWebhook(made!.secret, delivery!.body.replace('Hello', 'Hullo'), delivery!.headers), /No matching signature/, 'a changed body is refused')
  t.throws(() => verifyWebhook(`whsec_${Buffer.from('another secret of 24 b').toString('base64')}`, delivery!.body, delivery!.headers), /No matching signature/, 'so is another secret')
  t.throws(() => verifyWebhook(made!.secret, delivery!.body, { ...delivery!.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) }), /too old/, 'and an old delivery played again')
})

t.test('safe retries: a POST whose answer was lost is tried again with the same Idempotency-Key, and writes once', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const category = await app.categories.add(ann.site.id, 'Questions', true)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const keys: string[] = []
  const waits: number[] = []
  let drop = 1
  let busy = 1
  // The network loses the first answer after the service did the work; then the service is busy once (503).
  const flaky = async (input: string | URL | Request) => {
    const request = input as Request
    if (request.method === 'POST') keys.push(request.headers.get('idempotency-key')!)
    const response = await fetch(request)
    if (drop-- > 0) throw new TypeError('fetch failed: the connection was reset')
    if (request.method === 'GET' && busy-- > 0) return new Response('{"error":"unavailable","message":"busy"}', { status: 503, headers: { 'retry-after': '2' } })
    return response
  }
  const client = createServiceDeskClient({ baseUrl, token: ann.value, fetch: flaky as typeof fetch, sleep: async (ms) => void waits.push(ms) })
  const created = await client.POST('/{site}/categories/{id}/discussions', { params: { path: { site: 'demo', id: category.id } }, body: { title: 'Lost answer', body: 'Once only.' } })
  t.equal(created.response.status, 201)
  t.equal(created.response.headers.get('idempotent-replayed'), 'true', 'the second try got the first answer')
  t.equal(keys.length, 2)
  t.match(keys[0], /^"[0-9a-f-]{36}"$/, 'a quoted UUID')
  t.equal(keys[1], keys[0], 'the same key on the retry')
  t.equal((await app.discussions.list({ siteId: ann.site.id, state: 'live', sort: 'activity', offset: 0, limit: 10 })).total, 1, 'one discussion')
  const listed = await client.GET('/{site}/discussions', { params: { path: { site: 'demo' } } })
  t.equal(listed.data?.total, 1, 'a GET answered 503 is tried again')
  t.same(waits, [250, 2000], 'after 0.25 s, then what Retry-After said')

  // A key of the caller's own is kept; no retries when asked for none; PATCH is never repeated.
  keys.length = 0
  drop = 1
  const once = createServiceDeskClient({ baseUrl, token: ann.value, fetch: flaky as typeof fetch, retries: 0 })
  await t.rejects(once.POST('/{site}/discussions/{number}/comments', { params: { path: { site: 'demo', number: 1 } }, body: { body: 'Mine' }, headers: { 'idempotency-key': 'my-own-key' } }), /connection was reset/)
  t.same(keys, ['my-own-key'])
  drop = 1
  const patches: string[] = []
  const counting = async (input: string | URL | Request) => (patches.push((input as Request).method), flaky(input))
  const patcher = createServiceDeskClient({ baseUrl, token: ann.value, fetch: counting as typeof fetch, sleep: async () => {} })
  await t.rejects(patcher.PATCH('/{site}/categories/{id}', { params: { path: { site: 'demo', id: category.id } }, body: { round_robin: true } }))
  t.same(patches, ['PATCH'], 'a PATCH is tried once')
})

t.test('iterators: every discussion and comment by cursor, and the change feed to its end or followed', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const category = await app.categories.add(ann.site.id, 'Questions', true)
  for (let i = 1; i <= 65; i++) await app.discussions.create({ siteId: ann.site.id, categoryId: category.id, title: `D${i}`, body: 'x', supporterId: ann.user.id, via: 'api' })
  for (let i = 2; i <= 35; i++) await app.discussions.reply({ siteId: ann.site.id, number: 7, body: `C${i}`, internal: false, supporterId: ann.user.id, via: 'api' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const client = createServiceDeskClient({ baseUrl: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, token: ann.value })
  const numbers: number[] = []
  for await (const d of allDiscussions(client, 'demo')) numbers.push(d.number)
  t.same(numbers, Array.from({ length: 65 }, (_, i) => 65 - i), 'every discussion once, newest first')
  const bodies: string[] = []
  for await (const c of allComments(client, 'demo', 7)) bodies.push(c.body)
  t.same(bodies, ['x', ...Array.from({ length: 34 }, (_, i) => `C${i + 2}`)])

  const changes = []
  for await (const change of changesOf(client, 'demo')) changes.push(change)
  t.equal(changes.length, 65 + 34, 'the feed to its end')
  const last = changes.at(-1)!.cursor
  const stop = new AbortController()
  const followed: string[] = []
  const following = (async () => {
    for await (const change of changesOf(client, 'demo', { after: last, follow: true, wait: 5, signal: stop.signal })) {
      followed.push(change.discussion.title)
      stop.abort()
    }
  })()
  await new Promise((resolve) => setTimeout(resolve, 200))
  await app.discussions.create({ siteId: ann.site.id, categoryId: category.id, title: 'Followed', body: 'x', supporterId: ann.user.id, via: 'api' })
  await following
  t.same(followed, ['Followed'], 'followed: the new change, then stopped')
})

t.test('retries: the 409 of a key in use is waited out, another 409 is an answer; the iterators throw what they were refused', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const category = await app.categories.add(ann.site.id, 'Questions', true)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  let inUse = 1
  const tries: number[] = []
  // The first try meets another request with its key still in flight (as a proxy that retried on its own would make).
  const busy = async (input: string | URL | Request) => {
    const request = input as Request
    if (request.method === 'POST' && inUse-- > 0) {
      tries.push(409)
      return new Response('{"error":"idempotency_key_in_use","message":"still being answered"}', { status: 409, headers: { 'retry-after': '1', 'content-type': 'application/json' } })
    }
    const response = await fetch(request)
    tries.push(response.status)
    return response
  }
  const client = createServiceDeskClient({ baseUrl, token: ann.value, fetch: busy as typeof fetch, sleep: async () => {} })
  const made = await client.POST('/{site}/categories/{id}/discussions', { params: { path: { site: 'demo', id: category.id } }, body: { title: 'Waited', body: 'x' } })
  t.equal(made.response.status, 201)
  t.same(tries, [409, 201], 'tried again after the 409 of its key in use')
  await app.discussions.act(ann.site.id, made.data!.number, 'delete')
  tries.length = 0
  const conflict = await client.POST('/{site}/discussions/{number}/comments', { params: { path: { site: 'demo', number: made.data!.number } }, body: { body: 'To a deleted one' } })
  t.equal(conflict.response.status, 409)
  t.same(tries, [409], "a 409 of the route's own (a deleted discussion) is its answer, not tried again")
  t.match(conflict.error, { error: 'conflict' })

  const plain = createServiceDeskClient({ baseUrl, token: ann.value })
  const drain = async (items: AsyncGenerator<unknown>) => {
    for await (const item of items) void item
  }
  await t.rejects(drain(allDiscussions(plain, 'demo', { user_email: 'not an address' })), /listing demo: .*user_email/, 'a refused listing')
  await t.rejects(drain(allComments(plain, 'demo', 999)), /comments of demo 999: .*not_found/)
  await t.rejects(drain(changesOf(plain, 'demo', { after: 'not-a-cursor' })), /changes of demo: .*after/)
  // Followed with the default wait (30 s a request): the change ends the wait at once.
  const stop = new AbortController()
  const heard: number[] = []
  const following = (async () => {
    for await (const change of changesOf(plain, 'demo', { follow: true, signal: stop.signal })) {
      heard.push(change.discussion.number)
      stop.abort()
    }
  })()
  await following
  t.same(heard, [made.data!.number], 'the first change there, then stopped')
})
