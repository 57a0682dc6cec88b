// Which test file runs in which pass of `npm test` (docs/development.md, "What runs where"). Each
// test file says it in a line of its own, `// Engines: both` or `// Engines: one`, with its reason:
// a test of a store, a migration, a transaction, or anything the two engines do differently runs
// on both; a test of a page's words, a pure function or a rule's logic over the stores runs on one
// (the SQLite pass). A file that says neither, or says both while it cannot tell the engines
// apart, is refused by test/house/test-plan.test.ts. A test reads the engine it runs on only
// through test/fixtures/postgres.ts (SERVICE_TEST_ENGINE; the same house test checks nothing else
// reads it), so "cannot tell them apart" is mechanical: the file does not reach that fixture
// through its imports, or through a file it starts as a process. Files under test/db/postgres/
// compare the two engines inside one process: the PostgreSQL pass only. Files that drive the
// browser run once: Chromium cannot tell the engines apart.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export const ENGINE_FIXTURE = 'test/fixtures/postgres.ts'
export const BOTH_ENGINES_IN_ONE = 'test/db/postgres/'
/** A file that drives the browser runs once, in the SQLite pass (docs/development.md, "What runs where"). */
export const BROWSER_FIXTURE = 'test/fixtures/browser.ts'
/** How long each file took in each pass of the last recorded run: `npm test -- --record-durations`. */
export const DURATIONS = 'tools/test/durations.json'

export interface Durations {
  sqlite: Record<string, number>
  postgres: Record<string, number>
}

// Static and dynamic imports, re-exports, and files named beside this one (`new URL('./x.ts', import.meta.url)`).
const REFERENCES = [/\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g, /\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]/g, /\bimport\s+['"](\.{1,2}\/[^'"]+)['"]/g, /new URL\(\s*['"](\.{1,2}\/[^'"]+)['"],\s*import\.meta\.url/g]

/** The project's files `file` refers to by a relative path, as paths from the root. */
export function references(root: string, file: string, source: string): string[] {
  const found = new Set<string>()
  for (const pattern of REFERENCES) {
    for (const [, target] of source.matchAll(pattern)) {
      const path = resolve(root, dirname(file), target!)
      if (existsSync(path)) found.add(relative(root, path))
    }
  }
  return [...found]
}

/**
 * What each file on disk refers to, by its path, read once a process: the plan asks it of each
 * test file and of all they import, again for every test file (the house test's plans took 10 s of
 * CPU before; the files do not change while a plan is made).
 */
const referencedOnDisk = new Map<string, string[]>()
function referencesOnDisk(root: string, file: string): string[] {
  const path = join(root, file)
  let found = referencedOnDisk.get(path)
  if (!found) referencedOnDisk.set(path, (found = references(root, file, readFileSync(path, 'utf8'))))
  return found
}

/** Whether `file` reaches the engine fixture through what it refers to, transitively. */
export function readsEngine(root: string, file: string, seen = new Set<string>()): boolean {
  if (file === ENGINE_FIXTURE) return true
  if (seen.has(file) || !/\.(ts|js|mjs)$/.test(file) || file.startsWith('node_modules/')) return false
  seen.add(file)
  return referencesOnDisk(root, file).some((next) => readsEngine(root, next, seen))
}

/**
 * Every test file, from the root, in a fixed order that mixes the folders: tap starts files in the
 * order given, and the files of one folder tend to be alike (four fuzzers, or four suites of real
 * processes, at once on two cores ran past their timeouts). `testPlan` orders the
 * files by their recorded durations; this order stays for files not recorded and for ties.
 */
export function testFiles(root: string): string[] {
  const mixed = (path: string) => createHash('sha256').update(path).digest('hex')
  return readdirSync(join(root, 'test'), { recursive: true })
    .map((path) => join('test', String(path)))
    .filter((path) => path.endsWith('.test.ts'))
    .sort((a, b) => mixed(a).localeCompare(mixed(b)))
}

