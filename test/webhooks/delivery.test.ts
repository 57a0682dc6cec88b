import t, { type Test } from 'tap'
import { judge, retryDelay, RETRY_SCHEDULE_MS } from '../../plugins/webhooks/delivery.ts'
import { createConnections } from '../../plugins/webhooks/post.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { buildApp } from '../../app.ts'
import { BASE_URL, rawStatement, SITE_URL, supporterWithToken, testClock } from '../fixtures/app.ts'
import { sharedDatabase } from '../multiprocess/two-apps.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { mailServer, readMail } from '../fixtures/mail.ts'
import { LOOPBACK, receiver } from '../fixtures/webhooks.ts'
import { onSqlite } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The tests that ask nothing the engines do differently run once (onSqlite).
// How deliveries behave under faults (plugins/webhooks/delivery.ts): the retries on their schedule
// (the clock injected, the jitter fixed at none), the same webhook-id on every try, the log, "send
// again", what ends a delivery at once, and an endpoint switched off after failing for days, its
// site's administrators mailed. And the refusals that keep a webhook from reaching this machine's
// own network (lib/webhook-address.ts), with the operator's allowance off.

type Options = { allowed?: typeof LOOPBACK; resolve?: (name: string) => Promise<Array<{ address: string; family: number }>>; timeoutMs?: number }

/** A try's deadline of 5 s by default: a receiver of the test's own answers in far less even on a loaded machine (300 ms failed there), and a test about the deadline gives its own. */
async function webhookApp(t: Test, { allowed = LOOPBACK, resolve, timeoutMs = 5_000 }: Options = {}) {
  const smtp = await mailServer(t)
  const made = await discussionApp(t, {
    clock: testClock(Date.now()),
    config: { webhooks: { allowed, timeoutMs }, mail: { smtpUrl: smtp.url, from: 'Desk <desk@example.test>' } },
    webhookDelivery: { random: () => 0.5, ...(resolve && { resolve }) },
  })
  const boss = await supporterWithToken(made.app, { email: 'boss@example.test' })
  await made.app.users.setAdministrator(made.ann.site.id, boss.user.id, true)
  const admin = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => made.api(method, url, payload, boss.bearer)
  return { ...made, boss, admin, smtp }
}

t.test('a receiver that fails, hangs, then refuses connections gets the retries on schedule, with one webhook-id', async (t) => {
  const { app, clock, admin, create } = await webhookApp(t, { timeoutMs: 1_000 })
  let mode: 'fail' | 'hang' | 'ok' = 'fail'
  const hook = await receiver(t, (response) => {
    if (mode === 'fail') response.writeHead(500).end('upstream down')
    else if (mode === 'ok') response.end('ok')
    // 'hang': no answer at all; the try's deadline ends it.
  })
  const { id } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })).json()
  await create()
  const row = async () => (await app.webhooks.deliveries(id))[0]!

  t.equal(await app.sendOutbox(), 0)
  t.match(await row(), { status: 500, answer: 'upstream down', error: 'answered 500', eventType: 'discussion.created' })
  t.equal(await app.sendOutbox(), 0, 'not due again before its wait')
  t.equal(hook.received.length, 1)

  // The waits of the schedule, exactly (the jitter is fixed at none): 5 s, then 5 minutes...
  clock.advance(RETRY_SCHEDULE_MS[0]! - 1)
  t.equal(await app.sendOutbox(), 0)
  t.equal(hook.received.length, 1, 'a millisecond early: not yet')
  clock.advance(1)
  mode = 'hang'
  await app.sendOutbox()
  t.equal(hook.received.length, 2)
  t.match(await row(), { status: null, error: 'no answer within 1 s' })

  clock.advance(RETRY_SCHEDULE_MS[1]!)
  await new Promise<void>((resolve) => hook.server.close(() => resolve()))
  hook.server.closeAllConnections()
  await app.sendOutbox()
  t.match(await row(), { status: null, error: /^ECONNREFUSED/ }, 'a refused connection is tried again too')

  clock.advance(RETRY_SCHEDULE_MS[2]!)
  mode = 'ok'
  await new Promise<void>((resolve) => hook.server.listen(hook.port, '127.0.0.1', resolve))
  t.equal(await app.sendOutbox(), 1)
  t.equal(hook.received.length, 3)
  t.equal(new Set(hook.received.map((r) => r.headers['webhook-id'])).size, 1, 'every try carries the same webhook-id')
  t.not(hook.received[0]!.headers['webhook-signature'], hook.received[2]!.headers['webhook-signature'], 'each signed at its own time')

  const log = (await admin('GET', `/demo/webhooks/${id}/deliveries`)).json().deliveries
  t.same(log.map((d: { status: number | null }) => d.status), [200, null, null, 500], 'the log, newest first')
  t.equal((await admin('GET', `/demo/webhooks/${id}`)).json().failing_since, null, 'a success ends the failing')

  // Send again: the same event, the same id, once more.
  const again = await admin('POST', `/demo/webhooks/${id}/deliveries/${log[0].id}/redeliver`)
  t.equal(again.statusCode, 202)
  t.equal(again.json().event_id, hook.received[0]!.headers['webhook-id'])
  await app.sendOutbox()
  t.equal(hook.received.length, 4)
  t.equal(hook.received[3]!.body, hook.received[2]!.body)
  t.equal((await admin('POST', `/demo/webhooks/${id}/deliveries/99999/redeliver`)).statusCode, 404)

  // The log keeps three days: the sender prunes it, once an hour.
  clock.advance(3 * DAY_MS + 1)
  await app.sendOutbox()
  t.same((await admin('GET', `/demo/webhooks/${id}/deliveries`)).json().deliveries, [])
})

