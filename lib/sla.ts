import { addBusinessMinutes, businessMinutesBetween, type Schedule } from './business-time.ts'

// Service level agreements (issue 68; docs/decisions.md, "SLA policies"): which policy a discussion
// falls under, and its clocks as pure steps from one write to the next. The store keeps the clocks
// as columns of the discussion (db/stores/sla.ts), so no page or report reads comments to know
// what is due. One condition drives every clock: the team owes the customer something while the
// discussion is new or open and its newest public comment is the customer's ("owed"). A reply of
// the team that leaves it open, or resolving it, stops the clocks (the discussion waits on the
// customer); the customer's next message starts them again.

export const slaKinds = ['first_reply', 'next_reply', 'resolution'] as const
export type SlaKind = (typeof slaKinds)[number]

/** Each promise as a person reads it (the mails, the pages). */
export const promiseNames: Record<SlaKind, string> = { first_reply: 'first reply', next_reply: 'next reply', resolution: 'resolution' }

/** How a discussion came: by mail, on the support site, or through the API (MCP included). */
export const slaChannels = ['mail', 'web', 'api'] as const
export type SlaChannel = (typeof slaChannels)[number]

/** The channel of a discussion started through `via` (db/values.ts commentVias). */
export const channelOf = (via: string): SlaChannel => (via === 'email' ? 'mail' : via === 'web' ? 'web' : 'api')

/** A moment later than any due time: a discussion with no clock running sorts last by it. */
export const NEVER = new Date(Date.UTC(9999, 11, 31, 23, 59, 59))

/** Which discussions a policy chooses: each list empty (anything) or naming what one of its values must be. */
export interface SlaConditions {
  categories: number[]
  tags: string[]
  /** Domains of the customer's address, lower case: example.com chooses a@example.com and a@eu.example.com. */
  domains: string[]
  channels: SlaChannel[]
}

/** Business minutes for each clock; null: no promise of that kind. */
export interface SlaTargets {
  firstReply: number | null
  nextReply: number | null
  resolution: number | null
}

export interface SlaPolicy {
  id: number
  conditions: SlaConditions
  targets: SlaTargets
  /** Minutes (of the clock on the wall) before a due time when the warning is told; 0: none. */
  warnBefore: number
  /** The hours the targets count in; null: around the clock. */
  schedule: Schedule | null
}

/** What a policy's conditions look at. */
export interface SlaFacts {
  categoryId: number
  tags: readonly string[]
  authorEmail: string
  channel: SlaChannel
}

const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase()
const inDomain = (domain: string, wanted: string) => domain === wanted || domain.endsWith(`.${wanted}`)

/** Whether every condition of the policy holds for the discussion. */
export function chooses(conditions: SlaConditions, facts: SlaFacts): boolean {
  const { categories, tags, domains, channels } = conditions
  if (categories.length > 0 && !categories.includes(facts.categoryId)) return false
  if (tags.length > 0 && !tags.some((tag) => facts.tags.includes(tag))) return false
  if (domains.length > 0 && !domains.some((domain) => inDomain(domainOf(facts.authorEmail), domain))) return false
  return channels.length === 0 || channels.includes(facts.channel)
}

/** The first of the ordered policies that chooses the discussion, if any. */
export function policyFor<P extends { conditions: SlaConditions }>(policies: readonly P[], facts: SlaFacts): P | undefined {
  return policies.find((policy) => chooses(policy.conditions, facts))
}

/** The clocks of a discussion, as its columns keep them. */
export interface SlaClock {
  policyId: number | null
  /** A reply is owed since (the customer's message that is not answered yet). */
  replySince: Date | null
  /** When the first reply's clock stopped (the team's first reply, or the discussion resolved): the next owed reply is a "next reply". */
  firstRepliedAt: Date | null
  /** The resolution's clock runs since; null while it is paused or stopped. */
  resolutionSince: Date | null
  /** Business minutes the resolution's clock ran before it paused. */
  resolutionSpent: number
  firstReplyDueAt: Date | null
  nextReplyDueAt: Date | null
  resolutionDueAt: Date | null
  /** The earliest due time of a running clock, or NEVER: the queue's order by due. */
  dueAt: Date
  /** Every kind of promise broken on this discussion, in slaKinds' order. */
  breached: SlaKind[]
  /** What was told of the clocks' current runs: `first_reply.warning`, `resolution.breached`... */
  told: string[]
  /** The next moment something is to be told (a warning or a breach); null: nothing to wait for. */
  alertAt: Date | null
}

export const noClock: SlaClock = {
  policyId: null,
  replySince: null,
  firstRepliedAt: null,
  resolutionSince: null,
  resolutionSpent: 0,
  firstReplyDueAt: null,
  nextReplyDueAt: null,
  resolutionDueAt: null,
  dueAt: NEVER,
  breached: [],
  told: [],
  alertAt: null,
}

/** The moment `minutes` of the policy's time after `from`; null when its hours never hold that many. */
function after(policy: SlaPolicy, from: Date, minutes: number): Date | null {
  return policy.schedule ? addBusinessMinutes(policy.schedule, from, minutes) : new Date(from.getTime() + minutes * 60_000)
}

/** The minutes of the policy's time between two moments (around the clock without one). */
function spentBetween(policy: SlaPolicy | null, from: Date, to: Date): number {
  return policy?.schedule ? businessMinutesBetween(policy.schedule, from, to) : Math.max(0, Math.floor((to.getTime() - from.getTime()) / 60_000))
}

