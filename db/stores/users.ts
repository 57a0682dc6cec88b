import { randomBytes } from 'node:crypto'
import { and, eq, inArray, ne, or, sql } from '../drizzle.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { Role, StaffRole } from '../values.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul, withoutNul } from '../../lib/nul.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { hashPassword } from '../../lib/password.ts'
import { createSecretBox, type SecretBox } from '../../lib/secret-box.ts'
import { unassignEverything } from './assignment.ts'
import type { NotificationChoice } from './notifications.ts'
import { StoreError } from './errors.ts'
import { lockSite } from './sites.ts'
import { recordChange, type Actor } from './audit.ts'
import { createLegacyTokenStore, issueLegacyToken } from './legacy-tokens.ts'
import { answeringStaff, enabledUser, isStaffRole, membershipOn, roleFlags, STAFF_ROLE, staffRoleOf } from './staff.ts'

export type User = Tables['users']['$inferSelect']

// Deliberately loose: one @, something on each side, no spaces. Mail delivery is the real test.
const EMAIL = /^[^\s@]+@[^\s@]+$/
const MAX_EMAIL = 254
export const MIN_PASSWORD = 8

export interface NewUser {
  email: string
  name?: string
  password?: string
}

export function emailKey(email: string): string {
  return email.trim().toLowerCase()
}

export function emailProblem(email: string): string | null {
  // Before the address is quoted: a message with U+0000 in it would carry it to a terminal.
  if (holdsNul(email)) return 'an email address must not contain the character U+0000'
  const trimmed = email.trim()
  if (!EMAIL.test(trimmed) || trimmed.length > MAX_EMAIL) return `"${email}" is not an email address`
  return null
}

/** Why a name will not do (a clause), or null: 1 to 100 characters once trimmed, without U+0000. */
export function nameProblem(name: string): string | null {
  const trimmed = name.trim()
  if (trimmed === '' || trimmed.length > 100) return 'a name must be 1 to 100 characters'
  if (holdsNul(trimmed)) return 'a name must not contain the character U+0000'
  return null
}

/** The email and name a new account is made with, or a StoreError; whether the address is taken is the caller's to ask. */
export function validateNewUser(input: NewUser): { email: string; name: string } {
  const problem = emailProblem(input.email)
  if (problem) throw new StoreError(problem, 'invalid', 'email')
  const email = input.email.trim()
  const name = (input.name ?? email.split('@')[0]).trim()
  const unnamed = nameProblem(name)
  if (unnamed) throw new StoreError(unnamed, 'invalid', 'name')
  if (input.password !== undefined && input.password.length < MIN_PASSWORD) {
    throw new StoreError(`a password must be at least ${MIN_PASSWORD} characters`, 'invalid', 'password')
  }
  return { email, name }
}

export function emailTaken(email: string): StoreError {
  return new StoreError(`a user with the email "${email}" already exists`, 'conflict', 'email')
}

export function noSuchUser(email: string): StoreError {
  return new StoreError(`there is no user "${email}"`, 'not_found', 'email')
}

/**
 * What a multipass sign-in names an account: the token's name without U+0000 (the site that signed
 * it meant the rest; the sign-in goes on), trimmed, at most 100 characters; or undefined.
 */
export function singleSignOnName(name: string | undefined): string | undefined {
  return (name === undefined ? '' : withoutNul(name)).trim().slice(0, 100) || undefined
}

/** The name of an account a multipass sign-in makes without one: the address's local part. */
export function defaultSingleSignOnName(email: string): string {
  return email.trim().split('@')[0].slice(0, 100)
}

// Accounts and their roles on sites, one store for both engines (db/port.ts). The functions
// exported beside the store take the port, so other stores compose them inside their own
// transaction (the port `atomic` gave them).

/** The account with this address (compared folded to lower case), or undefined. */
export async function findUserByEmail(port: StorePort, email: string): Promise<User | undefined> {
  // No account is stored under an address holding U+0000 (PostgreSQL text cannot hold it,
  // lib/nul.ts): not found, without a query the server would refuse.
  if (holdsNul(email)) return undefined
  const { users } = port.tables
  const byKey = port.prepared('users_by_email_key', (db) => db.select().from(users).where(eq(users.emailKey, sql.placeholder('key'))).prepare('users_by_email_key'))
  const [user] = await byKey.execute({ key: emailKey(email) })
  return user
}

