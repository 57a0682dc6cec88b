import { and, count, desc, eq, inArray, lt, type Column, type SQL } from '../drizzle.ts'
import type { Db } from '../client.ts'
import { securityEvents, securityKinds, type SecurityKind } from '../schema.ts'
import type { Clock } from '../../lib/clock.ts'
import { withoutNul } from '../../lib/nul.ts'
import type { Async } from './async.ts'

// The security log (issue 18; docs/decisions.md, "Token lifecycle"): events appended, listed
// newest first, and pruned after a while. The same on both engines (db/postgres/stores/security-log.ts),
// which share the rules below.

export { securityKinds, type SecurityKind }

type DetailValue = string | number | boolean | null

export interface NewSecurityEvent {
  userId: number
  siteId?: number | null
  kind: SecurityKind
  address?: string | null
  actor?: string | null
  /** Names, ids, addresses: never a secret. */
  detail?: Record<string, DetailValue>
}

export interface SecurityEvent {
  id: number
  userId: number
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
export function eventOf(row: typeof securityEvents.$inferSelect): SecurityEvent {
  return { ...row, detail: JSON.parse(row.detail) as Record<string, DetailValue> }
}

/** The conditions of a listing, on either engine's table. */
export function eventConditions(table: Record<'userId' | 'siteId' | 'kind', Column>, filter: SecurityLogFilter): SQL | undefined {
  return and(
    filter.userId === undefined ? undefined : eq(table.userId, filter.userId),
    filter.siteId === undefined ? undefined : eq(table.siteId, filter.siteId),
    filter.kinds === undefined ? undefined : inArray(table.kind, filter.kinds),
  )
}

export function createSecurityLog(db: Db, clock: Clock) {
  return {
    append(event: NewSecurityEvent): void {
      db.insert(securityEvents).values(eventRow(event, clock())).run()
    },

    /** Newest first, with the number of events the filter matches. */
    list(filter: SecurityLogFilter): { total: number; events: SecurityEvent[] } {
      const where = eventConditions(securityEvents, filter)
      const total = db.select({ n: count() }).from(securityEvents).where(where).get()!.n
      const rows = db
        .select()
        .from(securityEvents)
        .where(where)
        .orderBy(desc(securityEvents.createdAt), desc(securityEvents.id))
        .limit(filter.limit)
        .offset(filter.offset)
        .all()
      return { total, events: rows.map(eventOf) }
    },

    /** Deletes the events older than `before`; how many. */
    prune(before: Date): number {
      return db.delete(securityEvents).where(lt(securityEvents.createdAt, before)).run().changes
    },
  }
}

export type SyncSecurityLogStore = ReturnType<typeof createSecurityLog>
export type SecurityLogStore = Async<SyncSecurityLogStore>
