import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../../db/sqlite/client.ts'
import { sqliteEngine } from '../../db/sqlite/engine.ts'
import Database from 'better-sqlite3'
import type { Db } from '../../db/sqlite/client.ts'
import { closeReadCache, readCache } from '../../db/sqlite/read-cache.ts'
import { createSecretBox } from '../../lib/secret-box.ts'
import { buildTestApp, sqliteOf, supporterWithToken } from '../fixtures/app.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.

/** A request arrives, as the server tells the cache; resolves once it is admitted. */
const arrive = (cache: ReturnType<typeof readCache>) => new Promise<void>((admit) => cache.arrived(admit))

// Issue 14, item 3: the token and site reads of the authentication path are cached, and the cache
// keeps every promise: a change made by another connection to the same file (the CLI, another
// service process) or by this one is seen on the very next request.

t.test('a change from another connection is seen on the very next request', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const databaseAddress = join(dir, 'service.db')
  const { app } = await buildTestApp(t, { config: { databaseAddress } })
  const other = sqliteEngine(openDatabase(databaseAddress))
  t.teardown(() => other.close())
  const clock = () => app.clock()
  const cli = { users: other.users(clock, createSecretBox('k'.repeat(64))), tokens: other.tokens(clock), sites: other.sites(clock) }
  const get = (headers: Record<string, string>) => app.inject({ url: '/demo', headers }).then((res) => res.statusCode)

  const ann = await supporterWithToken(app)
  const bob = await supporterWithToken(app)
  const cat = await supporterWithToken(app)
  for (const who of [ann, bob, cat]) t.equal(await get(who.bearer), 200, 'cached after the first use')
  for (const who of [ann, bob, cat]) t.equal(await get(who.bearer), 200)

  await cli.tokens.revoke(ann.site.id, ann.token.id)
  t.equal(await get(ann.bearer), 401, 'revoked by another connection: refused at once')
  await cli.users.setDisabled(bob.user.email, true)
  t.equal(await get(bob.bearer), 401, 'owner disabled by another connection: refused at once')
  await cli.users.removeStaff(cat.site.id, cat.user.id)
  t.equal(await get(cat.bearer), 403, 'taken off the staff by another connection: refused at once')
  await cli.sites.add('later')
  const dee = await supporterWithToken(app, { site: 'later' })
  t.equal((await app.inject({ url: '/later', headers: dee.bearer })).statusCode, 200, 'a site made elsewhere is found')
})

t.test("this process's own changes are seen too", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
  await app.tokens.revoke(ann.site.id, ann.token.id)
  t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 401)
})

t.test('a memo is bounded and forgets everything when the database changes', { skip: SQLITE_ONLY && 'the read cache is SQLite\'s' }, async (t) => {
  const { app } = await buildTestApp(t)
  const loads: string[] = []
  const memo = readCache(sqliteOf(app)).memo(async (key) => (loads.push(key), key.length))
  for (let i = 0; i <= 10_000; i++) await memo(`key ${i}`)
  t.equal(loads.length, 10_001)
  t.equal(await memo('key 10000'), 9)
  t.equal(loads.length, 10_001, 'a recent key is remembered')
  await memo('key 0')
  t.equal(loads.length, 10_002, 'the oldest key was forgotten: at most 10,000 are kept')
  await app.sites.add('elsewhere')
  await memo('key 10000')
  t.equal(loads.length, 10_003, 'a write of this connection forgets them all')
})

t.test('nothing read inside a transaction is remembered, and a failed load is not kept', { skip: SQLITE_ONLY && 'the read cache is SQLite\'s' }, async (t) => {
  const { app } = await buildTestApp(t)
  const db = sqliteOf(app)
  let loads = 0
  let fail = false
  const memo = readCache(db).memo(async (key) => {
    loads++
    if (fail) throw new Error(`cannot read ${key}`)
    return loads
  })
  db.$client.exec('BEGIN IMMEDIATE')
  t.equal(await memo('k'), 1)
  t.equal(await memo('k'), 2, 'read again: what a transaction sees may never be committed')
  db.$client.exec('ROLLBACK')
  fail = true
  await t.rejects(memo('k'), { message: 'cannot read k' })
  fail = false
  t.equal(await memo('k'), 4, 'the failure was not kept')
  t.equal(await memo('k'), 4, 'the value is')
})

t.test('in a server, the requests of a turn are admitted together, with one version read after the last of them arrived', { skip: SQLITE_ONLY && 'the read cache is SQLite\'s' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'service.db')
  const mine = openDatabase(file)
  const other = openDatabase(file)
  t.teardown(() => (mine.$client.close(), other.$client.close()))
  const cache = readCache(mine)
  let loads = 0
  const memo = cache.memo(async () => ++loads)
  const otherCommits = () => other.$client.exec('CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)')

  await arrive(cache)
  t.equal(await memo('k'), 1)
  otherCommits()
  t.equal(await memo('k'), 1, 'after a commit of another connection, in the same turn with no request arrived: the version read serves')

  // Two requests arrive in one turn, another connection committing between them.
  const admitted: string[] = []
  const first = arrive(cache).then(() => admitted.push('first'))
  otherCommits()
  const second = arrive(cache).then(() => admitted.push('second'))
  await Promise.resolve()
  t.same(admitted, [], 'neither goes on before the turn has read every socket')
  await Promise.all([first, second])
  t.same(admitted, ['first', 'second'], 'then both, in the order they arrived')
  t.equal(await memo('k'), 2, 'the version is read again after both: the commit before the second is seen by the first too')
  t.equal(await memo('k'), 2, 'once for both')

  otherCommits()
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(await memo('k'), 3, 'the loop turned: read again')
  t.equal(await memo('k'), 3, 'and nothing changed since')
})

t.test("another connection's commit is seen through the WAL index, and through data_version where there is none", { skip: SQLITE_ONLY && 'the read cache is SQLite\'s' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const commitsSeen = async (mine: Db, other: Db) => {
    const cache = readCache(mine)
    let loads = 0
    const memo = cache.memo(async () => ++loads)
    const seen: number[] = []
    for (const write of [false, true, false, true, true]) {
      // Each write: a commit of the other connection, which this one does not count in total_changes().
      if (write) other.$client.exec('CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)')
      await arrive(cache)
      seen.push(await memo('k'))
    }
    return seen
  }

  // The service's own files: WAL, so the header of the -shm file tells.
  const file = join(dir, 'wal.db')
  const [mine, other] = [openDatabase(file), openDatabase(file)]
  t.same(await commitsSeen(mine, other), [1, 2, 2, 3, 4], 'read again after each commit of the other connection, and only then')
  closeReadCache(mine)
  closeReadCache(mine)
  t.same(await commitsSeen(mine, other), [1, 2, 2, 3, 4], 'closed and opened again: a new cache, seeing the same')
  closeReadCache(mine)
  mine.$client.close()
  other.$client.close()

  // A file in the rollback journal's mode has no WAL index: PRAGMA data_version answers instead.
  const rollback = join(dir, 'rollback.db')
  const plain = () => ({ $client: new Database(rollback) }) as unknown as Db
  const [a, b] = [plain(), plain()]
  t.equal(a.$client.pragma('journal_mode', { simple: true }), 'delete')
  t.same(await commitsSeen(a, b), [1, 2, 2, 3, 4], 'the same answers without the index')
  closeReadCache(a)
  a.$client.close()
  b.$client.close()
})
