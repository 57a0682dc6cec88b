import t, { type Test } from 'tap'
import { openDatabase } from '../../../db/sqlite/client.ts'
import type { Engine } from '../../../db/engine.ts'
import { openPostgres } from '../../../db/postgres/client.ts'
import { openPostgresEngine } from '../../../db/postgres/engine.ts'
import { sqliteEngine } from '../../../db/sqlite/engine.ts'
import { issueLegacyToken } from '../../../db/stores/legacy-tokens.ts'
import type { SecurityLogStore } from '../../../db/stores/security-log.ts'
import type { SessionStore } from '../../../db/stores/sessions.ts'
import type { SiteStore } from '../../../db/stores/sites.ts'
import { MAX_ACTIVE_TOKENS, tokenState } from '../../../db/stores/token-rules.ts'
import type { TokenStore } from '../../../db/stores/tokens.ts'
import type { UserStore } from '../../../db/stores/users.ts'
import { DAY_MS } from '../../../lib/clock.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { testClock, type TestClock } from '../../fixtures/app.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// The account stores (sites, users and their legacy tokens, web sessions, personal tokens) on both
// engines: each scenario runs on SQLite and on PostgreSQL, and what each answers, refusals
// included, must be the same. The races (one address taken twice, 30 tokens at once) run on
// PostgreSQL through two pools, as two service processes would.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

const BOX = createSecretBox('accounts test key')

interface Side {
  engine: 'sqlite' | 'postgres'
  clock: TestClock
  sites: SiteStore
  users: UserStore
  sessions: SessionStore
  tokens: TokenStore
  securityLog: SecurityLogStore
  flushErrors: unknown[]
  /** The users store of a process whose server key changed (SERVICE_SECRET replaced). */
  usersUnderAnotherKey: UserStore
  /** Another set of stores on the same database: another process, on PostgreSQL. */
  other: { users: UserStore; tokens: TokenStore; sites: SiteStore }
  /** Runs one statement on the database directly. */
  raw(statement: string): Promise<void>
}

function sideOf(name: Side['engine'], engine: Engine, other: Engine, raw: Side['raw']): Side {
  const clock = testClock()
  const flushErrors: unknown[] = []
  return {
    engine: name,
    clock,
    sites: engine.sites(clock),
    users: engine.users(clock, BOX),
    sessions: engine.sessions(clock),
    tokens: engine.tokens(clock, (error) => flushErrors.push(error)),
    securityLog: engine.securityLog(clock),
    flushErrors,
    usersUnderAnotherKey: engine.users(clock, createSecretBox('another key')),
    other: { users: other.users(clock, BOX), tokens: other.tokens(clock), sites: other.sites(clock) },
    raw,
  }
}

async function sqliteSide(t: Test): Promise<Side> {
  const db = openDatabase(':memory:')
  const engine = sqliteEngine(db)
  t.teardown(() => engine.close())
  return sideOf('sqlite', engine, engine, async (statement) => void db.$client.prepare(statement).run())
}

async function postgresSide(t: Test): Promise<Side> {
  const address = await postgresTestAddress(t)
  const engine = await openPostgresEngine(address)
  const other = await openPostgresEngine(address)
  const direct = await openPostgres(address, { poolSize: 1 })
  t.teardown(() => engine.close())
  t.teardown(() => other.close())
  t.teardown(() => direct.$client.end())
  return sideOf('postgres', engine, other, async (statement) => void (await direct.$client.query(statement)))
}

// What differs between two runs by nature (random keys and values, hashes) is replaced by its shape.
const RANDOM = new Set(['multipassKey', 'legacyTokenFingerprint', 'legacyTokenEncrypted', 'fingerprint', 'lastFour', 'passwordHash', 'value'])

function scrub(value: unknown, key = ''): unknown {
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map((item) => scrub(item))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, k)]))
  }
  if (RANDOM.has(key) && typeof value === 'string') return `<${key}: ${value.length} characters>`
  return value
}

