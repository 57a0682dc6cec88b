import t, { type Test } from 'tap'
import { openDatabase } from '../../../db/sqlite/client.ts'
import type { Engine } from '../../../db/engine.ts'
import { openPostgresEngine } from '../../../db/postgres/engine.ts'
import { sqliteEngine } from '../../../db/sqlite/engine.ts'
import type { CountedRow } from '../../../db/stores/discussion-counts.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// The discussion counts as the store's interface shows them (discussions.counts): bump, move, total
// and byCategory answer alike on both engines; on PostgreSQL a move is one transaction that takes
// its two count rows' locks in one order, so opposite moves at once never deadlock.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

const box = createSecretBox('counts test key')
const clock = () => Date.UTC(2024, 0, 15, 9, 0, 0)

async function sqlite(t: Test): Promise<Engine> {
  const engine = sqliteEngine(openDatabase(':memory:'))
  t.teardown(() => engine.close())
  return engine
}

async function postgres(t: Test, address?: string): Promise<Engine> {
  const engine = await openPostgresEngine(address ?? (await postgresTestAddress(t)), { poolSize: 3 })
  t.teardown(() => engine.close())
  return engine
}

/** A site with two categories; the rows of counts they make. */
async function siteOf(engine: Engine) {
  const site = await engine.sites(clock).add('demo')
  const [general, billing] = [await engine.categories(clock).add(site.id, 'General', true), await engine.categories(clock).add(site.id, 'Billing', false)]
  const row = (categoryId: number, state: CountedRow['state'], isPublic: boolean): CountedRow => ({ siteId: site.id, categoryId, state, public: isPublic, assigneeId: 0 })
  return { site, general, billing, row }
}

async function script(engine: Engine): Promise<unknown[]> {
  const counts = engine.discussions(clock, box).counts
  const { site, general, billing, row } = await siteOf(engine)
  const answers: unknown[] = []
  const look = async () => {
    const scopes = [
      { state: 'live' as const },
      { state: 'new' as const },
      { state: 'resolved' as const, categoryId: billing.id },
      { state: 'live' as const, public: true },
      { state: 'deleted' as const, categoryId: general.id, public: false },
    ]
    for (const scope of scopes) answers.push([scope, await counts.total({ siteId: site.id, ...scope })])
    answers.push([...(await counts.byCategory(site.id))].sort(([a], [b]) => a - b))
  }
  await look()
  await counts.bump(row(general.id, 'new', true), 3)
  await counts.bump(row(general.id, 'new', true), 2)
  await counts.bump(row(billing.id, 'open', false), 4)
  await look()
  await counts.move(row(general.id, 'new', true), row(billing.id, 'resolved', false))
  await counts.move(row(billing.id, 'open', false), row(billing.id, 'open', true))
  await counts.move(row(general.id, 'new', true), row(general.id, 'new', true))
  await counts.move(row(general.id, 'new', true), row(general.id, 'deleted', true))
  await look()
  await counts.bump(row(billing.id, 'resolved', false), -1)
  // Spam is counted in its own state, and out of the live ones.
  await counts.move(row(general.id, 'new', true), row(general.id, 'spam', true))
  await look()
  return answers
}

t.test('bump, move, total and byCategory answer alike on SQLite and PostgreSQL', options, async (t) => {
  const expected = await script(await sqlite(t))
  t.same(await script(await postgres(t)), expected)
  // What the script shows, so a store that answers nothing on both would not pass.
  t.same(expected.at(-1), [
    [1, { new: 2, open: 0, resolved: 0, deleted: 1, spam: 1, merged: 0 }],
    [2, { new: 0, open: 4, resolved: 0, deleted: 0, spam: 0, merged: 0 }],
  ])
  t.same(expected.slice(-6, -1), [
    [{ state: 'live' }, 6],
    [{ state: 'new' }, 2],
    [{ state: 'resolved', categoryId: 2 }, 0],
    [{ state: 'live', public: true }, 3],
    [{ state: 'deleted', categoryId: 1, public: false }, 0],
  ])
})

t.test('opposite moves at once from two processes: no deadlock, and the counts add up', options, async (t) => {
  const address = await postgresTestAddress(t)
  const engines = [await postgres(t, address), await postgres(t, address)]
  const { site, general, billing, row } = await siteOf(engines[0]!)
  const [counts, other] = engines.map((e) => e.discussions(clock, box).counts) as [ReturnType<Engine['discussions']>['counts'], ReturnType<Engine['discussions']>['counts']]
  const a = row(general.id, 'open', true)
  const b = row(billing.id, 'resolved', false)
  await counts.bump(a, 100)
  await counts.bump(b, 100)
  const moves = await Promise.allSettled(
    Array.from({ length: 60 }, (_, i) => (i % 2 ? counts : other).move(i % 4 < 2 ? a : b, i % 4 < 2 ? b : a)),
  )
  t.same(moves.filter((m) => m.status === 'rejected').map((m) => (m as PromiseRejectedResult).reason.cause?.code ?? String((m as PromiseRejectedResult).reason)), [], 'every move committed')
  t.same([await counts.total({ siteId: site.id, state: 'open' }), await counts.total({ siteId: site.id, state: 'resolved' })], [100, 100])
})