t.test('the schedule ends after about a day; a 4xx or a redirect ends it at once', async (t) => {
  const { app, clock, admin, create } = await webhookApp(t)
  const statuses: number[] = [400, 301, 429, 408]
  const hook = await receiver(t, (response) => {
    const status = statuses.shift() ?? 503
    if (status === 301) response.writeHead(301, { location: 'http://127.0.0.1:1/elsewhere' }).end()
    else response.writeHead(status).end()
  })
  const { id } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })).json()
  await create()
  await app.sendOutbox()
  t.match((await app.webhooks.deliveries(id))[0], { status: 400, error: 'answered 400' })
  clock.advance(RETRY_SCHEDULE_MS[0]!)
  t.equal(await app.sendOutbox(), 0)
  t.equal(hook.received.length, 1, 'a 400 is not tried again')

  await create()
  await app.sendOutbox()
  t.match((await app.webhooks.deliveries(id))[0], { status: 301, error: 'answered 301, a redirect to http://127.0.0.1:1/elsewhere, which is not followed' })
  clock.advance(RETRY_SCHEDULE_MS[0]!)
  await app.sendOutbox()
  t.equal(hook.received.length, 2, 'nor a redirect')

  // 429 and 408 are tried again, then 503 every time: eight tries in all, over about a day.
  await create()
  let waited = 0
  await app.sendOutbox()
  for (const wait of RETRY_SCHEDULE_MS) {
    clock.advance(wait)
    waited += wait
    await app.sendOutbox()
  }
  t.equal(hook.received.length, 2 + 1 + RETRY_SCHEDULE_MS.length)
  t.ok(waited > 0.9 * DAY_MS && waited < 1.5 * DAY_MS, `${waited / 3_600_000} hours`)
  clock.advance(DAY_MS)
  await app.sendOutbox()
  t.equal(hook.received.length, 2 + 1 + RETRY_SCHEDULE_MS.length, 'and then no more')
  t.ok((await admin('GET', `/demo/webhooks/${id}`)).json().failing_since, 'the endpoint is failing')
})

