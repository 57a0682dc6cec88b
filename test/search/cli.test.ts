import t from 'tap'
import { openEngine } from '../../db/open.ts'
import type { Engine } from '../../db/engine.ts'
import { buildApp } from '../../app.ts'
import { WINDOW } from '../../db/stores/search.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { testClock } from '../fixtures/clock.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The index of what is already there (docs/decisions.md, "Search"), on the suite's engine: the
// seed indexes what it writes, in its batches; a database whose discussions are not in the index
// (an upgrade, a copy) is indexed by `service-desk search index` at once, or by the service in the
// background; a query that matches more than the window says so.

const staff = { staff: true as const, userId: 1 }

async function engineOn(t: Parameters<typeof cliRunner>[0], address: string): Promise<Engine> {
  const engine = await openEngine(address)
  t.teardown(() => engine.close())
  return engine
}

/** How many of the site's live discussions hold the word, counted without the index: in the title or a comment. */
async function holding(runner: Awaited<ReturnType<typeof cliRunner>>, word: string): Promise<number> {
  const [{ n }] = await runner.query<{ n: number | string }>(
    `SELECT count(*) AS n FROM discussions d WHERE d.state <> 'deleted' AND (lower(d.title) LIKE '%${word}%' OR EXISTS (SELECT 1 FROM comments c WHERE c.discussion_id = d.id AND lower(c.body) LIKE '%${word}%'))`,
  )
  return Number(n)
}

t.test('the seed indexes what it writes; search index builds what is missing; a common word is capped', async (t) => {
  const runner = await cliRunner(t)
  t.equal((await runner.run(['site', 'add', 'demo'])).code, 0)
  t.equal((await runner.run(['seed', 'demo', '--discussions', '1200'])).code, 0)
  const engine = await engineOn(t, runner.db)
  const search = engine.search()
  const [site] = await runner.query<{ id: number }>("SELECT id FROM sites WHERE permalink = 'demo'")
  const ask = (q: string) => search.find({ siteId: site.id, searcher: staff, q, offset: 0, limit: 30 })

  const invoices = await holding(runner, 'invoice')
  t.ok(invoices > 30 && invoices < WINDOW, `a word of the seed: ${invoices} discussions`)
  t.match(await ask('invoice'), { total: invoices, capped: false }, 'as many as hold it, counted without the index')
  const common = await ask('the')
  t.match(common, { total: WINDOW, capped: true }, 'more than the window: the newest 1,000, and it says so')
  t.equal(common.results.length, 30)
  t.equal((await runner.run(['search', 'index'])).stdout, '0 discussions indexed for search in 0.0 s\n', 'nothing was missing')

  // The index lost, as after a copy: found again once the command builds it.
  await runner.write('DELETE FROM discussion_search')
  await runner.write("UPDATE search_backfill SET below = (SELECT max(id) + 1 FROM discussions)")
  t.match(await ask('invoice'), { total: 0 }, 'not in the index: not found')
  const built = await runner.run(['search', 'index'])
  t.equal(built.code, 0)
  t.match(built.stdout, /^1200 discussions indexed for search in \d+\.\d s\n$/)
  t.match(built.stderr, /100%  1,200\/1,200/, 'with a progress bar')
  t.match(await ask('invoice'), { total: invoices, capped: false }, 'found again')
  t.equal((await runner.run(['search', 'index', '--again'])).stdout.split(' ')[0], '1200', '--again: every one')
  t.match(await ask('invoice'), { total: invoices })
  // Ids need not start at 1 (on PostgreSQL a rolled-back insert takes one): the backfill ends all the same.
  await runner.write('DELETE FROM discussions WHERE id = 1')
  t.equal((await runner.run(['search', 'index', '--again'])).stdout.split(' ')[0], '1199')
  t.equal(await search.waiting(), 0)
})

t.test('the service indexes what is missing in the background, batch by batch, newest first', async (t) => {
  const runner = await cliRunner(t)
  await runner.run(['site', 'add', 'demo'])
  await runner.run(['seed', 'demo', '--discussions', '1100'])
  await runner.write('DELETE FROM discussion_search')
  await runner.write("UPDATE search_backfill SET below = (SELECT max(id) + 1 FROM discussions)")
  const app = buildApp({ config: { baseUrl: 'https://api.example.test', siteUrl: 'https://help.example.test/{site}', ...runner.appDatabase }, clock: testClock() })
  t.teardown(() => app.close())
  await app.ready()
  const [site] = await runner.query<{ id: number }>("SELECT id FROM sites WHERE permalink = 'demo'")
  const invoices = await holding(runner, 'invoice')
  const total = async () => (await app.discussionSearch.find({ siteId: site.id, searcher: staff, q: 'invoice', offset: 0, limit: 1 })).total
  // A second after start, then batch after batch until none is left.
  const started = Date.now()
  while ((await app.discussionSearch.waiting()) > 0 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(await app.discussionSearch.waiting(), 0, 'none left')
  t.equal(await total(), invoices, 'every one found')
  const [{ below }] = await runner.query<{ below: number }>('SELECT below FROM search_backfill')
  t.ok(Number(below) <= 1, 'the backfill went down to the first')
})
