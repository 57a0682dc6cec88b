import { SQLITE_ONLY } from '../../fixtures/postgres.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../../../db/sqlite/client.ts'
import { readCache } from '../../../db/stores/read-cache.ts'
import { createSiteStore } from '../../../db/stores/sites.ts'
import { createTokenStore } from '../../../db/stores/tokens.ts'
import { createUserStore } from '../../../db/stores/users.ts'
import { buildTestApp, sqliteOf, supporterWithToken } from '../../fixtures/app.ts'

// Issue 14, item 3: the token and site reads of the authentication path are cached, and the cache
// keeps every promise: a change made by another connection to the same file (the CLI, another
// service process) or by this one is seen on the very next request.

t.test('a change from another connection is seen on the very next request', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const databaseAddress = join(dir, 'service.db')
  const { app } = await buildTestApp(t, { config: { databaseAddress } })
  const other = openDatabase(databaseAddress)
  t.teardown(() => other.$client.close())
  const clock = () => app.clock()
  const cli = { users: createUserStore(other, clock), tokens: createTokenStore(other, clock), sites: createSiteStore(other, clock) }
  const get = (headers: Record<string, string>) => app.inject({ url: '/demo', headers }).then((res) => res.statusCode)

  const ann = await supporterWithToken(app)
  const bob = await supporterWithToken(app)
  const cat = await supporterWithToken(app)
  for (const who of [ann, bob, cat]) t.equal(await get(who.bearer), 200, 'cached after the first use')
  for (const who of [ann, bob, cat]) t.equal(await get(who.bearer), 200)

  cli.tokens.revoke(ann.site.id, ann.token.id)
  t.equal(await get(ann.bearer), 401, 'revoked by another connection: refused at once')
  cli.users.setDisabled(bob.user.email, true)
  t.equal(await get(bob.bearer), 401, 'owner disabled by another connection: refused at once')
  cli.users.removeStaff(cat.site.id, cat.user.id)
  t.equal(await get(cat.bearer), 403, 'taken off the staff by another connection: refused at once')
  cli.sites.add('later')
  const dee = await supporterWithToken(app, { site: 'later' })
  t.equal(await app.inject({ url: '/later', headers: dee.bearer }).then((res) => res.statusCode), 200, 'a site made elsewhere is found')
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
  const memo = readCache(sqliteOf(app)).memo((key) => (loads.push(key), key.length))
  for (let i = 0; i <= 10_000; i++) memo(`key ${i}`)
  t.equal(loads.length, 10_001)
  memo('key 10000')
  t.equal(loads.length, 10_001, 'a recent key is remembered')
  memo('key 0')
  t.equal(loads.length, 10_002, 'the oldest key was forgotten: at most 10,000 are kept')
  await app.sites.add('elsewhere')
  memo('key 10000')
  t.equal(loads.length, 10_003, 'a write of this connection forgets them all')
})
