import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { DAY_MS } from '../../../lib/clock.ts'
import { StoreError } from '../../../db/stores/errors.ts'
import { LAST_USED_EVERY_MS, MAX_ACTIVE_TOKENS, tokenState } from '../../../db/stores/token-rules.ts'
import { sqliteStores } from '../../fixtures/stores.ts'
import { spawnTs } from '../../fixtures/child.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

async function stores(file = ':memory:') {
  const errors: unknown[] = []
  const { db, engine, clock, sites, users, tokens } = sqliteStores(file, { onFlushError: (error) => errors.push(error) })
  const site = await sites.add('demo')
  const user = await users.insert({ email: 'ann@example.test' }, null)
  await users.addStaff(site.id, user.id)
  const make = (over: Partial<Parameters<typeof tokens.create>[0]> = {}) =>
    tokens.create({ siteId: site.id, userId: user.id, name: 'ci', access: 'read', expiresInDays: 30, ...over })
  return { db, engine, clock, sites, users, tokens, site, user, make, errors }
}

t.test('create keeps only a fingerprint and the last four characters', async (t) => {
  const { db, make, clock } = await stores()
  const { value, token } = await make({ name: '  deploy bot  ', expiresInDays: 365 })
  t.equal(token.name, 'deploy bot', 'the name is trimmed')
  t.equal(token.lastFour, value.slice(-4))
  t.equal(token.expiresAt.getTime(), clock() + 365 * DAY_MS)
  const row = JSON.stringify(db.$client.prepare('SELECT * FROM personal_tokens').all())
  t.notMatch(row, value.slice(12, 40), 'the value is nowhere in the table')
})

t.test('create validates name, access, expiry and the owner', async (t) => {
  const { make, users, site, sites } = await stores()
  const refused = (over: Parameters<typeof make>[0], field: string | undefined, code: string) =>
    t.rejects(make(over), { name: 'StoreError', code, field }, JSON.stringify(over))
  await refused({ name: '   ' }, 'name', 'invalid')
  await refused({ name: 'x'.repeat(101) }, 'name', 'invalid')
  await make({ name: 'x'.repeat(100) })
  await refused({ access: 'admin' as 'read' }, 'access', 'invalid')
  for (const expiresInDays of [0, 1, 60, 366, 90.5]) await refused({ expiresInDays }, 'expires', 'invalid')
  for (const expiresInDays of [7, 30, 90, 365]) await make({ expiresInDays })

  const customer = await users.insert({ email: 'cust@example.test' }, null)
  await refused({ userId: customer.id }, undefined, 'forbidden')
  const elsewhere = await sites.add('elsewhere')
  await users.addStaff(elsewhere.id, customer.id)
  await refused({ userId: customer.id }, undefined, 'forbidden')
  await make({ userId: customer.id, siteId: elsewhere.id })
  await users.setDisabled('cust@example.test', true)
  await refused({ userId: customer.id, siteId: elsewhere.id }, undefined, 'forbidden')
  await refused({ userId: 9999 }, 'email', 'not_found')
  t.ok(site)
})

t.test('at most 20 active tokens per user; revoked and expired ones free a place', async (t) => {
  const { make, tokens, site, user, clock, sites, users } = await stores()
  const made = []
  for (let i = 0; i < MAX_ACTIVE_TOKENS - 1; i++) made.push(await make({ expiresInDays: 30 }))
  const other = await sites.add('other')
  await users.addStaff(other.id, user.id)
  await make({ siteId: other.id, expiresInDays: 7 })
  t.equal(await tokens.activeCount(user.id), 20, 'the limit counts every site of the user')
  await t.rejects(make(), { code: 'limit', message: /20 active tokens/ })
  await tokens.revoke(site.id, made[0].token.id)
  await make()
  await t.rejects(make(), { code: 'limit' })
  clock.advanceDays(7)
  t.equal(await tokens.activeCount(user.id), 19, 'the 7-day token has expired')
  await make()
  await t.rejects(make(), { code: 'limit' })
})

