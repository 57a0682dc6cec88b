import { and, asc, desc, eq, gt, inArray, isNull, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { CUSTOMER_LINK_PREFIX, generateToken } from '../../lib/token-format.ts'
import { recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { queueCustomerMail, type OutboxMail } from './outbox.ts'
import { isStaffRole, roleFlags, STAFF_ROLE, staffRoleOf } from './staff.ts'
import type { StaffRole } from '../values.ts'
import { emailKey, emailProblem, endSessionsOn, findUserByEmail, insertUser, nameProblem, roleOn } from './users.ts'

// Invitations to a site's staff (docs/decisions.md, "Invitations"), one store for both engines: an
// administrator invites an address as a supporter, an administrator or a collaborator; the invitation's mail is
// queued in the outbox in the same transaction (sealed: it holds the link); the link (a random value
// kept as a keyed digest) is taken once, within INVITATION_DAYS, on its own site, by the address it
// was sent to: a new account with the password they choose, or their existing account, proven.

export const INVITATION_DAYS = 7

/** An invitation not yet taken, withdrawn or past its time, as the team page and the API show it. */
export interface OpenInvitation {
  id: number
  email: string
  role: StaffRole
  invitedBy: string | null
  createdAt: Date
  expiresAt: Date
}

/** A person of the site's staff, as the team page and the API show them. */
export interface StaffMember {
  id: number
  email: string
  name: string
  role: StaffRole
  disabled: boolean
  secondFactor: boolean
  lastSignInAt: Date | null
}

/** What a link names, before it is taken: the invitation, and whether an account has its address. */
export type InvitationLook =
  | { kind: 'open'; email: string; role: StaffRole; siteName: string; account: { id: number; hasPassword: boolean } | null }
  | { kind: 'invalid' | 'used' | 'expired' | 'withdrawn' }

export type InvitationTaken = { kind: 'accepted'; userId: number; role: StaffRole } | { kind: 'invalid' | 'used' | 'expired' | 'withdrawn' }

/**
 * Who takes an invitation: a newcomer (their name and password's hash), or an account already
 * theirs (proven), with the password it chooses when it has none (an account a mail sign-in made).
 */
export type Taker = { newcomer: { name: string; passwordHash: string } } | { userId: number; passwordHash?: string }

type Mail = (link: string, siteName: string) => Pick<OutboxMail, 'subject' | 'text'>

export function createInvitationStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { invitations, memberships, secondFactors, securityEvents, users } } = port

  /** Why an invitation row cannot be taken now, or null when it can. */
  const closed = (row: { acceptedAt: Date | null; withdrawnAt: Date | null; expiresAt: Date }) =>
    row.acceptedAt ? ('used' as const) : row.withdrawnAt ? ('withdrawn' as const) : row.expiresAt.getTime() <= clock() ? ('expired' as const) : null

  /** A new link: its value, the digest it is kept as, and when it ends. */
  const newLink = () => {
    const value = generateToken(CUSTOMER_LINK_PREFIX)
    return { value, digest: box.digest(value), expiresAt: new Date(clock() + INVITATION_DAYS * 86_400_000) }
  }
  /** Queues the mail of an invitation's link, in `tx`. */
  const queue = (tx: StorePort, siteId: number, email: string, value: string, mail: Mail) =>
    queueCustomerMail(tx, clock, box, { siteId, kind: 'invitation', mail: (siteName) => ({ to: email, ...mail(value, siteName) }) })

  const byLink = (siteId: number, value: string) =>
    db.select().from(invitations).where(and(eq(invitations.siteId, siteId), eq(invitations.digest, box.digest(value))))

  return {
    /**
     * Invites an address to the site's staff (as its administrator, or a supporter), and queues its
     * mail; an open invitation of the same address is replaced (its link stops working). Someone
     * already of its staff, or an address that is none, is a StoreError.
     */
    async invite(siteId: number, input: { email: string; role: StaffRole; invitedBy: number | null }, mail: Mail, by?: Actor): Promise<OpenInvitation> {
      const problem = emailProblem(input.email)
      if (problem) throw new StoreError(problem, 'invalid', 'email')
      const email = emailKey(input.email)
      return port.atomic(async (tx) => {
        const known = await findUserByEmail(tx, email)
        if (known && isStaffRole(await roleOn(tx, siteId, known.id))) throw new StoreError(`${email} is already on the staff of this site`, 'conflict', 'email')
        const now = new Date(clock())
        await tx.db.update(invitations).set({ withdrawnAt: now }).where(and(eq(invitations.siteId, siteId), eq(invitations.email, email), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt)))
        const link = newLink()
        const [row] = await tx.db
          .insert(invitations)
          .values({ siteId, email, ...roleFlags(input.role), digest: link.digest, invitedBy: input.invitedBy, createdAt: now, expiresAt: link.expiresAt })
          .returning({ id: invitations.id })
        await queue(tx, siteId, email, link.value, mail)
        await recordChange(tx, clock, by, siteId, 'team.invited', email, { role: input.role })
        const [inviter] = input.invitedBy === null ? [] : await tx.db.select({ name: users.name }).from(users).where(eq(users.id, input.invitedBy))
        return { id: row!.id, email, role: input.role, invitedBy: inviter?.name ?? null, createdAt: now, expiresAt: link.expiresAt }
      })
    },

    /** Sends an open invitation again with a new link (the old one stops working) and a new week; false when there is none open of this id. */
    async resend(siteId: number, id: number, mail: Mail, by?: Actor): Promise<boolean> {
      return port.atomic(async (tx) => {
        const [row] = await tx.db.select().from(invitations).where(and(eq(invitations.id, id), eq(invitations.siteId, siteId), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt)))
        if (!row) return false
        const link = newLink()
        await tx.db.update(invitations).set({ digest: link.digest, expiresAt: link.expiresAt }).where(eq(invitations.id, row.id))
        await queue(tx, siteId, row.email, link.value, mail)
        await recordChange(tx, clock, by, siteId, 'team.invitation_sent_again', row.email)
        return true
      })
    },

    /** Withdraws an invitation not yet taken: its link stops working; whether there was one. */
    async withdraw(siteId: number, id: number, by?: Actor): Promise<boolean> {
      return port.atomic(async (tx) => {
        const gone = await tx.db
          .update(invitations)
          .set({ withdrawnAt: new Date(clock()) })
          .where(and(eq(invitations.id, id), eq(invitations.siteId, siteId), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt)))
          .returning({ email: invitations.email })
        if (gone[0]) await recordChange(tx, clock, by, siteId, 'team.invitation_withdrawn', gone[0].email)
        return gone.length > 0
      })
    },

    /** Withdraws the open invitations of an address on the site (taken off the staff: no old link brings them back). */
    async withdrawFor(siteId: number, email: string): Promise<void> {
      await db.update(invitations).set({ withdrawnAt: new Date(clock()) }).where(and(eq(invitations.siteId, siteId), eq(invitations.email, emailKey(email)), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt)))
    },

    /** The site's invitations not taken, withdrawn or past their time, newest first. */
    async open(siteId: number): Promise<OpenInvitation[]> {
      const rows = await db
        .select({ id: invitations.id, email: invitations.email, administrator: invitations.administrator, collaborator: invitations.collaborator, invitedBy: users.name, createdAt: invitations.createdAt, expiresAt: invitations.expiresAt })
        .from(invitations)
        .leftJoin(users, eq(users.id, invitations.invitedBy))
        .where(and(eq(invitations.siteId, siteId), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt), gt(invitations.expiresAt, new Date(clock()))))
        .orderBy(desc(invitations.id))
      return rows.map(({ administrator, collaborator, ...row }) => ({ ...row, role: staffRoleOf({ administrator, collaborator }) }))
    },

    /** The site's support staff: role, whether they have a second factor, and their last sign-in (on any site). */
    async team(siteId: number): Promise<StaffMember[]> {
      const people = await db
        .select({ id: users.id, email: users.email, name: users.name, administrator: memberships.administrator, collaborator: memberships.collaborator, disabled: users.disabled })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE)))
        .orderBy(port.folded(users.name), asc(users.id))
      const ids = people.map((p) => p.id)
      if (ids.length === 0) return []
      const factors = new Set((await db.select({ userId: secondFactors.userId }).from(secondFactors).where(inArray(secondFactors.userId, ids))).map((f) => f.userId))
      const signIns = await db
        .select({ userId: securityEvents.userId, at: sql<number | Date | null>`max(${securityEvents.createdAt})` })
        .from(securityEvents)
        .where(and(inArray(securityEvents.userId, ids), eq(securityEvents.kind, 'sign_in_succeeded')))
        .groupBy(securityEvents.userId)
      // A number of milliseconds on SQLite, a timestamp on PostgreSQL.
      const last = new Map(signIns.map((s) => [s.userId, s.at === null ? null : new Date(s.at)]))
      return people.map(({ administrator, collaborator, ...p }) => ({ ...p, role: staffRoleOf({ administrator, collaborator }), secondFactor: factors.has(p.id), lastSignInAt: last.get(p.id) ?? null }))
    },

    /** What a link names, without taking it. */
    async look(siteId: number, value: string): Promise<InvitationLook> {
      const [row] = await byLink(siteId, value)
      if (!row) return { kind: 'invalid' }
      const why = closed(row)
      if (why) return { kind: why }
      const account = await findUserByEmail(port, row.email)
      const { sites } = port.tables
      const [site] = await db.select({ name: sites.name }).from(sites).where(eq(sites.id, siteId))
      return { kind: 'open', email: row.email, role: staffRoleOf(row), siteName: site!.name, account: account && !account.disabled ? { id: account.id, hasPassword: account.passwordHash !== null } : null }
    },

    /**
     * Takes an invitation, once: the newcomer's account made with their password (a StoreError when
     * an account has the address already: it is proven instead), or the account given, which must be
     * the invited address's; then made support staff of the site (its administrator when invited as
     * one), its sessions on the site ended (their rights rose). All in one transaction.
     */
    async accept(siteId: number, value: string, taker: Taker, from: { address: string | null } = { address: null }): Promise<InvitationTaken> {
      return port.atomic(async (tx) => {
        const [row] = await tx.db.select().from(invitations).where(and(eq(invitations.siteId, siteId), eq(invitations.digest, box.digest(value))))
        if (!row) return { kind: 'invalid' }
        const now = new Date(clock())
        // Taken first, under the row's lock: of two at once, the second finds it taken.
        const taken = await tx.db
          .update(invitations)
          .set({ acceptedAt: now })
          .where(and(eq(invitations.id, row.id), isNull(invitations.acceptedAt), isNull(invitations.withdrawnAt), gt(invitations.expiresAt, now)))
          .returning({ id: invitations.id })
        if (taken.length === 0) return { kind: closed(row) ?? 'used' }
        let userId: number
        if ('userId' in taker) {
          const [user] = await tx.db.select({ email: users.email, disabled: users.disabled, passwordHash: users.passwordHash }).from(users).where(eq(users.id, taker.userId))
          if (!user || user.disabled || emailKey(user.email) !== row.email) throw new StoreError('this invitation is for another address', 'forbidden', 'email')
          if (taker.passwordHash !== undefined) {
            // Only an account without a password chooses one here: one with a password proves it instead.
            if (user.passwordHash !== null) throw new StoreError('this account has a password: sign in with it to join', 'forbidden', 'password')
            await tx.db.update(users).set({ passwordHash: taker.passwordHash }).where(eq(users.id, taker.userId))
          }
          userId = taker.userId
        } else {
          const unnamed = nameProblem(taker.newcomer.name)
          if (unnamed) throw new StoreError(unnamed, 'invalid', 'name')
          userId = (await insertUser(tx, clock, box, { email: row.email, name: taker.newcomer.name.trim() }, taker.newcomer.passwordHash)).id
        }
        // An administrator already (made so since the invitation) stays one.
        const [before] = await tx.db.select({ role: memberships.role, administrator: memberships.administrator }).from(memberships).where(and(eq(memberships.siteId, siteId), eq(memberships.userId, userId)))
        const role: StaffRole = isStaffRole(before?.role) && before!.administrator ? 'administrator' : staffRoleOf(row)
        await tx.db
          .insert(memberships)
          .values({ siteId, userId, role: STAFF_ROLE, ...roleFlags(role), createdAt: now })
          .onConflictDoUpdate({ target: [memberships.siteId, memberships.userId], set: { role: STAFF_ROLE, ...roleFlags(role) } })
        await endSessionsOn(tx, siteId, userId)
        await recordChange(tx, clock, { id: userId, name: row.email, via: 'page', address: from.address }, siteId, 'team.joined', row.email, { role })
        return { kind: 'accepted', userId, role }
      })
    },
  }
}

export type InvitationStore = ReturnType<typeof createInvitationStore>