/** Validates a new account (address, name, password length) and checks its address is free. */
export async function checkNewUser(port: StorePort, input: NewUser): Promise<{ email: string; name: string }> {
  const checked = validateNewUser(input)
  if (await findUserByEmail(port, checked.email)) throw emailTaken(checked.email)
  return checked
}

/**
 * Inserts an account already validated, with its legacy token; undefined (nothing written) when
 * the address is taken meanwhile, by this process or another: the unique index on email_key has
 * the last word, and ON CONFLICT keeps a caller's transaction usable after that refusal.
 */
async function insertUnlessTaken(port: StorePort, clock: Clock, box: SecretBox, { email, name }: { email: string; name: string }, passwordHash: string | null) {
  const { db, tables: { users } } = port
  try {
    const [user] = await db
      .insert(users)
      // Every account is created with its legacy token (docs/decisions.md, "Legacy account token").
      .values({ email, emailKey: emailKey(email), name, passwordHash, createdAt: new Date(clock()), ...issueLegacyToken(clock, box).columns })
      .onConflictDoNothing({ target: users.emailKey })
      .returning()
    return user
  } catch (error) {
    // A conflict ON CONFLICT does not absorb (two PostgreSQL inserts racing past it).
    if (isUniqueViolation(error, { table: 'users', column: 'email_key' })) return undefined
    throw error
  }
}

/** The same, the conflict StoreError when the address is taken. */
export async function insertUser(port: StorePort, clock: Clock, box: SecretBox, checked: { email: string; name: string }, passwordHash: string | null): Promise<User> {
  const user = await insertUnlessTaken(port, clock, box, checked, passwordHash)
  if (!user) throw emailTaken(checked.email)
  return user
}

/**
 * The account with this address, or a new one without a password, made from `newcomer()` (called
 * only when there is none: it validates). Of two calls naming one new address at once (any
 * processes), one inserts and the other, waiting on the unique index, reads the account the first
 * committed; an account taken and gone again meanwhile is the conflict StoreError.
 */
export async function findOrMakeUser(port: StorePort, clock: Clock, box: SecretBox, email: string, newcomer: () => { email: string; name: string }): Promise<User> {
  const user =
    (await findUserByEmail(port, email)) ??
    (await insertUnlessTaken(port, clock, box, newcomer(), null)) ??
    (await findUserByEmail(port, email))
  if (!user) throw emailTaken(email)
  return user
}

/** The user's role on the site, or undefined. */
export async function roleOn(port: StorePort, siteId: number, userId: number): Promise<Role | undefined> {
  const { memberships } = port.tables
  const role = port.prepared('users_role_on', (db) =>
    db
      .select({ role: memberships.role })
      .from(memberships)
      .where(membershipOn(memberships, sql.placeholder('siteId'), sql.placeholder('userId')))
      .prepare('users_role_on'),
  )
  return (await role.execute({ siteId, userId }))[0]?.role
}

/** Makes the user a customer of the site, unless they are on it already. */
export async function joinAsCustomer(port: StorePort, clock: Clock, siteId: number, userId: number): Promise<void> {
  const { memberships } = port.tables
  const p = sql.placeholder
  const join = port.prepared('users_join_as_customer', (db) =>
    db.insert(memberships).values({ siteId: p('siteId'), userId: p('userId'), role: 'customer', createdAt: p('at') }).onConflictDoNothing().prepare('users_join_as_customer'),
  )
  await join.execute({ siteId, userId, at: new Date(clock()) })
}

/** Ends the user's sessions on the site: their rights there rose, and a session keeps the rights it began with. */
/**
 * Refuses to take the last administrator of a site whose account is on from it (a StoreError),
 * under the site's lock: the team's pages and API never leave a site nobody can run (the operator's
 * `staff remove` may, and `staff add --admin` mends it).
 */
