import fc from 'fast-check'
import t from 'tap'
import { channelOf, chooses, dueAlerts, isOwed, NEVER, noClock, policyFor, slaAfter, type SlaClock, type SlaConditions, type SlaPolicy } from '../../lib/sla.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// lib/sla.ts, the pure part of issue 68's SLA clocks: which policy chooses a discussion, and the
// clocks over any history of messages, replies and resolutions, checked against a plain account
// of the time the team owed the customer.

const any: SlaConditions = { categories: [], tags: [], domains: [], channels: [] }
const MINUTE = 60_000

t.test('conditions: every one given must hold, any of its values', async (t) => {
  const facts = { categoryId: 3, tags: ['billing', 'vip'], authorEmail: 'Ann@EU.Big.example', channel: 'mail' as const }
  t.ok(chooses(any, facts), 'no condition: every discussion')
  t.ok(chooses({ ...any, categories: [1, 3] }, facts))
  t.notOk(chooses({ ...any, categories: [1] }, facts))
  t.ok(chooses({ ...any, tags: ['urgent', 'vip'] }, facts), 'one of the tags')
  t.notOk(chooses({ ...any, tags: ['urgent'] }, facts))
  t.ok(chooses({ ...any, domains: ['big.example'] }, facts), 'a subdomain, whatever the case')
  t.ok(chooses({ ...any, domains: ['eu.big.example'] }, facts))
  t.notOk(chooses({ ...any, domains: ['ig.example'] }, facts), 'a domain ends at a dot')
  t.notOk(chooses({ ...any, domains: ['big.example'] }, { ...facts, authorEmail: '' }), 'no customer: no domain')
  t.ok(chooses({ ...any, channels: ['mail', 'web'] }, facts))
  t.notOk(chooses({ ...any, channels: ['api'] }, facts))
  t.notOk(chooses({ ...any, categories: [3], channels: ['api'] }, facts), 'all of them')
  const first = { id: 1, conditions: { ...any, tags: ['urgent'] } }
  const second = { id: 2, conditions: any }
  t.equal(policyFor([first, second], facts), second, 'the first that chooses')
  t.equal(policyFor([first, second], { ...facts, tags: ['urgent'] }), first)
  t.equal(policyFor([], facts), undefined)
  t.same(['email', 'web', 'api', 'mcp'].map(channelOf), ['mail', 'web', 'api', 'api'])
  t.ok(isOwed({ state: 'open', awaitingTeam: true }))
  t.notOk(isOwed({ state: 'resolved', awaitingTeam: true }))
  t.notOk(isOwed({ state: 'open', awaitingTeam: false }))
})

// A history: from a customer's first message, steps of whole minutes, each the customer writing
// (the team owes), the team answering or resolving (it does not), or a note (nothing moves).
type Step = { after: number; what: 'customer' | 'team' | 'resolve' | 'note' }
const history = fc.array(fc.record({ after: fc.integer({ min: 1, max: 600 }), what: fc.constantFrom('customer' as const, 'team' as const, 'resolve' as const, 'note' as const) }), { maxLength: 25 })
const policy: SlaPolicy = { id: 7, conditions: any, targets: { firstReply: 60, nextReply: 30, resolution: 480 }, warnBefore: 15, schedule: null }

t.test('over any history, the clocks are the time the team owed the customer', async (t) => {
  fc.assert(
    fc.property(history, (steps: Step[]) => {
      const start = Date.UTC(2026, 11, 7, 8)
      let clock: SlaClock = slaAfter(noClock, { owedBefore: false, owedAfter: true, at: new Date(start) }, policy).clock
      let owed = true
      let at = start
      let owedSince = start
      let spent = 0
      let replied = false
      for (const step of steps) {
        at += step.after * MINUTE
        const owedAfter: boolean = step.what === 'customer' ? true : step.what === 'note' ? owed : false
        const { clock: next, late } = slaAfter(clock, { owedBefore: owed, owedAfter, at: new Date(at) }, policy)
        if (owed && !owedAfter) {
          // A late stop breaches what was due before it, and tells what no alert told.
          const wasDue = [clock.firstReplyDueAt, clock.nextReplyDueAt, clock.resolutionDueAt].filter((d): d is Date => d !== null && d.getTime() < at)
          if (late.length !== wasDue.length) return false
          spent += Math.floor((at - owedSince) / MINUTE)
          replied = true
        }
        if (!owed && owedAfter) owedSince = at
        clock = next
        owed = owedAfter
        // The account: what runs, and when it is due.
        if (clock.resolutionSpent !== spent) return false
        if (!owed) {
          if (clock.firstReplyDueAt || clock.nextReplyDueAt || clock.resolutionDueAt || clock.dueAt.getTime() !== NEVER.getTime() || clock.alertAt) return false
          continue
        }
        const replyDue = owedSince + (replied ? 30 : 60) * MINUTE
        if ((replied ? clock.nextReplyDueAt : clock.firstReplyDueAt)?.getTime() !== replyDue) return false
        if ((replied ? clock.firstReplyDueAt : clock.nextReplyDueAt) !== null) return false
        const resolutionDue = owedSince + Math.max(0, 480 - spent) * MINUTE
        if (clock.resolutionDueAt?.getTime() !== resolutionDue) return false
        if (clock.dueAt.getTime() !== Math.min(replyDue, resolutionDue)) return false
        if (clock.alertAt?.getTime() !== Math.min(replyDue, resolutionDue) - 15 * MINUTE) return false
      }
      return true
    }),
    { numRuns: 300 },
  )
  t.pass('300 histories')
})

