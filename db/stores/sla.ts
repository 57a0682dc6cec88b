import { and, asc, eq, lte, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Interval, Schedule } from '../../lib/business-time.ts'
import { isOwed, noClock, policyFor, slaAfter, slaKinds, type SlaChannel, type SlaClock, type SlaFacts, type SlaAlert, type SlaPolicy } from '../../lib/sla.ts'
import { createBoundedMap } from '../../lib/bounded-set.ts'
import type { Clock } from '../../lib/clock.ts'
import type { DiscussionRow } from './discussion-listing.ts'
import { notifySla } from './notifications.ts'
import type { EventSink, Listeners } from './webhooks.ts'

// The SLA clocks of the discussions (issue 68; lib/sla.ts; docs/decisions.md, "SLA policies"): the
// site's policies read in the transaction of each write, and the clock's columns moved with the
// row in the write's own statement (db/stores/discussions.ts), so the due times commit with what
// moved them.

/** The columns of a discussion that keep its clocks (db/schema: slaPolicyId to slaAlertAt). */
export type SlaColumns = Pick<
  DiscussionRow,
  | 'slaPolicyId'
  | 'slaReplySince'
  | 'slaFirstRepliedAt'
  | 'slaResolutionSince'
  | 'slaResolutionSpent'
  | 'firstReplyDueAt'
  | 'nextReplyDueAt'
  | 'resolutionDueAt'
  | 'dueAt'
  | 'slaBreached'
  | 'slaTold'
  | 'slaAlertAt'
>

const listOf = (text: string) => (text === '' ? [] : text.split(' '))

/** The clock of a row. */
export function clockOf(row: SlaColumns): SlaClock {
  return {
    policyId: row.slaPolicyId,
    replySince: row.slaReplySince,
    firstRepliedAt: row.slaFirstRepliedAt,
    resolutionSince: row.slaResolutionSince,
    resolutionSpent: row.slaResolutionSpent,
    firstReplyDueAt: row.firstReplyDueAt,
    nextReplyDueAt: row.nextReplyDueAt,
    resolutionDueAt: row.resolutionDueAt,
    dueAt: row.dueAt,
    breached: listOf(row.slaBreached).filter((kind): kind is SlaClock['breached'][number] => (slaKinds as readonly string[]).includes(kind)),
    told: listOf(row.slaTold),
    alertAt: row.slaAlertAt,
  }
}

/** The columns of a clock. */
export function columnsOf(clock: SlaClock): SlaColumns {
  return {
    slaPolicyId: clock.policyId,
    slaReplySince: clock.replySince,
    slaFirstRepliedAt: clock.firstRepliedAt,
    slaResolutionSince: clock.resolutionSince,
    slaResolutionSpent: clock.resolutionSpent,
    firstReplyDueAt: clock.firstReplyDueAt,
    nextReplyDueAt: clock.nextReplyDueAt,
    resolutionDueAt: clock.resolutionDueAt,
    dueAt: clock.dueAt,
    slaBreached: clock.breached.join(' '),
    slaTold: clock.told.join(' '),
    slaAlertAt: clock.alertAt,
  }
}

/** The columns as a prepared statement binds them (moments through port.moment). */
export function boundColumns(port: StorePort, columns: SlaColumns) {
  const at = (date: Date | null) => (date === null ? null : port.moment(date))
  return {
    slaPolicyId: columns.slaPolicyId,
    slaReplySince: at(columns.slaReplySince),
    slaFirstRepliedAt: at(columns.slaFirstRepliedAt),
    slaResolutionSince: at(columns.slaResolutionSince),
    slaResolutionSpent: columns.slaResolutionSpent,
    firstReplyDueAt: at(columns.firstReplyDueAt),
    nextReplyDueAt: at(columns.nextReplyDueAt),
    resolutionDueAt: at(columns.resolutionDueAt),
    dueAt: port.moment(columns.dueAt),
    slaBreached: columns.slaBreached,
    slaTold: columns.slaTold,
    slaAlertAt: at(columns.slaAlertAt),
  }
}

// A schedule's JSON is parsed once per text of it, not per write: kept by its id with the texts it was parsed from.
const parsedSchedules = createBoundedMap<number, { timeZone: string; week: string; days: string; schedule: Schedule }>(200)

function scheduleOf(row: { id: number; timeZone: string; week: string; days: string }): Schedule {
  const kept = parsedSchedules.get(row.id)
  if (kept && kept.timeZone === row.timeZone && kept.week === row.week && kept.days === row.days) return kept.schedule
  const days = JSON.parse(row.days) as Record<string, { hours: Interval[] }>
  const schedule = { timeZone: row.timeZone, week: JSON.parse(row.week) as Interval[][], days: Object.fromEntries(Object.entries(days).map(([date, day]) => [date, day.hours])) }
  parsedSchedules.set(row.id, { timeZone: row.timeZone, week: row.week, days: row.days, schedule })
  return schedule
}