/** What a call answered, or how it was refused, as the transcript keeps it. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { ok: scrub(await call()) }
  } catch (error) {
    const { name, message, code, field } = error as { name: string; message: string; code?: string; field?: string }
    return { refused: { name, message, code, field } }
  }
}

type Step = <V>(label: string, call: () => Promise<V>) => Promise<V | undefined>

/**
 * Runs the scenario on a fresh SQLite database and a fresh PostgreSQL schema; every step's
 * outcome must be the same on both. Returns each side's transcript for further checks.
 */
async function onBoth(t: Test, scenario: (side: Side, step: Step) => Promise<void>) {
  const transcripts: Record<Side['engine'], Array<[string, unknown]>> = { sqlite: [], postgres: [] }
  for (const side of [await sqliteSide(t), await postgresSide(t)]) {
    const transcript = transcripts[side.engine]
    const step: Step = async (label, call) => {
      let value
      const result = await outcome(async () => (value = await call()))
      transcript.push([label, result])
      return value
    }
    await scenario(side, step)
  }
  const sqlite = new Map(transcripts.sqlite)
  for (const [label, result] of transcripts.postgres) t.same(result, sqlite.get(label), label)
  t.same(
    transcripts.postgres.map(([label]) => label),
    transcripts.sqlite.map(([label]) => label),
    'the same steps ran on both engines',
  )
  return { sqlite, postgres: new Map(transcripts.postgres) }
}

const refused = (result: unknown) => (result as { refused?: { code?: string } }).refused?.code

t.test('sites: add, find, get, list, isEmpty, setMultipassKey', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites }, step) => {
    await step('isEmpty on a new database', () => sites.isEmpty())
    const demo = await step('add demo', () => sites.add('demo', '  Demo Desk  '))
    await step('add demo again', () => sites.add('demo', 'Other'))
    await step('a permalink with capitals', () => sites.add('Demo'))
    await step('a reserved permalink', () => sites.add('admin'))
    await step('an empty name', () => sites.add('blank', '   '))
    await step('a name of 101 characters', () => sites.add('long', 'x'.repeat(101)))
    await step('add b-c', () => sites.add('b-c'))
    await step('add bc', () => sites.add('bc'))
    await step('add b_c', () => sites.add('b_c'))
    await step('add b0', () => sites.add('b0'))
    await step('list, in code point order', () => sites.list())
    await step('find demo', () => sites.find('demo'))
    await step('find a site that is not there', () => sites.find('nope'))
    await step('get a site that is not there', () => sites.get('nope'))
    await step('a multipass key too short', () => sites.setMultipassKey(demo!.id, 'short'))
    await step('a multipass key with a space', () => sites.setMultipassKey(demo!.id, 'with a space in it'))
    await step('a given multipass key', () => sites.setMultipassKey(demo!.id, 'the-key-another-host-gave'))
    await step('get sees the given key', async () => (await sites.get('demo')).multipassKey)
    const fresh = await sites.setMultipassKey(demo!.id)
    await step('the random key is 32 hex digits', async () => /^[0-9a-f]{32}$/.test(fresh))
    await step('get sees the random key', async () => (await sites.get('demo')).multipassKey === fresh)
    await step('isEmpty with sites', () => sites.isEmpty())
  })
  t.same(
    (sqlite.get('list, in code point order') as { ok: Array<{ permalink: string }> }).ok.map((s) => s.permalink),
    ['b-c', 'b0', 'b_c', 'bc', 'demo'],
  )
  t.equal(refused(sqlite.get('add demo again')), 'conflict')
})

t.test('sites: one permalink added by two processes at once is added once', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, other }, step) => {
    await step('five adds at once', async () => {
      const results = await Promise.all([sites, other.sites, sites, other.sites, sites].map((s) => outcome(() => s.add('race'))))
      return results.map((r) => ('ok' in (r as object) ? 'added' : refused(r))).sort()
    })
    await step('list', async () => (await sites.list()).map((s) => s.permalink))
  })
  t.same(sqlite.get('five adds at once'), { ok: ['added', 'conflict', 'conflict', 'conflict', 'conflict'] })
})

