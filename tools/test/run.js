// npm test: the whole suite on SQLite, then again on PostgreSQL (docs/decisions.md, "PostgreSQL"),
// with the coverage of both runs checked together (each engine's own code is covered by its run).
// PostgreSQL is SERVICE_TEST_POSTGRES_URL, by default the local server; when none answers the
// second run is skipped and the output says so, except under CI=true, where that is a failure.
// Arguments go to tap (`npm test -- --disable-coverage`). Runs on the Node that runs this script.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

const ROOT = join(import.meta.dirname, '..', '..')
const TAP = join(ROOT, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs')
const COVERAGE = join(ROOT, '.tap', 'coverage')
const POSTGRES_URL = process.env.SERVICE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const args = process.argv.slice(2)
const coverage = !args.includes('--disable-coverage')

function tap(engine, extra) {
  console.log(`\n== the suite on ${engine} (Node ${process.version})`)
  const env = { ...process.env, SERVICE_TEST_ENGINE: engine }
  const run = spawnSync(process.execPath, [TAP, ...extra, ...args], { cwd: ROOT, env, stdio: 'inherit' })
  return run.status ?? 1
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

// Each run checks nothing by itself; the report at the end checks the two runs' coverage together.
const partial = coverage ? ['--allow-incomplete-coverage', '--coverage-report=none'] : []
let failed = tap('sqlite', partial) !== 0
const kept = mkdtempSync(join(tmpdir(), 'service-desk-coverage-'))
try {
  if (coverage && existsSync(COVERAGE)) cpSync(COVERAGE, kept, { recursive: true })
  if (await postgresAnswers()) {
    failed = tap('postgres', partial) !== 0 || failed
  } else if (process.env.CI === 'true') {
    console.log('== PostgreSQL: no server answers, and under CI=true that is a failure')
    failed = true
  } else {
    console.log('== PostgreSQL: SKIPPED, no server answers (set SERVICE_TEST_POSTGRES_URL, or start one)')
  }
  if (coverage) {
    cpSync(kept, COVERAGE, { recursive: true })
    console.log('\n== coverage of both runs')
    const report = spawnSync(process.execPath, [TAP, 'report'], { cwd: ROOT, stdio: 'inherit' })
    failed = report.status !== 0 || failed
  }
} finally {
  rmSync(kept, { recursive: true, force: true })
}
process.exitCode = failed ? 1 : 0
