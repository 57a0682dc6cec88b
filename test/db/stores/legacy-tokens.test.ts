import { createHash } from 'node:crypto'
import { eq } from '../../../db/drizzle.ts'
import t from 'tap'
import { users as usersTable } from '../../../db/schema/sqlite.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { legacyTokenExpiry } from '../../../db/stores/legacy-tokens.ts'
import { START } from '../../fixtures/clock.ts'
import { sqliteStores } from '../../fixtures/stores.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

const box = createSecretBox('k'.repeat(64))

function stores() {
  return sqliteStores(':memory:', { box })
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

t.test('every account is created with a legacy token: fingerprint, sealed copy, a year of life', async (t) => {
  const { users } = stores()
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  const { value, expiresAt } = await users.legacyTokens.current(ann.id)
  t.match(value, /^[0-9a-f]{40}$/)
  t.equal(ann.legacyTokenFingerprint, sha256(value), 'only a fingerprint is looked up')
  t.notMatch(ann.legacyTokenEncrypted, value, 'the copy is sealed')
  t.equal(box.open(ann.legacyTokenEncrypted!), value, 'under the server key')
  t.equal(expiresAt.toISOString(), '2027-03-01T12:00:00.000Z', 'one year after issue')
  t.same(ann.legacyTokenExpiresAt, expiresAt)
  const bob = await users.add({ email: 'bob@example.test', password: 'correct horse' })
  t.not((await users.legacyTokens.current(bob.id)).value, value, 'one per account')
})

t.test('one year by the calendar', async (t) => {
  t.equal(legacyTokenExpiry(Date.parse('2026-03-01T12:00:00Z')).toISOString(), '2027-03-01T12:00:00.000Z')
  t.equal(legacyTokenExpiry(Date.parse('2028-02-29T08:00:00Z')).toISOString(), '2029-03-01T08:00:00.000Z', 'a leap day')
})

t.test('look-up: the owner, the expiry and the role on the site asked for', async (t) => {
  const { users, sites } = stores()
  const demo = await sites.add('demo')
  const other = await sites.add('other')
  const ann = await users.insert({ email: 'ann@example.test', name: 'Ann' }, null)
  await users.addStaff(demo.id, ann.id)
  const { value, expiresAt } = await users.legacyTokens.current(ann.id)
  t.same(await users.legacyTokens.lookup(value, demo.id), { id: ann.id, email: 'ann@example.test', name: 'Ann', disabled: false, expiresAt, staff: true, collaborator: false })
  t.match(await users.legacyTokens.lookup(value, other.id), { id: ann.id, staff: false })
  await users.removeStaff(demo.id, ann.id)
  t.match(await users.legacyTokens.lookup(value, demo.id), { staff: false }, 'a customer of the site is not staff')
  t.equal(await users.legacyTokens.lookup('0'.repeat(40), demo.id), undefined)
})

t.test('reset: the old value stops at once, the new one lives a year from the reset', async (t) => {
  const { users, sites, clock } = stores()
  const demo = await sites.add('demo')
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  const old = await users.legacyTokens.current(ann.id)
  clock.advanceDays(100)
  const fresh = await users.legacyTokens.reset(ann.id)
  t.not(fresh.value, old.value)
  t.equal(fresh.expiresAt.getTime(), legacyTokenExpiry(START + 100 * 86_400_000).getTime())
  t.equal(await users.legacyTokens.lookup(old.value, demo.id), undefined, 'the old value is nobody’s')
  t.ok(await users.legacyTokens.lookup(fresh.value, demo.id))
  t.same(await users.legacyTokens.current(ann.id), fresh, 'the profile page shows the new one')
  await t.rejects(users.legacyTokens.reset(9999), { code: 'not_found' })
  await t.rejects(users.legacyTokens.current(9999), { code: 'not_found' })
})

t.test('an account made before legacy tokens existed gets one when it is first shown', async (t) => {
  const { db, users } = stores()
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  db.update(usersTable)
    .set({ legacyTokenFingerprint: null, legacyTokenEncrypted: null, legacyTokenExpiresAt: null })
    .where(eq(usersTable.id, ann.id))
    .run()
  const made = await users.legacyTokens.current(ann.id)
  t.match(made.value, /^[0-9a-f]{40}$/)
  t.same(await users.legacyTokens.current(ann.id), made, 'and keeps it')
})

t.test('a copy sealed under another key, or moved from another account, is not shown', async (t) => {
  const { db, clock, users, engine } = stores()
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  const bob = await users.insert({ email: 'bob@example.test' }, null)
  const otherKey = engine.users(clock, createSecretBox('z'.repeat(64)))
  await t.rejects(otherKey.legacyTokens.current(ann.id), { code: 'conflict', message: /stored under another server key; reset it/ })
  t.match((await otherKey.legacyTokens.reset(ann.id)).value, /^[0-9a-f]{40}$/, 'a reset mends it')

  db.update(usersTable).set({ legacyTokenEncrypted: (await users.get('bob@example.test')).legacyTokenEncrypted }).where(eq(usersTable.id, ann.id)).run()
  await t.rejects(users.legacyTokens.current(ann.id), { code: 'conflict' }, "bob's copy in ann's row")
  t.ok(await users.legacyTokens.current(bob.id))
})

t.test('the look-up reads the unique index', async (t) => {
  const { db } = stores()
  const plan = JSON.stringify(db.$client.prepare('EXPLAIN QUERY PLAN SELECT * FROM users WHERE legacy_token_fingerprint = ?').all('f'))
  t.match(plan, 'users_legacy_token_unique')
})

t.test('multipass keys: random for a new site, replaced at will, checked when given', async (t) => {
  const { sites } = stores()
  const demo = await sites.add('demo')
  t.match(demo.multipassKey, /^[0-9a-f]{32}$/)
  const rotated = await sites.setMultipassKey(demo.id)
  t.match(rotated, /^[0-9a-f]{32}$/)
  t.not(rotated, demo.multipassKey)
  t.equal((await sites.get('demo')).multipassKey, rotated)
  t.equal(await sites.setMultipassKey(demo.id, 'some_key'), 'some_key', 'a key from another host is kept as it is')
  t.equal((await sites.get('demo')).multipassKey, 'some_key')
  for (const bad of ['short', 'has a space in it', 'x'.repeat(257), 'tab\there!!']) {
    await t.rejects(sites.setMultipassKey(demo.id, bad), { code: 'invalid', message: /8 to 256 visible characters/ }, JSON.stringify(bad))
  }
})
