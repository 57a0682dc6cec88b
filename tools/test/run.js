// npm test: the whole suite, on SQLite and on PostgreSQL, as one run (docs/development.md, "The
// suite"), with the coverage of both engines checked together (each engine's own code is covered
// by its pass). tools/test/plan.ts says which file runs in which pass (a file that cannot tell the
// engines apart runs once), which files share a process (batchesOf) and in which order the
// processes of both passes start (runOrder). PostgreSQL is SERVICE_TEST_POSTGRES_URL, by default
// the local server; when none answers its pass is left out and the output says so, except under
// CI=true, where that is a failure. Arguments go to tap (`npm test -- --disable-coverage`), but for
// `--record-durations`, which writes how long each file took in each pass into
// tools/test/durations.json after a run that passed: the order follows them. Runs on the Node that
// runs this script; tests load the TypeScript sources as that Node does (type stripping), see .taprc.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { batchesOf, DURATIONS, engineCoverageReport, readDurations, runOrder, testPlan, timeReport } from './plan.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const TAP = join(ROOT, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs')
const COVERAGE = join(ROOT, '.tap', 'coverage')
const PROCESSINFO = join(ROOT, '.tap', 'processinfo')
// Loaded first by tap's runner: what its test processes record of the modules they load leaves node_modules out (the file says why).
const RUNNER = pathToFileURL(join(ROOT, 'tools', 'test', 'tap-runner.mjs')).href
const POSTGRES_URL = process.env.SERVICE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const RECORD = '--record-durations'
const record = process.argv.includes(RECORD)
const args = process.argv.slice(2).filter((arg) => arg !== RECORD)
const coverage = !args.includes('--disable-coverage')
const plan = testPlan(ROOT)

const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(0)} s`

const durations = { sqlite: {}, postgres: {} }

// What failed, said again at the very end of the output: a CI log kept only by its tail (the
// tracker's) shows the coverage table and these, not the failing line thousands of lines up.
const failures = []

/** The failed assertions of the run's processes (entries: what tap ran, and the engine and files of each), each with its file and the lines of its report after it (its diagnostics). */
function failuresOf(entries, started) {
  const found = []
  for (const [entry, { engine, files }] of entries) {
    const file = `${entry} (${files.join(', ')})`
    const result = join(ROOT, '.tap', 'test-results', `${entry}.tap`)
    if (!existsSync(result) || statSync(result).mtimeMs < started) continue
    const lines = readFileSync(result, 'utf8').split('\n')
    lines.forEach((line, i) => {
      if (!/^\s*not ok /.test(line) || /# (TODO|SKIP)/.test(line)) return
      found.push(`[${engine}] ${file}: ${line.trim()}\n${lines.slice(i + 1, i + 21).filter((l) => /^\s+\S/.test(l) && !/^\s*(ok|not ok) /.test(l)).join('\n')}`)
    })
  }
  return found
}

/** Where the run's time went, said at the end of the output (docs/development.md, "Where the time goes"). */
const timeReports = []
const setupLogs = mkdtempSync(join(tmpdir(), 'service-desk-setup-'))

/** Where a run writes its entries (tools/test/batch.ts): under .tap, which coverage and tap's tracking of files leave out. */
const BATCHES = join(ROOT, '.tap', 'batches')

/** What a process of an engine's pass is given (tools/test/batch.ts, runEntry): its engine, and where its set-up times and its files' times go. */
const envOf = (engine) => ({ SERVICE_TEST_ENGINE: engine, SERVICE_TEST_SETUP_LOG: join(setupLogs, engine), SERVICE_TEST_BATCH_TIMES: join(setupLogs, `${engine}-batches`) })

/**
 * The files tap is given for the run: for each pass, each file that runs alone and each batch of
 * files (tools/test/plan.ts, batchesOf), the two passes together in the run's order (runOrder), as
 * a file written here that sets its engine and runs its files (tools/test/batch.ts, runEntry),
 * named by its place (tap starts what it is given in the order of the names), its engine and its
 * files (its first, and how many more) so a failure's output says where to look.
 */
function entriesOf(engines) {
  const recorded = readDurations(ROOT)
  const made = engines.flatMap((engine) =>
    batchesOf(ROOT, plan[engine], recorded[engine]).map((files) => ({ engine, files, seconds: files.reduce((sum, file) => sum + (recorded[engine][file] ?? Infinity), 0) })),
  )
  rmSync(BATCHES, { recursive: true, force: true })
  mkdirSync(BATCHES, { recursive: true })
  const entries = new Map()
  runOrder(made).forEach(({ engine, files }, i) => {
    const more = files.length > 1 ? `-and-${files.length - 1}` : ''
    const entry = join('.tap', 'batches', `${String(i).padStart(3, '0')}-${engine}-${files[0].replace(/^test\//, '').replace(/\.test\.ts$/, '').replace(/\W+/g, '-')}${more}.test.ts`)
    const what = files.length > 1 ? 'these files, one after another in one process' : 'this file, alone in its process'
    writeFileSync(join(ROOT, entry), `// Written by tools/test/run.js for one run: ${what}, on ${engine}.\nimport { runEntry } from '../../tools/test/batch.ts'\nawait runEntry(${JSON.stringify(envOf(engine))}, ${JSON.stringify(files)})\n`)
    entries.set(entry, { engine, files })
  })
  return entries
}