t.test('12 concurrent creations for the last 5 places, from separate processes: exactly 5 succeed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-race-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'race.db')
  const { db, site, user, tokens, make, clock } = await stores(file)
  // 15 of the 20 places taken first: the race is for the last five. Each racer is a process with a
  // connection of its own (one connection per process, as the service runs; two connections of
  // one process would wait on each other's lock with the event loop stopped), and a process costs
  // about 0.8 s of CPU to start here, so twelve rather than thirty.
  for (let i = 0; i < MAX_ACTIVE_TOKENS - 5; i++) await make()
  const racers = Array.from({ length: 12 }, () => {
    const child = spawnTs(new URL('../../fixtures/create-token-worker.ts', import.meta.url), [file, String(site.id), String(user.id), String(clock())])
    let out = ''
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        out += chunk
        if (out.startsWith('ready\n')) resolve()
      })
      child.once('exit', (code) => reject(new Error(`racer exited early (${code})`)))
    })
    const outcome = new Promise<string>((resolve) => child.once('exit', () => resolve(out.split('\n')[1])))
    return { child, ready, outcome }
  })
  // Every racer has opened its connection and waits; release them all at once.
  await Promise.all(racers.map((r) => r.ready))
  for (const r of racers) r.child.stdin!.write('go\n')
  const outcomes = await Promise.all(racers.map((r) => r.outcome))
  t.equal(outcomes.filter((o) => o === 'created').length, 5, 'exactly 5 created')
  t.equal(outcomes.filter((o) => o === 'limit').length, 7, 'the other 7 refused by the limit')
  t.equal((await tokens.listForSite(site.id)).length, MAX_ACTIVE_TOKENS, '20 rows in the table')
  db.$client.close()
})

t.test('last used: written at most once a minute or from another address, after the request, with the address', async (t) => {
  const { make, tokens, clock, site } = await stores()
  const { value, token } = await make()
  const row = async () => (await tokens.listForSite(site.id))[0]
  const seen = async () => (await tokens.lookup(value))!
  await tokens.recordUse({ id: token.id, lastUsedAt: null, lastUsedFrom: null }, '192.0.2.1')
  t.equal((await row()).lastUsedAt, null, 'nothing written during the request')
  await tokens.flush()
  t.equal((await row()).lastUsedAt?.getTime(), clock())
  t.equal((await row()).lastUsedFrom, '192.0.2.1')

  const first = clock()
  clock.advance(LAST_USED_EVERY_MS - 1)
  await tokens.recordUse(await seen(), '192.0.2.1')
  await tokens.flush()
  t.equal((await row()).lastUsedAt?.getTime(), first, 'within the minute, from the same address: not written again')
  await tokens.recordUse(await seen(), '192.0.2.2')
  await tokens.flush()
  t.same([(await row()).lastUsedAt?.getTime(), (await row()).lastUsedFrom], [clock(), '192.0.2.2'], 'from another address: written at once')
  clock.advance(LAST_USED_EVERY_MS)
  const third = clock()
  await tokens.recordUse(await seen(), '192.0.2.3')
  clock.advance(500)
  await tokens.recordUse(await seen(), '192.0.2.4')
  clock.advance(100)
  await tokens.recordUse(await seen(), '192.0.2.3')
  t.equal((await row()).lastUsedFrom, '192.0.2.2', 'queued, not written yet')
  await tokens.flush()
  t.same([(await row()).lastUsedAt?.getTime(), (await row()).lastUsedFrom], [clock(), '192.0.2.3'], 'two addresses in one batch: the last use is the latest')
  t.same(
    [...(await tokens.addresses([token.id]))],
    [
      [
        token.id,
        [
          { address: '192.0.2.3', lastUsedAt: new Date(clock()) },
          { address: '192.0.2.4', lastUsedAt: new Date(third + 500) },
          { address: '192.0.2.2', lastUsedAt: new Date(first + LAST_USED_EVERY_MS - 1) },
          { address: '192.0.2.1', lastUsedAt: new Date(first) },
        ],
      ],
    ],
    'both addresses of the batch are noted, each with its latest use',
  )
})