async function keepsAnAdministrator(tx: StorePort, siteId: number, leaving: number): Promise<void> {
  const { memberships, users } = tx.tables
  const [other] = await tx.db
    .select({ id: memberships.userId })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.siteId, siteId), eq(memberships.role, STAFF_ROLE), eq(memberships.administrator, true), enabledUser(users), ne(memberships.userId, leaving)))
    .limit(1)
  if (!other) throw new StoreError('the site would have no administrator left: make someone else one first', 'conflict', 'user')
}

/** The address of an account (never deleted), as the record of changes names the person a change was made to. */
async function emailOf(port: StorePort, userId: number): Promise<string> {
  const { users } = port.tables
  const [user] = await port.db.select({ email: users.email }).from(users).where(eq(users.id, userId))
  return user!.email
}

/** What each role of the staff allows, in order: a change up ends the person's sessions (they sign in again). */
const STAFF_RANK: Record<StaffRole, number> = { collaborator: 0, supporter: 1, administrator: 2 }

export async function endSessionsOn(port: StorePort, siteId: number, userId: number): Promise<void> {
  const { webSessions } = port.tables
  await port.db.delete(webSessions).where(and(eq(webSessions.siteId, siteId), eq(webSessions.userId, userId)))
}

/**
 * Moves on the versions of what shows a person's name (docs/decisions.md, "Conditional
 * requests"): the discussions they opened or commented, and the sites they are on. Whoever wrote
 * on a site is on it (an author joins as a customer, staff removal keeps the membership, and no
 * membership is deleted), so their memberships name every site that shows them. Discussions first,
 * then sites, in the order a reply takes its locks.
 */
async function nameShownAnew(port: StorePort, userId: number): Promise<void> {
  const { comments, discussions, memberships, sites } = port.tables
  const commented = port.db.select({ id: comments.discussionId }).from(comments).where(eq(comments.authorId, userId))
  await port.db
    .update(discussions)
    .set({ version: sql`${discussions.version} + 1` })
    .where(or(eq(discussions.authorId, userId), eq(discussions.assigneeId, userId), inArray(discussions.id, commented)))
  const theirSites = port.db.select({ id: memberships.siteId }).from(memberships).where(eq(memberships.userId, userId))
  await port.db.update(sites).set({ version: sql`${sites.version} + 1` }).where(inArray(sites.id, theirSites))
}

/**
 * `box` holds the server key that seals each account's legacy token; the server and the CLI pass
 * theirs, and without one (a test's private database) a random key of this process is used.
 */
