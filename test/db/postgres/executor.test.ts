import t from 'tap'
import { openPostgres } from '../../../db/postgres/client.ts'
import { memberships, sites } from '../../../db/postgres/schema.ts'
import { isUniqueViolation } from '../../../db/postgres/stores/executor.ts'
import { freshPostgresAddress, POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'

// isUniqueViolation: how the PostgreSQL stores tell "taken" from any other failure, on the errors
// the driver and drizzle really throw.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

t.test('a unique violation, as drizzle throws it or as the driver does, on any or on the named constraint', { skip: down }, async (t) => {
  const db = await openPostgres(await freshPostgresAddress(t), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  const site = { permalink: 'demo', name: 'Demo', multipassKey: 'k', createdAt: new Date() }
  await db.insert(sites).values(site)

  const taken = await db.insert(sites).values(site).catch((e: unknown) => e)
  t.match(taken, { cause: { code: '23505', constraint: 'sites_permalink_unique' } }, "drizzle's error, the driver's as its cause")
  t.ok(isUniqueViolation(taken))
  t.ok(isUniqueViolation(taken, 'sites_permalink_unique'))
  t.notOk(isUniqueViolation(taken, 'users_email_key_unique'), 'another constraint is not this one')
  const driver = (taken as { cause: unknown }).cause
  t.ok(isUniqueViolation(driver, 'sites_permalink_unique'), "the driver's own error")
  t.ok(isUniqueViolation(new Error('again', { cause: new Error('and again', { cause: taken }) }), 'sites_permalink_unique'), "the driver's error three causes down")
  t.notOk(isUniqueViolation(new Error('1', { cause: new Error('2', { cause: new Error('3', { cause: taken }) }) })), 'four causes down is past the look')

  const missing = await db.insert(memberships).values({ siteId: 999, userId: 999, role: 'customer', createdAt: new Date() }).catch((e: unknown) => e)
  t.match(missing, { cause: { code: '23503' } })
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
