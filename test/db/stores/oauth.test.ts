import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import { sql } from '../../../db/drizzle.ts'
import { openPostgres, type PgDb } from '../../../db/postgres/client.ts'
import { postgresEngine, postgresPort } from '../../../db/postgres/engine.ts'
import type { Executor } from '../../../db/port.ts'
import { openSqliteEngine } from '../../../db/sqlite/engine.ts'
import { createOAuthStore, OAUTH_LAST_USED_EVERY_MS, type OAuthRow, type OAuthUpsert } from '../../../db/stores/oauth.ts'
import { oauthStore } from '../../../plugins/stores.ts'
import { START, testClock } from '../../fixtures/app.ts'
import { postgresTestAddress, TEST_ENGINE } from '../../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The store under the OAuth adapter (db/stores/oauth.ts), on the engine the suite runs on
// (SERVICE_TEST_ENGINE): every method and rule, with the clock moved by hand. The race of two
// processes upserting one record is PostgreSQL's alone.

/** The engine of this run on a database of its own, its oauth store, and the clock the store reads. */
async function open(t: Test) {
  const clock = testClock()
  const engine = TEST_ENGINE === 'postgres' ? postgresEngine(await openPostgres(await postgresTestAddress(t), { poolSize: 2 })) : openSqliteEngine(':memory:')
  t.teardown(() => engine.close())
  return { clock, engine, oauth: engine.oauth(clock) }
}

const fingerprint = (value: string) => createHash('sha256').update(value).digest('hex')

/** A record as the adapter would write it: nothing but the key and payload unless told. */
function record(name: string, over: Partial<OAuthUpsert> = {}): OAuthUpsert {
  return {
    model: 'AccessToken',
    id: fingerprint(name),
    payload: JSON.stringify({ jti: name }),
    grantId: null,
    uid: null,
    userCode: null,
    accountId: null,
    clientId: null,
    resource: null,
    expiresAt: null,
    ...over,
  }
}

const at = (ms: number) => new Date(START + ms)

t.test('upsert then find: every column as given, camelCase, moments as Dates; the key is model and id', async (t) => {
  const { oauth } = await open(t)
  const payload = '{ "jti": "ünïcode \\u0001",\n  "scope": "openid",  "exp": 1 }'
  const full = record('full', {
    payload,
    grantId: fingerprint('grant'),
    uid: 'uid-1',
    userCode: 'ABCD-EFGH',
    accountId: '42',
    clientId: 'client-1',
    resource: 'https://api.example.test/demo',
    expiresAt: at(3_600_000),
  })
  t.equal(await oauth.upsert(full), undefined)
  const found = await oauth.find('AccessToken', full.id)
  t.strictSame(found, { ...full, consumedAt: null, lastUsedAt: null, createdAt: at(0) } satisfies OAuthRow, 'all the columns, nothing else')
  t.equal(found!.payload, payload, 'the payload byte for byte')
  t.ok(found!.expiresAt instanceof Date && found!.createdAt instanceof Date, 'moments are Dates')

  await oauth.upsert(record('bare'))
  t.strictSame(await oauth.find('AccessToken', fingerprint('bare')), { ...record('bare'), consumedAt: null, lastUsedAt: null, createdAt: at(0) }, 'every column may be null but the key, payload and creation')
  t.equal(await oauth.find('AccessToken', fingerprint('nothing')), undefined, 'absent')
  t.equal(await oauth.find('RefreshToken', full.id), undefined, 'the same id under another model is another record')
})

