import { count, desc, lt } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { eventConditions, eventOf, eventRow, type SecurityLogStore } from '../../stores/security-log.ts'
import { securityEvents } from '../schema.ts'
import type { PgExecutor } from './executor.ts'

// The security log on PostgreSQL: the behaviour and the rules of db/stores/security-log.ts.

export function createSecurityLog(db: PgExecutor, clock: Clock): SecurityLogStore {
  return {
    async append(event) {
      await db.insert(securityEvents).values(eventRow(event, clock()))
    },

    async list(filter) {
      const where = eventConditions(securityEvents, filter)
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

    async prune(before) {
      const removed = await db.delete(securityEvents).where(lt(securityEvents.createdAt, before)).returning({ id: securityEvents.id })
      return removed.length
    },
  }
}