t.test('an endpoint failing for days is switched off, and the administrators are mailed', async (t) => {
  const { app, clock, admin, create, smtp } = await webhookApp(t)
  const hook = await receiver(t, (response) => response.writeHead(502).end())
  const { id } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'], description: 'Chat' })).json()
  for (let day = 0; day < 6; day++) {
    await create()
    await app.sendOutbox()
    clock.advanceDays(1)
  }
  const shown = (await admin('GET', `/demo/webhooks/${id}`)).json()
  t.equal(shown.enabled, false)
  t.match(shown.disabled_reason, /^every delivery since .* failed, the last one: answered 502$/)
  await app.sendOutbox()
  const sent = smtp.mails.filter((m) => readMail(m).subject.startsWith('A webhook of your site was switched off'))
  t.same(sent.map((m) => m.to), [['boss@example.test']], 'to the administrator, not to the other supporter')
  t.match(readMail(sent[0]!).text, 'https://help.example.test/demo/admin/webhooks')
  const before = hook.received.length
  await create()
  await app.sendOutbox()
  t.equal(hook.received.length, before, 'nothing is posted to it any more')
  // Switched back on, it is told again, and forgets why it was off.
  t.match((await admin('PATCH', `/demo/webhooks/${id}`, { enabled: true })).json(), { enabled: true, disabled_reason: null, failing_since: null })
  await create()
  await app.sendOutbox()
  t.equal(hook.received.length, before + 1)
})

t.test('the test event, rotation with both secrets signing for a day, changes and removal', async (t) => {
  const { app, clock, admin } = await webhookApp(t)
  const hook = await receiver(t)
  const { id, secret: first } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['comment.created'], enabled: false })).json()
  const test = await admin('POST', `/demo/webhooks/${id}/test`)
  t.equal(test.statusCode, 202)
  await app.sendOutbox()
  t.equal(hook.received.length, 1, 'the test event reaches even a switched-off endpoint')
  t.match(JSON.parse(hook.received[0]!.body), { type: 'webhook.test', data: { webhook: { id, events: ['comment.created'] } } })

  const rotated = await admin('POST', `/demo/webhooks/${id}/rotate`)
  t.equal(rotated.statusCode, 200)
  const { secret: second, previous_secret_until: until } = rotated.json()
  t.not(second, first)
  t.equal(Date.parse(until), Math.floor((clock() + DAY_MS) / 1000) * 1000)
  await admin('POST', `/demo/webhooks/${id}/test`)
  await app.sendOutbox()
  const { Webhook } = await import('standardwebhooks')
  const signed = hook.received[1]!
  t.equal(String(signed.headers['webhook-signature']).split(' ').length, 2, 'signed by both')
  t.ok(new Webhook(first).verify(signed.body, signed.headers as Record<string, string>), 'the old secret still verifies it')
  t.ok(new Webhook(second).verify(signed.body, signed.headers as Record<string, string>), 'the new one too')

  const changed = await admin('PATCH', `/demo/webhooks/${id}`, { events: ['discussion.created', 'comment.created'], description: ' Chat room ', internal_comments: true })
  t.match(changed.json(), { events: ['discussion.created', 'comment.created'], description: 'Chat room', internal_comments: true })
  for (const [body, field] of [[{ events: [] }, 'events'], [{ events: ['discussion.eaten'] }, 'events.0'], [{ url: 'ftp://example.com/' }, 'url'], [{ enabled: 'yes' }, 'enabled']] as const) {
    const bad = await admin('PATCH', `/demo/webhooks/${id}`, body)
    t.equal(bad.statusCode, 400, JSON.stringify(body))
    t.match(bad.json().fields, [{ field }], JSON.stringify(body))
  }
  t.equal((await admin('PATCH', `/demo/webhooks/${id}`, {})).statusCode, 400, 'a change naming nothing')
  t.equal((await admin('PATCH', '/demo/webhooks/99999', { enabled: true })).statusCode, 404)
  t.equal((await admin('DELETE', `/demo/webhooks/${id}`)).statusCode, 204)
  t.equal((await admin('DELETE', `/demo/webhooks/${id}`)).statusCode, 404)
  t.same((await admin('GET', '/demo/webhooks')).json(), { webhooks: [] })
})

t.test('only administrators manage webhooks; a supporter is refused', onSqlite("which people may manage a site's webhooks"), async (t) => {
  const { admin, api } = await webhookApp(t)
  const hook = await receiver(t)
  t.equal((await admin('POST', '/demo/webhooks', { url: hook.url, events: ['comment.created'] })).statusCode, 201)
  const refused = await api('GET', '/demo/webhooks')
  t.equal(refused.statusCode, 403)
  t.match(refused.json().message, 'Only administrators of this site')
  t.equal((await api('POST', '/demo/webhooks', { url: hook.url, events: ['comment.created'] })).statusCode, 403)
  t.equal((await api('POST', '/demo/webhooks/1/rotate')).statusCode, 403)
})

