import { and, desc, eq, like, lt, type SQL } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { withoutNul } from '../../lib/nul.ts'

// The site's record of changes (issue 67; docs/decisions.md, "The record of changes"): what its
// administrators, its staff (a discussion deleted or restored) and its operator changed, written by
// the store that makes the change, in its transaction, so a change is never kept without its line
// nor a line without its change. Who did it comes from the caller (`by`): a store call without one
// (the service's own work, a test's set-up) records nothing. Values only, never a secret: a
// webhook's or a mailbox's secret is never among the fields a store gives here.

/** Who made a change, and how: a person through the pages or the API, or the operator at the command line. */
export interface Actor {
  /** Their account; null for the operator. */
  id: number | null
  /** Their address as it was (or `the operator`), so the line reads the same after the account is gone. */
  name: string
  via: 'page' | 'api' | 'cli' | 'rule' | 'service'
  /** The client address of the request. */
  address?: string | null
}

/** The operator at the command line. */
export const OPERATOR: Actor = { id: null, name: 'the operator', via: 'cli' }

/** What changed: `<thing>.<what>`, filtered by its first part (AUDIT_THINGS) or whole on the page and in the API. */
export const auditActions = [
  'team.invited',
  'team.invitation_sent_again',
  'team.invitation_withdrawn',
  'team.joined',
  'team.added',
  'team.role_changed',
  'team.removed',
  'category.created',
  'category.changed',
  'category.removed',
  'policy.changed',
  'mailbox.added',
  'mailbox.connected',
  'mailbox.removed',
  'webhook.created',
  'webhook.changed',
  'webhook.secret_rotated',
  'webhook.removed',
  'saved_reply.created',
  'saved_reply.changed',
  'saved_reply.removed',
  'field.created',
  'field.changed',
  'field.removed',
  'customer.fields_changed',
  'customer.exported',
  'customer.erased',
  'privacy.changed',
  'retention.deleted',
  'sign_in_provider.added',
  'sign_in_provider.changed',
  'sign_in_provider.removed',
  'schedule.created',
  'schedule.changed',
  'schedule.removed',
  'sla_policy.created',
  'sla_policy.changed',
  'sla_policy.removed',
  'discussion.deleted',
  'discussion.restored',
  'discussion.merged',
  'discussion.unmerged',
  'discussion.split',
  'rule.created',
  'rule.changed',
  'rule.removed',
  'rule.fired',
] as const
export type AuditAction = (typeof auditActions)[number]
/** The kinds of thing the record tells of: a filter takes one of these, or an action. */
export const AUDIT_THINGS = [...new Set(auditActions.map((a) => a.split('.')[0]!))]

type Value = string | number | boolean | null | string[]
export type AuditDetail = Record<string, Value | Record<string, Value>>

export interface AuditEntry {
  id: number
  siteId: number
  actorId: number | null
  actor: string
  via: Actor['via']
  address: string | null
  action: AuditAction
  target: string
  detail: AuditDetail
  createdAt: Date
}

/** The fields of `after` that differ from `before`, as {before, after}: what a change line says. */
export function changedFields(before: object, after: object): { before: Record<string, Value>; after: Record<string, Value> } {
  const was: Record<string, Value> = {}
  const now: Record<string, Value> = {}
  const old = before as Record<string, Value>
  for (const [key, value] of Object.entries(after) as Array<[string, Value | undefined]>) {
    if (value === undefined || JSON.stringify(value) === JSON.stringify(old[key])) continue
    // Both sides have the same fields (the callers give one shape twice).
    was[key] = old[key]!
    now[key] = value
  }
  return { before: was, after: now }
}

/** Writes one line of the site's record in `port`'s transaction, when someone (`by`) made the change. */
export async function recordChange(port: StorePort, clock: Clock, by: Actor | undefined, siteId: number, action: AuditAction, target: string, detail: AuditDetail = {}): Promise<void> {
  if (!by) return
  await port.db.insert(port.tables.auditEvents).values({
    siteId,
    actorId: by.id,
    actor: withoutNul(by.name),
    via: by.via,
    address: by.address ?? null,
    action,
    target: withoutNul(target),
    detail: withoutNul(JSON.stringify(detail)),
    createdAt: new Date(clock()),
  })
}

export interface AuditFilter {
  siteId: number
  /** Lines of this kind of thing (`team`, `category`...) or this action. */
  action?: string
  /** Lines by this account. */
  actorId?: number
  /** Older than the line of this id (the cursor of the next page). */
  before?: number
  limit: number
}

function entryOf(row: Tables['auditEvents']['$inferSelect']): AuditEntry {
  return { ...row, via: row.via as Actor['via'], action: row.action as AuditAction, detail: JSON.parse(row.detail) as AuditDetail }
}

/** The site's record, newest first, a page at a time (by id, so a page is the same however many are added meanwhile). */
export async function listChanges(port: StorePort, filter: AuditFilter): Promise<AuditEntry[]> {
  const { auditEvents } = port.tables
  const where: Array<SQL | undefined> = [eq(auditEvents.siteId, filter.siteId)]
  if (filter.action) where.push(filter.action.includes('.') ? eq(auditEvents.action, filter.action) : like(auditEvents.action, `${filter.action}.%`))
  if (filter.actorId !== undefined) where.push(eq(auditEvents.actorId, filter.actorId))
  // An id column holds at most 2^31 - 1 (PostgreSQL's integer): a cursor past it starts from the newest.
  if (filter.before !== undefined) where.push(lt(auditEvents.id, Math.min(filter.before, 2_147_483_647)))
  const rows = await port.db
    .select()
    .from(auditEvents)
    .where(and(...where))
    .orderBy(desc(auditEvents.id))
    .limit(filter.limit)
  return rows.map(entryOf)
}

/** Deletes the lines older than `before` (as the security log's are); how many. */
export async function pruneChanges(port: StorePort, before: Date): Promise<number> {
  const { auditEvents } = port.tables
  const removed = await port.db.delete(auditEvents).where(lt(auditEvents.createdAt, before)).returning({ id: auditEvents.id })
  return removed.length
}