t.test('expiry hides a record from find, findBy and list; sweep deletes the expired ones only', async (t) => {
  const { oauth, clock } = await open(t)
  const model = 'DeviceCode'
  await oauth.upsert(record('dying', { model, uid: 'uid-d', userCode: 'WXYZ', accountId: 'a', expiresAt: at(1_000) }))
  await oauth.upsert(record('forever', { model, accountId: 'a' }))
  await oauth.upsert(record('later', { model, accountId: 'a', expiresAt: at(5_000) }))
  const listed = async () => (await oauth.list(model, { accountId: 'a' })).map((row) => row.id)

  clock.advance(999)
  t.equal((await oauth.find(model, fingerprint('dying')))?.id, fingerprint('dying'), 'a millisecond before its expiry: found')
  t.equal((await oauth.findBy(model, 'uid', 'uid-d'))?.id, fingerprint('dying'))
  t.equal((await oauth.findBy(model, 'userCode', 'WXYZ'))?.id, fingerprint('dying'))
  t.equal((await listed()).length, 3)
  t.equal(await oauth.sweep(), 0, 'nothing to sweep yet')

  clock.advance(1)
  t.equal(await oauth.find(model, fingerprint('dying')), undefined, 'at its expiry: gone from find')
  t.equal(await oauth.findBy(model, 'uid', 'uid-d'), undefined, 'from findBy uid')
  t.equal(await oauth.findBy(model, 'userCode', 'WXYZ'), undefined, 'from findBy user code')
  t.notOk((await listed()).includes(fingerprint('dying')), 'from list')
  t.equal((await listed()).length, 2, 'the others are listed')

  t.equal(await oauth.sweep(), 1, 'the expired record is swept')
  t.equal(await oauth.sweep(), 0, 'and only once')
  clock.advance(-1_000)
  t.equal(await oauth.find(model, fingerprint('dying')), undefined, 'deleted, not hidden: with the clock back it is still gone')
  t.ok(await oauth.find(model, fingerprint('later')), 'a record expiring later stays')
  clock.advance(10_000_000_000)
  t.equal(await oauth.sweep(), 1, 'its turn comes')
  t.ok(await oauth.find(model, fingerprint('forever')), 'a record without expiry is never swept')
})

t.test('upsert replaces the whole record, clears consumed, keeps when it was created and last used', async (t) => {
  const { oauth, clock } = await open(t)
  const first = record('code', {
    model: 'AuthorizationCode',
    payload: '{"v":1}',
    grantId: 'g1',
    uid: 'uid-1',
    userCode: 'CODE-1',
    accountId: 'ann',
    clientId: 'client-1',
    resource: 'https://one.example.test',
    expiresAt: at(60_000),
  })
  await oauth.upsert(first)
  clock.advance(1_000)
  await oauth.consume('AuthorizationCode', first.id)
  await oauth.recordUse('AuthorizationCode', first.id, at(2_000))
  t.match(await oauth.find('AuthorizationCode', first.id), { consumedAt: at(1_000), lastUsedAt: at(2_000) })

  clock.advance(5_000)
  const second = record('code', {
    model: 'AuthorizationCode',
    payload: '{"v":2}',
    grantId: null,
    uid: 'uid-2',
    userCode: null,
    accountId: 'bob',
    clientId: 'client-2',
    resource: null,
    expiresAt: null,
  })
  await oauth.upsert(second)
  t.strictSame(
    await oauth.find('AuthorizationCode', first.id),
    { ...second, consumedAt: null, lastUsedAt: at(2_000), createdAt: at(0) },
    'every column of the new record, consumed cleared, created and last used kept',
  )
  t.equal(await oauth.findBy('AuthorizationCode', 'uid', 'uid-1'), undefined, 'the old uid finds nothing')
  t.equal(await oauth.findBy('AuthorizationCode', 'userCode', 'CODE-1'), undefined, 'nor the old user code')
  t.equal(await oauth.destroyGrant('g1'), 0, 'nor the old grant')
  t.equal((await oauth.findBy('AuthorizationCode', 'uid', 'uid-2'))?.payload, '{"v":2}')
  t.same((await oauth.list('AuthorizationCode', { accountId: 'bob' })).map((row) => row.id), [first.id], 'listed under its new account')
  t.same(await oauth.list('AuthorizationCode', { accountId: 'ann' }), [], 'not under the old one')
  clock.advance(10_000_000)
  t.equal(await oauth.sweep(), 0, 'its old expiry is gone too')
})

