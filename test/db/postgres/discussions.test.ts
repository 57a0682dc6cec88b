import t, { type Test } from 'tap'
import { openDatabase } from '../../../db/sqlite/client.ts'
import type { Engine } from '../../../db/engine.ts'
import { openPostgresEngine } from '../../../db/postgres/engine.ts'
import { sqliteEngine } from '../../../db/sqlite/engine.ts'
import { DEMO_CATEGORY, DEMO_SITE, DEMO_SUPPORTER, WELCOME } from '../../../db/stores/bootstrap.ts'
import { sorts, type ListingQuery } from '../../../db/stores/discussion-listing.ts'
import { actions } from '../../../db/stores/discussion-states.ts'
import { StoreError } from '../../../db/stores/errors.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// The PostgreSQL stores of categories, discussions and the first run against the SQLite ones: the
// same script runs on both engines and every answer (rows, errors, totals, counts) must be equal.
// Then what only PostgreSQL can get wrong: concurrent writers on one database.

const START = Date.UTC(2024, 0, 15, 9, 0, 0)
const box = createSecretBox('k'.repeat(64))

function clockFrom(start = START) {
  let now = start
  return Object.assign(() => now, { advance: (ms: number) => void (now += ms) })
}

/** An engine's answer, with Dates, Maps and errors in a form two engines' answers compare in. */
function plain(value: unknown): unknown {
  if (value instanceof Date) return { date: value.toISOString() }
  if (value instanceof StoreError) return { error: value.message, code: value.code, field: value.field }
  if (value instanceof Error) return { unexpected: value.message }
  if (value instanceof Map) return { map: [...value].map(([k, v]) => [plain(k), plain(v)]) }
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, plain(v)]))
  }
  return value
}

type Log = Array<[string, unknown]>

/** Runs `step` and writes down what it answered or threw. */
async function note<T>(log: Log, label: string, step: () => Promise<T>): Promise<T | undefined> {
  try {
    const answer = await step()
    log.push([label, plain(answer)])
    return answer
  } catch (error) {
    log.push([label, plain(error)])
    return undefined
  }
}

const answers = await postgresAnswers()
if (!answers) {
  if (process.env.CI === 'true') {
    t.fail(`PostgreSQL at ${POSTGRES_URL} does not answer; CI runs these tests on it`)
  } else {
    t.comment(`PostgreSQL at ${POSTGRES_URL} does not answer: the PostgreSQL store tests are skipped`)
  }
} else {
  await tests()
}

async function postgres(t: Test): Promise<Engine> {
  const engine = await openPostgresEngine(await postgresTestAddress(t))
  t.teardown(() => engine.close())
  return engine
}

function sqlite(t: Test): Engine {
  const engine = sqliteEngine(openDatabase(':memory:'))
  t.teardown(() => engine.close())
  return engine
}

