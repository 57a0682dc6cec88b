import t from 'tap'
import { buildApp } from '../../app.ts'
import { seededClock, type Said } from '../../db/stores/seed.ts'
import { NEVER } from '../../lib/sla.ts'
import { BASE_URL, SITE_URL, supporterWithToken } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: both: each engine's seed writes the clocks in its own bulk path (db/sqlite/seed.ts,
// db/postgres/seed.ts).
// The seed's SLA clocks are history, not news (db/stores/seed.ts, seededClock): a promise broken in
// the seeded history is breached, told when it fell due, so neither the alerts' loop nor the first
// reply tells it again; what falls due after the seed is told by the loop when it does, as on a
// site that ran all along.

const HOUR = 60 * 60 * 1000
const T0 = Date.parse('2026-11-02T08:00:00Z')
const customer = (hours: number): Said => ({ authorId: 2, bySupporter: false, body: 'Help?', via: 'email', at: T0 + hours * HOUR })
const supporter = (hours: number): Said => ({ authorId: 1, bySupporter: true, body: 'Done.', via: 'web', at: T0 + hours * HOUR })

t.test('a thread replayed under the seed policy: what its history broke, what it told, what it waits for', async (t) => {
  // Answered first five hours late (the four hours broken), then within the hour, then asked again at 20 h.
  const thread = [customer(0), supporter(5), customer(10), supporter(11), customer(20)]
  const seen = seededClock(thread, 'open', T0 + 21 * HOUR)
  t.match(seen, { awaitingTeam: true, channel: 'mail', replySince: T0 + 20 * HOUR, firstRepliedAt: T0 + 5 * HOUR, firstReplyDueAt: null, nextReplyDueAt: T0 + 24 * HOUR, dueAt: T0 + 24 * HOUR })
  t.same([seen.breached, seen.told, seen.alertAt], ['first_reply', '', T0 + 23.5 * HOUR], 'the late first reply breached; the next reply is warned of half an hour before it is due')

  const late = seededClock(thread, 'open', T0 + 30 * HOUR)
  t.same([late.breached, late.told, late.alertAt], ['first_reply next_reply', 'next_reply.warning next_reply.breached', null], 'past its due time at the seed: breached and told, nothing left to tell')

  const resolved = seededClock([customer(0), supporter(1), customer(2), supporter(9)], 'resolved', T0 + 30 * HOUR)
  t.same([resolved.breached, resolved.replySince, resolved.dueAt === null, resolved.alertAt], ['next_reply', null, false, null], 'answered seven hours after the question: breached, and owed nothing now')
  const deleted = seededClock([customer(0), customer(3)], 'deleted', T0 + 30 * HOUR)
  t.same([deleted.breached, deleted.replySince, deleted.alertAt], ['', null, null], 'deleted within the four hours: its clock stopped with its last word, unbroken')
})

t.test('a seeded site: its overdue discussions are breached and told already, and neither the loop nor a reply tells them again', async (t) => {
  const cli = await cliRunner(t)
  for (const argv of [['site', 'add', 'demo'], ['seed', 'demo', '--discussions', '300', '--seed', '1']]) {
    const done = await cli.run(argv)
    t.equal(done.code, 0, done.stderr)
  }
  const at = (value: unknown) => (value === null ? null : value instanceof Date ? value.getTime() : Number(value))
  const rows = (await cli.query<{ number: number; state: string; due_at: unknown; sla_breached: string; sla_told: string; sla_alert_at: unknown }>('SELECT number, state, due_at, sla_breached, sla_told, sla_alert_at FROM discussions ORDER BY number')).map((r) => ({ ...r, due: at(r.due_at)!, alertAt: at(r.sla_alert_at) }))
  const now = cli.clock()
  const overdue = rows.filter((r) => r.due <= now)
  t.ok(overdue.length > 10, `the seed has discussions overdue (${overdue.length})`)
  for (const r of overdue) {
    if (!/(first|next)_reply/.test(r.sla_breached) || !/_reply\.breached/.test(r.sla_told) || r.alertAt !== null) t.fail(`discussion ${r.number} is overdue but not breached and told: ${JSON.stringify(r)}`)
  }
  // (A discussion due after the seed waits for its alert: the thread replayed above.)
  for (const r of rows.filter((r) => r.due > now && r.due < NEVER.getTime())) t.ok(r.alertAt !== null && r.alertAt > now && r.alertAt <= r.due, `discussion ${r.number}, due after the seed, waits for its alert`)

  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...cli.appDatabase }, clock: cli.clock })
  t.teardown(() => app.close())
  await app.ready()
  const ann = await supporterWithToken(app)
  const get = async (url: string) => (await app.inject({ url, headers: ann.bearer })).json()
  const told = async () => Number((await cli.query<{ n: number | string }>("SELECT count(*) AS n FROM outbox WHERE kind IN ('notification', 'webhook')"))[0]!.n)
  const breached = rows.filter((r) => r.sla_breached !== '' && r.state !== 'deleted')
  t.equal((await get('/demo/discussions?sla=breached&state=all')).total, breached.length, "the team's list of the breached ones holds every one the history broke")

  t.equal(await app.slaAlerts.tellDue(), 0, 'the loop finds nothing to tell at the seed')
  const [first] = overdue.filter((r) => r.state === 'new' || r.state === 'open')
  t.ok((await get(`/demo/discussions/${first!.number}`)).sla.breached.length > 0, 'the API shows an overdue one breached')
  const reply = await app.inject({ method: 'POST', url: `/demo/discussions/${first!.number}/comments`, headers: ann.bearer, payload: { body: 'At last.' } })
  t.equal(reply.statusCode, 201)
  t.equal(await told(), 0, 'the reply tells no breach of the history')
  cli.clock.advanceDays(30)
  t.equal(await app.slaAlerts.tellDue(), 0, 'nor does the loop, a month later')
  t.equal(await told(), 0)
})
