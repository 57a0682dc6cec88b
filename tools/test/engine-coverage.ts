// Which test files of the PostgreSQL pass run code of the engines that no other file of that pass
// runs (docs/development.md, "What runs where"): `node tools/test/engine-coverage.ts` runs the
// pass's files each in a process of its own, with V8's coverage, and reads, for each file, which
// parts of the engine code (coverage-sets.ts, ENGINE_CODE: the stores, the two engines' own code,
// the database's plugin and errors) it ran. Files are then picked, those kept on both engines by their kind first
// (KEPT_BY_KIND), then the one that runs the most engine code not yet run for each second it takes,
// until every part any file ran is run; a file never picked runs nothing on PostgreSQL that the
// picked ones do not, and is one that may say `// Engines: one` when what it asks is not something
// the engines do differently (that is a reading, not a count). Not part of npm test: it takes the
// PostgreSQL pass's time and more (no batches). `--last-run` reads the coverage its last run left in
// .tap again (any tap run since replaces it); `--keep` is below. Run nothing else with tap in the
// same checkout meanwhile: every tap run starts by emptying .tap/coverage and .tap/processinfo,
// this one's data with them.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { addTo, type CoveredFunction, ENGINE_CODE, KEPT_BY_KIND, linesOf, pickFiles, type Ran, ranOffsets } from './coverage-sets.ts'
import { testPlan } from './plan.ts'

const root = join(import.meta.dirname, '..', '..')
const files = testPlan(root).postgres
const tap = join(root, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs')
// `--last-run`: read the coverage the last run of this left in .tap, without running anything.
if (!process.argv.includes('--last-run')) {
  for (const dir of ['coverage', 'processinfo']) rmSync(join(root, '.tap', dir), { recursive: true, force: true })
  console.log(`== ${files.length} files of the PostgreSQL pass, each in a process of its own, with coverage`)
  // Without npm test's SERVICE_TEST_RUN: each test's database is copied for it and dropped after it,
  // as for a file run alone, so nothing is left behind.
  const { SERVICE_TEST_RUN: _, ...outside } = process.env
  const env = { ...outside, SERVICE_TEST_ENGINE: 'postgres' }
  const run = spawnSync(process.execPath, [tap, '-R', 'terse', '--allow-incomplete-coverage', '--coverage-report=text-summary', ...files], { cwd: root, env, stdio: 'inherit' })
  if (run.status !== 0) console.log('== some files failed: what they ran still counts, but read it with that in mind')
}
const ran = new Map<string, Ran>()
const seconds = new Map<string, number>()
for (const name of readdirSync(join(root, '.tap', 'processinfo'))) {
  const info = JSON.parse(readFileSync(join(root, '.tap', 'processinfo', name), 'utf8')) as { uuid: string; externalID?: string; runtime?: number }
  const coverage = join(root, '.tap', 'coverage', `${info.uuid}.json`)
  if (!info.externalID || !files.includes(info.externalID) || !existsSync(coverage)) continue
  seconds.set(info.externalID, (info.runtime ?? 1000) / 1000)
  const fileRan: Ran = ran.get(info.externalID) ?? new Map()
  for (const script of (JSON.parse(readFileSync(coverage, 'utf8')) as { result: Array<{ url: string; functions: CoveredFunction[] }> }).result) {
    const prefix = `file://${root}/`
    if (!script.url.startsWith(prefix)) continue
    // A module a test imports mocked (`?tapmock=…`) is another copy of the same source.
    const source = script.url.slice(prefix.length).replace(/\?.*$/, '')
    if (ENGINE_CODE.test(source)) addTo(fileRan, new Map([[source, ranOffsets(script.functions)]]))
  }
  ran.set(info.externalID, fileRan)
}
// `--keep <path>` (repeated; a file, or a folder ending in /): files that stay on both for what they
// ask (concurrency on one database, hostile input, the order of NULLs), counted before the others.
const asked = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--keep' ? [arg] : []))
const kept = files.filter((file) => (KEPT_BY_KIND.test(file) || asked.some((path) => file === path || (path.endsWith('/') && file.startsWith(path)))) && ran.has(file))
const picked = pickFiles(ran, seconds, kept)
const describe = (gain: Map<string, number[]>) => {
  const where = [...gain].map(([source, offsets]) => {
    const lines = linesOf(readFileSync(join(root, source), 'utf8'), offsets)
    return `${source} ${lines.length} (${lines.slice(0, 8).join(' ')}${lines.length > 8 ? ' …' : ''})`
  })
  return where.length > 0 ? where.join('; ') : 'nothing of its own'
}
console.log(`\n== kept on both by their kind (${KEPT_BY_KIND}${asked.length > 0 ? ` and --keep ${asked.join(' ')}` : ''}): ${kept.length} files`)
for (const p of picked.filter((p) => p.byKind)) console.log(`   ${p.file} (${seconds.get(p.file)?.toFixed(1)} s): ${describe(p.gain)}`)
console.log('\n== then, in the order picked, each with the lines of engine code it runs that those before it do not:')
for (const p of picked.filter((p) => !p.byKind)) console.log(`   ${p.file} (${seconds.get(p.file)?.toFixed(1)} s): ${describe(p.gain)}`)
const rest = files.filter((file) => ran.has(file) && !picked.some((p) => p.file === file))
const restSeconds = rest.reduce((sum, file) => sum + (seconds.get(file) ?? 0), 0)
console.log(`\n== run nothing of the engine code on PostgreSQL that the files above do not: ${rest.length} files, ${restSeconds.toFixed(0)} s`)
for (const file of rest) console.log(`   ${file} (${seconds.get(file)?.toFixed(1)} s)`)
const missing = files.filter((file) => !ran.has(file))
if (missing.length > 0) console.log(`\n== no coverage read (failed before writing any?): ${missing.join(', ')}`)
