import fc from 'fast-check'
import t from 'tap'
import { NARROW_SINCE } from '../../db/sqlite/listing.ts'
import { seedSqliteDiscussions } from '../../db/sqlite/seed.ts'
import { discussionStates } from '../../db/values.ts'
import { slugify } from '../../db/stores/categories.ts'
import type { ListingQuery } from '../../db/stores/discussion-listing.ts'
import { actions, initialState, stateAfterAction, stateAfterComment } from '../../db/stores/discussion-states.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { sqliteStores } from '../fixtures/stores.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

async function stores() {
  const { db, clock, sites, users, categories, discussions, engine, box } = sqliteStores()
  const site = await sites.add('demo')
  const supporter = await users.insert({ email: 'ann@example.test' }, null)
  await users.addStaff(site.id, supporter.id)
  return { db, clock, sites, users, categories, discussions, site, supporter, engine, box }
}

t.test('states follow docs/decisions.md', async (t) => {
  t.equal(initialState(false), 'new')
  t.equal(initialState(true), 'open')
  const afterComment = {
    new: { staff: 'open', note: 'new', customer: 'new' },
    open: { staff: 'open', note: 'open', customer: 'open' },
    resolved: { staff: 'resolved', note: 'resolved', customer: 'open' },
  } as const
  for (const [state, next] of Object.entries(afterComment)) {
    const from = state as keyof typeof afterComment
    t.equal(stateAfterComment(from, true, false), next.staff, `${state}: staff reply`)
    t.equal(stateAfterComment(from, true, true), next.note, `${state}: internal note`)
    t.equal(stateAfterComment(from, false, false), next.customer, `${state}: customer reply`)
    t.equal(stateAfterComment(from, false, true), from, `${state}: a note on a customer's behalf (an automatic mail) moves nothing`)
  }
  const afterAction = {
    resolve: { new: 'resolved', open: 'resolved', resolved: 'resolved' },
    unresolve: { new: 'new', open: 'open', resolved: 'open' },
    toggle: { new: 'resolved', open: 'resolved', resolved: 'open' },
    delete: { new: 'deleted', open: 'deleted', resolved: 'deleted' },
    restore: { new: 'new', open: 'open', resolved: 'resolved' },
    spam: { new: 'spam', open: 'spam', resolved: 'spam' },
    not_spam: { new: 'new', open: 'open', resolved: 'resolved' },
  } as const
  for (const [action, table] of Object.entries(afterAction)) {
    for (const [state, next] of Object.entries(table)) {
      t.equal(stateAfterAction(state as 'new', action as 'resolve', null), next, `${action} on ${state}`)
    }
  }
  t.equal(stateAfterAction('deleted', 'restore', 'resolved'), 'resolved', 'restore brings back the state before delete')
  t.equal(stateAfterAction('deleted', 'restore', null), 'open', 'or open when it is unknown')
  t.equal(stateAfterAction('spam', 'not_spam', 'resolved'), 'resolved', 'not spam brings back the state before spam')
  t.equal(stateAfterAction('spam', 'not_spam', null), 'new', 'or new: it arrived as spam, and nobody answered it')
  t.equal(stateAfterAction('spam', 'restore', 'open'), 'spam', 'restore is for deleted ones')
})