t.test('consume: once, at the moment of the clock', async (t) => {
  const { oauth, clock } = await open(t)
  const code = record('code', { model: 'AuthorizationCode', expiresAt: at(600_000) })
  await oauth.upsert(code)
  t.equal((await oauth.find('AuthorizationCode', code.id))?.consumedAt, null)
  clock.advance(1_500)
  t.equal(await oauth.consume('AuthorizationCode', code.id), undefined)
  t.strictSame((await oauth.find('AuthorizationCode', code.id))?.consumedAt, at(1_500))
  clock.advance(1_500)
  await oauth.consume('AuthorizationCode', code.id)
  t.strictSame((await oauth.find('AuthorizationCode', code.id))?.consumedAt, at(1_500), 'a second consume keeps the first moment')
  await oauth.consume('AuthorizationCode', fingerprint('absent'))
  t.equal(await oauth.find('AuthorizationCode', fingerprint('absent')), undefined, 'consuming nothing makes nothing')
  await oauth.upsert(record('other', { model: 'AuthorizationCode' }))
  t.equal((await oauth.find('AuthorizationCode', fingerprint('other')))?.consumedAt, null, 'another record is untouched')
})

t.test('findBy: uid or user code, within the model, the newest live one', async (t) => {
  const { oauth, clock } = await open(t)
  await oauth.upsert(record('session', { model: 'Session', uid: 'shared' }))
  await oauth.upsert(record('interaction', { model: 'Interaction', uid: 'shared' }))
  await oauth.upsert(record('device', { model: 'DeviceCode', userCode: 'shared' }))
  t.equal((await oauth.findBy('Session', 'uid', 'shared'))?.id, fingerprint('session'))
  t.equal((await oauth.findBy('Interaction', 'uid', 'shared'))?.id, fingerprint('interaction'))
  t.equal((await oauth.findBy('DeviceCode', 'userCode', 'shared'))?.id, fingerprint('device'))
  t.equal(await oauth.findBy('DeviceCode', 'uid', 'shared'), undefined, 'uid is not the user code')
  t.equal(await oauth.findBy('Session', 'userCode', 'shared'), undefined, 'nor the other way round')
  t.equal(await oauth.findBy('Session', 'uid', 'other'), undefined)

  clock.advance(1_000)
  await oauth.upsert(record('newer session', { model: 'Session', uid: 'shared' }))
  t.equal((await oauth.findBy('Session', 'uid', 'shared'))?.id, fingerprint('newer session'), 'of two, the newest')
  await oauth.upsert(record('newer session', { model: 'Session', uid: 'shared', expiresAt: at(1_000) }))
  t.equal((await oauth.findBy('Session', 'uid', 'shared'))?.id, fingerprint('session'), 'the newest live one')
})

t.test('destroy: one record, by model and id', async (t) => {
  const { oauth } = await open(t)
  await oauth.upsert(record('one'))
  await oauth.upsert(record('one', { model: 'RefreshToken' }))
  await oauth.upsert(record('two'))
  t.equal(await oauth.destroy('AccessToken', fingerprint('one')), undefined)
  t.equal(await oauth.find('AccessToken', fingerprint('one')), undefined, 'gone')
  t.ok(await oauth.find('RefreshToken', fingerprint('one')), 'the same id under another model stays')
  t.ok(await oauth.find('AccessToken', fingerprint('two')), 'another id stays')
  await oauth.destroy('AccessToken', fingerprint('one'))
  t.ok(await oauth.find('AccessToken', fingerprint('two')), 'destroying nothing is no error and touches nothing')
})

t.test('destroyGrant: every record of the grant, its own row included, and how many', async (t) => {
  const { oauth } = await open(t)
  const grant = fingerprint('grant g')
  await oauth.upsert(record('grant g', { model: 'Grant', grantId: grant }))
  for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode']) await oauth.upsert(record(`${model} of g`, { model, grantId: grant }))
  await oauth.upsert(record('expired of g', { grantId: grant, expiresAt: at(-1) }))
  await oauth.upsert(record('token of h', { grantId: 'h' }))
  await oauth.upsert(record('session', { model: 'Session' }))
  t.equal(await oauth.destroyGrant(grant), 5, 'the grant, its three records and an expired one not yet swept')
  t.equal(await oauth.find('Grant', grant), undefined)
  for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode']) t.equal(await oauth.find(model, fingerprint(`${model} of g`)), undefined, `${model} gone`)
  t.ok(await oauth.find('AccessToken', fingerprint('token of h')), "another grant's record stays")
  t.ok(await oauth.find('Session', fingerprint('session')), 'a record of no grant stays')
  t.equal(await oauth.destroyGrant(grant), 0, 'nothing left of it')
})