export function createUserStore(port: StorePort, clock: Clock, box: SecretBox = createSecretBox(randomBytes(32).toString('hex'))) {
  const { db, tables: { memberships, sites, users } } = port
  const legacyTokens = createLegacyTokenStore(port, clock, box)

  const byIdStatement = onFirstUse(() => db
    .select()
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare('users_by_id'))

  async function get(email: string): Promise<User> {
    const user = await findUserByEmail(port, email)
    if (!user) throw noSuchUser(email)
    return user
  }

  // Asked on every request authenticated by multipass or password.
  const role = (siteId: number, userId: number) => roleOn(port, siteId, userId)

  return {
    find: (email: string) => findUserByEmail(port, email),
    get,
    /** The accounts' legacy tokens: look-up, show (profile page, CLI) and reset. */
    legacyTokens,

    /** Creates an account. The password is hashed (off the event loop) before anything is written. */
    async add(input: NewUser): Promise<User> {
      const checked = await checkNewUser(port, input)
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
      return insertUser(port, clock, box, checked, passwordHash)
    },

    /** The same, for a caller that hashed the password already. */
    async insert(input: NewUser, passwordHash: string | null): Promise<User> {
      return insertUser(port, clock, box, await checkNewUser(port, input), passwordHash)
    },

    /**
     * The account a multipass sign-in on the web names: an unknown email becomes a new account
     * (no password) and a customer of the site; a known one joins the site as a customer if it is
     * not on it yet, and takes the name the token carries only while this site is the only one it
     * is on: one site's key does not rename a person other sites know. Undefined for an address
     * that is not one. (Who may sign in so is the caller's to decide: routes/web/sign-in.ts.)
     */
    async fromSingleSignOn(siteId: number, email: string, name?: string): Promise<User | undefined> {
      if (emailProblem(email)) return undefined
      const given = singleSignOnName(name)
      return port.atomic(async (tx) => {
        let user = await findOrMakeUser(tx, clock, box, email, () => ({ email: email.trim(), name: given ?? defaultSingleSignOnName(email) }))
        const elsewhere = await tx.db
          .select({ siteId: memberships.siteId })
          .from(memberships)
          .where(and(eq(memberships.userId, user.id), ne(memberships.siteId, siteId)))
          .limit(1)
        if (given && given !== user.name && elsewhere.length === 0) {
          await tx.db.update(users).set({ name: given }).where(eq(users.id, user.id))
          await nameShownAnew(tx, user.id)
          user = { ...user, name: given }
        }
        await joinAsCustomer(tx, clock, siteId, user.id)
        return user
      })
    },

    /** The account's name as its person chose it on their profile; a StoreError for one that will not do. */
    async setName(userId: number, name: string): Promise<string> {
      const trimmed = name.trim()
      const problem = nameProblem(trimmed)
      if (problem) throw new StoreError(problem, 'invalid', 'name')
      await port.atomic(async (tx) => {
        await tx.db.update(users).set({ name: trimmed }).where(eq(users.id, userId))
        await nameShownAnew(tx, userId)
      })
      return trimmed
    },

    /** Gives the account a new password (its hash): the old one stops working at once. */
    async setPassword(email: string, passwordHash: string): Promise<User> {
      const user = await get(email)
      await db.update(users).set({ passwordHash }).where(eq(users.id, user.id))
      return { ...user, passwordHash }
    },

    /** An account switched off owns no discussion any more (db/stores/assignment.ts). */
    async setDisabled(email: string, disabled: boolean): Promise<User> {
      const user = await get(email)
      await port.atomic(async (tx) => {
        await tx.db.update(users).set({ disabled }).where(eq(users.id, user.id))
        if (disabled) await unassignEverything(tx, new Date(clock()), user.id)
      })
      return { ...user, disabled }
    },

    /** What the supporter is mailed about on the site (db/stores/notifications.ts), the site's default for new discussions until they choose; undefined when they are not on its staff. */
    async notifications(siteId: number, userId: number): Promise<NotificationChoice | undefined> {
      const [found] = await db
        .select({ chosen: memberships.notifyNew, teamDefault: sites.newDiscussionsToTeam, owned: memberships.notifyOwned, digest: memberships.notifyDigest })
        .from(memberships)
        .innerJoin(sites, eq(sites.id, memberships.siteId))
        .where(and(membershipOn(memberships, siteId, userId), eq(memberships.role, STAFF_ROLE)))
      // Not chosen yet: as the site says for its team.
      return found && { newDiscussions: found.chosen ?? found.teamDefault, owned: found.owned, digest: found.digest }
    },

    async setNotifications(siteId: number, userId: number, choice: NotificationChoice): Promise<void> {
      await db
        .update(memberships)
        .set({ notifyNew: choice.newDiscussions, notifyOwned: choice.owned, notifyDigest: choice.digest })
        .where(membershipOn(memberships, siteId, userId))
    },

    /** The keys of the site's fields the supporter shows as columns of their queue (issue 72); shown in the site's order. */
    async queueFields(siteId: number, userId: number): Promise<string[]> {
      const [found] = await db.select({ keys: memberships.queueFields }).from(memberships).where(membershipOn(memberships, siteId, userId))
      return found ? (JSON.parse(found.keys) as string[]) : []
    },

    async setQueueFields(siteId: number, userId: number, keys: string[]): Promise<void> {
      await db.update(memberships).set({ queueFields: JSON.stringify(keys) }).where(membershipOn(memberships, siteId, userId))
    },

    /** The account with this id, or undefined (an OAuth grant names its account by id). */
    async byId(id: number): Promise<User | undefined> {
      return (await byIdStatement.execute({ id }))[0]
    },

    role,

    /** Whether the user is support staff of the site (db/stores/staff.ts). */
    async isStaff(siteId: number, userId: number): Promise<boolean> {
      return isStaffRole(await role(siteId, userId))
    },

    /** The user's role on the site's staff (administrator, supporter, collaborator), or undefined when they are not on it. */
    async staffRole(siteId: number, userId: number): Promise<StaffRole | undefined> {
      const found = port.prepared('users_staff_role', (db) =>
        db
          .select({ role: memberships.role, administrator: memberships.administrator, collaborator: memberships.collaborator })
          .from(memberships)
          .where(membershipOn(memberships, sql.placeholder('siteId'), sql.placeholder('userId')))
          .prepare('users_staff_role'),
      )
      const [membership] = await found.execute({ siteId, userId })
      return membership && isStaffRole(membership.role) ? staffRoleOf(membership) : undefined
    },

    /**
     * Gives someone of the site's staff another role; whether it changed. A StoreError for someone
     * not on its staff. A role that allows more (a collaborator made a supporter, a supporter an
     * administrator) ends their sessions on the site, as addStaff does; one that allows less ends
     * nothing, because every request reads the role. A collaborator owns nothing: what they owned
     * goes back to the team (db/stores/assignment.ts).
     */
    async setStaffRole(siteId: number, userId: number, next: StaffRole, by?: Actor): Promise<boolean> {
      return port.atomic(async (tx) => {
        // The site first: two administrators changing each other at once take turns (keepsAnAdministrator).
        await lockSite(tx, siteId)
        const [before] = await tx
          .locked(tx.db.select({ role: memberships.role, administrator: memberships.administrator, collaborator: memberships.collaborator }).from(memberships).where(membershipOn(memberships, siteId, userId)))
        if (!before || !isStaffRole(before.role)) throw new StoreError('there is nobody of that id on the staff of this site', 'not_found', 'user')
        const was = staffRoleOf(before)
        if (was === next) return false
        if (was === 'administrator') await keepsAnAdministrator(tx, siteId, userId)
        await tx.db.update(memberships).set(roleFlags(next)).where(membershipOn(memberships, siteId, userId))
        if (STAFF_RANK[next] > STAFF_RANK[was]) await endSessionsOn(tx, siteId, userId)
        if (next === 'collaborator') await unassignEverything(tx, new Date(clock()), userId, siteId)
        await recordChange(tx, clock, by, siteId, 'team.role_changed', await emailOf(tx, userId), { before: { role: was }, after: { role: next } })
        return true
      })
    },

    /**
     * Gives the user the staff role on the site (a membership made or changed), and makes them its
     * administrator when asked; an administrator added again stays one. A session of theirs on the
     * site made before their rights rose ends, in the same transaction: the rights of a session
     * follow the person's role, so they sign in again (a customer's single sign-on session never
     * becomes a supporter's).
     */
    async addStaff(siteId: number, userId: number, { administrator = false, by }: { administrator?: boolean; by?: Actor } = {}): Promise<void> {
      const set: { role: Role; administrator?: boolean; collaborator?: boolean } = administrator ? { role: STAFF_ROLE, administrator, collaborator: false } : { role: STAFF_ROLE }
      await port.atomic(async (tx) => {
        const [before] = await tx.db.select({ role: memberships.role, administrator: memberships.administrator, collaborator: memberships.collaborator }).from(memberships).where(membershipOn(memberships, siteId, userId))
        await tx.db
          .insert(memberships)
          .values({ siteId, userId, role: STAFF_ROLE, administrator, createdAt: new Date(clock()) })
          .onConflictDoUpdate({ target: [memberships.siteId, memberships.userId], set })
        const rose = !isStaffRole(before?.role) || (administrator && !before.administrator)
        if (rose) await endSessionsOn(tx, siteId, userId)
        const was = isStaffRole(before?.role) ? staffRoleOf(before!) : null
        if (rose) await recordChange(tx, clock, by, siteId, was ? 'team.role_changed' : 'team.added', await emailOf(tx, userId), was ? { before: { role: was }, after: { role: 'administrator' } } : { role: administrator ? 'administrator' : 'supporter' })
      })
    },

    /**
     * Makes a supporter of the site its administrator, or no longer one; whether anything changed.
     * A StoreError for someone not on its staff: only supporters administer a site. Made one, their
     * sessions on the site end, as in addStaff.
     */
    async setAdministrator(siteId: number, userId: number, administrator: boolean, by?: Actor): Promise<boolean> {
      if (!isStaffRole(await role(siteId, userId))) throw new StoreError('only support staff of the site can be its administrators; add them to the staff first', 'invalid', 'email')
      return port.atomic(async (tx) => {
        const changed = await tx.db
          .update(memberships)
          .set(administrator ? { administrator, collaborator: false } : { administrator })
          .where(and(membershipOn(memberships, siteId, userId), eq(memberships.administrator, !administrator)))
          .returning({ userId: memberships.userId })
        if (administrator && changed.length > 0) await endSessionsOn(tx, siteId, userId)
        if (changed.length > 0) await recordChange(tx, clock, by, siteId, 'team.role_changed', await emailOf(tx, userId), { before: { role: administrator ? 'supporter' : 'administrator' }, after: { role: administrator ? 'administrator' : 'supporter' } })
        return changed.length > 0
      })
    },

    /**
     * The sites where the user is support staff, with whether each requires a second factor of its
     * staff: what decides whether the account-wide legacy token may be shown (routes/web/profile.ts)
     * and whether a single sign-on may sign the account in (routes/web/sign-in.ts).
     */
    async staffSites(userId: number): Promise<Array<{ siteId: number; secondFactorRequired: boolean }>> {
      const { sites } = port.tables
      return db
        .select({ siteId: memberships.siteId, secondFactorRequired: sites.staffSecondFactor })
        .from(memberships)
        .innerJoin(sites, eq(sites.id, memberships.siteId))
        .where(and(eq(memberships.userId, userId), eq(memberships.role, STAFF_ROLE)))
    },

    /** Whether the user is an administrator of the site: a supporter with the flag. */
    async isAdministrator(siteId: number, userId: number): Promise<boolean> {
      const found = port.prepared('users_administrator_of', (db) =>
        db
          .select({ role: memberships.role, administrator: memberships.administrator })
          .from(memberships)
          .where(membershipOn(memberships, sql.placeholder('siteId'), sql.placeholder('userId')))
          .prepare('users_administrator_of'),
      )
      const [membership] = await found.execute({ siteId, userId })
      return membership !== undefined && isStaffRole(membership.role) && membership.administrator
    },

    /**
     * The user stays on the site as a customer, so what they wrote there keeps its author; an
     * administrator no longer, and the owner of nothing (db/stores/assignment.ts).
     */
    async removeStaff(siteId: number, userId: number, { keepAnAdministrator = false, by }: { keepAnAdministrator?: boolean; by?: Actor } = {}): Promise<boolean> {
      return port.atomic(async (tx) => {
        if (keepAnAdministrator) {
          await lockSite(tx, siteId)
          await keepsAnAdministrator(tx, siteId, userId)
        }
        const changed = await tx.db
          .update(memberships)
          .set({ role: 'customer', administrator: false, collaborator: false })
          .where(and(membershipOn(memberships, siteId, userId), eq(memberships.role, STAFF_ROLE)))
          .returning({ userId: memberships.userId })
        if (changed.length > 0) {
          await unassignEverything(tx, new Date(clock()), userId, siteId)
          await recordChange(tx, clock, by, siteId, 'team.removed', await emailOf(tx, userId))
        }
        return changed.length > 0
      })
    },

    /** The site's supporters and administrators whose accounts are on, by name: who may own a discussion (not its collaborators). */
    async staffOf(siteId: number): Promise<Array<{ id: number; name: string; email: string }>> {
      return db
        .select({ id: users.id, name: users.name, email: users.email })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(eq(memberships.siteId, siteId), answeringStaff(memberships), enabledUser(users)))
        .orderBy(port.folded(users.name), users.id)
    },
  }
}

export type UserStore = ReturnType<typeof createUserStore>