t.test('users: add, find, get, insert, conflicts, setDisabled, roles and staff', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users }, step) => {
    const site = (await sites.add('demo'))!
    const other = (await sites.add('other'))!
    await step('a password too short', () => users.add({ email: 'ann@example.test', password: 'short' }))
    await step('not an address', () => users.add({ email: 'ann at example.test' }))
    await step('an address of 255 characters', () => users.add({ email: `${'a'.repeat(243)}@example.test` }))
    await step('a name of 101 characters', () => users.add({ email: 'ann@example.test', name: 'x'.repeat(101) }))
    const ann = await step('add Ann', () => users.add({ email: '  Ann@Example.test ', name: ' Ann ', password: 'a good password' }))
    await step('Ann has a password hash', async () => ann!.passwordHash?.startsWith('$argon2id$'))
    await step('Ann has a legacy token', async () => ann!.legacyTokenFingerprint !== null && ann!.legacyTokenExpiresAt !== null)
    await step('find, in other letters', () => users.find('ANN@example.TEST'))
    await step('find nobody', () => users.find('nobody@example.test'))
    await step('get nobody', () => users.get('nobody@example.test'))
    await step('add the same address in capitals', () => users.add({ email: 'ANN@EXAMPLE.TEST' }))
    await step('insert the same address', () => users.insert({ email: 'ann@example.test' }, null))
    const bob = await step('insert Bob without a name', () => users.insert({ email: 'bob@example.test' }, null))
    await step('insert an invalid address', () => users.insert({ email: '@example.test' }, null))
    await step('disable Bob', () => users.setDisabled('BOB@example.test', true))
    await step('get Bob, disabled', () => users.get('bob@example.test'))
    await step('enable Bob', () => users.setDisabled('bob@example.test', false))
    await step('disable nobody', () => users.setDisabled('nobody@example.test', true))
    await step('Bob has no role', () => users.role(site.id, bob!.id))
    await step('Bob is not staff', () => users.isStaff(site.id, bob!.id))
    await step('add Bob to the staff', () => users.addStaff(site.id, bob!.id))
    await step('add Bob to the staff again', () => users.addStaff(site.id, bob!.id))
    await step('Bob is a supporter', () => users.role(site.id, bob!.id))
    await step('Bob is staff', () => users.isStaff(site.id, bob!.id))
    await step('Bob is not staff of the other site', () => users.isStaff(other.id, bob!.id))
    await step('remove Bob from the staff', () => users.removeStaff(site.id, bob!.id))
    await step('remove Bob from the staff again', () => users.removeStaff(site.id, bob!.id))
    await step('remove Ann, who is not on the site', () => users.removeStaff(site.id, ann!.id))
    await step('Bob stays a customer', () => users.role(site.id, bob!.id))
    await step('Bob is no longer staff', () => users.isStaff(site.id, bob!.id))
  })
  t.equal(refused(sqlite.get('add the same address in capitals')), 'conflict')
  t.equal(refused(sqlite.get('insert the same address')), 'conflict')
  t.same(sqlite.get('Bob is a supporter'), { ok: 'supporter' })
})

t.test('users: one address added at once by two processes makes one account', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ users, other }, step) => {
    await step('two adds at once', async () => {
      const results = await Promise.all([
        outcome(() => users.add({ email: 'carol@example.test', password: 'a good password' })),
        outcome(() => other.users.add({ email: 'carol@example.test', password: 'a good password' })),
      ])
      return results.map((r) => ('ok' in (r as object) ? 'added' : JSON.stringify((r as { refused: unknown }).refused))).sort()
    })
    await step('two inserts at once', async () => {
      const results = await Promise.all([
        outcome(() => users.insert({ email: 'dan@example.test' }, null)),
        outcome(() => other.users.insert({ email: 'dan@example.test' }, null)),
      ])
      return results.map((r) => ('ok' in (r as object) ? 'added' : JSON.stringify((r as { refused: unknown }).refused))).sort()
    })
  })
  const conflict = (email: string) => ({ name: 'StoreError', message: `a user with the email "${email}" already exists`, code: 'conflict', field: 'email' })
  t.same(sqlite.get('two adds at once'), { ok: ['added', JSON.stringify(conflict('carol@example.test'))] })
  t.same(sqlite.get('two inserts at once'), { ok: ['added', JSON.stringify(conflict('dan@example.test'))] })
})