t.test('no request forgery: addresses of this machine and its networks are refused, each with its reason', onSqlite('addresses of this machine and its networks refused, and names that lead to them'), async (t) => {
  const names: Record<string, string> = { 'loopback.example.test': '127.0.0.1', 'public.example.test': '93.184.215.14' }
  const odd: Record<string, () => Promise<Array<{ address: string; family: number }>>> = {
    'empty.example.test': async () => [],
    'broken.example.test': async () => Promise.reject(new Error('the resolver broke')),
    'mixed.example.test': async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.7', family: 4 }],
  }
  const { app, admin, create, clock } = await webhookApp(t, {
    allowed: [],
    resolve: async (name) => (odd[name] ? odd[name]!() : names[name] ? [{ address: names[name]!, family: 4 }] : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }))),
  })
  const refused = {
    'http://127.0.0.1/hook': '127.0.0.1 is a loopback address',
    'http://[::1]/hook': '::1 is a loopback address',
    'http://[::ffff:127.0.0.1]/hook': '127.0.0.1 is a loopback address',
    'http://0.0.0.0/hook': '0.0.0.0 is the unspecified address',
    'http://169.254.169.254/latest/meta-data': '169.254.169.254 is a link-local address',
    'http://10.1.2.3/hook': '10.1.2.3 is a private address',
    'http://0x7f000001/hook': '127.0.0.1 is a loopback address',
    'http://2130706433/hook': '127.0.0.1 is a loopback address',
    'http://[fd00:ec2::254]/hook': 'fd00:ec2::254 is a unique-local address',
  }
  for (const [url, reason] of Object.entries(refused)) {
    const res = await admin('POST', '/demo/webhooks', { url, events: ['discussion.created'] })
    t.equal(res.statusCode, 400, url)
    t.match(res.json().fields, [{ field: 'url', problem: `is refused: ${reason}` }], url)
  }
  // A name is judged by what it resolves to when each delivery is made.
  const { id } = (await admin('POST', '/demo/webhooks', { url: 'http://loopback.example.test/hook', events: ['discussion.created'] })).json()
  const nowhere = (await admin('POST', '/demo/webhooks', { url: 'https://nowhere.example.test/hook', events: ['discussion.created'] })).json().id
  const others = await Promise.all(Object.keys(odd).map(async (name) => (await admin('POST', '/demo/webhooks', { url: `https://${name}/hook`, events: ['discussion.created'] })).json().id as number))
  await create()
  await app.sendOutbox()
  const [empty, broken, mixed] = await Promise.all(others.map(async (other) => (await app.webhooks.deliveries(other))[0]!.error))
  t.equal(empty, 'empty.example.test has no address')
  t.equal(broken, 'broken.example.test could not be looked up (no answer)')
  t.equal(mixed, 'refused: mixed.example.test is a private address (10.0.0.7)', 'one private address among public ones is enough to refuse')
  t.match((await app.webhooks.deliveries(id))[0], { status: null, error: 'refused: loopback.example.test is a loopback address (127.0.0.1)' })
  t.match((await app.webhooks.deliveries(nowhere))[0], { status: null, error: 'nowhere.example.test could not be looked up (ENOTFOUND)' })
  t.equal(await app.sendOutbox(), 0)
  // A name that cannot be looked up now is tried again (a name server may be away); an address refused is not.
  clock.advance(RETRY_SCHEDULE_MS[0]!)
  await app.sendOutbox()
  t.equal((await app.webhooks.deliveries(nowhere)).length, 2, 'the name that was not found: tried again')
  t.equal((await app.webhooks.deliveries(id)).length, 1, 'the refused one: not')
})

t.test('a redirect to loopback is never followed', onSqlite('a redirect to loopback, not followed'), async (t) => {
  const { app, admin, create } = await webhookApp(t)
  const inside = await receiver(t)
  const outside = await receiver(t, (response) => response.writeHead(307, { location: inside.url }).end())
  const { id } = (await admin('POST', '/demo/webhooks', { url: outside.url, events: ['discussion.created'] })).json()
  await create()
  await app.sendOutbox()
  t.equal(outside.received.length, 1)
  t.equal(inside.received.length, 0, 'the address redirected to never hears of it')
  t.match((await app.webhooks.deliveries(id))[0], { status: 307, error: `answered 307, a redirect to ${inside.url}, which is not followed` })
})