t.test('the counts always equal a count of the rows, whatever happens', async (t) => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('create' as const), category: fc.nat(2), public: fc.option(fc.boolean()), customer: fc.boolean() }),
    fc.record({ kind: fc.constant('reply' as const), pick: fc.nat(), customer: fc.boolean(), internal: fc.boolean() }),
    fc.record({ kind: fc.constant('act' as const), pick: fc.nat(), action: fc.constantFrom(...actions) }),
    fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), category: fc.option(fc.nat(2)), public: fc.option(fc.boolean()) }),
  )
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
      const { db, categories, discussions, site, supporter } = await stores()
      const cats = []
      for (const [i, name] of ['A', 'B', 'C'].entries()) cats.push(await categories.add(site.id, name, i === 0))
      let made = 0
      for (const o of ops) {
        const number = made === 0 ? 0 : 1 + ((o as { pick?: number }).pick ?? 0) % made
        const onBehalfOf = (o as { customer?: boolean }).customer ? { email: 'carol@example.test' } : undefined
        try {
          if (o.kind === 'create') {
            await discussions.create({ siteId: site.id, categoryId: cats[o.category].id, title: 't', body: 'b', public: o.public ?? undefined, supporterId: supporter.id, onBehalfOf, via: 'api' })
            made++
          } else if (made > 0 && o.kind === 'reply') {
            await discussions.reply({ siteId: site.id, number, body: 'r', internal: o.internal, supporterId: supporter.id, onBehalfOf, via: 'api' })
          } else if (made > 0 && o.kind === 'act') {
            await discussions.act(site.id, number, o.action)
          } else if (made > 0 && o.kind === 'update') {
            await discussions.update(site.id, number, { categoryId: o.category === null ? undefined : cats[o.category].id, public: o.public ?? undefined })
          }
        } catch (error) {
          if (!(error instanceof StoreError && error.code === 'conflict')) throw error
        }
      }
      const count = (where: string, ...params: unknown[]) =>
        (db.$client.prepare(`SELECT count(*) AS n FROM discussions WHERE site_id = ? AND ${where}`).get(site.id, ...params) as { n: number }).n
      for (const state of ['live', ...discussionStates] as const) {
        const stateWhere = state === 'live' ? "state not in ('deleted', 'spam', 'merged')" : 'state = ?'
        const stateParams = state === 'live' ? [] : [state]
        for (const category of [undefined, ...cats.map((c) => c.id)]) {
          for (const isPublic of [undefined, true, false]) {
            let where = stateWhere
            const params: unknown[] = [...stateParams]
            if (category !== undefined) (where += ' AND category_id = ?'), params.push(category)
            if (isPublic !== undefined) (where += ' AND public = ?'), params.push(isPublic ? 1 : 0)
            const expected = count(where, ...params)
            const total = await discussions.counts.total({ siteId: site.id, state, categoryId: category, public: isPublic })
            if (total !== expected) throw new Error(`${state}/${category}/${isPublic}: counted ${total}, rows ${expected}`)
          }
        }
      }
      db.$client.close()
    }),
    { numRuns: 60 },
  )
  t.pass('60 random histories, every count exact')
})

t.test('every listing reads one index, never the whole table', async (t) => {
  const { db, clock, box, categories, discussions, site, supporter } = await stores()
  const category = await categories.add(site.id, 'Questions', true)
  await seedSqliteDiscussions(db, clock, box, site, 50)
  const base: ListingQuery = { siteId: site.id, state: 'live', sort: 'activity', offset: 0, limit: 30 }
  const cases: Array<[Partial<ListingQuery>, RegExp, number?]> = [
    [{}, /discussions_site_activity_idx \(site_id=\?\)/],
    [{ sort: 'created' }, /discussions_site_created_idx/],
    [{ sort: 'updated' }, /discussions_site_updated_idx/],
    [{ state: 'open' }, /COVERING INDEX discussions_state_activity_idx \(site_id=\? AND state=\?\)/],
    [{ state: 'deleted', sort: 'created' }, /COVERING INDEX discussions_state_created_idx/],
    [{ state: 'resolved', sort: 'updated' }, /COVERING INDEX discussions_state_updated_idx/],
    [{ categoryId: category.id }, /discussions_category_activity_idx \(site_id=\? AND category_id=\?\)/],
    [{ categoryId: category.id, sort: 'created' }, /discussions_site_created_idx/],
    [{ public: true, sort: 'updated' }, /discussions_site_updated_idx/],
    [{ authorId: supporter.id }, /discussions_author_activity_idx \(site_id=\? AND author_id=\?\)/],
    [{ authorId: supporter.id, sort: 'created' }, /discussions_author_activity_idx \(site_id=\? AND author_id=\?\)/],
    [{ since: { kind: 'number', after: 10 } }, /discussions_site_number_unique \(site_id=\? AND number>\?\)/, 40],
    [{ since: { kind: 'number', after: 10 } }, /discussions_site_activity_idx \(site_id=\?\)/, NARROW_SINCE + 1],
    [{ since: { kind: 'number', after: 10 }, categoryId: category.id }, /discussions_category_activity_idx/, NARROW_SINCE + 1],
    [{ since: { kind: 'date', from: 0 } }, /discussions_site_activity_idx \(site_id=\? AND last_updated_at>\?\)/],
    [{ since: { kind: 'date', from: 0 }, state: 'new', sort: 'created' }, /discussions_state_created_idx \(site_id=\? AND state=\? AND created_at>\?\)/],
    // The queue's first tab keeps its own index beside the one of the due times (the same WHERE).
    [{ state: 'todo' }, /discussions_todo_activity_idx \(site_id=\?\)/],
    // By SLA due time: what the team owes, in the index of its due times.
    [{ state: 'todo', sort: 'due' }, /discussions_todo_due_idx \(site_id=\?\)/],
    [{ state: 'open', sort: 'due' }, /discussions_todo_due_idx \(site_id=\?\)/],
    [{ state: 'todo', sort: 'due', categoryId: category.id }, /discussions_todo_due_idx \(site_id=\?\)/],
    // The breached ones: their own index, in any order.
    [{ breached: true }, /discussions_breached_activity_idx \(site_id=\?\)/],
    [{ breached: true, state: 'todo', sort: 'created' }, /discussions_breached_activity_idx \(site_id=\?\)/],
    [{ breached: true, state: 'open' }, /discussions_breached_activity_idx \(site_id=\?\)/],
  ]
  for (const [query, index, total] of cases) {
    const plan = (await discussions.explain({ ...base, ...query }, total)).join('\n')
    t.match(plan, index, JSON.stringify({ query, total }))
    t.notMatch(plan, /SCAN discussions/, 'no table scan')
  }
  t.notMatch((await discussions.explain(base)).join('\n'), /TEMP B-TREE FOR ORDER BY[\s\S]*TEMP B-TREE/, 'the order index sorts the page; only the 30 rows are re-sorted')
  t.notMatch((await discussions.explain({ ...base, state: 'todo', sort: 'due' })).join('\n'), /TEMP B-TREE FOR ORDER BY[\s\S]*TEMP B-TREE/, 'by due time too')
})

