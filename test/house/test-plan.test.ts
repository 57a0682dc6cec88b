import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import t from 'tap'
import { BOTH_ENGINES_IN_ONE, BROWSER_FIXTURE, drivesBrowser, ENGINE_FIXTURE, longestFirst, readsEngine, references, testFiles, testPlan } from '../../tools/test/plan.ts'

// The rule of tools/test/plan.ts, which decides the passes of `npm test`: a test reads its engine
// through test/fixtures/postgres.ts alone, so a test that reaches that fixture runs on both engines
// and no database test can run on SQLite alone without anyone deciding so.

const ROOT = resolve(import.meta.dirname, '..', '..')

t.test('SERVICE_TEST_ENGINE is read by the engine fixture alone', async (t) => {
  const { execFileSync } = await import('node:child_process')
  // The pattern is built, so this file does not name it.
  const readers = execFileSync('git', ['grep', '-l', ['process', 'env', 'SERVICE_TEST_ENGINE'].join('.'), '--', 'test', 'db', 'lib', 'plugins', 'routes', 'cli', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
  t.same(readers.trim().split('\n'), [ENGINE_FIXTURE])
})

t.test('every file that builds the app, opens a database or runs the command line runs on both engines, but for the browser tests', async (t) => {
  const plan = testPlan(ROOT)
  const both = new Set(plan.postgres)
  let browsers = 0
  for (const file of testFiles(ROOT)) {
    const source = readFileSync(resolve(ROOT, file), 'utf8')
    const usesEngine = /fixtures\/(app|cli|discussions|credentials|oauth|web)\.ts'/.test(source)
    if (/fixtures\/browser\.ts'/.test(source)) {
      browsers++
      t.ok(plan.sqlite.includes(file) && !both.has(file), `${file} drives the browser: once, in the SQLite pass`)
    } else if (usesEngine) t.ok(both.has(file), `${file} runs on PostgreSQL too`)
  }
  t.ok(browsers >= 3, `${browsers} browser files`)
  t.ok(plan.postgres.length > 60, 'most of the suite runs on both engines')
  t.ok(plan.postgres.every((file) => file.startsWith(BOTH_ENGINES_IN_ONE) || plan.sqlite.includes(file)), 'a file of both passes is in the SQLite pass too')
  t.notOk(plan.sqlite.some((file) => file.startsWith(BOTH_ENGINES_IN_ONE)), 'the two-engine comparisons run once, in the PostgreSQL pass')
  t.ok(plan.sqlite.includes('test/lib/bounded-set.test.ts') && !both.has('test/lib/bounded-set.test.ts'), 'a pure module runs once')
})

t.test('the rule follows imports, dynamic imports and files started as processes, transitively', async (t) => {
  const files: Record<string, string> = {
    'test/a.test.ts': "import { x } from './fixtures/x.ts'\n",
    'test/fixtures/x.ts': "export const x = await import('./y.ts')\n",
    'test/fixtures/y.ts': `import { TEST_ENGINE } from './postgres.ts'\n`,
    'test/b.test.ts': "const child = new URL('./fixtures/z.ts', import.meta.url)\n",
    'test/fixtures/z.ts': "export * from './x.ts'\n",
    'test/c.test.ts': "import t from 'tap'\nimport { p } from '../lib/p.ts'\n",
    'lib/p.ts': "import { q } from './q.ts'\n",
    'lib/q.ts': "import { p } from './p.ts'\n",
    [ENGINE_FIXTURE]: 'export const TEST_ENGINE = 1\n',
    'test/d.test.ts': "import { launchChromium } from './fixtures/browser.ts'\nimport { TEST_ENGINE } from './fixtures/postgres.ts'\n",
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
  t.same([...plan.sqlite].sort(), ['test/a.test.ts', 'test/b.test.ts', 'test/c.test.ts', 'test/d.test.ts'])
  t.same([...plan.postgres].sort(), ['test/a.test.ts', 'test/b.test.ts'], 'the browser test runs once')
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