t.test('a name is connected to at the address it was checked at: no second look-up', onSqlite('a name looked up once and connected to at that address'), async (t) => {
  const hook = await receiver(t)
  // No DNS answers for this name on this machine: only the look-up the check made can reach the receiver.
  const looked: string[] = []
  const { app, admin, create } = await webhookApp(t, { resolve: async (name) => (looked.push(name), [{ address: '127.0.0.1', family: 4 }]) })
  const url = hook.url.replace('127.0.0.1', 'hooks.example.test')
  const { id } = (await admin('POST', '/demo/webhooks', { url, events: ['discussion.created'] })).json()
  await create()
  t.equal(await app.sendOutbox(), 1)
  t.same(looked, ['hooks.example.test'], 'looked up once')
  t.equal(hook.received[0]!.headers.host, `hooks.example.test:${hook.port}`, 'the Host is the name')
  t.match((await app.webhooks.deliveries(id))[0], { status: 200 })
})

t.test('a slow endpoint holds up only its own events, two at a time', async (t) => {
  // Tries that outlast the test on any machine: on a loaded one, 10 s passed before the fast
  // endpoint had its six, the slow one's two timed out, and two more went.
  const { app, admin, create } = await webhookApp(t, { timeoutMs: 120_000 })
  const held: Array<() => void> = []
  let fastDone: () => void
  const fastAll = new Promise<void>((resolve) => (fastDone = resolve))
  const slow = await receiver(t, (response) => held.push(() => response.end('late')))
  const fast = await receiver(t, (response, got) => {
    response.end('ok')
    if (JSON.parse(got.body).type === 'discussion.created' && fast.received.length === 6) fastDone()
  })
  await admin('POST', '/demo/webhooks', { url: slow.url, events: ['discussion.created'] })
  await admin('POST', '/demo/webhooks', { url: fast.url, events: ['discussion.created'] })
  for (let i = 0; i < 6; i++) await create({ title: `Number ${i}` })
  const sending = app.sendOutbox()
  await fastAll
  t.equal(fast.received.length, 6, 'the fast endpoint got every event, while the slow one holds its tries')
  for (let i = 0; i < 200 && slow.received.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(slow.received.length, 2, 'the slow one has two, unanswered, and no more at once')
  // Released, the slow one gets the rest in the same run.
  const release = setInterval(() => held.splice(0).forEach((answer) => answer()), 10)
  t.equal(await sending, 12)
  clearInterval(release)
  t.equal(slow.received.length, 6)
})

t.test('a run does not end while rows it passed over remain: their endpoint full when read, done when the read came back', async (t) => {
  const { app, admin, create } = await webhookApp(t)
  const hook = await receiver(t)
  await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })
  for (let i = 0; i < 3; i++) await create({ title: `Number ${i}` })
  // As on a loaded database: the read made while the endpoint holds its two tries answers only
  // after both have ended, so the run finds nothing under way and the read empty.
  const tries: Array<Promise<boolean>> = []
  const deliver = app.deliverWebhook
  app.deliverWebhook = (row) => {
    const done = deliver(row)
    tries.push(done)
    return done
  }
  const due = app.outbox.dueWebhooks
  let slowReads = 0
  app.outbox.dueWebhooks = async (limit, busy = []) => {
    const rows = await due(limit, busy)
    if (busy.length > 0) {
      slowReads++
      await Promise.allSettled(tries)
      await new Promise((resolve) => setImmediate(resolve))
    }
    return rows
  }
  t.equal(await app.sendOutbox(), 3, 'the third row went in the same run')
  t.ok(slowReads > 0, 'a read was made while the endpoint was full')
  t.equal(hook.received.length, 3)
})