t.test('users: single sign-on makes or updates the account and joins the site', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users, other }, step) => {
    const site = (await sites.add('demo'))!
    await step('not an address', () => users.fromSingleSignOn(site.id, 'nobody', 'Nobody'))
    const erin = await step('a new address', () => users.fromSingleSignOn(site.id, ' Erin@Example.test ', undefined))
    await step('Erin is a customer', () => users.role(site.id, erin!.id))
    await step('the token names Erin', () => users.fromSingleSignOn(site.id, 'erin@example.test', `  ${'E'.repeat(120)}  `))
    await step('Erin keeps the name', () => users.get('erin@example.test'))
    await users.addStaff(site.id, erin!.id)
    await step('a supporter stays a supporter', async () => {
      await users.fromSingleSignOn(site.id, 'erin@example.test', 'Erin')
      return users.role(site.id, erin!.id)
    })
    await step('five first sign-ins at once', async () => {
      const stores = [users, other.users, users, other.users, users]
      const made = await Promise.all(stores.map((s) => s.fromSingleSignOn(site.id, 'frank@example.test', 'Frank')))
      return { ids: new Set(made.map((u) => u?.id)).size, role: await users.role(site.id, made[0]!.id) }
    })
  })
  t.same(sqlite.get('not an address'), { ok: undefined })
  t.match(sqlite.get('a new address'), { ok: { email: 'Erin@Example.test', name: 'Erin', passwordHash: null } })
  t.same(sqlite.get('Erin is a customer'), { ok: 'customer' })
  t.match(sqlite.get('Erin keeps the name'), { ok: { name: 'E'.repeat(100) } })
  t.same(sqlite.get('a supporter stays a supporter'), { ok: 'supporter' })
  t.same(sqlite.get('five first sign-ins at once'), { ok: { ids: 1, role: 'customer' } })
})

t.test('legacy tokens: issue, look-up, current and reset', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users, usersUnderAnotherKey, clock, raw }, step) => {
    const site = (await sites.add('demo'))!
    const ann = (await users.insert({ email: 'ann@example.test', name: 'Ann' }, null))!
    const issued = issueLegacyToken(clock, createSecretBox('k'.repeat(64)))
    const current = await step('current', () => users.legacyTokens.current(ann.id))
    await step('current again is the same', async () => (await users.legacyTokens.current(ann.id)).value === current!.value)
    await step('look-up, a customer', () => users.legacyTokens.lookup(current!.value, site.id))
    await users.addStaff(site.id, ann.id)
    await step('look-up, staff', () => users.legacyTokens.lookup(current!.value, site.id))
    await step('look-up of a value nobody holds', () => users.legacyTokens.lookup('0'.repeat(40), site.id))
    await step('a token issued but never stored is found nowhere', () => users.legacyTokens.lookup(issued.token.value, site.id))
    clock.advanceDays(3)
    const reset = await step('reset', () => users.legacyTokens.reset(ann.id))
    await step('the old value is refused', () => users.legacyTokens.lookup(current!.value, site.id))
    await step('the new value is found', () => users.legacyTokens.lookup(reset!.value, site.id))
    await step('current is the new value', async () => (await users.legacyTokens.current(ann.id)).value === reset!.value)
    await step('current of nobody', () => users.legacyTokens.current(9999))
    await step('reset of nobody', () => users.legacyTokens.reset(9999))
    await step('current under another server key', () => usersUnderAnotherKey.legacyTokens.current(ann.id))
    await raw(`UPDATE users SET legacy_token_fingerprint = NULL, legacy_token_encrypted = NULL, legacy_token_expires_at = NULL WHERE id = ${ann.id}`)
    const first = await step('current of an account older than legacy tokens', () => users.legacyTokens.current(ann.id))
    await step('which is stored', async () => (await users.legacyTokens.lookup(first!.value, site.id))?.id === ann.id)
  })
  t.match(sqlite.get('current of nobody'), { refused: { code: 'not_found', field: 'email' } })
  t.match(sqlite.get('current under another server key'), { refused: { code: 'conflict' } })
  t.match(sqlite.get('look-up, staff'), { ok: { staff: true, email: 'ann@example.test' } })
})

