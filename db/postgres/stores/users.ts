import { randomBytes } from 'node:crypto'
import { and, eq } from '../../drizzle.ts'
import type { Role } from '../../values.ts'
import type { Clock } from '../../../lib/clock.ts'
import { holdsNul } from '../../../lib/nul.ts'
import { hashPassword } from '../../../lib/password.ts'
import { createSecretBox, type SecretBox } from '../../../lib/secret-box.ts'
import { issueLegacyToken } from '../../stores/legacy-tokens.ts'
import { isStaffRole, STAFF_ROLE } from '../../stores/staff.ts'
import {
  defaultSingleSignOnName,
  emailKey,
  emailProblem,
  emailTaken,
  noSuchUser,
  singleSignOnName,
  validateNewUser,
  type NewUser,
  type User,
  type UserStore,
} from '../../stores/users.ts'
import type { PgDb } from '../client.ts'
import { memberships, users } from '../schema.ts'
import { isUniqueViolation, pgMembershipOn, type PgExecutor } from './executor.ts'
import { createLegacyTokenStore } from './legacy-tokens.ts'

// Accounts and their roles on sites, on PostgreSQL: the behaviour of db/stores/users.ts. The
// functions exported beside the store take a PgExecutor, so other stores compose them inside
// their own transaction.

const EMAIL_KEY_UNIQUE = 'users_email_key_unique'

/** The account with this address (compared folded to lower case), or undefined. */
export async function findUserByEmail(q: PgExecutor, email: string): Promise<User | undefined> {
  // PostgreSQL text cannot hold U+0000, so no account has it (lib/nul.ts): not found, without a
  // query that the server would refuse.
  if (holdsNul(email)) return undefined
  const [user] = await q.select().from(users).where(eq(users.emailKey, emailKey(email)))
  return user
}

/**
 * Inserts an account already validated (validateNewUser), with its legacy token. An address
 * taken meanwhile, by this process or another, is the conflict StoreError: the unique index on
 * email_key has the last word. ON CONFLICT keeps a caller's transaction usable after that refusal.
 */
export async function insertUser(
  q: PgExecutor,
  clock: Clock,
  box: SecretBox,
  { email, name }: { email: string; name: string },
  passwordHash: string | null,
): Promise<User> {
  const inserted = await insertUserUnlessTaken(q, clock, box, { email, name }, passwordHash)
  if (!inserted) throw emailTaken(email)
  return inserted
}

/** The same; undefined (nothing written) when the address is taken. */
async function insertUserUnlessTaken(
  q: PgExecutor,
  clock: Clock,
  box: SecretBox,
  { email, name }: { email: string; name: string },
  passwordHash: string | null,
): Promise<User | undefined> {
  try {
    const [user] = await q
      .insert(users)
      // Every account is created with its legacy token (docs/decisions.md, "Legacy account token").
      .values({ email, emailKey: emailKey(email), name, passwordHash, createdAt: new Date(clock()), ...issueLegacyToken(clock, box).columns })
      .onConflictDoNothing({ target: users.emailKey })
      .returning()
    return user
  } catch (error) {
    // A conflict ON CONFLICT does not cover (the statement raced in a way it could not absorb).
    if (isUniqueViolation(error, EMAIL_KEY_UNIQUE)) return undefined
    throw error
  }
}

/** Validates a new account (address, name, password length) and checks its address is free. */
export async function checkNewUser(q: PgExecutor, input: NewUser): Promise<{ email: string; name: string }> {
  const checked = validateNewUser(input)
  if (await findUserByEmail(q, checked.email)) throw emailTaken(checked.email)
  return checked
}

/** Gives the user this role on the site (a membership made or changed). */
export async function setRole(q: PgExecutor, clock: Clock, siteId: number, userId: number, role: Role): Promise<void> {
  await q
    .insert(memberships)
    .values({ siteId, userId, role, createdAt: new Date(clock()) })
    .onConflictDoUpdate({ target: [memberships.siteId, memberships.userId], set: { role } })
}

/** The user's role on the site, or undefined. */
export async function roleOn(q: PgExecutor, siteId: number, userId: number): Promise<Role | undefined> {
  const [membership] = await q.select({ role: memberships.role }).from(memberships).where(pgMembershipOn(siteId, userId))
  return membership?.role
}

export function createUserStore(db: PgDb, clock: Clock, box: SecretBox = createSecretBox(randomBytes(32).toString('hex'))): UserStore {
  const legacyTokens = createLegacyTokenStore(db, clock, box)

  async function get(email: string): Promise<User> {
    const user = await findUserByEmail(db, email)
    if (!user) throw noSuchUser(email)
    return user
  }

  return {
    find: (email) => findUserByEmail(db, email),
    get,
    legacyTokens,

    async add(input) {
      const checked = await checkNewUser(db, input)
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
      return insertUser(db, clock, box, checked, passwordHash)
    },

    async insert(input, passwordHash) {
      return insertUser(db, clock, box, await checkNewUser(db, input), passwordHash)
    },

    async fromSingleSignOn(siteId, email, name) {
      if (emailProblem(email)) return undefined
      const given = singleSignOnName(name)
      return db.transaction(async (tx) => {
        // Race-safe: of two first sign-ins of one address, one inserts and the other, waiting on
        // the unique index, inserts nothing and reads the account the first committed.
        let user =
          (await findUserByEmail(tx, email)) ??
          (await insertUserUnlessTaken(tx, clock, box, { email: email.trim(), name: given ?? defaultSingleSignOnName(email) }, null)) ??
          (await findUserByEmail(tx, email))
        if (!user) throw new Error(`the account "${email}" was taken and then removed during a sign-in`)
        if (given && given !== user.name) {
          await tx.update(users).set({ name: given }).where(eq(users.id, user.id))
          user = { ...user, name: given }
        }
        await tx.insert(memberships).values({ siteId, userId: user.id, role: 'customer', createdAt: new Date(clock()) }).onConflictDoNothing()
        return user
      })
    },

    async setDisabled(email, disabled) {
      const user = await get(email)
      await db.update(users).set({ disabled }).where(eq(users.id, user.id))
      return { ...user, disabled }
    },

    async byId(id) {
      const [user] = await db.select().from(users).where(eq(users.id, id))
      return user
    },

    role: (siteId, userId) => roleOn(db, siteId, userId),

    async isStaff(siteId, userId) {
      return isStaffRole(await roleOn(db, siteId, userId))
    },

    addStaff: (siteId, userId) => setRole(db, clock, siteId, userId, STAFF_ROLE),

    async removeStaff(siteId, userId) {
      const changed = await db
        .update(memberships)
        .set({ role: 'customer' })
        .where(and(pgMembershipOn(siteId, userId), eq(memberships.role, STAFF_ROLE)))
        .returning({ userId: memberships.userId })
      return changed.length > 0
    },
  }
}