t.test('since=<number> over many discussions reads in listing order and stays right', async (t) => {
  const { db, clock, box, discussions, site } = await stores()
  await seedSqliteDiscussions(db, clock, box, site, NARROW_SINCE + 100)
  const query: ListingQuery = { siteId: site.id, state: 'live', sort: 'created', since: { kind: 'number', after: 1 }, offset: 0, limit: 30 }
  const wide = await discussions.list(query)
  const live = await discussions.counts.total({ siteId: site.id, state: 'live' })
  const firstIsLive = (await discussions.get(site.id, 1)).state !== 'deleted'
  t.equal(wide.total, live - (firstIsLive ? 1 : 0), 'every live discussion but number 1')
  const all = await discussions.list({ ...query, since: undefined })
  t.same(
    wide.discussions.map((d) => d.number),
    all.discussions.map((d) => d.number),
    'the newest are the same with and without since=1',
  )
  const narrow = await discussions.list({ ...query, since: { kind: 'number', after: NARROW_SINCE + 90 } })
  t.ok(narrow.total <= 10)
  t.ok(narrow.discussions.every((d) => d.number > NARROW_SINCE + 90))
})

t.test('categories: permalinks from names, unique per site; names 1 to 100 characters', async (t) => {
  const { categories, sites, site } = await stores()
  t.equal(slugify('Crème brûlée & Co.!', 'x'), 'creme-brulee-co')
  t.equal(slugify('  ---  ', 'fallback'), 'fallback')
  t.equal(slugify('你好', 'discussion'), 'discussion')
  const long = slugify(`${'a'.repeat(59)} b`, 'x')
  t.equal(long, 'a'.repeat(59), 'at most 60 characters, never ending in a dash')
  t.equal((await categories.add(site.id, ' Billing ', false)).permalink, 'billing')
  t.equal((await categories.add(site.id, 'billing', false)).permalink, 'billing-2')
  t.equal((await categories.add(site.id, 'BILLING!', true)).permalink, 'billing-3')
  const other = await sites.add('other')
  t.equal((await categories.add(other.id, 'Billing', false)).permalink, 'billing', 'another site has its own permalinks')
  await t.rejects(categories.add(site.id, '  ', false), { code: 'invalid', field: 'name' })
  await t.rejects(categories.add(site.id, 'x'.repeat(101), false), { message: 'a category name must be 1 to 100 characters' })
  t.equal(await categories.find(other.id, (await categories.add(site.id, 'Mine', false)).id), undefined, 'found only on its own site')
})

t.test('a listing page decodes its rows exactly as a single read does', async (t) => {
  const { clock, categories, discussions, site, supporter } = await stores()
  const category = await categories.add(site.id, 'Questions', true)
  for (let i = 0; i < 5; i++) {
    await discussions.create({ siteId: site.id, categoryId: category.id, title: `Question ${i}`, body: 'b', public: i % 2 === 0, supporterId: supporter.id, via: 'api' })
    clock.advance(61_000)
  }
  await discussions.act(site.id, 2, 'resolve')
  const { discussions: page } = await discussions.list({ siteId: site.id, state: 'live', sort: 'activity', offset: 0, limit: 30 })
  t.equal(page.length, 5)
  for (const row of page) t.same(row, await discussions.get(site.id, row.number), `discussion ${row.number}: the same fields, types and values`)
  t.ok(page.every((row) => row.createdAt instanceof Date && typeof row.public === 'boolean'), 'dates are Dates, flags are booleans')
  t.ok(page.some((row) => row.stateBeforeDelete === null), 'a column that is null stays null')
})