t.test('sessions: create, find, destroy, destroyForUser, activeCount', options, async (t) => {
  await onBoth(t, async ({ sites, users, sessions, clock }, step) => {
    const site = (await sites.add('demo'))!
    const other = (await sites.add('other'))!
    const ann = (await users.insert({ email: 'ann@example.test', name: 'Ann' }, null))!
    const bob = (await users.insert({ email: 'bob@example.test', name: 'Bob' }, null))!
    await users.addStaff(site.id, ann.id)
    const first = await sessions.create(site.id, ann.id)
    await step('an id of 256 bits', async () => /^[A-Za-z0-9_-]{43}$/.test(first))
    await step('find', () => sessions.find(first, site.id))
    await step('find on another site', () => sessions.find(first, other.id))
    await step('find an unknown id', () => sessions.find('nothing', site.id))
    await step('find without a membership', async () => sessions.find(await sessions.create(other.id, bob.id), other.id))
    clock.advanceDays(3)
    const second = (await sessions.create(site.id, ann.id))!
    await step('two active', () => sessions.activeCount(ann.id))
    clock.advanceDays(4)
    await step('the first has expired', () => sessions.find(first, site.id))
    await step('one active', () => sessions.activeCount(ann.id))
    await step('the second lives', async () => (await sessions.find(second, site.id))?.userId)
    await step('destroy', async () => {
      await sessions.destroy(second)
      return sessions.find(second, site.id)
    })
    await step('destroy again', () => sessions.destroy(second))
    const third = (await sessions.create(site.id, ann.id))!
    await sessions.create(site.id, ann.id)
    await step('destroyForUser', () => sessions.destroyForUser(ann.id))
    await step('nobody left', () => sessions.activeCount(ann.id))
    await step('the third is gone', () => sessions.find(third, site.id))
    const fourth = (await sessions.create(site.id, ann.id))!
    await users.setDisabled('ann@example.test', true)
    await step('a disabled account is signed out', () => sessions.find(fourth, site.id))
    await step('and its session removed', () => sessions.destroyForUser(ann.id))
  })
})