t.test('alerts: the warning, then the breach, each once; a warning past its breach is not told', async (t) => {
  const start = new Date(Date.UTC(2026, 11, 7, 8))
  const running = slaAfter(noClock, { owedBefore: false, owedAfter: true, at: start }, { ...policy, targets: { firstReply: 60, nextReply: null, resolution: null } }).clock
  const at = (minutes: number) => new Date(start.getTime() + minutes * MINUTE)
  t.same(dueAlerts(running, at(44), 15).alerts, [], 'not yet')
  const warned = dueAlerts(running, at(45), 15)
  t.same(warned.alerts, [{ kind: 'first_reply', alert: 'warning', due: at(60) }])
  t.same(warned.clock.alertAt, at(60), 'next: the breach')
  t.same(dueAlerts(warned.clock, at(50), 15).alerts, [], 'the warning once')
  const breached = dueAlerts(warned.clock, at(61), 15)
  t.same(breached.alerts, [{ kind: 'first_reply', alert: 'breached', due: at(60) }])
  t.same([breached.clock.breached, breached.clock.alertAt], [['first_reply'], null], 'breached; nothing more to tell')
  const late = dueAlerts(running, at(90), 15)
  t.same(late.alerts, [{ kind: 'first_reply', alert: 'breached', due: at(60) }], 'every process down through both: the breach alone')
  t.same(late.clock.told, ['first_reply.warning', 'first_reply.breached'])
  t.same(dueAlerts(running, at(90), 0).clock.told, ['first_reply.breached'], 'no warning asked: none kept')
})

t.test('in business hours: the resolution spends the hours open between its start and its stop', async (t) => {
  const berlin = { timeZone: 'Europe/Berlin', week: [[[540, 1080]], [[540, 1080]], [[540, 1080]], [[540, 1080]], [[540, 1080]], [], []] as Array<Array<[number, number]>>, days: {} }
  const hours: SlaPolicy = { ...policy, targets: { firstReply: 240, nextReply: null, resolution: 600 }, schedule: berlin }
  // Friday 17:00 in Berlin (16:00 UTC) to Monday 10:00 (09:00 UTC): one hour on Friday, one on Monday.
  const friday = new Date(Date.UTC(2026, 11, 4, 16))
  const running = slaAfter(noClock, { owedBefore: false, owedAfter: true, at: friday }, hours).clock
  t.same(running.firstReplyDueAt, new Date(Date.UTC(2026, 11, 7, 11)), 'Monday 12:00 in Berlin')
  const answered = slaAfter(running, { owedBefore: true, owedAfter: false, at: new Date(Date.UTC(2026, 11, 7, 9)) }, hours).clock
  t.equal(answered.resolutionSpent, 120)
  const back = slaAfter(answered, { owedBefore: false, owedAfter: true, at: new Date(Date.UTC(2026, 11, 7, 12)) }, hours).clock
  t.same(back.resolutionDueAt, new Date(Date.UTC(2026, 11, 8, 11)), '480 minutes left: Monday 13:00 to 18:00, Tuesday 09:00 to 12:00 in Berlin')
})

t.test('a policy that changes, and none', async (t) => {
  const start = new Date(Date.UTC(2026, 11, 7, 8))
  const running = slaAfter(noClock, { owedBefore: false, owedAfter: true, at: start }, policy).clock
  const still = { owedBefore: true, owedAfter: true, at: new Date(start.getTime() + 10 * MINUTE) }
  const faster = slaAfter(running, still, { ...policy, id: 8, targets: { firstReply: 20, nextReply: null, resolution: null } }).clock
  t.same([faster.policyId, faster.firstReplyDueAt, faster.resolutionDueAt], [8, new Date(start.getTime() + 20 * MINUTE), null], 'from the clock\'s start, with the new targets')
  const none = slaAfter(running, still, null).clock
  t.same([none.policyId, none.firstReplyDueAt, none.dueAt, none.alertAt], [null, null, NEVER, null], 'no policy: nothing is due')
  t.same(none.replySince, start, 'the clock still runs, for a policy to come')
})