const withKind = (kinds: readonly SlaKind[], kind: SlaKind): SlaKind[] => slaKinds.filter((k) => k === kind || kinds.includes(k))

/** The due time of each clock that runs, in slaKinds' order. */
export function dueTimes(clock: SlaClock): Array<[SlaKind, Date]> {
  const due: Array<[SlaKind, Date | null]> = [
    ['first_reply', clock.firstReplyDueAt],
    ['next_reply', clock.nextReplyDueAt],
    ['resolution', clock.resolutionDueAt],
  ]
  return due.filter((entry): entry is [SlaKind, Date] => entry[1] !== null)
}

/** The clock with its due times, its order and its next alert made again from what runs (the policy's targets). */
function settled(clock: SlaClock, policy: SlaPolicy | null): SlaClock {
  const { targets } = policy ?? { targets: { firstReply: null, nextReply: null, resolution: null } }
  const reply = clock.replySince && policy ? (clock.firstRepliedAt ? targets.nextReply : targets.firstReply) : null
  const replyDue = reply !== null ? after(policy!, clock.replySince!, reply) : null
  const resolutionDue = clock.resolutionSince && policy && targets.resolution !== null ? after(policy, clock.resolutionSince, Math.max(0, targets.resolution - clock.resolutionSpent)) : null
  const next: SlaClock = {
    ...clock,
    policyId: policy?.id ?? null,
    firstReplyDueAt: clock.firstRepliedAt ? null : replyDue,
    nextReplyDueAt: clock.firstRepliedAt ? replyDue : null,
    resolutionDueAt: resolutionDue,
  }
  const due = dueTimes(next)
  next.dueAt = due.reduce((soonest, [, at]) => (at < soonest ? at : soonest), NEVER)
  next.alertAt = nextAlert(next, policy?.warnBefore ?? 0)
  return next
}

/** What is told of a clock: a warning before its due time, or its breach; `due`: the due time it is about. */
export interface SlaAlert {
  kind: SlaKind
  alert: 'warning' | 'breached'
  due: Date
}

/** The alerts still to tell, each with its moment, in time order. */
function alertsOf(clock: SlaClock, warnBefore: number): Array<SlaAlert & { at: Date }> {
  const alerts: Array<SlaAlert & { at: Date }> = []
  for (const [kind, due] of dueTimes(clock)) {
    if (warnBefore > 0 && !clock.told.includes(`${kind}.warning`)) alerts.push({ kind, alert: 'warning', due, at: new Date(due.getTime() - warnBefore * 60_000) })
    if (!clock.told.includes(`${kind}.breached`)) alerts.push({ kind, alert: 'breached', due, at: due })
  }
  return alerts.sort((a, b) => a.at.getTime() - b.at.getTime())
}

function nextAlert(clock: SlaClock, warnBefore: number): Date | null {
  return alertsOf(clock, warnBefore)[0]?.at ?? null
}

/** What changed of a discussion in one write, as its clocks see it. */
export interface SlaStep {
  /** Whether the team owed the customer before the write and after it (see above). */
  owedBefore: boolean
  owedAfter: boolean
  at: Date
}

/** Whether the team owes the customer: new or open, its newest public comment the customer's. */
export const isOwed = (d: { state: string; awaitingTeam: boolean }) => d.awaitingTeam && (d.state === 'new' || d.state === 'open')

/**
 * The clocks after one write, under `policy` (the one that chooses the discussion after it; null:
 * none). A write that stops what was owed checks each clock's due time against its moment (a late
 * reply or resolution is a breach, told by the write if the alerts' loop had not told it yet:
 * `late`); one that makes something owed starts the clocks; a clock that restarts is told of again.
 */
export function slaAfter(clock: SlaClock, step: SlaStep, policy: SlaPolicy | null): { clock: SlaClock; late: SlaAlert[] } {
  let next = { ...clock }
  const late: SlaAlert[] = []
  if (step.owedBefore && !step.owedAfter) {
    for (const [kind, due] of dueTimes(clock)) {
      if (step.at <= due) continue
      next.breached = withKind(next.breached, kind)
      if (!clock.told.includes(`${kind}.breached`)) late.push({ kind, alert: 'breached', due })
    }
    if (next.replySince && !next.firstRepliedAt) next.firstRepliedAt = step.at
    if (next.resolutionSince) next.resolutionSpent += spentBetween(policy, next.resolutionSince, step.at)
    next = { ...next, replySince: null, resolutionSince: null, told: [] }
  } else if (!step.owedBefore && step.owedAfter) {
    next = { ...next, replySince: step.at, resolutionSince: step.at, told: [] }
  }
  return { clock: settled(next, policy), late }
}

/**
 * The alerts due at `now` and the clock once they are told. A warning whose clock is breached
 * already is not told (the breach says more); a breach marks the kind breached.
 */
export function dueAlerts(clock: SlaClock, now: Date, warnBefore: number): { alerts: SlaAlert[]; clock: SlaClock } {
  const due = alertsOf(clock, warnBefore).filter((a) => a.at <= now)
  const breaches = new Set(due.filter((a) => a.alert === 'breached').map((a) => a.kind))
  const alerts = due.filter((a) => a.alert === 'breached' || !breaches.has(a.kind)).map(({ kind, alert, due }) => ({ kind, alert, due }))
  const next: SlaClock = {
    ...clock,
    told: [...clock.told, ...due.map((a) => `${a.kind}.${a.alert}`)],
    breached: [...breaches].reduce((kinds, kind) => withKind(kinds, kind), clock.breached),
  }
  next.alertAt = nextAlert(next, warnBefore)
  return { alerts, clock: next }
}

