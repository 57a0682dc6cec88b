import t from 'tap'
import { progressBar } from '../../cli/discussions.ts'
import { testClock } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: one: the discussion commands' words, options and exits. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

/** What the commands left in the database, the same on either engine (numbers as numbers, flags as 0 or 1). */
async function inspect(query: Awaited<ReturnType<typeof cliRunner>>['query']) {
  const numbers = <T>(rows: Array<Record<string, unknown>>) =>
    rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && k !== 'state' && k !== 'name' ? Number(v) : typeof v === 'boolean' ? Number(v) : v]))) as T[]
  const all = async <T>(text: string) => numbers<T>(await query(text))
  return {
    discussions: await all<{ number: number; state: string; comments_count: number; author_id: number }>(
      'SELECT number, state, comments_count, author_id FROM discussions ORDER BY number',
    ),
    counts: await all<{ state: string; n: number }>('SELECT state, sum(count) AS n FROM discussion_counts GROUP BY state ORDER BY state'),
    rows: await all<{ state: string; n: number }>('SELECT state, count(*) AS n FROM discussions GROUP BY state ORDER BY state'),
    comments: (await all<{ n: number }>('SELECT count(*) AS n FROM comments'))[0].n,
    answeredNew: (
      await all<{ n: number }>(
        "SELECT count(*) AS n FROM discussions d WHERE d.state = 'new' AND EXISTS (SELECT 1 FROM comments c WHERE c.discussion_id = d.id AND c.by_supporter)",
      )
    )[0].n,
    customers: (await all<{ n: number }>("SELECT count(*) AS n FROM memberships WHERE role = 'customer'"))[0].n,
    categories: await all<{ name: string; public: number }>('SELECT name, public FROM categories ORDER BY id'),
  }
}

t.test('category add and category list', async (t) => {
  const { run } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const added = await run(['category', 'add', 'demo', 'Feature requests', '--public'])
  t.equal(added.code, 0)
  // `site add` made the first, General.
  t.equal(added.stdout, 'category 2 created: "Feature requests" (feature-requests, public) on demo\n')
  t.equal((await run(['category', 'add', 'demo', 'Feature Requests'])).stdout, 'category 3 created: "Feature Requests" (feature-requests-2, private) on demo\n')
  t.equal((await run(['category', 'list', 'demo'])).stdout, '2\tfeature-requests\tpublic\tFeature requests\n3\tfeature-requests-2\tprivate\tFeature Requests\n1\tgeneral\tprivate\tGeneral\n')

  const unknown = await run(['category', 'add', 'nosuchsite', 'X'])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'service-desk: there is no site "nosuchsite"\n')
  const blank = await run(['category', 'add', 'demo', ' '])
  t.equal(blank.code, 1)
  t.match(blank.stderr, /a category name must be 1 to 100 characters/)
  t.equal((await run(['category', 'add', 'demo'])).code, 2, 'the name is required')
  t.match((await run(['--help'])).stdout, /category add <site> <name> \[--public\][\s\S]*seed <site> --discussions N/)
})

t.test('seed fills a site with consistent discussions, with a progress bar', async (t) => {
  const { run, query } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const seeded = await run(['seed', 'demo', '--discussions', '2500'])
  t.equal(seeded.code, 0)
  t.match(seeded.stdout, /^2500 discussions with \d+ comments by 500 customers added to demo in \d+\.\d s\n$/)
  t.match(seeded.stderr, /^\r\[#{24}\.{6}\]  80%  2,000\/2,500  [\d,]+\/s\r\[#{30}\] 100%  2,500\/2,500  [\d,]+\/s\n$/, 'one redraw per batch')

  const first = await inspect(query)
  t.equal(first.discussions.length, 2500)
  t.same(first.discussions.map((d) => d.number), Array.from({ length: 2500 }, (_, i) => i + 1))
  t.same(first.counts, first.rows, 'the counts match the rows')
  t.same(first.rows.map((r) => r.state), ['deleted', 'new', 'open', 'resolved'], 'every state occurs')
  t.equal(first.answeredNew, 0, 'no discussion is new once a supporter has answered it')
  t.equal(first.comments, first.discussions.reduce((sum, d) => sum + d.comments_count, 0))
  t.same(first.categories, [{ name: 'General', public: 0 }], "the site's own category, the one site add made")

  // Seeding again continues the numbers and reuses the customers and categories.
  await run(['seed', 'demo', '--discussions', '10', '--seed', '7'])
  const second = await inspect(query)
  t.equal(second.discussions.length, 2510)
  t.equal(second.discussions.at(-1)!.number, 2510)
  t.equal(second.customers, 500)
  t.equal(second.categories.length, 1)
})

t.test('the same seed gives the same discussions', async (t) => {
  const one = await cliRunner(t)
  const two = await cliRunner(t)
  for (const { run } of [one, two]) {
    await run(['site', 'add', 'demo'])
    await run(['category', 'add', 'demo', 'Billing'])
    await run(['seed', 'demo', '--discussions', '30', '--seed', '42'])
  }
  t.same((await inspect(one.query)).discussions, (await inspect(two.query)).discussions)
  t.same((await inspect(one.query)).categories, [{ name: 'General', public: 0 }, { name: 'Billing', public: 0 }], "a site's own categories are used")
})

t.test('seed refuses a bad command line', async (t) => {
  const { run } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const cases: Array<[string[], RegExp]> = [
    [['seed', 'demo'], /--discussions is required/],
    [['seed', 'demo', '--discussions', '0'], /--discussions must be a whole number from 1 to 10,000,000, not "0"/],
    [['seed', 'demo', '--discussions', 'many'], /not "many"/],
    [['seed', 'demo', '--discussions', '10000001'], /not "10000001"/],
    [['seed', 'demo', '--discussions', '5', '--seed', 'x'], /--seed must be a whole number, not "x"/],
  ]
  for (const [argv, message] of cases) {
    const res = await run(argv)
    t.equal(res.code, 2, argv.join(' '))
    t.match(res.stderr, message)
  }
  const unknown = await run(['seed', 'nosuchsite', '--discussions', '5'])
  t.equal(unknown.code, 1)
})

t.test('the progress bar redraws one line and ends it when done', async (t) => {
  const clock = testClock()
  let out = ''
  const bar = progressBar({ stderr: (text: string) => void (out += text), stdout: () => {}, env: {}, readStdin: async () => '', clock }, clock())
  bar(1, 3)
  clock.advance(2_000)
  bar(3, 3)
  t.equal(out, '\r[##########....................]  33%  1/3  1,000/s\r[##############################] 100%  3/3  2/s\n')
})
