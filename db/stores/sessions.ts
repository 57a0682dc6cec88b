import { randomBytes } from 'node:crypto'
import { and, count, eq, gt, lte, ne, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { isStaffRole } from './staff.ts'

/** How long a supporter stays signed in. */
export const SESSION_LIFETIME_MS = 7 * DAY_MS

/** A session made by signing in at a site's identity provider (issue 73): which, its session there, and whether it asked a second factor the site trusts. */
export interface SessionVia {
  providerId: number
  sid: string | null
  mfa: boolean
}

/**
 * Server-side web sessions, one store for both engines (db/port.ts). The cookie carries a random
 * 256-bit id; the table keeps only its SHA-256, so a copy of the database signs nobody in.
 */
export function createSessionStore(port: StorePort, clock: Clock) {
  const { db, tables: { memberships, users, webSessions } } = port
  // Asked on every request of the supporter pages.
  const byFingerprint = onFirstUse(() => db
    .select({
      siteId: webSessions.siteId,
      userId: webSessions.userId,
      expiresAt: webSessions.expiresAt,
      createdAt: webSessions.createdAt,
      confirmedAt: webSessions.confirmedAt,
      email: users.email,
      name: users.name,
      disabled: users.disabled,
      role: memberships.role,
      administrator: memberships.administrator,
      collaborator: memberships.collaborator,
      providerId: webSessions.providerId,
      providerMfa: webSessions.providerMfa,
    })
    .from(webSessions)
    .innerJoin(users, eq(users.id, webSessions.userId))
    .leftJoin(memberships, and(eq(memberships.siteId, webSessions.siteId), eq(memberships.userId, webSessions.userId)))
    .where(eq(webSessions.fingerprint, sql.placeholder('fingerprint')))
    .prepare('sessions_by_fingerprint'))

  async function destroy(id: string): Promise<void> {
    await db.delete(webSessions).where(eq(webSessions.fingerprint, fingerprint(id)))
  }

  return {
    /** A new session; the returned id goes into the cookie and nowhere else. `via`: made by signing in at one of the site's identity providers. */
    async create(siteId: number, userId: number, via?: SessionVia): Promise<string> {
      const id = randomBytes(32).toString('base64url')
      const now = clock()
      const provider = via && { providerId: via.providerId, providerSid: via.sid, providerMfa: via.mfa }
      await db
        .insert(webSessions)
        .values({ fingerprint: fingerprint(id), siteId, userId, createdAt: new Date(now), expiresAt: new Date(now + SESSION_LIFETIME_MS), ...provider })
      // Expired sessions of anyone are swept as new ones are made, so the table stays small.
      await db.delete(webSessions).where(lte(webSessions.expiresAt, new Date(now)))
      return id
    },

    /** The signed-in user of a live session on this site, or undefined. */
    async find(id: string, siteId: number) {
      const [session] = await byFingerprint.execute({ fingerprint: fingerprint(id) })
      if (!session || session.siteId !== siteId || session.expiresAt.getTime() <= clock()) return undefined
      if (session.disabled) {
        await destroy(id)
        return undefined
      }
      // An administrator is one while on the staff (users.isAdministrator).
      const administrator = isStaffRole(session.role) && session.administrator === true
      const collaborator = isStaffRole(session.role) && session.collaborator === true
      // Signing in is the first proof; confirming it is you again moves it on.
      const confirmedAt = session.confirmedAt ?? session.createdAt
      const provider = session.providerId === null ? null : { id: session.providerId, mfa: session.providerMfa }
      return { userId: session.userId, email: session.email, name: session.name, role: session.role, administrator, collaborator, confirmedAt, provider }
    },

    destroy,

    /** Notes that the person of this session proved it was them just now (sudo mode). */
    async confirm(id: string): Promise<void> {
      await db.update(webSessions).set({ confirmedAt: new Date(clock()) }).where(eq(webSessions.fingerprint, fingerprint(id)))
    },

    /** Ends every session of a user but this one (they changed their password in it); how many. */
    async destroyOthers(userId: number, keptId: string): Promise<number> {
      const ended = await db
        .delete(webSessions)
        .where(and(eq(webSessions.userId, userId), ne(webSessions.fingerprint, fingerprint(keptId))))
        .returning({ userId: webSessions.userId })
      return ended.length
    },

    /** Ends every session of a user (their account was disabled); how many. */
    async destroyForUser(userId: number): Promise<number> {
      const ended = await db.delete(webSessions).where(eq(webSessions.userId, userId)).returning({ userId: webSessions.userId })
      return ended.length
    },

    async activeCount(userId: number): Promise<number> {
      const [{ n }] = await db
        .select({ n: count() })
        .from(webSessions)
        .where(and(eq(webSessions.userId, userId), gt(webSessions.expiresAt, new Date(clock()))))
      return n
    },
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>
