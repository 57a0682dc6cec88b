import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import t from 'tap'
import { batchesOf, BOTH_ENGINES_IN_ONE, BROWSER_FIXTURE, declaredEngines, drivesBrowser, ENGINE_FIXTURE, engineCoverageReport, longestFirst, ownProcessReason, readsEngine, references, runOrder, testFiles, testPlan, timeReport } from '../../tools/test/plan.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The rule of tools/test/plan.ts, which decides the passes of `npm test`: each file says which
// engines it runs on, and a test reads its engine through test/fixtures/postgres.ts alone, so a
// file that says both but cannot tell the engines apart is seen, and no file runs on SQLite alone
// without saying so.

const ROOT = resolve(import.meta.dirname, '..', '..')

t.test('SERVICE_TEST_ENGINE is read by the engine fixture alone', async (t) => {
  const { execFileSync } = await import('node:child_process')
  // The pattern is built, so this file does not name it.
  const readers = execFileSync('git', ['grep', '-l', ['process', 'env', 'SERVICE_TEST_ENGINE'].join('.'), '--', 'test', 'db', 'lib', 'plugins', 'routes', 'cli', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
  t.same(readers.trim().split('\n'), [ENGINE_FIXTURE])
})

t.test('every test file says which engines it runs on; a file that says both can tell them apart; the plan follows what they say', async (t) => {
  const plan = testPlan(ROOT)
  const both = new Set(plan.postgres)
  let browsers = 0
  for (const file of testFiles(ROOT)) {
    const said = declaredEngines(readFileSync(resolve(ROOT, file), 'utf8'))
    if (!said) {
      t.fail(`${file} says neither "// Engines: both" nor "// Engines: one" (tools/test/plan.ts)`)
      continue
    }
    if (said === 'both') t.ok(readsEngine(ROOT, file), `${file} says both, and reaches the engine fixture`)
    if (drivesBrowser(ROOT, file)) {
      browsers++
      t.equal(said, 'one', `${file} drives the browser: it says one`)
    }
    t.equal(both.has(file), said === 'both', `${file}: ${said === 'both' ? 'in' : 'not in'} the PostgreSQL pass`)
    t.equal(plan.sqlite.includes(file), !file.startsWith(BOTH_ENGINES_IN_ONE), `${file}: ${file.startsWith(BOTH_ENGINES_IN_ONE) ? 'not in' : 'in'} the SQLite pass`)
  }
  t.ok(browsers >= 3, `${browsers} browser files`)
  t.ok(plan.postgres.length > 60, 'most database tests run on both engines')
  t.ok(plan.sqlite.includes('test/lib/bounded-set.test.ts') && !both.has('test/lib/bounded-set.test.ts'), 'a pure module runs once')
})

t.test('what a file says: one line, both or one; none, two, or another word is not a saying', async (t) => {
  t.equal(declaredEngines("import t from 'tap'\n\n// Engines: both: it writes.\n"), 'both')
  t.equal(declaredEngines('// Engines: one: pure.\n'), 'one')
  t.equal(declaredEngines('// no saying\n'), undefined)
  t.equal(declaredEngines('// Engines: both\n// Engines: one\n'), undefined, 'two sayings are none')
  t.equal(declaredEngines('// Engines: some\n'), undefined)
  t.equal(declaredEngines('  // Engines: both, indented, is a comment inside code\n'), undefined)
})

t.test('the rule follows imports, dynamic imports and files started as processes, transitively', async (t) => {
  const files: Record<string, string> = {
    'test/a.test.ts': "import { x } from './fixtures/x.ts'\n// Engines: both\n",
    'test/fixtures/x.ts': "export const x = await import('./y.ts')\n",
    'test/fixtures/y.ts': `import { TEST_ENGINE } from './postgres.ts'\n`,
    'test/b.test.ts': "const child = new URL('./fixtures/z.ts', import.meta.url)\n// Engines: both\n",
    'test/e.test.ts': "import { x } from './fixtures/x.ts'\n// Engines: one\n",
    'test/fixtures/z.ts': "export * from './x.ts'\n",
    'test/c.test.ts': "import t from 'tap'\nimport { p } from '../lib/p.ts'\n// Engines: both\n",
    'lib/p.ts': "import { q } from './q.ts'\n",
    'lib/q.ts': "import { p } from './p.ts'\n",
    [ENGINE_FIXTURE]: 'export const TEST_ENGINE = 1\n',
    'test/d.test.ts': "import { launchChromium } from './fixtures/browser.ts'\nimport { TEST_ENGINE } from './fixtures/postgres.ts'\n// Engines: both\n",
    [BROWSER_FIXTURE]: 'export const launchChromium = 1\n',
  }
  type Tree = { [name: string]: string | Tree }
  const tree: Tree = {}
  for (const [path, text] of Object.entries(files)) {
    const parts = path.split('/')
    let node = tree
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Tree
    node[parts.at(-1)!] = text
  }
  const dir = t.testdir(tree)
  t.same(references(dir, 'test/fixtures/x.ts', files['test/fixtures/x.ts']!), ['test/fixtures/y.ts'])
  t.ok(readsEngine(dir, 'test/a.test.ts'), 'through an import and a dynamic import')
  t.ok(readsEngine(dir, 'test/b.test.ts'), 'through a file started as a process, and a re-export')
  t.notOk(readsEngine(dir, 'test/c.test.ts'), 'a cycle of pure modules ends')
  t.ok(readsEngine(dir, 'test/d.test.ts') && drivesBrowser(dir, 'test/d.test.ts'), 'a browser test that builds the app')
  const plan = testPlan(dir)
  t.same([...plan.sqlite].sort(), ['test/a.test.ts', 'test/b.test.ts', 'test/c.test.ts', 'test/d.test.ts', 'test/e.test.ts'])
  t.same([...plan.postgres].sort(), ['test/a.test.ts', 'test/b.test.ts'], 'the browser test runs once; a file that says one, once; one that says both but cannot tell the engines apart, once')
  t.same(testFiles(dir), testFiles(dir), 'in the same order every time')
})

t.test('each pass starts its longest files first, by the recorded durations; a file not recorded, first of all', async (t) => {
  t.same(longestFirst(['a', 'b', 'c', 'd'], { a: 1, b: 30, d: 2.5 }), ['c', 'b', 'd', 'a'])
  t.same(longestFirst(['x', 'y'], { x: 1, y: 1 }), ['x', 'y'], 'ties keep their order')
  const files = testFiles(ROOT)
  const plan = testPlan(ROOT, files, { sqlite: { [files[0]!]: 1, [files[1]!]: 99 }, postgres: {} })
  t.equal(plan.sqlite.at(-1), files[0], 'a short file last')
  t.equal(plan.sqlite.at(-2), files[1], 'a long one before it, after every file not recorded')
  const recorded = testPlan(ROOT)
  t.not(recorded.sqlite.join(), plan.sqlite.join(), 'the committed durations change the order')
})

t.test('files share a process in batches, in their order, up to a batch\'s seconds and files; one that would feel the others, alone', async (t) => {
  const reasons: Array<[string, string]> = [
    ['t.beforeEach(async () => {})\n', 'it sets hooks, a timeout or a plan on the root test'],
    ['t.setTimeout(60_000)\n', 'it sets hooks, a timeout or a plan on the root test'],
    ["process.env.SERVICE_X = '1'\n", 'it changes its process (environment, directory, listeners, exit code)'],
    ["process.env['SERVICE_X'] = '1'\n", 'it changes its process (environment, directory, listeners, exit code)'],
    ["process.on('exit', () => {})\n", 'it changes its process (environment, directory, listeners, exit code)'],
    ['const m = process.memoryUsage()\n', "it measures its process's memory"],
  ]
  for (const [source, reason] of reasons) t.equal(ownProcessReason(ROOT, 'test/x/y.test.ts', source), reason, source.trim())
  t.equal(ownProcessReason(ROOT, 'test/x/y.test.ts', "if (process.env.CI === 'true') t.fail('x')\n  t.teardown(() => {})\n"), undefined, 'reading the environment, or an inner teardown, is no reason')
  t.equal(ownProcessReason(ROOT, 'test/x/y.test.ts', "import { launchChromium } from '../fixtures/browser.ts'\n"), undefined, 'nor driving the browser: a process launches one Chromium for its files (test/fixtures/browser.ts)')
  const alone = (file: string) => file === 'own'
  const seconds = { a: 10, b: 15, c: 10, long: 45, d: 1, e: 1, f: 1 }
  t.same(batchesOf(ROOT, ['long', 'a', 'b', 'own', 'c', 'd', 'e', 'f', 'new'], seconds, { seconds: 30, files: 3 }, alone), [['long'], ['a', 'b'], ['own'], ['c', 'd', 'e'], ['f', 'new']], 'up to 30 s and 3 files a batch; a file not recorded counts 5 s')
  t.same(batchesOf(ROOT, ['a', 'b'], {}, { seconds: 30, files: 8 }, () => true), [['a'], ['b']])
  t.ok(testPlan(ROOT).sqlite.some((file) => ownProcessReason(ROOT, file) === undefined), 'most of the suite may share')
  t.same(batchesOf(ROOT, ['test/discussions/attachments.test.ts', 'test/lib/mail.test.ts', 'test/lib/accept.test.ts'], {}), [['test/discussions/attachments.test.ts'], ['test/lib/mail.test.ts', 'test/lib/accept.test.ts']], "by default, the files' own sources say which must be alone")
})

t.test('one run for both passes: the longest first, files alone and batches in turn, a file not recorded first of all', async (t) => {
  const entry = (engine: 'sqlite' | 'postgres', files: string[], seconds: number) => ({ engine, files, seconds })
  const long = entry('postgres', ['test/m/processes.test.ts'], 80)
  const longer = entry('postgres', ['test/m/webhooks.test.ts'], 90)
  const browser = entry('sqlite', ['test/w/browser.test.ts'], 50)
  const own = entry('sqlite', ['test/x/own.test.ts'], 2)
  const fresh = entry('sqlite', ['test/x/new.test.ts'], Infinity)
  const batch = (n: number, seconds: number, engine: 'sqlite' | 'postgres' = 'sqlite') => entry(engine, [`test/b/${n}a.test.ts`, `test/b/${n}b.test.ts`], seconds)
  const [b1, b2, b3, b4] = [batch(1, 28), batch(2, 30, 'postgres'), batch(3, 12), batch(4, 28, 'postgres')]
  t.same(runOrder([own, b1, long, b2, browser, b3, longer, b4]), [longer, b2, long, b1, browser, b4, own, b3], 'alone and batches in turn, each longest first; ties keep their order')
  t.same(runOrder([b1, long, fresh]).map((e) => e.files[0]), ['test/x/new.test.ts', 'test/b/1a.test.ts', 'test/m/processes.test.ts'], 'a file not recorded starts first')
  t.same(runOrder([b1, b3]), [b1, b3], 'batches alone')
  t.same(runOrder([]), [])
})

t.test("where a pass's time went: its files' times added up, set-up by kind against the rest, and its slowest files", async (t) => {
  const report = timeReport('postgres', { 'test/a.test.ts': 100, 'test/b.test.ts': 300, 'test/c.test.ts': 0.5 }, 'app\t1000\nPostgreSQL database\t250\napp\t3000\nnot a line\n\nDovecot\tx\n', 2)
  t.equal(
    report,
    [
      "== where the postgres pass's time went: its 3 files' own times add up to 401 s",
      '   set-up 4 s of it (1%): app 4 s (2 times), PostgreSQL database 0 s (1 times); the tests\' own work 396 s (99%)',
      '   its 2 slowest files:',
      '     300.0 s  test/b.test.ts',
      '     100.0 s  test/a.test.ts',
    ].join('\n'),
  )
  t.match(timeReport('sqlite', {}, ''), /its 0 files' own times add up to 0 s\n   set-up 0 s of it \(-\); the tests' own work 0 s \(-\)\n   its 0 slowest files:$/, 'an empty pass')
})

t.test("each engine's own coverage of the stores: the shares, the store files PostgreSQL runs fewer lines of, and the floor", async (t) => {
  const file = (lines: [number, number], branches: [number, number] = [1, 1]) => ({ lines: { covered: lines[0], total: lines[1] }, branches: { covered: branches[0], total: branches[1] } })
  const sqlite = { 'db/stores/a.ts': file([100, 100], [9, 10]), 'db/stores/b.ts': file([50, 50]), 'db/sqlite/engine.ts': file([10, 10]) }
  const postgres = { 'db/stores/a.ts': file([90, 100], [8, 10]), 'db/stores/b.ts': file([50, 50]), 'db/postgres/engine.ts': file([19, 20], [0, 0]) }
  const held = engineCoverageReport(sqlite, postgres, { stores: 90, postgres: 95 })
  t.ok(held.held)
  t.match(held.text, 'db/stores/ on SQLite: lines 100%, branches 90.9%; on PostgreSQL: lines 93.3%, branches 81.8% (at least 90% of lines on each)')
  t.match(held.text, 'db/postgres/ on PostgreSQL: lines 95%, branches 100% (at least 95% of lines)')
  t.match(held.text, '\n     db/stores/a.ts: 90 of 100 lines, SQLite 100')
  t.notMatch(held.text, 'db/stores/b.ts', 'a file both run alike is not named')
  t.notMatch(held.text, 'BELOW')
  const below = engineCoverageReport(sqlite, { ...postgres, 'db/stores/b.ts': file([0, 50]) }, { stores: 90, postgres: 95 })
  t.notOk(below.held, 'a store file PostgreSQL no longer runs takes its share below the floor')
  t.match(below.text, 'BELOW THE FLOOR')
  t.match(below.text, 'db/stores/b.ts: 0 of 50 lines, SQLite 50')
  t.notOk(engineCoverageReport(sqlite, { ...postgres, 'db/postgres/engine.ts': file([10, 20]) }, { stores: 90, postgres: 95 }).held, "PostgreSQL's own code under its floor")
  t.notOk(engineCoverageReport({ ...sqlite, 'db/stores/b.ts': file([0, 50]) }, postgres, { stores: 90, postgres: 0 }).held, "and SQLite's pass under the stores' floor")
  const missing = engineCoverageReport(sqlite, {}, { stores: 0, postgres: 0 })
  t.match(missing.text, 'db/stores/a.ts: 0 of 100 lines, SQLite 100', 'a file the PostgreSQL pass never loaded')
  t.match(missing.text, 'db/postgres/ on PostgreSQL: lines 100%', 'nothing to run is all of it')
  t.ok(engineCoverageReport(sqlite, { ...postgres, 'db/stores/a.ts': file([100, 100]), 'db/postgres/engine.ts': file([20, 20]) }).held, 'the recorded floor by default')
  t.notOk(engineCoverageReport(sqlite, postgres).held, 'which 93% of the stores is under')
})
