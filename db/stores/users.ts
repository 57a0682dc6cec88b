import { randomBytes } from 'node:crypto'
import { and, eq, sql } from '../drizzle.ts'
import type { Db } from '../sqlite/client.ts'
import { memberships, users } from '../sqlite/schema.ts'
import type { Role } from '../values.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul, withoutNul } from '../../lib/nul.ts'
import { hashPassword } from '../../lib/password.ts'
import { createSecretBox, type SecretBox } from '../../lib/secret-box.ts'
import { StoreError } from './errors.ts'
import { createLegacyTokenStore } from './legacy-tokens.ts'
import { isStaffRole, membershipOn, STAFF_ROLE } from './staff.ts'
import type { Async } from './async.ts'

export type User = typeof users.$inferSelect

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

/** The email and name a new account is made with, or a StoreError; whether the address is taken is the caller's to ask. */
export function validateNewUser(input: NewUser): { email: string; name: string } {
  const problem = emailProblem(input.email)
  if (problem) throw new StoreError(problem, 'invalid', 'email')
  const email = input.email.trim()
  const name = (input.name ?? email.split('@')[0]).trim()
  if (name === '' || name.length > 100) throw new StoreError('a name must be 1 to 100 characters', 'invalid', 'name')
  if (holdsNul(name)) throw new StoreError('a name must not contain the character U+0000', 'invalid', 'name')
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

/**
 * Accounts and their roles on sites. `box` holds the server key that seals each account's legacy
 * token; the server and the CLI pass theirs, and without one (a test's private database) a random
 * key of this process is used.
 */
export function createUserStore(db: Db, clock: Clock, box: SecretBox = createSecretBox(randomBytes(32).toString('hex'))) {
  const legacyTokens = createLegacyTokenStore(db, clock, box)

  const byEmailKey = db
    .select()
    .from(users)
    .where(eq(users.emailKey, sql.placeholder('key')))
    .prepare()

  // Asked on every request authenticated by multipass or password.
  const roleOn = db
    .select({ role: memberships.role })
    .from(memberships)
    .where(membershipOn(sql.placeholder('siteId'), sql.placeholder('userId')))
    .prepare()

  const byIdStatement = db
    .select()
    .from(users)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare()

  function find(email: string): User | undefined {
    // No account is stored under an address holding U+0000 (lib/nul.ts), as on PostgreSQL.
    if (holdsNul(email)) return undefined
    return byEmailKey.get({ key: emailKey(email) })
  }

  function get(email: string): User {
    const user = find(email)
    if (!user) throw noSuchUser(email)
    return user
  }

  function validate(input: NewUser): { email: string; name: string } {
    const { email, name } = validateNewUser(input)
    if (find(email)) throw emailTaken(email)
    return { email, name }
  }

  function insert({ email, name }: { email: string; name: string }, passwordHash: string | null): User {
    try {
      return db
        .insert(users)
        // Every account is created with its legacy token (docs/decisions.md, "Legacy account token").
        .values({ email, emailKey: emailKey(email), name, passwordHash, createdAt: new Date(clock()), ...legacyTokens.issue().columns })
        .returning()
        .get()
    } catch (error) {
      // Another process may have taken the address since validate(); the unique index has the last word.
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw emailTaken(email)
      }
      throw error
    }
  }

  function setRole(siteId: number, userId: number, role: Role): void {
    db.insert(memberships)
      .values({ siteId, userId, role, createdAt: new Date(clock()) })
      .onConflictDoUpdate({ target: [memberships.siteId, memberships.userId], set: { role } })
      .run()
  }

  return {
    find,
    get,
    /** The accounts' legacy tokens: look-up, show (profile page, CLI) and reset. */
    legacyTokens,

    /** Creates an account. The password is hashed (off the event loop) before anything is written. */
    async add(input: NewUser): Promise<User> {
      const checked = validate(input)
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
      return insert(checked, passwordHash)
    },

    /** The same, for a caller that hashed the password already and must stay inside one transaction. */
    insert(input: NewUser, passwordHash: string | null): User {
      return insert(validate(input), passwordHash)
    },

    /**
     * The account a multipass sign-in on the web names: an unknown email becomes a new account
     * (no password) and a customer of the site; a known one takes the name the token carries and
     * joins the site as a customer if it is not on it yet (a supporter stays a supporter).
     * Undefined for an address that is not one.
     */
    fromSingleSignOn(siteId: number, email: string, name?: string): User | undefined {
      if (emailProblem(email)) return undefined
      const given = singleSignOnName(name)
      return db.transaction(
        () => {
          let user = find(email) ?? insert({ email: email.trim(), name: given ?? defaultSingleSignOnName(email) }, null)
          if (given && given !== user.name) {
            db.update(users).set({ name: given }).where(eq(users.id, user.id)).run()
            user = { ...user, name: given }
          }
          db.insert(memberships).values({ siteId, userId: user.id, role: 'customer', createdAt: new Date(clock()) }).onConflictDoNothing().run()
          return user
        },
        { behavior: 'immediate' },
      )
    },

    setDisabled(email: string, disabled: boolean): User {
      const user = get(email)
      db.update(users).set({ disabled }).where(eq(users.id, user.id)).run()
      return { ...user, disabled }
    },

    /** The account with this id, or undefined (an OAuth grant names its account by id). */
    byId(id: number): User | undefined {
      return byIdStatement.get({ id })
    },

    role(siteId: number, userId: number): Role | undefined {
      return roleOn.get({ siteId, userId })?.role
    },

    /** Whether the user is support staff of the site (db/stores/staff.ts). */
    isStaff(siteId: number, userId: number): boolean {
      return isStaffRole(roleOn.get({ siteId, userId })?.role)
    },

    addStaff(siteId: number, userId: number): void {
      setRole(siteId, userId, STAFF_ROLE)
    },

    /** The user stays on the site as a customer, so what they wrote there keeps its author. */
    removeStaff(siteId: number, userId: number): boolean {
      const result = db
        .update(memberships)
        .set({ role: 'customer' })
        .where(and(membershipOn(siteId, userId), eq(memberships.role, STAFF_ROLE)))
        .run()
      return result.changes > 0
    },
  }
}

/** The SQLite store as written: synchronous, for composing inside one transaction. */
export type SyncUserStore = ReturnType<typeof createUserStore>
export type UserStore = Async<SyncUserStore>