/** Whether `file` drives Chromium: it imports the browser fixture itself. */
export function drivesBrowser(root: string, file: string, source = readFileSync(join(root, file), 'utf8')): boolean {
  return references(root, file, source).includes(BROWSER_FIXTURE)
}

/** The recorded durations, or none (every file then counts as unmeasured). */
export function readDurations(root: string): Durations {
  const path = join(root, DURATIONS)
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Durations) : { sqlite: {}, postgres: {} }
}

/**
 * Longest first, by the last recorded run: tap starts files in the order given, four at a time, so
 * a long file started last kept the pass waiting on it alone (a 56 s file was 129th of 133). A file
 * not recorded yet comes first, since nothing says it is short; ties keep the mixed order.
 */
export function longestFirst(files: string[], seconds: Record<string, number>): string[] {
  const weight = (file: string) => seconds[file] ?? Number.MAX_VALUE
  return [...files].sort((a, b) => weight(b) - weight(a))
}

/** What a test file says of the engines it runs on: `// Engines: both` or `// Engines: one`, or undefined when it says neither (or both lines). */
export function declaredEngines(source: string): 'both' | 'one' | undefined {
  const said = [...source.matchAll(/^\/\/ Engines: (both|one)\b/gm)].map((m) => m[1] as 'both' | 'one')
  return said.length === 1 ? said[0] : undefined
}

/**
 * The files of each pass, longest first: SQLite runs all but the two-engine comparisons;
 * PostgreSQL, those that say both and read the engine, except the browser's, and the comparisons.
 */
export function testPlan(root: string, files = testFiles(root), durations = readDurations(root)): { sqlite: string[]; postgres: string[] } {
  const sqlite = files.filter((file) => !file.startsWith(BOTH_ENGINES_IN_ONE))
  const onBoth = (file: string) => declaredEngines(readFileSync(join(root, file), 'utf8')) === 'both' && readsEngine(root, file) && !drivesBrowser(root, file)
  const postgres = files.filter((file) => file.startsWith(BOTH_ENGINES_IN_ONE) || onBoth(file))
  return { sqlite: longestFirst(sqlite, durations.sqlite), postgres: longestFirst(postgres, durations.postgres) }
}

/**
 * Why a test file must have a process of its own, or undefined when it may share one with others
 * (tools/test/batch.ts runs a batch's files one after another in one process: a test process costs
 * 1.7-2 s of CPU before its first assertion, docs/development.md, "Where the time goes"). What
 * another file's tests would feel: hooks on the root test (they would run around the other
 * files' tests too), the process's environment, directory, listeners or exit code changed, a
 * timeout or plan of the whole file, and a measure of the process's memory. The files that drive
 * the browser share one too, and its Chromium (test/fixtures/browser.ts, launchChromium).
 */