/** The script both engines run; its log is what is compared. */
async function script(engine: Engine): Promise<Log> {
  const log: Log = []
  const clock = clockFrom()
  const sites = engine.sites(clock)
  const users = engine.users(clock, box)
  const categories = engine.categories(clock)
  const discussions = engine.discussions(clock, box)
  const tick = () => clock.advance(60_000)

  const site = await sites.add('demo')
  const other = await sites.add('other')
  const ann = await users.insert({ email: 'ann@example.test', name: 'Ann' }, null)
  await users.addStaff(site.id, ann.id)
  const bob = await users.insert({ email: 'bob@example.test', name: 'Bob' }, null)
  await users.addStaff(site.id, bob.id)

  // Categories: permalinks made unique, validation, look-ups, the menu order.
  const names = ['General', 'General', 'General', 'billing', 'Zeta', 'alpha', 'Beta', 'beta', '_under', 'Émile', 'émile', 'a b', 'ab', 'A-c']
  const made = []
  for (const [i, name] of names.entries()) {
    made.push(await note(log, `category add ${name}`, () => categories.add(site.id, name, i % 2 === 0)))
    tick()
  }
  await note(log, 'category add blank', () => categories.add(site.id, '   ', true))
  await note(log, 'category add too long', () => categories.add(site.id, 'x'.repeat(101), true))
  const otherCategory = (await note(log, 'category add other site', () => categories.add(other.id, 'General', true)))!
  const [general, general2, , billing] = made.map((c) => c!)
  await note(log, 'category find', () => categories.find(site.id, billing.id))
  await note(log, 'category find other site', () => categories.find(site.id, otherCategory.id))
  await note(log, 'category find unknown', () => categories.find(site.id, 9_999))
  await note(log, 'category find huge', () => categories.find(site.id, Number.MAX_SAFE_INTEGER))
  await note(log, 'category list', () => categories.list(site.id, 0, 30))
  await note(log, 'category list page', () => categories.list(site.id, 3, 4))
  await note(log, 'category list all', () => categories.list(site.id, 0, -1))
  await note(log, 'category list other', () => categories.list(other.id, 0, 30))

  // Discussions: created by staff, on behalf of customers (new and known) and of staff.
  const create = (label: string, input: Partial<Parameters<typeof discussions.create>[0]>) =>
    note(log, `create ${label}`, () =>
      discussions.create({ siteId: site.id, categoryId: general.id, title: ` ${label} `, body: `about ${label}`, supporterId: ann.id, via: 'api', ...input }),
    )
  await create('by staff', {})
  tick()
  await create('for carol', { onBehalfOf: { email: 'Carol@Example.test', name: 'Carol' } })
  tick()
  await create('for carol again', { onBehalfOf: { email: 'carol@example.test' }, categoryId: billing.id })
  await create('for bob (staff)', { onBehalfOf: { email: 'bob@example.test' }, categoryId: billing.id, public: true })
  tick()
  await create('private in public', { categoryId: general2.id, public: false, onBehalfOf: { email: 'dave@example.test' } })
  await create('unknown category', { categoryId: 9_999 })
  await create('huge category', { categoryId: Number.MAX_SAFE_INTEGER })
  await create('other site category', { categoryId: otherCategory.id })
  await create('bad address', { onBehalfOf: { email: 'not an address' } })
  await create('blank name', { onBehalfOf: { email: 'erin@example.test', name: '  ' } })
  await create('Ünïcödé title — with punctuation!', { onBehalfOf: { email: 'frank@example.test', name: 'Frank' } })
  for (let i = 0; i < 6; i++) {
    if (i % 2 === 0) tick()
    await create(`batch ${i}`, { categoryId: made[4 + (i % 3)]!.id, onBehalfOf: i % 3 === 0 ? undefined : { email: `c${i % 2}@example.test` } })
  }
  await note(log, 'on the other site', () =>
    discussions.create({ siteId: other.id, categoryId: otherCategory.id, title: 'elsewhere', body: 'b', supporterId: ann.id, via: 'web' }),
  )

  // Reads.
  const first = (await discussions.get(site.id, 1))!
  await note(log, 'get 2', () => discussions.get(site.id, 2))
  await note(log, 'get unknown', () => discussions.get(site.id, 999))
  await note(log, 'get huge', () => discussions.get(site.id, Number.MAX_SAFE_INTEGER))
  await note(log, 'get other site', () => discussions.get(other.id, 2))

  // Replies and state moves.
  const reply = (label: string, number: number, input: Partial<Parameters<typeof discussions.reply>[0]> = {}) => {
    tick()
    return note(log, `reply ${label}`, () =>
      discussions.reply({ siteId: site.id, number, body: label, internal: false, supporterId: bob.id, via: 'web', ...input }),
    )
  }
  await reply('internal note on new', 2, { internal: true })
  await reply('customer on new', 2, { onBehalfOf: { email: 'carol@example.test' } })
  await reply('staff on new', 2)
  await note(log, 'resolve 2', () => discussions.act(site.id, 2, 'resolve'))
  await reply('customer on resolved', 2, { onBehalfOf: { email: 'carol@example.test' } })
  await reply('new customer', 3, { onBehalfOf: { email: 'gina@example.test', name: 'Gina' } })
  await reply('unknown', 999)
  await reply('huge', Number.MAX_SAFE_INTEGER)
  await note(log, 'comments 2', () => discussions.comments(first.id + 1))
  await note(log, 'comments 2 page', () => discussions.comments(first.id + 1, 1, 2))
  await note(log, 'comments 2 past end', () => discussions.comments(first.id + 1, 10, 2))
  await note(log, 'comment 2/1', () => discussions.comment(first.id + 1, 1))
  await note(log, 'comment 2/4', () => discussions.comment(first.id + 1, 4))
  await note(log, 'comment 2/99', () => discussions.comment(first.id + 1, 99))
  await note(log, 'comments unknown', () => discussions.comments(9_999))

  // Changes.
  const update = (label: string, number: number, changes: Parameters<typeof discussions.update>[2], field?: string) => {
    tick()
    return note(log, `update ${label}`, () => discussions.update(site.id, number, changes, { category: field }))
  }
  await update('title', 1, { title: '  A new title  ' })
  await update('same title', 1, { title: 'A new title' })
  await update('public', 1, { public: false })
  await update('category', 1, { categoryId: billing.id })
  await update('everything', 3, { title: 'Moved', public: true, categoryId: general2.id })
  await update('nothing', 3, {})
  await update('other site category', 3, { categoryId: otherCategory.id })
  await update('unknown category, field to', 3, { categoryId: 9_999 }, 'to')
  await update('huge category', 3, { categoryId: Number.MAX_SAFE_INTEGER })
  await update('unknown', 999, { title: 'x' })

  // Every action from every state, deleted included.
  let number = 6
  for (const from of ['new', 'open', 'resolved', 'deleted'] as const) {
    for (const action of actions) {
      number++
      const d = await discussions.get(site.id, number).catch(() => undefined)
      if (!d) break
      if (from === 'open' && d.state === 'new') await discussions.reply({ siteId: site.id, number, body: 'on it', internal: false, supporterId: ann.id, via: 'api' })
      if (from === 'resolved') await discussions.act(site.id, number, 'resolve')
      if (from === 'deleted') await discussions.act(site.id, number, 'delete')
      tick()
      await note(log, `act ${action} on ${from} (${number})`, () => discussions.act(site.id, number, action))
      await note(log, `act ${action} again on ${number}`, () => discussions.act(site.id, number, action))
      await note(log, `reply after ${action} on ${number}`, () =>
        discussions.reply({ siteId: site.id, number, body: 'after', internal: false, supporterId: ann.id, via: 'api' }),
      )
      await note(log, `update after ${action} on ${number}`, () => discussions.update(site.id, number, { title: 'after' }))
    }
  }
  // More discussions so every state has several, some at one moment (the id breaks the tie).
  for (let i = 0; i < 12; i++) {
    if (i % 3 === 0) tick()
    const { discussion } = (await discussions.create({
      siteId: site.id,
      categoryId: made[i % 4]!.id,
      title: `more ${i}`,
      body: 'b',
      supporterId: ann.id,
      onBehalfOf: i % 2 ? { email: 'carol@example.test' } : undefined,
      via: 'api',
    }))!
    if (i % 4 === 1) await discussions.act(site.id, discussion.number, 'resolve')
    if (i % 5 === 2) await discussions.act(site.id, discussion.number, 'delete')
    if (i % 6 === 3) await discussions.reply({ siteId: site.id, number: discussion.number, body: 'r', internal: false, supporterId: bob.id, via: 'api' })
  }
  await note(log, 'act unknown', () => discussions.act(site.id, 999, 'resolve'))

  // Listings: every scope, order and filter, since, pages, and the counts behind the totals.
  const carol = (await users.find('carol@example.test'))!
  const base = { siteId: site.id, offset: 0, limit: 100 }
  const scopes = ['live', 'new', 'open', 'resolved', 'deleted'] as const
  for (const state of scopes) {
    for (const sort of sorts) {
      const filters: Array<[string, Partial<ListingQuery>]> = [
        ['all', {}],
        ['category', { categoryId: general.id }],
        ['billing', { categoryId: billing.id }],
        ['public', { public: true }],
        ['private', { public: false }],
        ['author', { authorId: carol.id }],
        ['author unknown', { authorId: 9_999 }],
        ['author huge', { authorId: Number.MAX_SAFE_INTEGER }],
        ['since number', { since: { kind: 'number', after: 5 } }],
        ['since huge number', { since: { kind: 'number', after: Number.MAX_SAFE_INTEGER } }],
        ['since date', { since: { kind: 'date', from: START + 10 * 60_000 } }],
        ['since date, category, public', { since: { kind: 'date', from: START + 5 * 60_000 }, categoryId: general.id, public: true }],
        ['category huge', { categoryId: Number.MAX_SAFE_INTEGER }],
        ['page 2 of 3', { offset: 3, limit: 3 }],
        ['past the end', { offset: 500, limit: 3 }],
        ['author page', { authorId: carol.id, offset: 1, limit: 2 }],
      ]
      for (const [label, filter] of filters) {
        await note(log, `list ${state} ${sort} ${label}`, () => discussions.list({ ...base, state, sort, ...filter }))
      }
    }
  }
  await note(log, 'list other site', () => discussions.list({ ...base, siteId: other.id, state: 'live', sort: 'activity' }))
  await note(log, 'counts by category', () => discussions.counts.byCategory(site.id))
  for (const state of scopes) {
    await note(log, `counts total ${state}`, () => discussions.counts.total({ siteId: site.id, state }))
    await note(log, `counts total ${state} billing public`, () =>
      discussions.counts.total({ siteId: site.id, state, categoryId: billing.id, public: true }),
    )
  }
  return log
}