/**
 * The site's policies in order, each with its schedule. Given the site's rules' version as the
 * caller's transaction read it before (db/stores/sites.ts, bumpRulesVersion: every change of the
 * policies or their hours moves it), on PostgreSQL the policies this process read at that version
 * are taken without a statement, and what is read is kept once its transaction committed (a read
 * at an older version, or in a transaction that rolled back, is not). Otherwise read on `port` (one
 * statement prepared once per port; on SQLite, a read in the process).
 */
export async function policiesOf(port: StorePort, siteId: number, rulesVersion?: number): Promise<SlaPolicy[]> {
  if (rulesVersion === undefined || !port.onCommitted) return readPolicies(port, siteId)
  const kept = port.kept('sla_policies', () => new Map<number, { version: number; policies: SlaPolicy[] }>())
  const known = kept.get(siteId)
  if (known?.version === rulesVersion) return known.policies
  const policies = await readPolicies(port, siteId)
  port.onCommitted(() => {
    // The policies were read after the version was: they are at least as new as it says.
    if ((kept.get(siteId)?.version ?? -1) < rulesVersion) kept.set(siteId, { version: rulesVersion, policies })
  })
  return policies
}

async function readPolicies(port: StorePort, siteId: number): Promise<SlaPolicy[]> {
  const { schedules, slaPolicies } = port.tables
  const read = port.prepared('sla_policies_of_site', (db) =>
    db
      .select({
        policy: slaPolicies,
        schedule: { id: schedules.id, timeZone: schedules.timeZone, week: schedules.week, days: schedules.days },
      })
      .from(slaPolicies)
      .leftJoin(schedules, eq(schedules.id, slaPolicies.scheduleId))
      .where(eq(slaPolicies.siteId, sql.placeholder('siteId')))
      .orderBy(asc(slaPolicies.position), asc(slaPolicies.id))
      .prepare('sla_policies_of_site'),
  )
  return (await read.execute({ siteId })).map(({ policy, schedule }) => ({
    id: policy.id,
    conditions: {
      categories: listOf(policy.categories).map(Number),
      tags: listOf(policy.tags),
      domains: listOf(policy.domains),
      channels: listOf(policy.channels) as SlaChannel[],
    },
    targets: { firstReply: policy.firstReplyMinutes, nextReply: policy.nextReplyMinutes, resolution: policy.resolutionMinutes },
    warnBefore: policy.warnMinutes,
    schedule: schedule?.id ? scheduleOf(schedule) : null,
  }))
}

/** What a write of a discussion changes, as the clocks see it. */
export interface SlaWrite {
  siteId: number
  /** The row before the write (null: it is being created). */
  before: (SlaColumns & { state: DiscussionRow['state']; awaitingTeam: boolean }) | null
  after: { state: DiscussionRow['state']; awaitingTeam: boolean }
  facts: SlaFacts
  at: Date
  /** The site's rules' version, read earlier in the write's transaction (listenersIn; takeSite): its policies may be the ones kept (policiesOf). */
  rulesVersion?: number
}

/**
 * The clock's columns after a write, the kinds it found breached that no alert had told (told by the
 * write), and the hours of its policy (the reports' business minutes count in them).
 */
export async function slaOfWrite(port: StorePort, write: SlaWrite): Promise<{ columns: SlaColumns; late: SlaAlert[]; schedule: Schedule | null }> {
  const policies = await policiesOf(port, write.siteId, write.rulesVersion)
  const policy = policyFor(policies, write.facts) ?? null
  const { clock, late } = slaAfter(write.before ? clockOf(write.before) : noClock, { owedBefore: write.before ? isOwed(write.before) : false, owedAfter: isOwed(write.after), at: write.at }, policy)
  return { columns: columnsOf(clock), late, schedule: policy?.schedule ?? null }
}

/** The discussions whose alerts are due at `now` (the alerts' loop), soonest first: site and number. */
export async function alertsDue(port: StorePort, now: Date, limit: number): Promise<Array<{ siteId: number; number: number }>> {
  const { discussions } = port.tables
  return port.db
    .select({ siteId: discussions.siteId, number: discussions.number })
    .from(discussions)
    .where(and(sql`${discussions.slaAlertAt} is not null`, lte(discussions.slaAlertAt, now)))
    .orderBy(asc(discussions.slaAlertAt))
    .limit(limit)
}

/**
 * Tells the alerts of a discussion, in the transaction that records them told: a webhook event each
 * (sla.warning, sla.breached) and a mail to its owner or the team (db/stores/notifications.ts).
 * Nothing of a discussion marked spam, deleted or merged is told (its clocks stopped with the move anyway).
 */
export async function tellSla(port: StorePort, clock: Clock, events: EventSink, discussion: DiscussionRow, alerts: readonly SlaAlert[], listeners?: Listeners): Promise<void> {
  if (discussion.state === 'spam' || discussion.state === 'deleted' || discussion.state === 'merged') return
  for (const alert of alerts) {
    await events(port, { type: alert.alert === 'warning' ? 'sla.warning' : 'sla.breached', siteId: discussion.siteId, discussion, alert, listeners })
    await notifySla(port, clock, { siteId: discussion.siteId, number: discussion.number, title: discussion.title, ownerId: discussion.assigneeId, alert })
  }
}