t.test('recordUse: written when never used or last used more than a minute before', async (t) => {
  const { oauth } = await open(t)
  const token = record('token')
  await oauth.upsert(token)
  await oauth.upsert(record('other'))
  const lastUsed = async () => (await oauth.find('AccessToken', token.id))?.lastUsedAt
  t.equal(await lastUsed(), null)
  t.equal(await oauth.recordUse('AccessToken', token.id, at(10_000)), undefined)
  t.strictSame(await lastUsed(), at(10_000), 'the first use is written')
  await oauth.recordUse('AccessToken', token.id, at(10_000 + OAUTH_LAST_USED_EVERY_MS - 1))
  t.strictSame(await lastUsed(), at(10_000), 'within the minute: not written')
  await oauth.recordUse('AccessToken', token.id, at(10_000 + OAUTH_LAST_USED_EVERY_MS))
  t.strictSame(await lastUsed(), at(10_000), 'a minute exactly: not written')
  await oauth.recordUse('AccessToken', token.id, at(10_001 + OAUTH_LAST_USED_EVERY_MS))
  t.strictSame(await lastUsed(), at(10_001 + OAUTH_LAST_USED_EVERY_MS), 'past the minute: written')
  await oauth.recordUse('AccessToken', token.id, at(0))
  t.strictSame(await lastUsed(), at(10_001 + OAUTH_LAST_USED_EVERY_MS), 'an older use never moves it back')
  t.equal((await oauth.find('AccessToken', fingerprint('other')))?.lastUsedAt, null, 'another record is untouched')
  await oauth.recordUse('AccessToken', fingerprint('absent'), at(0))
  t.equal(await oauth.find('AccessToken', fingerprint('absent')), undefined, 'a use of nothing makes nothing')
  t.equal(OAUTH_LAST_USED_EVERY_MS, 60_000)
})

t.test('list: the live records of a model, every filter given, newest created first', async (t) => {
  const { oauth, clock } = await open(t)
  const grant = (name: string, over: Partial<OAuthUpsert>) => oauth.upsert(record(name, { model: 'Grant', ...over }))
  await grant('g1', { accountId: 'ann', clientId: 'c1', resource: 'r1' })
  clock.advance(1_000)
  await grant('g2', { accountId: 'ann', clientId: 'c2', resource: 'r1' })
  clock.advance(1_000)
  await grant('g3', { accountId: 'bob', clientId: 'c1', resource: 'r1' })
  clock.advance(1_000)
  await grant('g4', { accountId: 'ann', clientId: 'c1', resource: 'r2', expiresAt: at(3_500) })
  await oauth.upsert(record('token of ann', { accountId: 'ann', clientId: 'c1', resource: 'r1' }))
  clock.advance(1_000)
  // Two made in one millisecond: the id decides, the same way on both engines.
  await grant('same moment', { id: 'b'.repeat(64), accountId: 'cat' })
  await grant('same moment', { id: 'a'.repeat(64), accountId: 'cat' })
  const ids = async (filter: Parameters<typeof oauth.list>[1]) => (await oauth.list('Grant', filter)).map((row) => row.id)
  const [g1, g2, g3, g4] = ['g1', 'g2', 'g3', 'g4'].map(fingerprint)

  t.same(await ids({}), ['a'.repeat(64), 'b'.repeat(64), g3, g2, g1], 'every live grant, newest first; g4 has expired, the token is another model')
  t.same(await ids({ accountId: 'ann' }), [g2, g1], "a supporter's grants")
  t.same(await ids({ accountId: 'ann', clientId: 'c1' }), [g1], 'and of one client')
  t.same(await ids({ clientId: 'c1' }), [g3, g1], "a client's grants")
  t.same(await ids({ resource: 'r1' }), [g3, g2, g1], 'for one resource')
  t.same(await ids({ accountId: 'ann', clientId: 'c2', resource: 'r1' }), [g2], 'all three filters')
  t.same(await ids({ accountId: 'ann', clientId: 'c2', resource: 'r2' }), [], 'each one applies')
  t.same(await ids({ accountId: 'nobody' }), [])
  t.same(await oauth.list('Client', {}), [], 'no record of another model')
  clock.advance(-2_000)
  t.same(await ids({ accountId: 'ann', clientId: 'c1' }), [g4, g1], 'before its expiry g4 is listed, newest first')
  const [row] = await oauth.list('AccessToken', { accountId: 'ann' })
  t.strictSame(row, { ...record('token of ann', { accountId: 'ann', clientId: 'c1', resource: 'r1' }), consumedAt: null, lastUsedAt: null, createdAt: at(3_000) }, 'whole rows')
})