/** Runs both passes' processes in one tap run (tools/test/plan.ts, runOrder); true when it passed. */
function tap(engines, extra) {
  const entries = entriesOf(engines)
  const counts = engines.map((engine) => `${plan[engine].length} on ${engine}`).join(', ')
  console.log(`\n== the suite (Node ${process.version}): ${counts}, in ${entries.size} processes`)
  const started = Date.now()
  const env = { ...process.env, SERVICE_TEST_RUN: RUN }
  const run = spawnSync(process.execPath, [`--import=${RUNNER}`, TAP, ...extra, ...args, ...entries.keys()], { cwd: ROOT, env, stdio: 'inherit' })
  const wall = (Date.now() - started) / 1000
  console.log(`== the suite: ${run.status === 0 ? 'passed' : 'FAILED'} in ${seconds(started)}`)
  if (run.status !== 0) failures.push(...failuresOf(entries, started))
  // What each file took: a file alone, from the results tap keeps of this run (its last line,
  // `# time=…ms`); a file of a batch, from what the batch wrote (tools/test/batch.ts).
  for (const [entry, { engine, files }] of entries) {
    if (files.length > 1) continue
    const result = join(ROOT, '.tap', 'test-results', `${entry}.tap`)
    const time = existsSync(result) && statSync(result).mtimeMs >= started && /# time=([\d.]+)ms\s*$/.exec(readFileSync(result, 'utf8'))
    if (time) durations[engine][files[0]] = Math.round(Number(time[1]) / 100) / 10
  }
  timeReports.push(`== the suite took ${Math.round(wall)} s, both engines side by side`)
  for (const engine of engines) {
    const { SERVICE_TEST_SETUP_LOG: setupLog, SERVICE_TEST_BATCH_TIMES: batchTimes } = envOf(engine)
    for (const line of existsSync(batchTimes) ? readFileSync(batchTimes, 'utf8').split('\n') : []) {
      const [file, took] = line.split('\t')
      if (file && took) durations[engine][file] = Number(took)
    }
    timeReports.push(timeReport(engine, durations[engine], existsSync(setupLog) ? readFileSync(setupLog, 'utf8') : ''))
  }
  // Each engine's coverage of the stores, alone: the run's coverage set aside meanwhile, then put back for the report of both.
  if (coverage && existsSync(COVERAGE)) {
    const all = `${COVERAGE}-of-the-run`
    rmSync(all, { recursive: true, force: true })
    renameSync(COVERAGE, all)
    try {
      for (const engine of engines) storeCoverage[engine] = coverageOf(engine, entries, all)
    } finally {
      rmSync(COVERAGE, { recursive: true, force: true })
      renameSync(all, COVERAGE)
    }
  }
  return run.status === 0
}

/** Each engine's coverage of the stores, by file (relative path: lines and branches, covered and total). */
const storeCoverage = {}

/**
 * An engine's coverage of every file under db/, from a json-summary report of the coverage its
 * processes wrote, alone: `all` holds the run's (tap's record of each process names what tap ran
 * in it, or the process it was started from), and the engine's are put where the report reads.
 */
function coverageOf(engine, entries, all) {
  const records = new Map()
  for (const name of readdirSync(PROCESSINFO)) {
    const record = JSON.parse(readFileSync(join(PROCESSINFO, name), 'utf8'))
    records.set(record.uuid, record)
  }
  const engineOf = (record) => (record === undefined ? undefined : (entries.get(record.externalID)?.engine ?? engineOf(records.get(record.parent))))
  rmSync(COVERAGE, { recursive: true, force: true })
  mkdirSync(COVERAGE, { recursive: true })
  for (const name of readdirSync(all)) {
    if (engineOf(records.get(name.replace(/\.json$/, ''))) === engine) cpSync(join(all, name), join(COVERAGE, name))
  }
  spawnSync(process.execPath, [TAP, 'report', 'json-summary', '--allow-incomplete-coverage'], { cwd: ROOT, stdio: 'ignore' })
  const path = join(ROOT, '.tap', 'report', 'coverage-summary.json')
  if (!existsSync(path)) return {}
  const summary = JSON.parse(readFileSync(path, 'utf8'))
  const files = {}
  for (const [file, counts] of Object.entries(summary)) {
    const relative = file.startsWith(`${ROOT}/`) ? file.slice(ROOT.length + 1) : file
    if (relative.startsWith('db/')) files[relative] = { lines: counts.lines, branches: counts.branches }
  }
  return files
}

/**
 * This run's name: each PostgreSQL test's database (a copy of the migrated template:
 * test/fixtures/postgres.ts) carries it, and the run drops its own once it is over, when a
 * DROP DATABASE's checkpoint finds little to write, rather than one by one during the run.
 */
const RUN = randomBytes(4).toString('hex')

/**
 * How many connections drop the run's databases side by side: drops that wait at once share a
 * checkpoint (48 copies dropped 48 at once took 0.9 s, 8 at a time 8-10 s, 2026-12-02); the
 * server's max_connections (100 by default) less room for others bounds it.
 */
