import { randomBytes } from 'node:crypto'
import { and, eq, gt, lte, sql } from '../drizzle.ts'
import type { Db } from '../client.ts'
import { memberships, users, webSessions } from '../schema.ts'
import type { Clock } from '../../lib/clock.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { fingerprint } from '../../lib/token-format.ts'
import type { Async } from './async.ts'

/** How long a supporter stays signed in. */
export const SESSION_LIFETIME_MS = 7 * DAY_MS

/**
 * Server-side web sessions. The cookie carries a random 256-bit id; the table keeps only its
 * SHA-256, so a copy of the database signs nobody in.
 */
export function createSessionStore(db: Db, clock: Clock) {
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
    .prepare()

  const remove = db
    .delete(webSessions)
    .where(eq(webSessions.fingerprint, sql.placeholder('fingerprint')))
    .prepare()

  return {
    /** A new session; the returned id goes into the cookie and nowhere else. */
    create(siteId: number, userId: number): string {
      const id = randomBytes(32).toString('base64url')
      const now = clock()
      db.insert(webSessions)
        .values({ fingerprint: fingerprint(id), siteId, userId, createdAt: new Date(now), expiresAt: new Date(now + SESSION_LIFETIME_MS) })
        .run()
      // Expired sessions of anyone are swept as new ones are made, so the table stays small.
      db.delete(webSessions).where(lte(webSessions.expiresAt, new Date(now))).run()
      return id
    },

    /** The signed-in user of a live session on this site, or undefined. */
    find(id: string, siteId: number) {
      const session = byFingerprint.get({ fingerprint: fingerprint(id) })
      if (!session || session.siteId !== siteId || session.expiresAt.getTime() <= clock()) return undefined
      if (session.disabled) {
        remove.run({ fingerprint: fingerprint(id) })
        return undefined
      }
      return { userId: session.userId, email: session.email, name: session.name, role: session.role }
    },

    destroy(id: string): void {
      remove.run({ fingerprint: fingerprint(id) })
    },

    /** Ends every session of a user (their account was disabled). */
    destroyForUser(userId: number): number {
      return db.delete(webSessions).where(eq(webSessions.userId, userId)).run().changes
    },

    activeCount(userId: number): number {
      return db
        .select({ n: sql<number>`count(*)` })
        .from(webSessions)
        .where(and(eq(webSessions.userId, userId), gt(webSessions.expiresAt, new Date(clock()))))
        .get()!.n
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncSessionStore = ReturnType<typeof createSessionStore>
export type SessionStore = Async<SyncSessionStore>
