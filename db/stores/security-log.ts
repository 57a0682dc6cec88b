import { and, count, desc, eq, inArray, isNull, lt, or, type SQL } from '../drizzle.ts'
import { securityKinds, type SecurityKind } from '../values.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { withoutNul } from '../../lib/nul.ts'
import { listChanges, pruneChanges, type AuditFilter } from './audit.ts'

// The security log (issue 18; docs/decisions.md, "Token lifecycle"): events appended, listed
// newest first, and pruned after a while; one store for both engines (db/port.ts).

export { securityKinds, type SecurityKind }

type DetailValue = string | number | boolean | null

export interface NewSecurityEvent {
  /** Null for an event of the site alone (its policy changed at the command line). */
  userId: number | null
  siteId?: number | null
  kind: SecurityKind
  address?: string | null
  actor?: string | null
  /** Names, ids, addresses: never a secret. */
  detail?: Record<string, DetailValue>
}

export interface SecurityEvent {
  id: number
  userId: number | null
  siteId: number | null
  kind: SecurityKind
  createdAt: Date
  address: string | null
  actor: string | null
  detail: Record<string, DetailValue>
}

export interface SecurityLogFilter {
  userId?: number
  siteId?: number
  /** This site's events and those of the account everywhere (site null): what one site's pages show a person. */
  seenFrom?: number
  /**
   * This site's events and the account-wide ones (site null) of its people (a password set, an
   * account disabled): the site's log as its operator reads it (`service-desk security-log <site>`).
   */
  ofSite?: number
  kinds?: SecurityKind[]
  offset: number
  limit: number
}

/** What the security log says of a personal token: its id, name, access and expiry, never its value. */
export const tokenDetail = (token: { id: number; name: string; access: string; expiresAt: Date }) => ({
  token_id: token.id,
  name: token.name,
  access: token.access,
  expires_at: token.expiresAt.toISOString(),
})

/** The first-run banner's token, made by the service itself at its first start. */
export const firstRunTokenEvent = (token: { id: number; userId: number; siteId: number; name: string; access: string; expiresAt: Date }): NewSecurityEvent => ({
  userId: token.userId,
  siteId: token.siteId,
  kind: 'token_created',
  actor: 'first_run',
  detail: tokenDetail(token),
})

const clean = <T extends string | null | undefined>(text: T) => (typeof text === 'string' ? withoutNul(text) : null)

/** The row an event is stored as: texts without U+0000 (PostgreSQL cannot hold it), the detail as JSON. */
export function eventRow(event: NewSecurityEvent, now: number) {
  const detail = Object.fromEntries(Object.entries(event.detail ?? {}).map(([k, v]) => [withoutNul(k), typeof v === 'string' ? withoutNul(v) : v]))
  return {
    userId: event.userId,
    siteId: event.siteId ?? null,
    kind: event.kind,
    createdAt: new Date(now),
    address: clean(event.address),
    actor: clean(event.actor),
    detail: JSON.stringify(detail),
  }
}

/** An event as read back. */
export function eventOf(row: Tables['securityEvents']['$inferSelect']): SecurityEvent {
  return { ...row, detail: JSON.parse(row.detail) as Record<string, DetailValue> }
}

/** The conditions of a listing. */
function eventConditions({ securityEvents: table, memberships }: Pick<Tables, 'securityEvents' | 'memberships'>, db: StorePort['db'], filter: SecurityLogFilter): SQL | undefined {
  const people = (siteId: number) => db.select({ id: memberships.userId }).from(memberships).where(eq(memberships.siteId, siteId))
  return and(
    filter.ofSite === undefined ? undefined : or(eq(table.siteId, filter.ofSite), and(isNull(table.siteId), inArray(table.userId, people(filter.ofSite)))),
    filter.userId === undefined ? undefined : eq(table.userId, filter.userId),
    filter.siteId === undefined ? undefined : eq(table.siteId, filter.siteId),
    filter.seenFrom === undefined ? undefined : or(eq(table.siteId, filter.seenFrom), isNull(table.siteId)),
    filter.kinds === undefined ? undefined : inArray(table.kind, filter.kinds),
  )
}

export function createSecurityLog(port: StorePort, clock: Clock) {
  const { db, tables: { securityEvents, memberships } } = port
  return {
    async append(event: NewSecurityEvent): Promise<void> {
      await db.insert(securityEvents).values(eventRow(event, clock()))
    },

    /** Newest first, with the number of events the filter matches. */
    async list(filter: SecurityLogFilter): Promise<{ total: number; events: SecurityEvent[] }> {
      const where = eventConditions({ securityEvents, memberships }, db, filter)
      const [{ n }] = await db.select({ n: count() }).from(securityEvents).where(where)
      const rows = await db
        .select()
        .from(securityEvents)
        .where(where)
        .orderBy(desc(securityEvents.createdAt), desc(securityEvents.id))
        .limit(filter.limit)
        .offset(filter.offset)
      return { total: n, events: rows.map(eventOf) }
    },

    /** A page of the site's record of changes (db/stores/audit.ts), newest first. */
    changes: (filter: AuditFilter) => listChanges(port, filter),

    /** Deletes the events older than `before`, and the lines of the sites' records of changes too; how many. */
    async prune(before: Date): Promise<number> {
      const removed = await db.delete(securityEvents).where(lt(securityEvents.createdAt, before)).returning({ id: securityEvents.id })
      return removed.length + (await pruneChanges(port, before))
    },
  }
}

export type SecurityLogStore = ReturnType<typeof createSecurityLog>