const DROPPING = 48

async function dropThisRunsDatabases() {
  const started = Date.now()
  const clients = Array.from({ length: DROPPING }, () => new pg.Client({ connectionString: POSTGRES_URL }))
  let dropped = 0
  try {
    await Promise.all(clients.map((client) => client.connect().catch(() => clients.splice(clients.indexOf(client), 1))))
    if (clients.length === 0) throw new Error('no connection to drop them with')
    // test/fixtures/postgres.ts names them sdt_<run>_<random>.
    const { rows } = await clients[0].query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [`sdt_${RUN}_`])
    const names = rows.map((row) => row.datname)
    await Promise.all(
      clients.map(async (client) => {
        for (let name = names.pop(); name !== undefined; name = names.pop()) {
          await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
          dropped++
        }
      }),
    )
    console.log(`== PostgreSQL: the pass's ${dropped} databases dropped in ${seconds(started)}`)
  } catch (error) {
    console.log(`== PostgreSQL: ${dropped} of the pass's databases dropped, then: ${error.message}`)
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => {})))
  }
}

async function postgresAnswers() {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch (error) {
    console.log(`PostgreSQL at ${new URL(POSTGRES_URL).host} does not answer: ${error.message}`)
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * The suite's database commits without waiting for its write-ahead log to reach the disk
 * (synchronous_commit off, for the connections made from now on): every test migrates a schema of
 * its own (about twenty commits) and writes much, and a commit that waits for the disk cost most
 * of that on a slow one. What the tests see is the same: only a crash of the server itself, which
 * no test causes, could lose the last commits (docs/development.md).
 */
async function commitWithoutWaiting() {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  try {
    await client.connect()
    const { rows } = await client.query('SELECT current_database() AS name')
    await client.query(`ALTER DATABASE "${rows[0].name.replaceAll('"', '""')}" SET synchronous_commit = off`)
  } catch (error) {
    console.log(`== PostgreSQL: commits wait for the disk (${error.message})`)
  } finally {
    await client.end().catch(() => {})
  }
}

// tap's test class is built for .taprc's plugins (no ts-node loader): the run that notices the
// difference would still load every test through ts-node, whose coverage does not merge with
// Node's own (docs/development.md). So it is built again before the run when the plugins it was
// built with (its signature) are not .taprc's; `tap build` takes 8 s, the look 0.3 s.
const { TapConfig } = await import('@tapjs/config')
const { signature } = await import('@tapjs/test')
// (.taprc alone: this script's own arguments are not tap's to parse)
const taprc = await new TapConfig().loadPluginConfigFields().loadConfigFile()
taprc.parse([])
if (taprc.pluginSignature !== signature) {
  const built = spawnSync(process.execPath, [TAP, 'build'], { cwd: ROOT, stdio: 'inherit' })
  if (built.status !== 0) process.exit(1)
}

// The run checks nothing by itself; the report at the end checks both engines' coverage together.
const partial = coverage ? ['--allow-incomplete-coverage', '--coverage-report=none'] : []
const engines = ['sqlite']
let failed = false
if (await postgresAnswers()) {
  await commitWithoutWaiting()
  engines.push('postgres')
} else if (process.env.CI === 'true') {
  console.log('== PostgreSQL: no server answers, and under CI=true that is a failure')
  failed = true
} else {
  console.log('== PostgreSQL: SKIPPED, no server answers (set SERVICE_TEST_POSTGRES_URL, or start one)')
}
try {
  failed = !tap(engines, partial) || failed
} finally {
  if (engines.includes('postgres')) await dropThisRunsDatabases()
}
if (coverage && storeCoverage.sqlite && storeCoverage.postgres) {
  const report = engineCoverageReport(storeCoverage.sqlite, storeCoverage.postgres)
  console.log(`\n${report.text}`)
  if (!report.held) failed = true
}
if (coverage) {
  console.log('\n== coverage of both engines')
  const report = spawnSync(process.execPath, [TAP, 'report'], { cwd: ROOT, stdio: 'inherit' })
  failed = report.status !== 0 || failed
}
if (record) {
  if (failed) console.log(`== ${DURATIONS} not written: the run did not pass`)
  else {
    const sorted = (times) => Object.fromEntries(Object.entries(times).sort(([a], [b]) => a.localeCompare(b)))
    writeFileSync(join(ROOT, DURATIONS), `${JSON.stringify({ sqlite: sorted(durations.sqlite), postgres: sorted(durations.postgres) }, null, 2)}\n`)
    console.log(`== ${DURATIONS} written`)
  }
}
rmSync(setupLogs, { recursive: true, force: true })
console.log(`\n${timeReports.join('\n\n')}`)
// Kept for .ci/run, which says it again when the run is past its budget.
writeFileSync(join(ROOT, '.tap', 'time-report.txt'), `${timeReports.join('\n\n')}\n`)
if (failures.length > 0) console.log(`\n== failed (${failures.length}), as their files report them\n${failures.join('\n')}`)
process.exitCode = failed ? 1 : 0