t.test('tokens: create, look-up, list, revoke, activeCount and the limit', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users, tokens, clock }, step) => {
    const site = (await sites.add('demo'))!
    const other = (await sites.add('other'))!
    const ann = (await users.insert({ email: 'ann@example.test', name: 'Ann' }, null))!
    const cust = (await users.insert({ email: 'cust@example.test', name: 'Cust' }, null))!
    const off = (await users.insert({ email: 'off@example.test', name: 'Off' }, null))!
    await users.addStaff(site.id, ann.id)
    await users.addStaff(site.id, off.id)
    await users.setDisabled('off@example.test', true)
    const input = { siteId: site.id, userId: ann.id, name: 'ci', access: 'read' as const, expiresInDays: 30 }
    await step('a blank name', () => tokens.create({ ...input, name: '   ' }))
    await step('a name of 101 characters', () => tokens.create({ ...input, name: 'x'.repeat(101) }))
    await step('an unknown access', () => tokens.create({ ...input, access: 'admin' as 'read' }))
    await step('an expiry of 60 days', () => tokens.create({ ...input, expiresInDays: 60 }))
    await step('no such user', () => tokens.create({ ...input, userId: 9999 }))
    await step('a customer', () => tokens.create({ ...input, userId: cust.id }))
    await step('staff of another site', () => tokens.create({ ...input, siteId: other.id }))
    await step('a disabled account', () => tokens.create({ ...input, userId: off.id }))
    const made = (await step('create', () => tokens.create({ ...input, name: '  deploy bot ', access: 'write', expiresInDays: 7 })))!
    await step('the last four are the value', async () => made.token.lastFour === made.value.slice(-4))
    await step('look-up', () => tokens.lookup(made.value))
    await step('look-up of an unknown value', () => tokens.lookup('service_pat_unknown'))
    await step('activeCount', () => tokens.activeCount(ann.id))
    for (let i = 2; i <= MAX_ACTIVE_TOKENS; i++) {
      clock.advance(1000)
      await tokens.create({ ...input, name: `token ${i}` })
    }
    await step('the 21st', () => tokens.create({ ...input, name: 'one too many' }))
    await step('list of the site', () => tokens.listForSite(site.id))
    await step('list of one user', async () => (await tokens.listForSite(site.id, cust.id)).length)
    await step('list of another site', () => tokens.listForSite(other.id))
    await step('revoke on another site', () => tokens.revoke(other.id, made.token.id))
    await step('revoke as another user', () => tokens.revoke(site.id, made.token.id, cust.id))
    await step('revoke an unknown token', () => tokens.revoke(site.id, 9999))
    clock.advance(1000)
    await step('revoke', () => tokens.revoke(site.id, made.token.id, ann.id))
    await step('revoke again', () => tokens.revoke(site.id, made.token.id))
    await step('look-up of a revoked token', () => tokens.lookup(made.value))
    await step('a place is free', async () => (await tokens.create({ ...input, name: 'replacement' })).token.name)
    await step('full again', () => tokens.create({ ...input, name: 'one too many' }))
    await users.removeStaff(site.id, ann.id)
    const listed = async () => (await tokens.listForSite(site.id)).map((token) => [token.name, tokenState(token, clock())])
    await step('states off the staff', listed)
    await users.addStaff(site.id, ann.id)
    clock.advanceDays(8)
    await step('states after 8 days', listed)
    await step('activeCount after 8 days', () => tokens.activeCount(ann.id))
    await step('no room after 8 days (only 30-day tokens left)', () => tokens.create({ ...input, name: 'still too many' }))
    clock.advanceDays(30)
    await step('room after 38 days', async () => (await tokens.create({ ...input, name: 'after' })).token.expiresAt.getTime() - clock())
  })
  t.match(sqlite.get('the 21st'), { refused: { code: 'limit' } })
  t.equal((sqlite.get('list of the site') as { ok: unknown[] }).ok.length, MAX_ACTIVE_TOKENS)
  t.same(sqlite.get('room after 38 days'), { ok: 30 * DAY_MS })
})

t.test('tokens: 30 created at once by two processes, 20 are made', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users, tokens, other }, step) => {
    const site = (await sites.add('demo'))!
    const ann = (await users.insert({ email: 'ann@example.test', name: 'Ann' }, null))!
    await users.addStaff(site.id, ann.id)
    await step('30 at once', async () => {
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          outcome(() => (i % 2 ? tokens : other.tokens).create({ siteId: site.id, userId: ann.id, name: `t${i}`, access: 'read', expiresInDays: 7 })),
        ),
      )
      const made = results.filter((r) => 'ok' in (r as object)).length
      return { made, limited: results.filter((r) => refused(r) === 'limit').length }
    })
    await step('activeCount', () => tokens.activeCount(ann.id))
  })
  t.same(sqlite.get('30 at once'), { ok: { made: 20, limited: 10 } })
})

