import t from 'tap'
import { buildTestApp, supporterWithToken, testClock } from '../fixtures/app.ts'
import { SENDS_BY_HAND_PER_MINUTE } from '../../plugins/webhooks/delivery.ts'
import { personWithPassword, signedInPerson, webClient } from '../fixtures/web.ts'
import { LOOPBACK, receiver } from '../fixtures/webhooks.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The site's webhooks on the administration page (routes/web/admin-webhooks.ts): adding one (a
// refused address said so on the form, the secret shown once on the answer, never in an address),
// the test event and its try in the log, "Send again", switching off and on, a new secret,
// removing; administrators of this site only.

const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)![1]!

t.test('an administrator adds a webhook, tests it, reads its log, sends again, switches it, rotates and removes it', async (t) => {
  const { app } = await buildTestApp(t, { clock: testClock(Date.now()), config: { webhooks: { allowed: LOOPBACK, timeoutMs: 2_000 } } })
  const admin = await signedInPerson(app, { administrator: true })
  const hook = await receiver(t)

  const empty = await admin.web.get('/demo/admin/webhooks')
  t.equal(empty.statusCode, 200)
  t.match(empty.body, 'None yet: nothing outside the service hears of this site')
  t.match(empty.body, 'aria-current="page">Webhooks</a>')

  // Several events are several fields of one name, as a browser sends checked boxes.
  const form = (url: string) => `_csrf=${encodeURIComponent(csrfOf(empty.body))}&url=${encodeURIComponent(url)}&description=Chat&events=discussion.created&events=comment.created`
  const refused = await admin.web.request('POST', '/demo/admin/webhooks', form('http://169.254.169.254/latest'))
  t.equal(refused.statusCode, 400)
  t.match(refused.body, 'The address is refused: 169.254.169.254 is a link-local address (cloud metadata services live there).')
  t.match(refused.body, 'value="http://169.254.169.254/latest"', 'the form keeps what was typed')

  const added = await admin.web.request('POST', '/demo/admin/webhooks', form(hook.url))
  t.equal(added.statusCode, 200, added.body)
  const secret = /data-secret>(whsec_[^<]+)</.exec(added.body)![1]!
  t.match(added.body, `${hook.url} is told of discussion.created, comment.created.`)
  const [{ id }] = await app.webhooks.list(admin.site.id)
  t.notMatch((await admin.web.get(`/demo/admin/webhooks/${id}`)).body, secret, 'the secret is shown once')
  t.match((await admin.web.get('/demo/admin/webhooks')).body, `data-webhook="${id}"`)

  const tested = await admin.web.post(`/demo/admin/webhooks/${id}/test`)
  t.equal(tested.statusCode, 303)
  t.equal(tested.headers.location, `https://help.example.test/demo/admin/webhooks/${id}?done=test`)
  await app.sendOutbox()
  t.equal(hook.received.length, 1)
  const page = await admin.web.get(`/demo/admin/webhooks/${id}?done=test`)
  t.match(page.body, 'The test event is queued')
  t.match(page.body, /<code>webhook\.test<\/code>/)
  const delivery = /data-delivery="(\d+)"/.exec(page.body)![1]!

  t.equal((await admin.web.post(`/demo/admin/webhooks/${id}/redeliver`, { delivery })).statusCode, 303)
  await app.sendOutbox()
  t.equal(hook.received.length, 2)
  t.equal(hook.received[1]!.headers['webhook-id'], hook.received[0]!.headers['webhook-id'], 'sent again with its id')
  t.match((await admin.web.post(`/demo/admin/webhooks/${id}/redeliver`, { delivery: '99999' })).body, 'has no delivery 99999')
  t.match((await admin.web.post(`/demo/admin/webhooks/${id}/redeliver`, { delivery: 'abc' })).body, 'Name a delivery of the log to send again.')

  t.equal((await admin.web.post(`/demo/admin/webhooks/${id}/switch`, { to: 'off' })).statusCode, 303)
  t.match((await admin.web.get(`/demo/admin/webhooks/${id}?done=off`)).body, /data-state><span class="field-error">Off\./)
  t.equal((await admin.web.post(`/demo/admin/webhooks/${id}/switch`, { to: 'on' })).statusCode, 303)
  t.match((await app.webhooks.get(admin.site.id, id)).enabled, true)

  const rotated = await admin.web.post(`/demo/admin/webhooks/${id}/rotate`)
  const second = /data-secret>(whsec_[^<]+)</.exec(rotated.body)![1]!
  t.not(second, secret)
  t.match(rotated.body, 'the old one signs beside it for a day')

  const removed = await admin.web.post(`/demo/admin/webhooks/${id}/remove`)
  t.match(removed.body, `The webhook to ${hook.url} is removed`)
  t.equal((await admin.web.get(`/demo/admin/webhooks/${id}`)).statusCode, 404)
  t.equal((await admin.web.get('/demo/admin/webhooks/abc')).statusCode, 404)
})