t.test('an endpoint that freed up while a read passed it over is read again at once, not after another endpoint\'s slow tries', async (t) => {
  // What CI met on a loaded database: the read made while both endpoints were full answered after
  // the fast one's tries had ended, and the run waited on the slow one's tries before it read again.
  const { app, admin, create } = await webhookApp(t, { timeoutMs: 120_000 })
  const held: Array<() => void> = []
  const slow = await receiver(t, (response) => held.push(() => response.end('late')))
  // The slow endpoint's tries are counted as the run starts them, not as its receiver gets them:
  // under load the second may still be on its way when the fast one's third arrives. None is
  // answered before the fast one's third (they are released below).
  let slowTries = 0
  let thirdCame: (slowUnderWay: number) => void
  const third = new Promise<number>((resolve) => (thirdCame = resolve))
  const fast = await receiver(t, (response) => {
    response.end('ok')
    if (fast.received.length === 3) thirdCame(slowTries)
  })
  const slowId = (await admin('POST', '/demo/webhooks', { url: slow.url, events: ['discussion.created'] })).json().id
  const fastId = (await admin('POST', '/demo/webhooks', { url: fast.url, events: ['discussion.created'] })).json().id
  for (let i = 0; i < 3; i++) await create({ title: `Number ${i}` })
  const fastTries: Array<Promise<boolean>> = []
  const deliver = app.deliverWebhook
  app.deliverWebhook = (row) => {
    const done = deliver(row)
    if (row.webhookId === fastId) fastTries.push(done)
    if (row.webhookId === slowId) slowTries++
    return done
  }
  const due = app.outbox.dueWebhooks
  let heldReads = 0
  app.outbox.dueWebhooks = async (limit, busy = []) => {
    const rows = await due(limit, busy)
    if (busy.includes(fastId) && busy.includes(slowId)) {
      heldReads++
      await Promise.allSettled(fastTries)
      await new Promise((resolve) => setImmediate(resolve))
    }
    return rows
  }
  const sending = app.sendOutbox()
  t.equal(await third, 2, "the fast endpoint's third event went while the slow one still held its two tries")
  t.ok(heldReads > 0, 'a read was made while both endpoints were full')
  const release = setInterval(() => held.splice(0).forEach((answer) => answer()), 10)
  t.equal(await sending, 6)
  clearInterval(release)
  t.equal(slow.received.length, 3)
})

t.test('an answer with a NUL byte is kept without it; a secret that cannot be opened posts nothing', async (t) => {
  const { app, admin, create } = await webhookApp(t)
  const hook = await receiver(t, (response) => response.end('ok\u0000done'))
  const { id } = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })).json()
  await create()
  t.equal(await app.sendOutbox(), 1)
  t.match((await app.webhooks.deliveries(id))[0], { status: 200, answer: 'okdone' })

  // The server key changed since the secret was sealed: nothing unsigned is ever posted.
  await rawStatement(app, 'UPDATE webhooks SET secret = ? WHERE id = ?', ['v1.not-under-this-key', id])
  await create()
  t.equal(await app.sendOutbox(), 0)
  t.equal(hook.received.length, 1, 'not posted')
  const shown = (await admin('GET', `/demo/webhooks/${id}`)).json()
  t.ok(shown.failing_since, 'the endpoint is failing')
})

t.test('a name the system looks up; a fault of ours mid-try lets the row go; a webhook removed mid-try is let be', async (t) => {
  const { app, clock, admin, create } = await webhookApp(t)
  const hook = await receiver(t)
  // localhost, looked up by the system (loopback allowed, as the operator's setting allows it).
  const { id } = (await admin('POST', '/demo/webhooks', { url: hook.url.replace('127.0.0.1', 'localhost'), events: ['discussion.created'] })).json()
  await create()
  t.equal(await app.sendOutbox(), 1)
  t.equal(hook.received[0]!.headers.host, `localhost:${hook.port}`)

  // The database refuses the log's line: the row is not lost, and is tried again in 5 s.
  const record = app.webhooks.record
  app.webhooks.record = async () => {
    throw new Error('the database is away')
  }
  await create()
  t.equal(await app.sendOutbox(), 0)
  app.webhooks.record = record
  t.equal(hook.received.length, 2, 'it was posted')
  t.equal(await app.sendOutbox(), 0, 'not again at once')
  clock.advance(RETRY_SCHEDULE_MS[0]!)
  t.equal(await app.sendOutbox(), 1, 'tried again')
  t.equal(hook.received.length, 3)

  // Removed while a try waits for its answer: the try ends and nothing more happens.
  let answer: (() => void) | undefined
  const slow = await receiver(t, (response) => (answer = () => response.writeHead(500).end()))
  const gone = (await admin('POST', '/demo/webhooks', { url: slow.url, events: ['discussion.created'] })).json().id
  await admin('PATCH', `/demo/webhooks/${id}`, { enabled: false })
  await create()
  const sending = app.sendOutbox()
  for (let i = 0; i < 200 && !answer; i++) await new Promise((r) => setTimeout(r, 10))
  t.equal((await admin('DELETE', `/demo/webhooks/${gone}`)).statusCode, 204)
  answer!()
  t.equal(await sending, 0)
  t.same((await admin('GET', '/demo/webhooks')).json().webhooks.map((w: { id: number }) => w.id), [id])
})

