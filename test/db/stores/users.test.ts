import t from 'tap'
import { verifyPassword } from '../../../lib/password.ts'
import { DEMO_CATEGORY, DEMO_SUPPORTER, WELCOME } from '../../../db/stores/bootstrap.ts'
import { sqliteStores } from '../../fixtures/stores.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

function stores() {
  return sqliteStores()
}

t.test('accounts: email unique without regard to case, argon2id hash, validation', async (t) => {
  const { users } = stores()
  const ann = await users.add({ email: '  Ann@Example.TEST ', password: 'correct horse' })
  t.equal(ann.email, 'Ann@Example.TEST')
  t.equal(ann.emailKey, 'ann@example.test')
  t.equal(ann.name, 'Ann', 'the name defaults to the local part')
  t.match(ann.passwordHash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.ok(await verifyPassword(ann.passwordHash!, 'correct horse'))
  t.notOk(await verifyPassword(ann.passwordHash!, 'wrong horse'))
  t.notOk(await verifyPassword('not a hash', 'x'), 'a damaged hash is a failed check, not a crash')
  t.equal((await users.find('ANN@example.test'))?.id, ann.id)
  t.equal((await users.add({ email: 'nopass@example.test' })).passwordHash, null, 'an account may have no password')

  await t.rejects(users.add({ email: 'ann@EXAMPLE.test' }), { code: 'conflict', field: 'email' })
  await t.rejects(users.add({ email: 'no-at-sign' }), { code: 'invalid', field: 'email' })
  await t.rejects(users.add({ email: `${'a'.repeat(250)}@b.cd` }), { code: 'invalid', field: 'email' })
  await t.rejects(users.add({ email: 'b@example.test', name: ' ' }), { code: 'invalid', field: 'name' })
  await t.rejects(users.add({ email: 'b@example.test', password: 'short' }), { code: 'invalid', field: 'password' })
  await t.rejects(users.get('nobody@example.test'), { code: 'not_found' })
})

t.test('two creations of one address racing past the first check: the index refuses the second', async (t) => {
  const { users } = stores()
  const results = await Promise.allSettled([
    users.add({ email: 'race@example.test', password: 'password one' }),
    users.add({ email: 'RACE@example.test', password: 'password two' }),
  ])
  t.same(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'])
  t.match(results.find((r) => r.status === 'rejected'), { reason: { code: 'conflict', message: /already exists/ } })
})

t.test('other database errors are not disguised as conflicts', async (t) => {
  const { users, db } = stores()
  db.$client.exec(`CREATE TRIGGER no_users BEFORE INSERT ON users BEGIN SELECT RAISE(ABORT, 'read-only today'); END`)
  await t.rejects(users.insert({ email: 'x@example.test' }, null), { message: 'read-only today', code: 'SQLITE_CONSTRAINT_TRIGGER' })
})

t.test('roles on a site', async (t) => {
  const { users, sites } = stores()
  const site = await sites.add('demo')
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  t.equal(await users.role(site.id, ann.id), undefined)
  await users.addStaff(site.id, ann.id)
  t.equal(await users.role(site.id, ann.id), 'supporter')
  t.ok(await users.removeStaff(site.id, ann.id))
  t.equal(await users.role(site.id, ann.id), 'customer', 'stays on the site as a customer')
  t.notOk(await users.removeStaff(site.id, ann.id), 'already off the staff')
})

t.test('first-run bootstrap: once, and only once even when two starts race', async (t) => {
  const s = stores()
  const [a, b] = await Promise.all([s.engine.bootstrapFirstRun(s.clock, s.box), s.engine.bootstrapFirstRun(s.clock, s.box)])
  const made = [a, b].filter((x) => x !== null)
  t.equal(made.length, 1, 'one of the two made the demo site')
  const first = made[0]!
  t.equal(first.site.permalink, 'demo')
  t.equal(first.email, DEMO_SUPPORTER.email)
  t.equal(await s.users.role(first.site.id, (await s.users.get(first.email)).id), 'supporter')
  t.ok(await verifyPassword((await s.users.get(first.email)).passwordHash!, first.password))
  const token = (await s.tokens.lookup(first.token))!
  t.equal(token.access, 'write')
  const welcome = s.db.$client.prepare('SELECT d.title, d.state, c.name AS category, c.public FROM discussions d JOIN categories c ON c.id = d.category_id').all()
  t.same(welcome, [{ title: WELCOME.title, state: 'new', category: DEMO_CATEGORY, public: 1 }], 'a public category and a welcome discussion from a customer')
  const logged = s.db.$client.prepare('SELECT kind, actor, detail FROM security_events').all() as Array<{ kind: string; actor: string; detail: string }>
  t.match(logged, [{ kind: 'token_created', actor: 'first_run' }], 'the first-run token is in the security log')
  t.match(JSON.parse(logged[0].detail), { token_id: token.id, name: 'First-run token', access: 'write' })
  t.equal(await s.engine.bootstrapFirstRun(s.clock, s.box), null, 'a later start does nothing')
  t.equal((await s.sites.list()).length, 1)
  t.equal(s.db.$client.prepare('SELECT count(*) FROM discussions').pluck().get(), 1)
})

t.test('multipass sign-in on the web: a new customer, or the known account with the name the token carries', async (t) => {
  const { users, sites } = stores()
  const site = await sites.add('demo')
  const made = (await users.fromSingleSignOn(site.id, ' New@Example.test ', 'New Person'))!
  t.match(made, { email: 'New@Example.test', name: 'New Person', passwordHash: null })
  t.equal(await users.role(site.id, made.id), 'customer')
  t.match((await users.legacyTokens.current(made.id)).value, /^[0-9a-f]{40}$/, 'an account like any other')
  t.equal((await users.fromSingleSignOn(site.id, 'nameless@example.test'))!.name, 'nameless', 'no name: the local part')

  t.equal((await users.fromSingleSignOn(site.id, 'new@example.test', '  Renamed  '))!.name, 'Renamed', 'the name is updated')
  t.equal((await users.get('new@example.test')).name, 'Renamed')
  t.equal((await users.fromSingleSignOn(site.id, 'new@example.test', 'Renamed'))!.id, made.id, 'the same account')
  t.equal((await users.fromSingleSignOn(site.id, 'new@example.test', '   '))!.name, 'Renamed', 'a blank name changes nothing')
  t.equal((await users.fromSingleSignOn(site.id, 'new@example.test', 'x'.repeat(150)))!.name, 'x'.repeat(100), 'a long name is cut to 100')

  const ann = await users.insert({ email: 'ann@example.test' }, null)
  await users.addStaff(site.id, ann.id)
  await users.fromSingleSignOn(site.id, 'ann@example.test')
  t.equal(await users.role(site.id, ann.id), 'supporter', 'a supporter stays a supporter')
  t.equal(await users.fromSingleSignOn(site.id, 'not an email'), undefined)
})