t.test('the last five addresses: distinct, most recent first; a new one is logged, a known one is not', async (t) => {
  const { make, tokens, clock, site, db } = await stores()
  const { value, token } = await make()
  for (const n of [1, 2, 3, 4, 5, 6, 2]) {
    clock.advance(1_000)
    await tokens.recordUse((await tokens.lookup(value))!, `198.51.100.${n}`)
    await tokens.flush()
  }
  const { addresses } = (await tokens.find(site.id, token.id))!
  t.same(addresses.map((a) => a.address), ['198.51.100.2', '198.51.100.6', '198.51.100.5', '198.51.100.4', '198.51.100.3'])
  t.equal(addresses[0].lastUsedAt.getTime(), clock(), 'the time of the last use from there')
  const events = db.$client.prepare("SELECT address, detail FROM security_events WHERE kind = 'token_new_address' ORDER BY id").all() as Array<{ address: string; detail: string }>
  t.same(events.map((e) => e.address), ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4', '198.51.100.5', '198.51.100.6'], 'the return of a known address is not news')
  t.same(JSON.parse(events[0].detail), { token_id: token.id, name: 'ci' })
  t.equal(await tokens.find(site.id + 1, token.id), undefined, 'not found on another site')

  // A use queued for a token that is gone by the flush (its site removed) writes nothing, and fails nothing.
  const other = await make()
  await tokens.recordUse({ id: other.token.id, lastUsedAt: null, lastUsedFrom: null }, '198.51.100.9')
  db.$client.prepare('DELETE FROM personal_tokens WHERE id = ?').run(other.token.id)
  await tokens.flush()
  t.equal(db.$client.prepare('SELECT count(*) FROM personal_token_addresses WHERE token_id = ?').pluck().get(other.token.id), 0)
  t.equal((await tokens.addresses([])).size, 0)
})

t.test('last used is flushed by its timer, and a failed flush is reported, not thrown', async (t) => {
  const { make, tokens, site, db, errors } = await stores()
  const { token } = await make()
  await tokens.recordUse({ id: token.id, lastUsedAt: null, lastUsedFrom: null }, '198.51.100.7')
  await new Promise((resolve) => setTimeout(resolve, 1200))
  t.equal((await tokens.listForSite(site.id))[0].lastUsedFrom, '198.51.100.7', 'the timer wrote it')

  const second = await make()
  await tokens.recordUse({ id: second.token.id, lastUsedAt: null, lastUsedFrom: null }, '198.51.100.8')
  db.$client.close()
  await new Promise((resolve) => setTimeout(resolve, 1200))
  t.equal(errors.length, 1)
  t.match(String(errors[0]), /not open/)
})

t.test('list and states; revoke', async (t) => {
  const { make, tokens, site, user, users, clock } = await stores()
  const a = await make({ name: 'a', expiresInDays: 7 })
  clock.advance(1000)
  const b = await make({ name: 'b' })
  clock.advance(1000)
  const c = await make({ name: 'c' })
  await tokens.revoke(site.id, c.token.id)
  await t.rejects(tokens.revoke(site.id, c.token.id), { code: 'conflict', message: /already revoked/ })
  await t.rejects(tokens.revoke(site.id, 999), { code: 'not_found' })
  await t.rejects(tokens.revoke(site.id, b.token.id, user.id + 1), { code: 'not_found' }, 'not this user’s token')
  clock.advanceDays(8)
  const listed = await tokens.listForSite(site.id, user.id)
  t.same(listed.map((x) => x.name), ['c', 'b', 'a'], 'newest first')
  t.same(listed.map((x) => tokenState(x, clock())), ['revoked', 'active', 'expired'])
  await users.setDisabled(user.email, true)
  t.equal(tokenState((await tokens.listForSite(site.id))[1], clock()), 'unusable', 'owner disabled')
  await users.setDisabled(user.email, false)
  await users.removeStaff(site.id, user.id)
  t.equal(tokenState((await tokens.listForSite(site.id))[1], clock()), 'unusable', 'owner off the staff')
  t.equal(a.token.name, 'a')
  t.ok(new StoreError('x', 'invalid') instanceof Error)
})

t.test('two flushes at once, with uses waiting: both finish, and the uses are written once', async (t) => {
  const { make, tokens, site } = await stores()
  const { token } = await make()
  await tokens.recordUse({ id: token.id, lastUsedAt: null, lastUsedFrom: null }, '192.0.2.9')
  // The second waits for the first, whose transaction must not wait for the second.
  const stuck = new Promise((_, reject) => setTimeout(() => reject(new Error('the flushes wait on each other')), 3_000).unref())
  await Promise.race([Promise.all([tokens.flush(), tokens.flush()]), stuck])
  t.equal((await tokens.listForSite(site.id))[0].lastUsedFrom, '192.0.2.9')
  t.same([...(await tokens.addresses([token.id])).get(token.id)!].map((a) => a.address), ['192.0.2.9'])
})
