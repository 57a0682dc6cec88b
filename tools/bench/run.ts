import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { prepareBinary } from './binary.ts'
import { bodyDifference } from './compare.ts'
import { addFirstCallSupporters, addTokens, CACHE, copyDataset, isCached, seededDataset, type Dataset } from './datasets.ts'
import { measure } from './load.ts'
import { DEFAULT_POSTGRES_URL, postgresDataset, postgresUnavailable, type PostgresDataset } from './postgres.ts'
import { baselineScript, mainThreadProfile, probe, readRss, startServer, type Answer, type Memory, type Server } from './processes.ts'
import { fullProfileReport, type ProfiledScenario } from './profile-report.ts'
import { timeListingQueries } from './query.ts'
import { QUICK_RESULTS, RESULTS, writeReport } from './report.ts'
import { FULL_ROUNDS, summarize, type RawResults } from './results.ts'
import { MAIN_TOKENS, postgresScenarios, scenarios, type Scenario } from './scenarios.ts'
import { REPO } from './service-cli.ts'
import { measureStartups, type StartupPlan as Plan } from './startup.ts'

// npm run bench [-- --quick] [-- --profile] [-- --engine sqlite|postgres|both]: what the service's
// layers cost next to the bare stack doing the same job (tools/bench/baseline.ts on SQLite,
// tools/bench/baseline-postgres.ts on PostgreSQL with the service's pool size), what authentication
// costs, and how the listing and the token look-up grow with data, measured against real server
// processes on 127.0.0.1 in one run, so the figures are ratios taken on the same noisy machine at
// the same time. See tools/bench/README.md.

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    profile: { type: 'boolean' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'no-build': { type: 'boolean' },
    engine: { type: 'string' },
    postgres: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})
if (flags.help) {
  console.log(`Usage: npm run bench [-- options]

  --quick          one short round, to check that every pair runs; the million-discussion database
                   only if cached; its report goes to tools/bench/.cache/quick-results/, not tools/bench/results/
  --rounds N       rounds of every measurement, alternating order (default ${FULL_ROUNDS}; the issue's figures need ${FULL_ROUNDS} or more)
  --duration S     seconds per measurement (default 2)
  --connections N  concurrent connections of every measurement (default 16)
  --no-build       never build a missing million-discussion database (minutes); skip that size
  --engine E       sqlite, postgres or both (default both): which engine's servers and pairs run.
                   A run of one engine writes its report to tools/bench/.cache/<engine>-results/,
                   not tools/bench/results/ (which holds full runs of both)
  --postgres URL   the PostgreSQL server (default BENCH_POSTGRES_URL, else ${DEFAULT_POSTGRES_URL});
                   its datasets are schemas bench_10k, bench_100k, bench_1m there, kept between runs.
                   When no server answers, the PostgreSQL pairs are skipped with a note
  --profile        run the servers under node --cpu-prof and print each scenario's server CPU per
                   request by package and function; its figures are not written to tools/bench/results/
`)
  process.exit(0)
}

const quick = flags.quick === true
const engine = flags.engine ?? 'both'
if (!['sqlite', 'postgres', 'both'].includes(engine)) {
  console.error(`--engine: sqlite, postgres or both, not "${engine}"`)
  process.exit(2)
}
const POSTGRES_URL = flags.postgres ?? process.env.BENCH_POSTGRES_URL ?? DEFAULT_POSTGRES_URL
// The same driver limit on both sides: the service's pool (SERVICE_DB_POOL_SIZE, 10 by default) and the baseline's.
const POOL_SIZE = Number(process.env.SERVICE_DB_POOL_SIZE ?? 10)
const settings = {
  rounds: Number(flags.rounds ?? (quick ? 1 : FULL_ROUNDS)),
  duration: Number(flags.duration ?? 2),
  connections: Number(flags.connections ?? 16),
  // Seconds of load per server before the rounds.
  warmup: quick ? 2 : 5,
  starts: quick ? 1 : 2,
  // Seconds without requests before idle memory is read.
  settle: 5,
  profile: flags.profile === true,
}

