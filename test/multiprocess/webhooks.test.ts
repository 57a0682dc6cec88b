import t, { type Test } from 'tap'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { apiCall, bannerToken, startServer } from '../fixtures/server.ts'
import { receiver } from '../fixtures/webhooks.ts'
import { eventually, sharedDatabase } from './two-apps.ts'
import { randomBytes } from 'node:crypto'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Webhooks delivered by real service processes (plugins/webhooks/delivery.ts, plugins/mail/sender.ts):
// a process killed (SIGKILL) in the middle of a delivery leaves the row under a lease that ends,
// and the process started again delivers it with the same webhook-id; two processes on one
// PostgreSQL database deliver a thousand events between them, none lost, none posted by both.

/** Loopback allowed for the test's receiver, and a short deadline (so a short lease) for each try. */
const WEBHOOKS = { SERVICE_WEBHOOK_ALLOW: '127.0.0.0/8', SERVICE_WEBHOOK_TIMEOUT: '1' }

async function databaseEnv(t: Test): Promise<Record<string, string>> {
  const { databaseAddress, secret } = await sharedDatabase(t)
  return { SERVICE_DB: databaseAddress, ...(secret === undefined ? {} : { SERVICE_SECRET: secret }), ...WEBHOOKS }
}

const call = apiCall

t.test('a process killed mid-delivery: the process started again delivers the event, with the same webhook-id', async (t) => {
  const env = await databaseEnv(t)
  let hold = true
  const hook = await receiver(t, (response) => {
    // The first try is never answered: the process is killed while it waits.
    if (!hold) response.end('ok')
  })
  const first = await startServer(t, env)
  const token = await bannerToken(first)
  t.equal((await call(first, token, 'POST', '/demo/webhooks', { url: hook.url, events: ['discussion.created'] })).status, 201)
  const [category] = ((await call(first, token, 'GET', '/demo/categories')).json.categories as Array<{ id: number }>)
  t.equal((await call(first, token, 'POST', `/demo/categories/${category!.id}/discussions`, { title: 'Kill me', body: 'Mid-delivery.' })).status, 201)
  t.ok(await eventually(() => hook.received.length === 1, 20_000), 'the first try reached the receiver')
  first.child.kill('SIGKILL')
  await first.stop()

  hold = false
  const second = await startServer(t, env)
  t.ok(await eventually(() => hook.received.length === 2, 30_000), 'the process started again tried it once its lease ended')
  t.equal(hook.received[1]!.headers['webhook-id'], hook.received[0]!.headers['webhook-id'], 'with the same webhook-id')
  t.equal(hook.received[1]!.body, hook.received[0]!.body)
  const [{ id }] = (await call(second, token, 'GET', '/demo/webhooks')).json.webhooks as Array<{ id: number }>
  t.ok(await eventually(async () => ((await call(second, token, 'GET', `/demo/webhooks/${id}/deliveries`)).json.deliveries as unknown[]).length === 1, 5_000), 'the try that was killed left no line; the one that delivered did')
  const [delivered] = (await call(second, token, 'GET', `/demo/webhooks/${id}/deliveries`)).json.deliveries as Array<{ status: number }>
  t.equal(delivered!.status, 200)
  await second.stop()
})

t.test('two processes on PostgreSQL deliver 1,000 events between them: none lost, none posted by both', { skip: TEST_ENGINE !== 'postgres' && 'two processes on one PostgreSQL database: runs in the PostgreSQL run of the suite' }, async (t) => {
  const env = { SERVICE_DB: await postgresTestAddress(t), SERVICE_SECRET: randomBytes(32).toString('hex'), SERVICE_RATE_LIMIT_WRITES: '5000', ...WEBHOOKS }
  const inFlight = new Set<string>()
  const counts = new Map<string, number>()
  let overlaps = 0
  const hook = await receiver(t, (response, received) => {
    const id = String(received.headers['webhook-id'])
    if (inFlight.has(id)) overlaps++
    inFlight.add(id)
    counts.set(id, (counts.get(id) ?? 0) + 1)
    // A short wait, so two senders of one event would overlap here.
    setTimeout(() => {
      inFlight.delete(id)
      response.end('ok')
    }, 5)
  })
  const one = await startServer(t, env)
  const token = await bannerToken(one)
  const two = await startServer(t, env)
  t.equal((await call(one, token, 'POST', '/demo/webhooks', { url: hook.url, events: ['comment.created'] })).status, 201)
  const [category] = ((await call(one, token, 'GET', '/demo/categories')).json.categories as Array<{ id: number }>)
  // Ten discussions, so that each reply's own work (its search document is made again from every
  // comment of its discussion) stays that of an ordinary thread: what is measured is the delivery.
  const numbers: number[] = []
  for (let n = 0; n < 10; n++) numbers.push(((await call(one, token, 'POST', `/demo/categories/${category!.id}/discussions`, { title: `A hundred replies ${n}`, body: 'Go.' })).json as { number: number }).number)
  // A thousand comments, through both processes at once, ten at a time, one on each discussion.
  for (let i = 0; i < 1000; i += 10) {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, j) => call((i + j) % 2 ? one : two, token, 'POST', `/demo/discussions/${numbers[j]}/comments`, { body: `Reply ${i + j}` })))
    if (answers.some((answer) => answer.status !== 201)) t.fail(`a reply was refused: ${JSON.stringify(answers.find((answer) => answer.status !== 201))}`)
  }
  t.ok(await eventually(() => counts.size === 1000, 120_000), `${counts.size} of 1,000 events delivered`)
  // Let any second delivery show itself.
  await new Promise((resolve) => setTimeout(resolve, 3_000))
  t.equal(hook.received.length, 1000, 'each delivered once')
  t.equal(overlaps, 0, 'no event posted by both at once')
  t.same([...counts.values()].filter((n) => n > 1), [], 'no event delivered twice')
  const bodies = new Set(hook.received.map((r) => (JSON.parse(r.body) as { data: { body: string } }).data.body))
  t.equal(bodies.size, 1000, 'every reply told')
  await Promise.all([one.stop(), two.stop()])
})
