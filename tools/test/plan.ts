// Which test file runs in which pass of `npm test` (docs/development.md, "The suite"). The rule is
// mechanical: a test reads the engine it runs on only through test/fixtures/postgres.ts
// (SERVICE_TEST_ENGINE; test/house/test-plan.test.ts checks nothing else reads it), so a file that
// reaches that fixture through its imports, or through a file it starts as a process, runs on both
// engines; any other file does the same thing in both passes and runs once, in the SQLite pass.
// Files under test/db/postgres/ compare the two engines inside one process: the PostgreSQL pass only.
// Files that drive the browser run once too: what the pages store is tested on both engines by the
// page tests through app.inject, and Chromium cannot tell the engines apart.
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

/** Whether `file` reaches the engine fixture through what it refers to, transitively. */
export function readsEngine(root: string, file: string, read = (path: string) => readFileSync(join(root, path), 'utf8'), seen = new Set<string>()): boolean {
  if (file === ENGINE_FIXTURE) return true
  if (seen.has(file) || !/\.(ts|js|mjs)$/.test(file) || file.startsWith('node_modules/')) return false
  seen.add(file)
  return references(root, file, read(file)).some((next) => readsEngine(root, next, read, seen))
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

/**
 * The files of each pass, longest first: SQLite runs all but the two-engine comparisons;
 * PostgreSQL, those that read the engine, except the browser's, which cannot tell the engines apart.
 */
export function testPlan(root: string, files = testFiles(root), durations = readDurations(root)): { sqlite: string[]; postgres: string[] } {
  const sqlite = files.filter((file) => !file.startsWith(BOTH_ENGINES_IN_ONE))
  const postgres = files.filter((file) => file.startsWith(BOTH_ENGINES_IN_ONE) || (readsEngine(root, file) && !drivesBrowser(root, file)))
  return { sqlite: longestFirst(sqlite, durations.sqlite), postgres: longestFirst(postgres, durations.postgres) }
}