// Links in answers are built from these; nothing ever connects to them.
const BASE_URL = 'http://bench.example'
const SITE_URL = 'http://bench.example/{site}'
const MAIN_SIZE = 10_000
const SCALE_SIZES = [100_000, 1_000_000]
const TOKEN_SIZES = [10_000, 100_000]
const FIRST_CALL_ACCOUNTS = 6_000
// A smaller young generation for the single executable, given as an operator would give it
// (V8's default semi-space is 16 MB, so 32 MB of new space).
const SMALL_YOUNG_GENERATION = '--max-semi-space-size=1'
// The environment of the README's systemd example: that, and two malloc arenas instead of one per thread.
const TUNED = `NODE_OPTIONS=${SMALL_YOUNG_GENERATION} MALLOC_ARENA_MAX=2`
const RUN = join(CACHE, 'run')
const ACCEPT = 'application/vnd.service-v1+json'

const began = performance.now()
const log = (line: string) => console.log(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const count = (n: number) => n.toLocaleString('en')
const loadBefore = os.loadavg()
const redacted = (url: string) => {
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

// ---- engines: SQLite always has its files; PostgreSQL runs when a server answers
const withSqlite = engine !== 'postgres'
let postgresSkipped: string | undefined
if (engine !== 'sqlite') {
  const why = await postgresUnavailable(POSTGRES_URL)
  if (why) {
    postgresSkipped = `no PostgreSQL server answers at ${redacted(POSTGRES_URL)} (${why})`
    const help = 'start one (the test suite\'s: .ci/run), or name another with --postgres URL or BENCH_POSTGRES_URL'
    if (!withSqlite) {
      console.error(`PostgreSQL pairs: ${postgresSkipped}; nothing to measure: ${help}.`)
      process.exit(1)
    }
    log(`PostgreSQL pairs SKIPPED: ${postgresSkipped}; ${help}.`)
  }
}
const withPostgres = engine !== 'sqlite' && !postgresSkipped

// ---- data: the seeded databases (cached), then this run's private copies
const datasets = new Map<number, Dataset>()
for (const size of [MAIN_SIZE, ...SCALE_SIZES]) {
  if (size === 1_000_000 && (quick || flags['no-build']) && !isCached(size)) {
    log('the million-discussion database is not cached: skipped (run once without --quick or --no-build to build it)')
    continue
  }
  datasets.set(size, await seededDataset(size, log))
}
const scaleData = [MAIN_SIZE, ...SCALE_SIZES].filter((size) => datasets.has(size)).map((size) => datasets.get(size)!)
// PostgreSQL: a copy of each SQLite dataset, in a schema of its own, kept on the server between runs.
const pgDatasets = new Map<number, PostgresDataset>()
if (withPostgres) for (const [size, dataset] of datasets) pgDatasets.set(size, await postgresDataset(dataset, POSTGRES_URL, log))
const pgMain = pgDatasets.get(MAIN_SIZE)

rmSync(RUN, { recursive: true, force: true })
mkdirSync(RUN, { recursive: true })
// The SQLite servers' private copies (a PostgreSQL-only run has none: `main` is then the seeded file, only read for its site and tokens).
const main = withSqlite ? copyDataset(datasets.get(MAIN_SIZE)!, join(RUN, 'main.db')) : datasets.get(MAIN_SIZE)!
const firstCall = withSqlite ? addFirstCallSupporters(main, FIRST_CALL_ACCOUNTS) : []
const write = withSqlite ? copyDataset(main, join(RUN, 'write.db')) : main
const tokenInserts: Record<number, number> = {}
const tokenData = new Map<number, Dataset>()
if (withSqlite) {
  tokenData.set(MAIN_TOKENS, copyDataset(main, join(RUN, `tokens-${MAIN_TOKENS}.db`)))
  for (const size of TOKEN_SIZES) {
    const copy = copyDataset(main, join(RUN, `tokens-${size}.db`))
    tokenInserts[size] = addTokens(copy, size - MAIN_TOKENS).seconds
    tokenData.set(size, copy)
    log(`${count(size)} personal tokens stored (inserted in ${tokenInserts[size].toFixed(1)} s)`)
  }
}

// ---- the listing query alone, in this process, at every size (interleaved passes), on each engine
const queryPasses = quick ? 1 : 3
const queryCalls = quick ? 1_000 : 2_000
const queries = withSqlite ? await timeListingQueries([...datasets.values()], queryPasses, queryCalls) : []
if (withSqlite) log(`listing query in-process, SQLite: ${queries.map((q) => `${count(q.discussions)}: p50 ${q.p50Us.toFixed(0)} us, p99 ${q.p99Us.toFixed(0)} us`).join('; ')}`)
const pgQueries = withPostgres ? await timeListingQueries([...pgDatasets.values()], queryPasses, queryCalls) : []
if (withPostgres) log(`listing query in-process, PostgreSQL: ${pgQueries.map((q) => `${count(q.discussions)}: p50 ${q.p50Us.toFixed(0)} us, p99 ${q.p99Us.toFixed(0)} us`).join('; ')}`)

const listing = `/${main.site}/discussions`
const common = { baseUrl: BASE_URL, siteUrl: SITE_URL, logDir: join(RUN, 'logs') }
// Each seeded database has tokens of its own.
const firstFor = (dataset: Dataset) => ({ path: listing, headers: { accept: ACCEPT, authorization: `Bearer ${dataset.writeToken}` } })

// ---- the service's JavaScript (cli/build.js compiles dist/ at a start when it is stale: done
// here, so that no timed start includes a build) and the baseline's, compiled from baseline.ts
const build = join(REPO, 'cli', 'build.js')
if (existsSync(build)) log(`service: ${execFileSync(process.execPath, [build], { cwd: REPO, encoding: 'utf8' }).trim()}`)
if (withSqlite) log(`baseline compiled to ${baselineScript()}`)
if (withPostgres) log(`PostgreSQL baseline compiled to ${baselineScript('postgres')}; pool of ${POOL_SIZE} connections on both sides`)

// ---- the single executable: built from this checkout, then started once to unpack
const binary: Awaited<ReturnType<typeof prepareBinary>> = withSqlite ? await prepareBinary() : { skipped: 'not in a PostgreSQL-only run (--engine postgres)' }
if ('skipped' in binary) log(`single executable skipped: ${binary.skipped}`)
else {
  log(`single executable built in ${binary.buildSeconds.toFixed(1)} s (${(binary.bytes / 1e6).toFixed(1)} MB); its first start unpacked it in ${binary.unpackMs.toFixed(0)} ms (not timed with the others)`)
}
const binaryPlan = 'file' in binary ? { kind: 'binary' as const, executable: binary.file, env: binary.env } : undefined

// ---- start-up: each server alone, from spawn to its first answer
const largest = datasets.get(Math.max(...datasets.keys()))!
const sizes = [...new Set([main, largest])]
// The PostgreSQL servers get their pool size as the service reads it, and the baseline the same.
const pgEnv = { SERVICE_DB_POOL_SIZE: String(POOL_SIZE) }
const startups = await measureStartups(
  [
    ...(withSqlite
      ? [
          ...sizes.map((d): Plan => ({ name: `service, ${count(d.discussions)} discussions`, kind: 'service', db: d.file, first: firstFor(d) })),
          { name: `baseline, ${count(MAIN_SIZE)} discussions`, kind: 'baseline', db: main.file, first: { path: listing } } satisfies Plan,
          ...(binaryPlan ? sizes.map((d): Plan => ({ name: `single executable, ${count(d.discussions)} discussions`, ...binaryPlan, db: d.file, first: firstFor(d) })) : []),
        ]
      : []),
    ...(pgMain ? [{ name: `service on PostgreSQL, ${count(MAIN_SIZE)} discussions`, kind: 'service', db: pgMain.file, env: pgEnv, first: firstFor(pgMain) } satisfies Plan] : []),
  ],
  settings.starts,
  common,
  log,
)

// ---- the servers measured
const profileDir = settings.profile ? join(CACHE, 'profiles') : undefined
if (profileDir) rmSync(profileDir, { recursive: true, force: true })
const binaries = binaryPlan
  ? [
      { server: 'binary', label: 'single executable', short: 'single executable', plan: { ...binaryPlan, nodeFlags: [] } },
      {
        server: 'binary-small-young',
        label: `single executable, ${TUNED}`,
        short: 'single executable, tuned',
        plan: { ...binaryPlan, nodeFlags: [SMALL_YOUNG_GENERATION], env: { ...binaryPlan.env, MALLOC_ARENA_MAX: '2' } },
      },
    ]
  : []
const sqlitePlans: Plan[] = [
  { name: 'service', kind: 'service', db: main.file, first: firstFor(main) },
  { name: 'baseline', kind: 'baseline', db: main.file, first: { path: listing } },
  ...binaries.map((b): Plan => ({ name: b.server, ...b.plan, db: main.file, first: firstFor(main) })),
  { name: 'service-write', kind: 'service', db: write.file, first: firstFor(write) },
  ...scaleData.flatMap((d): Plan[] => [
    { name: `service-scale-${d.discussions}`, kind: 'service', db: d.file, first: firstFor(d) },
    { name: `baseline-scale-${d.discussions}`, kind: 'baseline', db: d.file, first: { path: listing } },
  ]),
  ...[...tokenData].map(([size, d]): Plan => ({ name: `service-tokens-${size}`, kind: 'service', db: d.file, first: firstFor(main) })),
]
// On PostgreSQL every server reads the kept schemas directly (the service writes only its tokens' last use there).
const pgPlans: Plan[] = pgMain
  ? [
      { name: 'pg-service', kind: 'service', db: pgMain.file, env: pgEnv, first: firstFor(pgMain) },
      { name: 'pg-baseline', kind: 'baseline-postgres', db: pgMain.file, pool: POOL_SIZE, first: { path: listing } },
      ...[...pgDatasets.values()].flatMap((d): Plan[] => [
        { name: `pg-service-scale-${d.discussions}`, kind: 'service', db: d.file, env: pgEnv, first: firstFor(d) },
        { name: `pg-baseline-scale-${d.discussions}`, kind: 'baseline-postgres', db: d.file, pool: POOL_SIZE, first: { path: listing } },
      ]),
    ]
  : []
const plans: Plan[] = [...(withSqlite ? sqlitePlans : []), ...pgPlans]
const servers = new Map<string, Server>()
// Three at a time: their start-up is not what is measured here.
for (let i = 0; i < plans.length; i += 3) {
  // node takes --cpu-prof on its command line only: the single executable is not profiled.
  const started = await Promise.all(plans.slice(i, i + 3).map((plan) => startServer({ ...common, ...plan, profileDir: plan.kind === 'binary' ? undefined : profileDir })))
  for (const server of started) servers.set(server.name, server)
}
log(`${servers.size} servers answering: ${[...servers.values()].map((s) => `${s.name} (pid ${s.pid})`).join(', ')}`)

const sqliteScenarios = withSqlite ? scenarios({ main, firstCall, scale: scaleData, tokenSizes: [...tokenData.keys()], binaries }) : undefined
const state = sqliteScenarios?.state ?? { firstCallUsed: 0, firstCallWrapped: false }
const all: Scenario[] = [
  ...(sqliteScenarios?.all ?? []),
  ...(pgMain ? postgresScenarios({ main: pgMain, scale: [...pgDatasets.values()], withSqlite }) : []),
]
const serverOf = (scenario: Scenario) => servers.get(scenario.server)!
const targetOf = (scenario: Scenario, server = serverOf(scenario)) => ({ ...scenario.target, url: server.url })

// ---- every scenario answers its expected status, and the baseline answers the same bytes as the
// service for the same page (the listing's first page, the deep page, GET /<site>, at every size):
// the service with its credential, the baseline with none. A difference stops the run.
const answers = new Map<string, Answer>()
for (const scenario of all) {
  if (scenario.target.setupRequest || scenario.target.method === 'POST') continue
  const server = serverOf(scenario)
  const answer = await probe(server.port, scenario.target)
  if (!answer) throw new Error(`${scenario.id}: ${server.name} does not answer (${server.exited() ?? 'still running'}); see ${join(RUN, 'logs', `${server.name}.log`)}`)
  if (answer.status !== scenario.target.expect) throw new Error(`${scenario.id}: expected ${scenario.target.expect}, got ${answer.status}: ${answer.body.slice(0, 200)}`)
  answers.set(scenario.id, answer)
}
const compared: string[] = []
for (const scenario of all) {
  if (!scenario.sameAs || !answers.has(scenario.id)) continue
  const service = answers.get(scenario.id)!
  const reference = answers.get(scenario.sameAs)
  if (!reference) throw new Error(`${scenario.id}: no answer from ${scenario.sameAs} to compare with`)
  const difference = bodyDifference(`${scenario.id} (${scenario.sameAs})`, service.body, reference.body)
  if (difference) throw new Error(difference)
  compared.push(scenario.id)
  // Headers are not part of the check, but a difference in those the baseline sets is said.
  for (const name of ['content-type', 'cache-control', 'link']) {
    if (service.headers[name] !== reference.headers[name]) log(`note: ${scenario.id}: ${name} differs: service ${JSON.stringify(service.headers[name])}, baseline ${JSON.stringify(reference.headers[name])}`)
  }
}
const mustCompare = [
  ...(withSqlite ? ['list.pat-write', 'deep.pat-write', 'site.pat-write'] : []),
  ...(withPostgres ? ['pg.list.pat-write', 'pg.deep.pat-write', 'pg.site.pat-write'] : []),
  ...(withSqlite && withPostgres ? ['pg.list.baseline', 'pg.deep.baseline', 'pg.site.baseline'] : []),
]
for (const id of mustCompare) if (!compared.includes(id)) throw new Error(`${id}: not compared with the baseline`)
log(`every scenario answers as expected; the baseline answers the same bytes as the service for ${compared.length} scenarios (${compared.join(', ')})`)

// ---- warm-up. A fresh server needs seconds of load before its CPU per request settles (JIT,
// heap growth): measured here, about 5 s of listing traffic takes it from ~1.4 ms to ~0.85 ms.
// So every server gets the same budget of load, shared among its scenarios; the single
// executable's servers also get the service's whole mix (their memory is compared with the service's).
const warm = async (scenario: Scenario, server: Server, duration: number) => {
  const result = await measure(targetOf(scenario, server), { duration, connections: settings.connections })
  if (result.unexpected > 0) log(`warm-up ${scenario.id} on ${server.name}: ${JSON.stringify(result.statuses)}`)
}
const mix = all.filter((s) => s.server === 'service' && (s.section === 'site' || s.section === 'list'))
for (const [name, server] of servers) {
  const own = all.filter((s) => s.server === name)
  const scenariosOf = binaries.some((b) => b.server === name) ? [...mix, ...own] : own
  for (const scenario of scenariosOf) await warm(scenario, server, Math.max(0.5, settings.warmup / scenariosOf.length))
}
await sleep(2_000)
const afterWarmup: Record<string, Memory> = {}
for (const [name, server] of servers) afterWarmup[name] = server.rss()
const memoryOf = ['service', 'baseline', ...binaries.map((b) => b.server), 'pg-service', 'pg-baseline'].filter((name) => servers.has(name))
log(`RSS after warm-up: ${memoryOf.map((name) => `${name} ${afterWarmup[name].rssMb.toFixed(1)} MB`).join(', ')}`)

// ---- rounds: every measurement once per round, in alternating order
const rounds: RawResults['rounds'] = []
/** Waits until the server uses under a tenth of a CPU over 200 ms (at most 5 s). */
async function quiet(server: Server): Promise<void> {
  for (let i = 0; i < 25; i++) {
    const before = server.cpu()
    await sleep(200)
    if (server.cpu() - before < 0.02) return
  }
}
// The monotonic clock in microseconds: what V8 stamps profile samples with.
const nowUs = () => Number(process.hrtime.bigint() / 1000n)
for (let round = 0; round < settings.rounds; round++) {
  const order = round % 2 === 0 ? all : [...all].reverse()
  const results: (typeof rounds)[number] = {}
  for (const scenario of order) {
    const server = serverOf(scenario)
    let rssMaxMb = 0
    const sampler = setInterval(() => (rssMaxMb = Math.max(rssMaxMb, readRss(server.pid).rssMb)), 100)
    const cpuBefore = server.cpu()
    const from = nowUs()
    const result = await measure(targetOf(scenario), { duration: settings.duration, connections: settings.connections })
    const to = nowUs()
    const cpuUsPerRequest = ((server.cpu() - cpuBefore) * 1e6) / result.requests
    clearInterval(sampler)
    results[scenario.id] = { ...result, rssMaxMb, cpuUsPerRequest, window: [from, to] }
    // Requests still queued when the load stops go on being served: first-call Basic leaves up to
    // 14 argon2 checks waiting (a third of a CPU-second), which would be charged to whatever runs
    // next. Every measurement starts once the previous server has gone quiet.
    await quiet(server)
    const flag = result.unexpected > 0 ? `  UNEXPECTED ${JSON.stringify(result.statuses)}` : ''
    log(
      `round ${round + 1}/${settings.rounds} ${scenario.id.padEnd(34)} ${result.rps.toFixed(0).padStart(6)} req/s  ` +
        `p50 ${result.p50.toFixed(2).padStart(7)} ms  p99 ${result.p99.toFixed(2).padStart(7)} ms  cpu ${cpuUsPerRequest.toFixed(0).padStart(5)} us/req${flag}`,
    )
  }
  rounds.push(results)
}
const peak: Record<string, Memory> = {}
for (const [name, server] of servers) peak[name] = server.rss()
// Idle is read once the load has stopped. A fresh process gives back some of its start-up memory
// tens of seconds after its first burst of requests (155 MB at start, 126 MB 35 s after a burst),
// but after the warm-up and the rounds a 40 s pause changed no server's RSS, so a short one does.
await sleep(settings.settle * 1000)
const idle: Record<string, Memory> = {}
for (const [name, server] of servers) idle[name] = server.rss()
log(`idle RSS: ${memoryOf.map((name) => `${name} ${idle[name].rssMb.toFixed(1)} MB`).join(', ')}`)
await Promise.all([...servers.values()].map((server) => server.stop()))

const raw: RawResults = {
  date: new Date().toISOString(),
  node: process.version,
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '', memoryGb: os.totalmem() / 2 ** 30, loadBefore, loadAfter: os.loadavg() },
  settings,
  datasets: [...datasets.values()].map(({ discussions, seedSeconds, buildSeconds, builtAt, bytes, fromCache }) => ({ discussions, seedSeconds, buildSeconds, builtAt, bytes, fromCache })),
  tokenInserts,
  queries,
  engines: [...(withSqlite ? (['sqlite'] as const) : []), ...(withPostgres ? (['postgres'] as const) : [])],
  postgres: {
    url: redacted(POSTGRES_URL),
    poolSize: POOL_SIZE,
    ...(postgresSkipped ? { skipped: postgresSkipped } : {}),
    ...(engine === 'sqlite' ? { skipped: 'not in this run (--engine sqlite)' } : {}),
    datasets: [...pgDatasets.values()].map(({ discussions, schema, bytes, fromCache, copySeconds, rows }) => ({ discussions, schema, bytes, fromCache, copySeconds, rows })),
    queries: pgQueries,
  },
  startups,
  binary: 'skipped' in binary ? binary : { bytes: binary.bytes, buildSeconds: binary.buildSeconds, unpackMs: binary.unpackMs },
  smallYoungGeneration: TUNED,
  afterWarmup,
  idle,
  peak,
  scenarios: all.map(({ id, section, label, short, server, baseline, sameAs, size }) => ({ id, section, label, short, server, baseline, sameAs, size })),
  rounds,
  firstCall: { accounts: firstCall.length, used: state.firstCallUsed, wrapped: state.firstCallWrapped },
  seconds: (performance.now() - began) / 1000,
}
const summary = summarize(raw)

if (profileDir) {
  const profiled: ProfiledScenario[] = []
  for (const scenario of all) {
    const dir = serverOf(scenario).profileDir
    const file = dir && mainThreadProfile(dir)
    if (!file) continue
    const windows = rounds.map((round) => round[scenario.id].window)
    const requests = rounds.reduce((sum, round) => sum + round[scenario.id].requests, 0)
    profiled.push({ id: scenario.id, label: scenario.label, file, windows, requests })
  }
  const service = servers.get('service') ?? servers.get('pg-service')!
  const serviceProfile = service.profileDir && mainThreadProfile(service.profileDir)
  const text = fullProfileReport(profiled, serviceProfile ? [{ name: service.name, file: serviceProfile, startupMs: service.startupMs }] : [])
  const file = join(profileDir, 'report.txt')
  writeFileSync(file, text)
  console.log(text)
  console.log(`\nProfiles and this report: ${file}`)
  console.log('A profiled run is slower than a plain one: its figures are printed, not written to tools/bench/results/.')
  console.log(summary.text)
} else {
  // A quick run (or one of fewer rounds than the issue asks for) checks that everything runs: its
  // figures do not replace a full run's in tools/bench/results/.
  // Likewise a run of one engine: tools/bench/results/ holds full runs of both.
  const dir = quick || settings.rounds < FULL_ROUNDS ? QUICK_RESULTS : engine === 'both' && withPostgres ? RESULTS : join(CACHE, `${withSqlite ? 'sqlite' : 'postgres'}-results`)
  const files = writeReport(raw, summary, dir)
  console.log(summary.text)
  log(`written: ${files.join(', ')}`)
}
