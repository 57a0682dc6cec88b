import { randomBytes } from 'node:crypto'
import { and, count, eq, gt, lte, sql } from '../../drizzle.ts'
import type { Clock } from '../../../lib/clock.ts'
import { fingerprint } from '../../../lib/token-format.ts'
import { SESSION_LIFETIME_MS, type SessionStore } from '../../stores/sessions.ts'
import type { PgDb } from '../client.ts'
import { memberships, users, webSessions } from '../schema.ts'

// Web sessions on PostgreSQL: the behaviour of db/stores/sessions.ts.

export function createSessionStore(db: PgDb, clock: Clock): SessionStore {
  // Asked on every request of the supporter pages.
  const byFingerprint = db
    .select({
      siteId: webSessions.siteId,
      userId: webSessions.userId,
      expiresAt: webSessions.expiresAt,
      email: users.email,
      name: users.name,
      disabled: users.disabled,
      role: memberships.role,
    })
    .from(webSessions)
    .innerJoin(users, eq(users.id, webSessions.userId))
    .leftJoin(memberships, and(eq(memberships.siteId, webSessions.siteId), eq(memberships.userId, webSessions.userId)))
    .where(eq(webSessions.fingerprint, sql.placeholder('fingerprint')))
    .prepare('sessions_by_fingerprint')

  async function remove(id: string): Promise<void> {
    await db.delete(webSessions).where(eq(webSessions.fingerprint, fingerprint(id)))
  }

  return {
    async create(siteId, userId) {
      const id = randomBytes(32).toString('base64url')
      const now = clock()
      await db
        .insert(webSessions)
        .values({ fingerprint: fingerprint(id), siteId, userId, createdAt: new Date(now), expiresAt: new Date(now + SESSION_LIFETIME_MS) })
      // Expired sessions of anyone are swept as new ones are made, so the table stays small.
      await db.delete(webSessions).where(lte(webSessions.expiresAt, new Date(now)))
      return id
    },

    async find(id, siteId) {
      const [session] = await byFingerprint.execute({ fingerprint: fingerprint(id) })
      if (!session || session.siteId !== siteId || session.expiresAt.getTime() <= clock()) return undefined
      if (session.disabled) {
        await remove(id)
        return undefined
      }
      return { userId: session.userId, email: session.email, name: session.name, role: session.role }
    },

    destroy: remove,

    async destroyForUser(userId) {
      const ended = await db.delete(webSessions).where(eq(webSessions.userId, userId)).returning({ userId: webSessions.userId })
      return ended.length
    },

    async activeCount(userId) {
      const [row] = await db
        .select({ n: count() })
        .from(webSessions)
        .where(and(eq(webSessions.userId, userId), gt(webSessions.expiresAt, new Date(clock()))))
      return row.n
    },
  }
}