export function ownProcessReason(root: string, file: string, source = readFileSync(join(root, file), 'utf8')): string | undefined {
  if (/^t\.(before|beforeEach|afterEach|after|setTimeout|plan)\(/m.test(source)) return 'it sets hooks, a timeout or a plan on the root test'
  if (/process\.env\.\w+\s*=[^=]|process\.env\[[^\]]+\]\s*=[^=]|delete process\.env|process\.chdir\(|process\.on\(|process\.exitCode/.test(source)) return 'it changes its process (environment, directory, listeners, exit code)'
  if (/process\.memoryUsage\(/.test(source)) return "it measures its process's memory"
  return undefined
}

/**
 * The most recorded seconds, and the most files, one batch takes: a batch is one file to tap, under
 * its timeout (.taprc: 480 s, room for a batch of 90 recorded seconds on a machine 2.7 times slower
 * than the one that recorded them), and four run side by side. Fewer, longer processes load the
 * service and warm its code fewer times: 31 processes where 30 s and 8 files made 82, the suite 292 s
 * against 336-353 s on one machine (docs/development.md, "A twenty-second look").
 */
export const BATCH = { seconds: 90, files: 20 }

/**
 * A pass's files in batches, in the order given (longest first): a file that needs a process of
 * its own (ownProcessReason), or is longer than a batch, alone; the others together, up to
 * BATCH.seconds of recorded time and BATCH.files files a batch (a file not recorded counts as 5 s).
 */
export function batchesOf(root: string, files: string[], seconds: Record<string, number>, limits = BATCH, alone = (file: string) => ownProcessReason(root, file) !== undefined): string[][] {
  const batches: string[][] = []
  let open: { files: string[]; seconds: number } | undefined
  for (const file of files) {
    const s = seconds[file] ?? 5
    if (alone(file) || s >= limits.seconds) {
      batches.push([file])
      continue
    }
    if (!open || open.seconds + s > limits.seconds || open.files.length >= limits.files) {
      open = { files: [], seconds: 0 }
      batches.push(open.files)
    }
    open.files.push(file)
    open.seconds += s
  }
  return batches
}

/** One process of a run: the engine its files run on, its files (one: a file alone), and their recorded seconds added up (Infinity when one is not recorded). */
export interface RunEntry {
  engine: 'sqlite' | 'postgres'
  files: string[]
  seconds: number
}

/**
 * The order in which a run starts its processes (tap starts them in the order of their names,
 * four at a time; tools/test/run.js names each by its place here). Both passes are one run, so
 * that neither waits on the other's last files: each pass used to end on a few long files alone,
 * two cores half idle, and the PostgreSQL pass started only then. The longest first, so that the
 * run ends on short ones; the files that run alone (real processes, browsers, mail servers: long,
 * and waiting on what they started much of the time) and the batches (short files, busy) taken in
 * turn, so that the longest files start early beside batches, never the four longest together
 * (tried once with the passes apart: they were all real service processes, and the pass slowed).
 * Ties keep their order.
 */
export function runOrder(entries: RunEntry[]): RunEntry[] {
  const longest = (list: RunEntry[]) => list.sort((a, b) => (a.seconds === b.seconds ? 0 : b.seconds - a.seconds))
  const alone = longest(entries.filter((entry) => entry.files.length === 1))
  const batches = longest(entries.filter((entry) => entry.files.length > 1))
  const order: RunEntry[] = []
  for (let i = 0; i < Math.max(alone.length, batches.length); i++) order.push(...alone.slice(i, i + 1), ...batches.slice(i, i + 1))
  return order
}

/** How many of a pass's slowest files its report names. */
export const SLOWEST_NAMED = 15

/**
 * Where an engine's files' time went, in words for the end of `npm test` (which says first how
 * long the run took, both engines side by side): its files' own times added up (files run side by
 * side, so this is more than the run's wall time); the part of that spent in set-up, by kind, from
 * the lines the fixtures wrote (`kind<TAB>ms`: test/fixtures/setup-time.ts), the rest being the
 * tests' own work; and its slowest files.
 */
export function timeReport(engine: string, seconds: Record<string, number>, setupLines: string, slowest = SLOWEST_NAMED): string {
  const files = Object.entries(seconds).sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
  const total = files.reduce((sum, [, s]) => sum + s, 0)
  const kinds = new Map<string, { ms: number; count: number }>()
  for (const line of setupLines.split('\n')) {
    const [kind, ms] = line.split('\t')
    if (!kind || !ms || !/^\d+$/.test(ms)) continue
    const seen = kinds.get(kind) ?? { ms: 0, count: 0 }
    kinds.set(kind, { ms: seen.ms + Number(ms), count: seen.count + 1 })
  }
  const setup = [...kinds.values()].reduce((sum, k) => sum + k.ms, 0) / 1000
  const share = (part: number) => (total > 0 ? `${Math.round((100 * part) / total)}%` : '-')
  const byKind = [...kinds.entries()].sort(([, a], [, b]) => b.ms - a.ms).map(([kind, k]) => `${kind} ${Math.round(k.ms / 1000)} s (${k.count} times)`)
  return [
    `== where the ${engine} pass's time went: its ${files.length} files' own times add up to ${Math.round(total)} s`,
    `   set-up ${Math.round(setup)} s of it (${share(setup)})${byKind.length > 0 ? `: ${byKind.join(', ')}` : ''}; the tests' own work ${Math.round(total - setup)} s (${share(total - setup)})`,
    `   its ${Math.min(slowest, files.length)} slowest files:`,
    ...files.slice(0, slowest).map(([file, s]) => `   ${s.toFixed(1).padStart(7)} s  ${file}`),
  ].join('\n')
}

/** Lines and branches of a file as a coverage summary counts them. */
export interface FileCoverage {
  lines: { total: number; covered: number }
  branches: { total: number; covered: number }
}

/**
 * The least share of the stores' lines (db/stores/) that each pass must run on its own engine, and
 * of the PostgreSQL engine's own code (db/postgres/) that its pass must run: a file moved to one
 * engine whose store paths no other file runs on PostgreSQL shows here (docs/development.md,
 * "What runs where"). On 2026-12-02 the passes ran 99.9% (SQLite) and 98.8% (PostgreSQL) of the
 * stores' lines, and PostgreSQL 100% of its own; raised as tests come, never lowered without a reason.
 */
export const ENGINE_COVERAGE_FLOOR = { stores: 98.5, postgres: 99.5 }

/**
 * Each pass's coverage of the stores, measured on its engine alone (the two passes' coverage is
 * also checked together, by .taprc): the stores' lines and branches each pass ran, the
 * PostgreSQL code's own, and the store files whose lines PostgreSQL runs fewer of than SQLite does.
 */
export function engineCoverageReport(sqlite: Record<string, FileCoverage>, postgres: Record<string, FileCoverage>, floor = ENGINE_COVERAGE_FLOOR): { text: string; held: boolean } {
  const sum = (files: Record<string, FileCoverage>, folder: string) => {
    const total = { lines: 0, coveredLines: 0, branches: 0, coveredBranches: 0 }
    for (const [file, c] of Object.entries(files)) {
      if (!file.startsWith(folder)) continue
      total.lines += c.lines.total
      total.coveredLines += c.lines.covered
      total.branches += c.branches.total
      total.coveredBranches += c.branches.covered
    }
    return { lines: pct(total.coveredLines, total.lines), branches: pct(total.coveredBranches, total.branches) }
  }
  const stores = { sqlite: sum(sqlite, 'db/stores/'), postgres: sum(postgres, 'db/stores/') }
  const own = sum(postgres, 'db/postgres/')
  const fewer = Object.keys(sqlite)
    .filter((file) => file.startsWith('db/stores/'))
    .sort()
    .map((file) => ({ file, on: sqlite[file]!.lines.covered, pg: postgres[file]?.lines.covered ?? 0, total: sqlite[file]!.lines.total }))
    .filter((f) => f.pg < f.on)
  const held = stores.sqlite.lines >= floor.stores && stores.postgres.lines >= floor.stores && own.lines >= floor.postgres
  const text = [
    '== the stores on each engine alone',
    `   db/stores/ on SQLite: lines ${stores.sqlite.lines}%, branches ${stores.sqlite.branches}%; on PostgreSQL: lines ${stores.postgres.lines}%, branches ${stores.postgres.branches}% (at least ${floor.stores}% of lines on each)`,
    `   db/postgres/ on PostgreSQL: lines ${own.lines}%, branches ${own.branches}% (at least ${floor.postgres}% of lines)`,
    ...(fewer.length > 0 ? ['   store files PostgreSQL runs fewer lines of than SQLite does:', ...fewer.map((f) => `     ${f.file}: ${f.pg} of ${f.total} lines, SQLite ${f.on}`)] : []),
    ...(held ? [] : ['   BELOW THE FLOOR (tools/test/plan.ts, ENGINE_COVERAGE_FLOOR): a store path no longer runs on one engine']),
  ].join('\n')
  return { text, held }
}

const pct = (covered: number, total: number) => (total === 0 ? 100 : Math.floor((1000 * covered) / total) / 10)