async function tests() {
  t.test('categories and discussions answer alike on SQLite and PostgreSQL', async (t) => {
    const [onSqlite, onPostgres] = [await script(sqlite(t)), await script(await postgres(t))]
    t.equal(onPostgres.length, onSqlite.length, 'the same steps ran')
    for (let i = 0; i < Math.max(onSqlite.length, onPostgres.length); i++) {
      const [label, answer] = onSqlite[i] ?? ['(missing)', undefined]
      t.same(onPostgres[i]?.[1], answer, label)
    }
    const errors = onSqlite.filter(([, answer]) => (answer as { code?: string } | null)?.code)
    t.ok(errors.length > 15, 'the script reaches the refusals too')
    t.notOk(
      onPostgres.some(([, answer]) => (answer as { unexpected?: string } | null)?.unexpected),
      'no error on PostgreSQL that is not a StoreError',
    )
  })

  t.test('the maintained counts equal a count of the rows on PostgreSQL', async (t) => {
    const engine = await postgres(t)
    await script(engine)
    const clock = clockFrom()
    const site = (await engine.sites(clock).find('demo'))!
    const discussions = engine.discussions(clock, box)
    const categories = (await engine.categories(clock).list(site.id, 0, 100)).categories
    for (const state of ['live', 'new', 'open', 'resolved', 'deleted'] as const) {
      for (const categoryId of [undefined, ...categories.map((c) => c.id)]) {
        for (const isPublic of [undefined, true, false]) {
          const scope = { siteId: site.id, state, categoryId, public: isPublic }
          const listed = await discussions.list({ ...scope, sort: 'created', offset: 0, limit: 1000 })
          const counted = await discussions.list({ ...scope, sort: 'created', offset: 0, limit: 0, since: { kind: 'number', after: 0 } })
          t.equal(listed.total, listed.discussions.length, `${state} ${categoryId} ${isPublic}: total of the counts`)
          t.equal(counted.total, listed.total, `${state} ${categoryId} ${isPublic}: counted rows`)
        }
      }
    }
    const plan = await discussions.explain({ siteId: site.id, state: 'live', sort: 'activity', offset: 0, limit: 30 })
    t.ok(plan.length > 0 && plan.every((line) => typeof line === 'string'), 'explain gives the plan, one line each')
  })

  t.test('the first run, twice at once: one bootstraps, the other finds it done', async (t) => {
    const results = []
    for (const engine of [sqlite(t), await postgres(t)]) {
      const clock = clockFrom()
      results.push(await Promise.all([engine.bootstrapFirstRun(clock, box), engine.bootstrapFirstRun(clock, box)]))
    }
    // On PostgreSQL, two processes: two engines, two pools, one database.
    const address = await postgresTestAddress(t)
    const [a, b] = [await openPostgresEngine(address), await openPostgresEngine(address)]
    t.teardown(() => Promise.all([a.close(), b.close()]))
    results.push(await Promise.all([a.bootstrapFirstRun(clockFrom(), box), b.bootstrapFirstRun(clockFrom(), box)]))
    const shapes = []
    for (const [i, pair] of results.entries()) {
      t.equal(pair.filter((r) => r === null).length, 1, `${i}: exactly one null`)
      const run = pair.find((r) => r !== null)!
      t.equal(run.site.permalink, DEMO_SITE.permalink)
      t.equal(run.email, DEMO_SUPPORTER.email)
      t.match(run.token, /^service_pat_/)
      // The site's id aside: on PostgreSQL the run that lost may have taken the sequence's next
      // number before its insert found the permalink taken (a sequence is not rolled back), so the
      // site may be 2 on a new database. Its id is the site's (below).
      shapes.push({ ...run, site: { ...run.site, id: 0, multipassKey: '' }, password: run.password.length, token: run.token.length })
    }
    t.same(shapes[1], shapes[0], 'the same first run on both engines')
    t.same(shapes[2], shapes[0])
    for (const engine of [a, b]) {
      const clock = clockFrom()
      t.equal((await engine.bootstrapFirstRun(clock, box)), null, 'a later start bootstraps nothing')
      const site = (await engine.sites(clock).find(DEMO_SITE.permalink))!
      t.equal(site.id, results[2]!.find((r) => r !== null)!.site.id, "the first run's site is the one found")
      const { total, discussions } = await engine.discussions(clock, box).list({ siteId: site.id, state: 'live', sort: 'activity', offset: 0, limit: 30 })
      t.equal(total, 1)
      t.match(discussions[0], { number: 1, title: WELCOME.title, state: 'new', public: true, authorEmail: WELCOME.from.email })
      const categories = await engine.categories(clock).list(site.id, 0, 30)
      t.match(categories, { total: 1, categories: [{ name: DEMO_CATEGORY, public: true }] })
      const { events } = await engine.securityLog(clock).list({ siteId: site.id, offset: 0, limit: 10 })
      t.match(events, [{ kind: 'token_created', actor: 'first_run', address: null, detail: { name: 'First-run token', access: 'write' } }], 'the first-run token is in the security log, once')
      t.equal(events.length, 1)
    }
    const token = results[2].find((r) => r !== null)!.token
    t.ok(await a.tokens(clockFrom()).lookup(token), 'the first-run token is usable')
  })

  t.test('concurrent writers on PostgreSQL: numbers, comments, counts and new authors', async (t) => {
    // Two engines on one database stand for two processes, each with its pool.
    const address = await postgresTestAddress(t)
    const engines = [await openPostgresEngine(address, { poolSize: 5 }), await openPostgresEngine(address, { poolSize: 5 })]
    t.teardown(() => Promise.all(engines.map((e) => e.close())))
    const clock = clockFrom()
    const site = await engines[0].sites(clock).add('demo')
    const users = engines[0].users(clock, box)
    const ann = await users.insert({ email: 'ann@example.test' }, null)
    await users.addStaff(site.id, ann.id)
    const category = await engines[0].categories(clock).add(site.id, 'General', true)
    const stores = engines.map((e) => e.discussions(clock, box))

    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        stores[i % 2].create({
          siteId: site.id,
          categoryId: category.id,
          title: `t${i}`,
          body: 'b',
          supporterId: ann.id,
          // Half of them on behalf of one address nobody has yet: one account must come of it.
          onBehalfOf: i % 2 ? { email: 'new@example.test' } : undefined,
          via: 'api',
        }),
      ),
    )
    t.same(created.map((c) => c.discussion.number).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1), 'numbers 1..20')
    t.equal(new Set(created.filter((_, i) => i % 2).map((c) => c.discussion.authorId)).size, 1, 'one new account')
    const newcomer = (await users.find('new@example.test'))!
    t.equal(await users.role(site.id, newcomer.id), 'customer')

    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        stores[i % 2].reply({ siteId: site.id, number: 1, body: `r${i}`, internal: false, supporterId: ann.id, via: 'api', onBehalfOf: i % 3 ? undefined : { email: 'new@example.test' } }),
      ),
    )
    t.same(replies.map((r) => r.comment.number).sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 2), 'comments 2..13')
    const one = await stores[0].get(site.id, 1)
    t.equal(one.commentsCount, 13)
    t.equal((await stores[0].comments(one.id)).length, 13)

    // State moves racing on the same discussions: the counts still equal the rows.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => stores[i % 2].act(site.id, 1 + (i % 5), actions[(i * 7) % actions.length])),
    )
    for (const state of ['live', 'new', 'open', 'resolved', 'deleted'] as const) {
      const listed = await stores[1].list({ siteId: site.id, state, sort: 'activity', offset: 0, limit: 100 })
      t.equal(listed.total, listed.discussions.length, `${state}: the counts equal the rows`)
    }
    const all = await stores[0].list({ siteId: site.id, state: 'live', sort: 'created', offset: 0, limit: 100 })
    const deleted = await stores[0].list({ siteId: site.id, state: 'deleted', sort: 'created', offset: 0, limit: 100 })
    t.equal(all.total + deleted.total, 20)

    // Two categories of one name at once: two permalinks.
    const pair = await Promise.all(engines.map((e) => e.categories(clock).add(site.id, 'Billing', false)))
    t.same(pair.map((c) => c.permalink).sort(), ['billing', 'billing-2'])
  })
}
