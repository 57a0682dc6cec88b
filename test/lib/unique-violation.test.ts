import t from 'tap'
import { openPostgres } from '../../db/postgres/client.ts'
import { memberships as pgMemberships, users as pgUsers } from '../../db/schema/postgres.ts'
import { openDatabase } from '../../db/sqlite/client.ts'
import { memberships, users } from '../../db/schema/sqlite.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// isUniqueViolation: how the stores tell "taken" from any other failure, on the errors each
// engine's driver and drizzle really throw.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

const emailKey = { table: 'users', column: 'email_key' }
const account = (email: string, fingerprint: string) => ({ email, emailKey: email, name: 'A', createdAt: new Date(), legacyTokenFingerprint: fingerprint })

t.test('PostgreSQL: a unique violation, as drizzle throws it or as the driver does, on any or on the named index', { skip: down }, async (t) => {
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  await db.insert(pgUsers).values(account('a@example.test', 'f1'))

  const taken = await db.insert(pgUsers).values(account('a@example.test', 'f2')).catch((e: unknown) => e)
  t.match(taken, { cause: { code: '23505', constraint: 'users_email_key_unique' } }, "drizzle's error, the driver's as its cause")
  t.ok(isUniqueViolation(taken))
  t.ok(isUniqueViolation(taken, emailKey))
  const driver = (taken as { cause: unknown }).cause
  t.ok(isUniqueViolation(driver, emailKey), "the driver's own error")
  t.ok(isUniqueViolation(new Error('again', { cause: new Error('and again', { cause: taken }) }), emailKey), "the driver's error three causes down")
  t.notOk(isUniqueViolation(new Error('1', { cause: new Error('2', { cause: new Error('3', { cause: taken }) }) })), 'four causes down is past the look')

  const fingerprint = await db.insert(pgUsers).values(account('b@example.test', 'f1')).catch((e: unknown) => e)
  t.ok(isUniqueViolation(fingerprint), 'another unique index')
  t.notOk(isUniqueViolation(fingerprint, emailKey), 'is not the address taken')

  const missing = await db.insert(pgMemberships).values({ siteId: 999, userId: 999, role: 'customer', createdAt: new Date() }).catch((e: unknown) => e)
  t.match(missing, { cause: { code: '23503' } })
  t.notOk(isUniqueViolation(missing), 'a foreign key violation is not one')
})

t.test('SQLite: the same, from better-sqlite3', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.$client.close())
  db.insert(users).values(account('a@example.test', 'f1')).run()
  const taken = (() => {
    try {
      db.insert(users).values(account('a@example.test', 'f2')).run()
    } catch (error) {
      return error
    }
  })()
  t.match(taken, { code: 'SQLITE_CONSTRAINT_UNIQUE' })
  t.ok(isUniqueViolation(taken))
  t.ok(isUniqueViolation(taken, emailKey))
  const fingerprint = (() => {
    try {
      db.insert(users).values(account('b@example.test', 'f1')).run()
    } catch (error) {
      return error
    }
  })()
  t.ok(isUniqueViolation(fingerprint), 'another unique index')
  t.notOk(isUniqueViolation(fingerprint, emailKey), 'is not the address taken')
  const missing = (() => {
    try {
      db.insert(memberships).values({ siteId: 999, userId: 999, role: 'customer', createdAt: new Date() }).run()
    } catch (error) {
      return error
    }
  })()
  t.match(missing, { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' })
  t.notOk(isUniqueViolation(missing), 'a foreign key violation is not one')
})

t.test('anything else is not one', async (t) => {
  t.notOk(isUniqueViolation(undefined))
  t.notOk(isUniqueViolation(null))
  t.notOk(isUniqueViolation(new Error('23505')))
  t.notOk(isUniqueViolation({ code: 23505 }), 'a number is no SQLSTATE')
  const loop: { code: string; cause?: unknown } = { code: '40001' }
  loop.cause = loop
  t.notOk(isUniqueViolation(loop), 'a chain that loops ends')
})