t.test('a site has at most 20 webhooks; two added at once do not pass it', async (t) => {
  const { admin } = await webhookApp(t)
  const add = (n: number) => admin('POST', '/demo/webhooks', { url: `https://hooks${n}.example.com/`, events: ['comment.created'] })
  const answers = await Promise.all(Array.from({ length: 22 }, (_, n) => add(n)))
  t.equal(answers.filter((answer) => answer.statusCode === 201).length, 20)
  const refused = answers.find((answer) => answer.statusCode !== 201)!
  t.equal(refused.statusCode, 429)
  t.equal(refused.json().message, 'A site has at most 20 webhooks: remove one first.')
  t.equal((await admin('GET', '/demo/webhooks')).json().webhooks.length, 20)
})

t.test('what an answer comes to, and the jitter of a wait', onSqlite('what an answer comes to, and the jitter of a wait'), async (t) => {
  const answer = (status: number, location?: string) => judge({ status, answer: '', location })
  t.same(answer(204), { delivered: true })
  t.same(answer(302), { delivered: false, words: 'answered 302, a redirect, which is not followed', again: false })
  t.same(answer(410), { delivered: false, words: 'answered 410', again: false })
  for (const status of [408, 429, 500, 503]) t.equal((answer(status) as { again: boolean }).again, true, String(status))
  t.equal(retryDelay(1, () => 0), 4_500, 'a tenth shorter at the least')
  t.equal(retryDelay(1, () => 0.9999999), 5_500, 'a tenth longer at the most')
  t.equal(retryDelay(RETRY_SCHEDULE_MS.length + 1, Math.random), null, 'then no more')
})

t.test('a name server that does not answer: the try ends at its deadline, and is made again later', onSqlite('a name server that does not answer'), async (t) => {
  const { app, admin, create } = await webhookApp(t, { resolve: () => new Promise(() => {}), timeoutMs: 200 })
  const { id } = (await admin('POST', '/demo/webhooks', { url: 'https://silent.example.test/hook', events: ['discussion.created'] })).json()
  await create()
  t.equal(await app.sendOutbox(), 0)
  t.match((await app.webhooks.deliveries(id))[0], { status: null, error: 'no answer within 0.2 s (looking up silent.example.test)' })
})

t.test('https to a server that does not speak it fails and is tried again; a long answer is kept to its first 500 characters', onSqlite('https to a server that does not speak it, and a long answer cut short'), async (t) => {
  const { app, admin, create } = await webhookApp(t)
  const hook = await receiver(t, (response) => response.end('x'.repeat(100_000)))
  const tls = (await admin('POST', '/demo/webhooks', { url: hook.url.replace('http:', 'https:'), events: ['discussion.created'] })).json().id
  const plain = (await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })).json().id
  await create()
  t.equal(await app.sendOutbox(), 1)
  t.match((await app.webhooks.deliveries(tls))[0], { status: null, error: /^EPROTO|^ERR_SSL|SSL/ })
  const kept = (await app.webhooks.deliveries(plain))[0]!
  t.equal(kept.status, 200)
  t.equal(kept.answer, 'x'.repeat(500))
})