t.test('tokens: last used is written at most once a minute or from a new address, in a batch, with the last five addresses', options, async (t) => {
  const { sqlite } = await onBoth(t, async ({ sites, users, tokens, securityLog, clock, flushErrors, raw }, step) => {
    const site = (await sites.add('demo'))!
    const ann = (await users.insert({ email: 'ann@example.test', name: 'Ann' }, null))!
    await users.addStaff(site.id, ann.id)
    const input = { siteId: site.id, userId: ann.id, name: 'ci', access: 'read' as const, expiresInDays: 30 }
    const a = (await tokens.create(input))!
    const b = (await tokens.create({ ...input, name: 'other' }))!
    const used = async () => (await tokens.listForSite(site.id)).map((token) => [token.name, token.lastUsedAt, token.lastUsedFrom])
    const seen = async () => (await tokens.lookup(a.value))!
    const never = { lastUsedAt: null, lastUsedFrom: null }
    await step('never used', used)
    await tokens.recordUse({ id: a.token.id, ...never }, '192.0.2.1')
    clock.advance(1_000)
    await tokens.recordUse({ id: a.token.id, ...never }, '192.0.2.2')
    await tokens.recordUse({ id: b.token.id, ...never }, '192.0.2.3')
    await step('nothing written before the flush', used)
    await tokens.flush()
    await step('written by the flush: a last used from its latest address', used)
    await step('a used from two addresses before the flush: both noted', async () => [...(await tokens.addresses([a.token.id]))])
    await step('look-up sees it', async () => [(await seen()).lastUsedAt, (await seen()).lastUsedFrom])
    clock.advance(30_000)
    await tokens.recordUse(await seen(), '192.0.2.1')
    await tokens.flush()
    await step('not again within the minute from the same address', used)
    await tokens.recordUse(await seen(), '192.0.2.4')
    await tokens.flush()
    await step('another address within the minute is written', used)
    clock.advance(61_000)
    await tokens.recordUse(await seen(), '192.0.2.4')
    await step('flushed by its timer about a second later', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1300))
      return used()
    })
    for (const n of [5, 6, 7, 8, 1]) {
      clock.advance(1_000)
      await tokens.recordUse(await seen(), `192.0.2.${n}`)
      await tokens.flush()
    }
    await step('the last five addresses, most recent first', async () => [...(await tokens.addresses([a.token.id, b.token.id, 999]))])
    await step('find: the token with its addresses', () => tokens.find(site.id, a.token.id))
    await step('find: not on another site', () => tokens.find(site.id + 1, a.token.id))
    await step('no addresses asked, none answered', async () => (await tokens.addresses([])).size)
    await step('a new address is in the security log, a known one is not', async () =>
      (await securityLog.list({ userId: ann.id, kinds: ['token_new_address'], offset: 0, limit: 20 })).events.map((e) => [e.address, e.actor, e.detail, e.createdAt]))
    await step('an empty flush', () => tokens.flush())
    const gone = (await tokens.create({ ...input, name: 'gone' }))!
    clock.advance(1_000)
    await tokens.recordUse({ id: gone.token.id, ...never }, '192.0.2.9')
    await tokens.recordUse({ id: a.token.id, ...never }, '192.0.2.9')
    await raw(`DELETE FROM personal_tokens WHERE id = ${gone.token.id}`)
    await tokens.flush()
    await step('a use queued for a token gone by the flush notes nothing; the others in its batch are written', async () =>
      [...(await tokens.addresses([gone.token.id, a.token.id]))].map(([id, addresses]) => [id, addresses[0].address]))
    await step('no flush failed', async () => flushErrors.length)
  })
  // Two addresses of one token in one batch: both noted and both logged, the token's last use the latest.
  const [start, second] = ['2026-03-01T12:00:00.000Z', '2026-03-01T12:00:01.000Z']
  t.same(sqlite.get('written by the flush: a last used from its latest address'), {
    ok: [
      ['other', second, '192.0.2.3'],
      ['ci', second, '192.0.2.2'],
    ],
  })
  t.same(sqlite.get('a used from two addresses before the flush: both noted'), {
    ok: [[1, [{ address: '192.0.2.2', lastUsedAt: second }, { address: '192.0.2.1', lastUsedAt: start }]]],
  })
  const logged = (sqlite.get('a new address is in the security log, a known one is not') as { ok: Array<[string, string, unknown, string]> }).ok
  t.same(logged.slice(-2).map(([address, , , at]) => [address, at]), [['192.0.2.2', second], ['192.0.2.1', start]])
  t.same(sqlite.get('a use queued for a token gone by the flush notes nothing; the others in its batch are written'), { ok: [[1, '192.0.2.9']] })
})