t.test('the oauth-store plugin decorates the instance with the store of its database, on its clock', async (t) => {
  const { engine, clock } = await open(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(fp(async (fastify) => void fastify.decorate('clock', clock), { name: 'config' }))
  await app.register(fp(async (fastify) => void fastify.decorate('database', engine), { name: 'database' }))
  await app.register(oauthStore)
  await app.ready()
  clock.advance(7)
  await app.oauthRecords.upsert(record('through the plugin'))
  t.strictSame((await engine.oauth(() => START).find('AccessToken', fingerprint('through the plugin')))?.createdAt, at(7), "written to the engine's database at the app's clock")
  t.ok(app.hasPlugin('oauth-store'))
})

/** The server process of a connection or transaction. */
async function backend(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ pid: number }>(sql`SELECT pg_backend_pid() AS pid`)
  return rows[0]!.pid
}

/** Resolves once some server process waits on a lock the process `pid` holds. */
async function blocking(db: PgDb, pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.$client.query<{ n: number }>('SELECT count(*)::integer AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])
    if (rows[0]!.n > 0) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

t.test('two processes upserting one record at once: both succeed, the later one is kept', { skip: TEST_ENGINE !== 'postgres' && 'PostgreSQL only' }, async (t) => {
  const address = await postgresTestAddress(t)
  const [one, two] = [await openPostgres(address, { poolSize: 2 }), await openPostgres(address, { poolSize: 2 })]
  t.teardown(() => Promise.all([one.$client.end(), two.$client.end()]))
  const clock = testClock()
  const other = createOAuthStore(postgresPort(two), clock)

  // The first process's upsert is made and held uncommitted; the second's must wait for it, then
  // replace it, where a plain insert (or a read, then an insert) would fail on the key.
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let made!: (pid: number) => void
  const upserted = new Promise<number>((resolve) => (made = resolve))
  const first = one.transaction(async (tx) => {
    await createOAuthStore(postgresPort(tx), clock).upsert(record('raced', { uid: 'first' }))
    made(await backend(tx))
    await held
  })
  const holder = await upserted
  clock.advance(1_000)
  const second = other.upsert(record('raced', { uid: 'second' }))
  await blocking(one, holder)
  release()
  await first
  t.equal(await second, undefined, 'the second upsert succeeded after waiting')
  t.match(await other.find('AccessToken', fingerprint('raced')), { uid: 'second', createdAt: at(0) }, "the second's record, created when the first made it")

  // And many pairs at once, no holding: every one succeeds.
  const mine = createOAuthStore(postgresPort(one), clock)
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? mine : other).upsert(record(`pair ${i >> 1}`, { payload: `{"by":${i % 2}}` }))),
  )
  t.same(results.filter((r) => r.status === 'rejected'), [], 'no upsert failed')
  t.equal((await mine.list('AccessToken', {})).length, 11, 'one record per pair, and the raced one')
})