t.test('deliveries to one endpoint share a kept connection; the pools kept are bounded', onSqlite('a kept connection and the pools kept'), async (t) => {
  const { app, admin, create } = await webhookApp(t)
  const hook = await receiver(t)
  await admin('POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })
  await create()
  t.equal(await app.sendOutbox(), 1)
  await create()
  t.equal(await app.sendOutbox(), 1)
  t.equal(hook.received[0]!.from, hook.received[1]!.from, 'the second came over the first one’s connection')

  const connections = createConnections(2)
  t.teardown(() => connections.close())
  const to = { address: '127.0.0.1', family: 4 }
  const [a, b] = ['http://a.example.test/', 'http://b.example.test/'].map((url) => connections.agentFor(new URL(url), to))
  t.equal(connections.agentFor(new URL('http://a.example.test/'), to), a, 'one pool per endpoint and address')
  connections.agentFor(new URL('http://c.example.test/'), to)
  t.equal(connections.agentFor(new URL('http://b.example.test/'), to), b, 'a third came: the second is kept')
  t.not(connections.agentFor(new URL('http://a.example.test/'), to), a, 'the oldest went')
})

t.test('a kept connection the endpoint resets as it is reused is tried once more on a new one; a reset on a new connection is a failed try', onSqlite('a connection reset as it is reused, or when new'), async (t) => {
  const { app, admin, create } = await webhookApp(t, { timeoutMs: 10_000 })
  // An endpoint that closes each kept connection as its second request arrives (a reset, no answer),
  // as one whose idle time ran out just then does; and one that resets every request.
  const served = new WeakMap<object, number>()
  let resets = 0
  const closing = await receiver(t, (response) => {
    const socket = response.req.socket
    served.set(socket, (served.get(socket) ?? 0) + 1)
    if (served.get(socket) === 1) return void response.end('thanks')
    resets++
    socket.resetAndDestroy()
  })
  const resetting = await receiver(t, (response) => void response.req.socket.resetAndDestroy())
  const kept = (await admin('POST', '/demo/webhooks', { url: closing.url, events: ['discussion.created'] })).json().id
  await create()
  t.equal(await app.sendOutbox(), 1)
  await create()
  t.equal(await app.sendOutbox(), 1, 'the second delivered, though its kept connection was reset')
  t.equal(resets, 1, 'the kept connection was reused, and reset')
  t.equal(closing.received.length, 3, 'the event sent again, once')
  t.not(closing.received[2]!.from, closing.received[1]!.from, 'over a new connection')
  t.equal(closing.received[2]!.headers['webhook-id'], closing.received[1]!.headers['webhook-id'], 'the same event')
  t.same((await app.webhooks.deliveries(kept)).map((d) => d.status), [200, 200], 'one try each in the log')

  const refusing = (await admin('POST', '/demo/webhooks', { url: resetting.url, events: ['discussion.created'] })).json().id
  await create()
  await app.sendOutbox()
  t.equal(resetting.received.length, 1, 'a reset on a new connection is not sent again at once')
  t.match((await app.webhooks.deliveries(refusing))[0], { status: null, error: /^ECONNRESET/ })
})

t.test('a process with SERVICE_OUTBOX_SEND=off queues and sends nothing; one that sends, on the same database, delivers', async (t) => {
  const hook = await receiver(t)
  const database = await sharedDatabase(t)
  const config = { baseUrl: BASE_URL, siteUrl: SITE_URL, ...database, webhooks: { allowed: LOOPBACK, timeoutMs: 2_000 } }
  const quiet = buildApp({ config: { ...config, outboxSend: false }, clock: testClock(Date.now()), outboxEveryMs: 5 })
  t.teardown(() => quiet.close())
  await quiet.ready()
  const ann = await supporterWithToken(quiet)
  await quiet.users.setAdministrator(ann.site.id, ann.user.id, true)
  const category = await quiet.categories.add(ann.site.id, 'Questions', true)
  t.equal((await quiet.inject({ method: 'POST', url: '/demo/webhooks', headers: ann.bearer, payload: { url: hook.url, events: ['discussion.created'] } })).statusCode, 201)
  t.equal((await quiet.inject({ method: 'POST', url: `/demo/categories/${category.id}/discussions`, headers: ann.bearer, payload: { title: 'Queued', body: 'Only.' } })).statusCode, 201)
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(hook.received.length, 0, 'its own loop does not run')
  const sender = buildApp({ config, clock: testClock(Date.now()), outboxEveryMs: 5 })
  t.teardown(() => sender.close())
  await sender.ready()
  for (let i = 0; i < 200 && hook.received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(hook.received.length, 1, 'the other process posted it')
})