t.test('a supporter is refused; another site’s administrator cannot reach this site’s webhooks', async (t) => {
  const { app } = await buildTestApp(t)
  const admin = await signedInPerson(app, { administrator: true })
  const { webhook } = await app.webhooks.add(admin.site.id, { url: 'https://hooks.example.com/desk', events: ['comment.created'] })
  const supporter = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(supporter.email, supporter.password)
  t.equal((await web.get('/demo/admin/webhooks')).statusCode, 403)
  t.equal((await web.post(`/demo/admin/webhooks/${webhook.id}/remove`)).statusCode, 403)
  t.equal((await web.post(`/demo/admin/webhooks/${webhook.id}/rotate`)).statusCode, 403)
  const other = await signedInPerson(app, { site: 'other', administrator: true })
  t.match((await other.web.get('/other/admin/webhooks')).body, 'None yet')
  for (const path of ['remove', 'rotate', 'test', 'switch']) {
    const crossing = await other.web.post(`/other/admin/webhooks/${webhook.id}/${path}`, { to: 'off' })
    t.equal(crossing.statusCode, 404, path)
    t.match(crossing.body, `This site has no webhook ${webhook.id}.`)
  }
  t.equal((await other.web.get(`/other/admin/webhooks/${webhook.id}`)).statusCode, 404)
  t.match(await app.webhooks.get(admin.site.id, webhook.id), { enabled: true, url: 'https://hooks.example.com/desk' }, 'untouched')
  const noEvent = await admin.web.request('POST', '/demo/admin/webhooks', `_csrf=${encodeURIComponent(csrfOf((await admin.web.get('/demo/admin/webhooks')).body))}&url=https%3A%2F%2Fx.example.com%2F`)
  t.equal(noEvent.statusCode, 400, 'no event chosen')
  t.match(noEvent.body, 'The events names no event: ask for at least one.')
  const nothing = await admin.web.post('/demo/admin/webhooks')
  t.equal(nothing.statusCode, 400, 'a form without its fields')
  t.match(nothing.body, 'The address is not an address such as https://example.com/hooks/service-desk.')
  t.notMatch((await admin.web.get(`/demo/admin/webhooks/${webhook.id}?done=whatever`)).body, 'class="notice"', 'an unknown notice says nothing')
  t.equal((await admin.web.post('/demo/admin/webhooks/99999/redeliver', { delivery: '1' })).statusCode, 404)
  // The twentieth is the last.
  for (let n = 1; n < 20; n++) await app.webhooks.add(admin.site.id, { url: `https://hooks${n}.example.com/`, events: ['comment.created'] })
  const over = await admin.web.post('/demo/admin/webhooks', { url: 'https://one-more.example.com/', events: 'comment.created' })
  t.equal(over.statusCode, 409)
  t.match(over.body, 'A site has at most 20 webhooks: remove one first.')
})

t.test('sends by hand (the test event, "Send again") are paced per endpoint, the pages and the API together; another endpoint is not held back', async (t) => {
  const clock = testClock(Date.now())
  const { app } = await buildTestApp(t, { clock, config: { webhooks: { allowed: LOOPBACK, timeoutMs: 2_000 } } })
  const admin = await signedInPerson(app, { administrator: true })
  const boss = await supporterWithToken(app, { email: 'boss@example.test' })
  await app.users.setAdministrator(boss.site.id, boss.user.id, true)
  const hook = await receiver(t)
  const api = (url: string) => app.inject({ method: 'POST', url, headers: boss.bearer })
  const add = async () => (await app.inject({ method: 'POST', url: '/demo/webhooks', headers: boss.bearer, payload: { url: hook.url, events: ['discussion.created'] } })).json().id as number
  const [one, other] = [await add(), await add()]
  for (let i = 0; i < SENDS_BY_HAND_PER_MINUTE - 1; i++) t.equal((await api(`/demo/webhooks/${one}/test`)).statusCode, 202)
  t.equal(await app.sendOutbox(), SENDS_BY_HAND_PER_MINUTE - 1, 'one run of the outbox sends them all')
  const delivery = (await app.webhooks.deliveries(one))[0]!.id
  await admin.web.get(`/demo/admin/webhooks/${one}`)
  t.equal((await admin.web.post(`/demo/admin/webhooks/${one}/redeliver`, { delivery: String(delivery) })).statusCode, 303, 'the tenth, from the page')
  const api429 = await api(`/demo/webhooks/${one}/test`)
  t.equal(api429.statusCode, 429)
  t.match(api429.json(), { error: 'rate_limited', message: /sent 10 times by hand this minute/ })
  t.equal(api429.headers['retry-after'], '60')
  t.equal((await api(`/demo/webhooks/${one}/deliveries/${delivery}/redeliver`)).statusCode, 429, '"Send again" too')
  const page = await admin.web.post(`/demo/admin/webhooks/${one}/test`)
  t.equal(page.statusCode, 429)
  t.match(page.body, 'sent 10 times by hand this minute')
  t.equal((await admin.web.post(`/demo/admin/webhooks/${one}/redeliver`, { delivery: String(delivery) })).statusCode, 429)
  t.equal((await api(`/demo/webhooks/${other}/test`)).statusCode, 202, 'another endpoint')
  t.equal(await app.sendOutbox(), 2, 'the tenth and the other endpoint\'s')
  // Each try's outcome in the message: a try that failed says why, rather than only a count.
  const tries = [...(await app.webhooks.deliveries(one)), ...(await app.webhooks.deliveries(other))].map((d) => d.status ?? d.error)
  t.equal(hook.received.length, 11, `ten to the first endpoint, one to the other: nothing past the pace left (tries: ${tries.join(', ')})`)
  t.equal(tries.length, 11)
  clock.advance(60_000)
  t.equal((await api(`/demo/webhooks/${one}/test`)).statusCode, 202, 'a minute later')
})
