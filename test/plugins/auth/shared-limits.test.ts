import t from 'tap'
import { EVENT_PAYLOAD_MAX_BYTES, type EngineEvents } from '../../../db/engine.ts'
import { BUDGET_CHANNEL, createAuthLimits, shareBudgets, type BudgetEvent } from '../../../plugins/auth/limits.ts'
import { newTestApp, supporterWithToken, testClock, V1 } from '../../fixtures/app.ts'
import { basic, supporterWithPassword } from '../../fixtures/credentials.ts'
import { logCapture } from '../../fixtures/log.ts'
import { eventually, twoApps } from '../../multiprocess/two-apps.ts'

// Engines: both: two apps on one database share the failure budgets, which PostgreSQL counts across connections.
// The failure budgets are shared by the processes of one database (plugins/auth/limits.ts): two
// apps on one database stand for two processes. Real processes: test/multiprocess/.

const limits = { perAddress: 3, perAccount: 2, windowSeconds: 60 }
type App = Awaited<ReturnType<typeof twoApps>>['one']

const get = (app: App, headers: Record<string, string>, remoteAddress: string) =>
  app.inject({ url: '/demo', headers: { accept: V1, ...headers }, remoteAddress })
const wrongToken = (value: string) => value.slice(0, -1) + (value.endsWith('A') ? 'B' : 'A')
/** Whether `app` counts `failures` of the address: what it was told has arrived. */
const counted = (app: App, address: string, failures: number) => () => app.authLimits.addresses.status(address).remaining === limits.perAddress - failures

t.test('a lockout reached through one app holds in the other, and is counted once in each', async (t) => {
  const { one, two } = await twoApps(t, { limits })
  const ann = await supporterWithToken(one)
  const wrong = { authorization: `Bearer ${wrongToken(ann.value)}` }

  t.equal((await get(one, wrong, '192.0.2.1')).statusCode, 401)
  t.ok(await eventually(counted(two, '192.0.2.1', 1)), 'the other app counts the failure')
  t.ok(counted(one, '192.0.2.1', 1)(), 'and the app that counted it hears its own message without counting it again')

  // A password is refused before its check on a spent address, right or wrong; a valid bearer
  // token is served (it cannot be guessed: plugins/auth/authenticate.ts).
  const pat = await supporterWithPassword(one, { email: 'pat@example.test' })
  for (let i = 0; i < limits.perAddress - 1; i++) t.equal((await get(one, wrong, '192.0.2.1')).statusCode, 401)
  t.equal((await get(one, pat.headers, '192.0.2.1')).statusCode, 429, 'spent where it was spent')
  t.ok(await eventually(async () => (await get(two, pat.headers, '192.0.2.1')).statusCode === 429), 'and in the other app')
  for (let i = 0; i < 3; i++) {
    const again = await get(two, i % 2 ? wrong : pat.headers, '192.0.2.1')
    t.equal(again.statusCode, 429, 'it keeps refusing, right password or wrong token')
    t.equal(again.headers['retry-after'], String(limits.windowSeconds))
  }
  t.equal((await get(two, ann.bearer, '192.0.2.1')).statusCode, 200, 'but a valid token from it is served')
  t.equal((await get(two, pat.headers, '192.0.2.2')).statusCode, 200, 'another address is not touched')
})

t.test("an account's lockout holds in the other app; a success that clears it clears it there too", async (t) => {
  const { one, two, clock } = await twoApps(t, { limits })
  const ann = await supporterWithToken(one)
  const pat = await supporterWithPassword(one, { email: 'pat@example.test' })
  const wrong = basic('pat@example.test', 'not it')
  const marker = { authorization: `Bearer ${wrongToken(ann.value)}` }

  // One wrong password each from two addresses: the account is spent, no address is.
  t.equal((await get(one, wrong, '192.0.2.10')).statusCode, 401)
  t.equal((await get(one, wrong, '192.0.2.11')).statusCode, 401)
  // Messages arrive in order: once the marker's failure is counted there, so are the account's.
  t.equal((await get(one, marker, '192.0.2.99')).statusCode, 401)
  t.ok(await eventually(counted(two, '192.0.2.99', 1)))
  const refused = await get(two, pat.headers, '192.0.2.12')
  t.equal(refused.statusCode, 429, 'the right password, through the other app, from a new address')
  t.equal((await get(two, pat.headers, '192.0.2.13')).statusCode, 429, 'and again')

  // A new window: one wrong password through the first app, the right one through the second.
  clock.advance(limits.windowSeconds * 1000)
  t.equal((await get(one, wrong, '192.0.2.20')).statusCode, 401)
  t.equal((await get(one, marker, '192.0.2.98')).statusCode, 401)
  t.ok(await eventually(counted(two, '192.0.2.98', 1)))
  t.equal((await get(two, pat.headers, '192.0.2.21')).statusCode, 200, 'the right password clears the account here')
  t.equal((await get(two, marker, '192.0.2.97')).statusCode, 401)
  t.ok(await eventually(counted(one, '192.0.2.97', 1)))
  t.equal((await get(one, wrong, '192.0.2.22')).statusCode, 401, 'and there: a whole budget again')
  t.equal((await get(one, wrong, '192.0.2.23')).statusCode, 401)
  t.equal((await get(one, wrong, '192.0.2.24')).statusCode, 429)
})

t.test('what goes through the database names no email: the account is a keyed hash, the address is as it is', async (t) => {
  const { one, two } = await twoApps(t, { limits })
  await supporterWithPassword(one, { email: 'Pat@Example.test' })
  const heard: string[] = []
  await two.database.events.subscribe(BUDGET_CHANNEL, (payload) => void heard.push(payload))
  t.equal((await get(one, basic('pat@example.test', 'not it'), '192.0.2.30')).statusCode, 401)
  t.ok(await eventually(() => heard.length > 0))
  // The address, or its domain, would bring an @ or a dot into a field of letters: a keyed hash is
  // base64url, which may spell "pat" by chance (once in some 800 runs, CI 2026-12-05), never these.
  t.notMatch(heard.join(), /@|example\.test/i)
  const { events } = JSON.parse(heard[0]!) as { events: BudgetEvent[] }
  t.same(events[0], ['a', '192.0.2.30'])
  t.match(events[1], ['u', /^[\w-]{43}$/])
  t.equal(events.length, 2)
})

/** Events that keep what is published and fail on demand. */
function fakeEvents() {
  const published: string[] = []
  const handlers: ((payload: string) => void)[] = []
  let failing = false
  const events: EngineEvents = {
    async publish(_channel, payload) {
      if (failing) throw new Error('the database is gone')
      published.push(payload)
    },
    async subscribe(_channel, handler) {
      handlers.push(handler)
    },
  }
  return { events, published, hear: (payload: string) => handlers.forEach((handler) => handler(payload)), fail: (on: boolean) => void (failing = on) }
}
const tick = () => new Promise((resolve) => setImmediate(resolve))

t.test('the events of one turn go out together, in order, in as few messages as fit', async (t) => {
  const fake = fakeEvents()
  const shared = shareBudgets(fake.events, () => t.fail('no error'))
  await shared.flush()
  t.same(fake.published, [], 'nothing to send, nothing sent')
  const sent: BudgetEvent[] = Array.from({ length: 400 }, (_, i) => (i % 2 ? ['a', `198.51.100.${i % 250}`] : ['u', `${'k'.repeat(40)}${i}`]))
  for (const event of sent) shared.send(event)
  t.same(fake.published, [], 'not at once')
  await tick()
  t.ok(fake.published.length >= 2, 'more than one message fits in none')
  t.ok(fake.published.every((payload) => Buffer.byteLength(payload) <= EVENT_PAYLOAD_MAX_BYTES), 'each within the limit')
  t.same(fake.published.flatMap((payload) => (JSON.parse(payload) as { events: BudgetEvent[] }).events), sent, 'all of them, in order')
})

t.test('a message that cannot be sent is lost; the first of a run is told', async (t) => {
  const fake = fakeEvents()
  const errors: unknown[] = []
  const shared = shareBudgets(fake.events, (error) => void errors.push(error))
  fake.fail(true)
  shared.send(['a', '192.0.2.1'])
  await shared.flush()
  shared.send(['a', '192.0.2.1'])
  await shared.flush()
  t.equal(errors.length, 1, 'told once')
  fake.fail(false)
  shared.send(['a', '192.0.2.1'])
  await shared.flush()
  t.equal(fake.published.length, 1, 'sent again once it can')
  fake.fail(true)
  shared.send(['a', '192.0.2.1'])
  await shared.flush()
  t.equal(errors.length, 2, 'a new run is told again')
})

t.test("what is heard: another process's events are counted; its own, and anything that is not a message, are not", async (t) => {
  const fake = fakeEvents()
  const shared = shareBudgets(fake.events, () => {})
  const limits = createAuthLimits({ perAddress: 5, perAccount: 5, windowSeconds: 60 }, testClock())
  await shared.listen(limits)
  const applied: BudgetEvent[][] = []
  const apply = limits.apply
  limits.apply = (events) => {
    applied.push([...events])
    apply(events)
  }
  shared.send(['a', 'mine'])
  await tick()
  fake.hear(fake.published[0]!)
  for (const payload of ['not json', 'null', '5', '{"from":1,"events":[]}', '{"from":"other","events":{}}']) fake.hear(payload)
  t.same(applied, [], 'none of those')
  const other = ['a', 'u', 'c'].map((kind) => [kind, 'k'])
  fake.hear(JSON.stringify({ from: 'other', events: [['a'], ['z', 'k'], ['a', 5], ['a', 'x'.repeat(101)], ['a', 'k', 1], ...other] }))
  t.same(applied, [other], 'only the well-formed events of another process')
  t.equal(limits.addresses.status('k').remaining, 4)
  t.equal(limits.addresses.status('mine').remaining, 5)
})

t.test('sharing that fails is logged, once per run, and the app goes on counting its own', async (t) => {
  const log = logCapture()
  const { app } = await newTestApp(t, { logStream: log.stream, config: { limits } })
  await app.ready()
  const ann = await supporterWithToken(app)
  const publish = app.database.events.publish
  app.database.events.publish = async () => {
    throw new Error('the channel is down')
  }
  for (let i = 0; i < limits.perAddress; i++) {
    t.equal((await get(app, { authorization: `Bearer ${wrongToken(ann.value)}` }, '192.0.2.40')).statusCode, 401)
    await tick()
  }
  t.equal((await get(app, { authorization: `Bearer ${wrongToken(ann.value)}` }, '192.0.2.40')).statusCode, 429, 'counted here all the same')
  const warnings = log.entries().filter((entry) => /could not tell the other processes/.test(String(entry.msg)))
  t.equal(warnings.length, 1, 'one warning for the run')
  t.match(warnings[0], { level: 40, err: { message: 'the channel is down' } })
  app.database.events.publish = publish
})
