import { execFileSync } from 'node:child_process'
import http from 'node:http'
import { mkdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import { bodyDifference } from './compare.ts'
import { CACHE, copyDataset, postgresDataset, postgresUnavailable, seededDataset, type Dataset } from './datasets.ts'
import { measure } from './load.ts'
import { FULL_ROUNDS, IDLE_AFTER_ROUNDS_MS, median, record, RESULTS, summarize, table, type Round } from './results.ts'
import { chosen, requestOf, SCENARIOS, SERVERS, TARGETS, type Engine, type ScenarioRow, type ServerPlan } from './scenarios.ts'
import { REPO, serviceDesk } from './service-cli.ts'
import { probe, signIn, startServer, type Answer, type Server } from './servers.ts'

// npm run bench [-- options]: what the service's layers cost next to the bare stack doing the same
// job (tools/bench/baseline.ts, tools/bench/baseline-postgres.ts), against real server processes
// on 127.0.0.1, in alternating rounds, so every figure is a ratio taken on the same machine at the
// same time. tools/bench/README.md says what is measured and how to read it.

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    engine: { type: 'string' },
    postgres: { type: 'string' },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})
const DEFAULT_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test'
if (flags.help) {
  console.log(`Usage: npm run bench [-- options]

  --quick          one round of 1 s, to check that every scenario runs
  --rounds N       rounds of every measurement, in alternating order (default ${FULL_ROUNDS})
  --duration S     seconds per measurement (default 2)
  --connections N  concurrent connections of every measurement (default 16)
  --engine E       sqlite, postgres or both (default both)
  --only IDS       these scenarios alone (comma-separated ids, e.g. pg.create.token.job), with
                   the ones they are compared with; no start-up is measured, no result recorded
  --postgres URL   the PostgreSQL server (default BENCH_POSTGRES_URL, else ${DEFAULT_POSTGRES}); its
                   datasets are the schemas bench_10000 (read) and bench_write_10000 and
                   bench_write_job_10000 (the writes' copies) there, made again each run

A run of both engines and ${FULL_ROUNDS} rounds or more is added to tools/bench/results/history.jsonl and
its table written to tools/bench/results/latest.md; any other run's table goes to tools/bench/.cache/.
`)
  process.exit(0)
}

const engine = flags.engine ?? 'both'
if (!['sqlite', 'postgres', 'both'].includes(engine)) {
  console.error(`--engine: sqlite, postgres or both, not "${engine}"`)
  process.exit(2)
}
const quick = flags.quick === true
const settings = {
  rounds: Number(flags.rounds ?? (quick ? 1 : FULL_ROUNDS)),
  duration: Number(flags.duration ?? (quick ? 1 : 2)),
  connections: Number(flags.connections ?? 16),
}
const POSTGRES_URL = flags.postgres ?? process.env.BENCH_POSTGRES_URL ?? DEFAULT_POSTGRES
const MAIN_SIZE = 10_000
const LARGE_SIZE = quick ? 10_000 : 100_000
const HUGE_SIZE = quick ? 10_000 : 1_000_000
// Seconds of load per server before the rounds: a fresh process needs it before its CPU per request settles (JIT, heap).
const WARMUP = quick ? 1 : 5
const STARTS = quick ? 1 : 3
const RUN = join(CACHE, 'run')

const began = performance.now()
const log = (line: string) => console.log(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// ---- engines
const engines: Engine[] = []
if (engine !== 'postgres') engines.push('sqlite')
if (engine !== 'sqlite') {
  const why = await postgresUnavailable(POSTGRES_URL)
  if (why) log(`PostgreSQL skipped: nothing answers at ${new URL(POSTGRES_URL).host} (${why}); name another with --postgres or BENCH_POSTGRES_URL`)
  else engines.push('postgres')
}
if (engines.length === 0) process.exit(1)
const rows = chosen(SCENARIOS.filter((row) => SERVERS.some((plan) => plan.name === row.server && engines.includes(plan.engine))), flags.only)
const plans = SERVERS.filter((plan) => rows.some((row) => row.server === plan.name))
/** Whether a server of the run serves this dataset (on this engine): what no server serves is not made. */
const served = (data: ServerPlan['data'], on?: Engine) => plans.some((plan) => plan.data === data && (on === undefined || plan.engine === on))
rmSync(RUN, { recursive: true, force: true })
mkdirSync(RUN, { recursive: true })

// ---- data: the seeded SQLite databases (cached) and this run's private copies; on PostgreSQL, a copy of the main one
const main = await seededDataset(MAIN_SIZE, log)
const large = served('large') ? await seededDataset(LARGE_SIZE, log) : main
const huge = served('huge') ? await seededDataset(HUGE_SIZE, log) : main
/** The discussions of the dataset a reply may go to (none deleted), shuffled the same way each run: the replies spread over them. */
function repliable(data: Dataset): number[] {
  const db = new Database(data.db, { readonly: true })
  try {
    return db.prepare<[string], number>("SELECT d.number FROM discussions d JOIN sites s ON s.id = d.site_id WHERE s.permalink = ? AND d.state <> 'deleted' ORDER BY (d.number * 7919) % 10007").pluck().all(data.site)
  } finally {
    db.close()
  }
}
// The webhook receiver of the write-hook server: answers every delivery 204 at once.
const receiver = http.createServer((request, response) => request.resume().on('end', () => response.writeHead(204).end()))
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
receiver.unref()
const sqliteData = {
  main: copyDataset(main, join(RUN, 'main.db')),
  large: copyDataset(large, join(RUN, 'large.db')),
  huge: copyDataset(huge, join(RUN, 'huge.db')),
  write: { ...copyDataset(main, join(RUN, 'write.db')), replies: repliable(main) },
  'write-job': { ...copyDataset(main, join(RUN, 'write-job.db')), replies: repliable(main) },
  'write-hook': copyDataset(main, join(RUN, 'write-hook.db')),
  'write-hook-sent': copyDataset(main, join(RUN, 'write-hook-sent.db')),
  'write-rules': copyDataset(main, join(RUN, 'write-rules.db')),
}
for (const data of [sqliteData['write-hook'], sqliteData['write-hook-sent']]) {
  await serviceDesk(['webhook', 'add', main.site, `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, '--events', 'discussion.created'], data.db)
}
// 50 rules on the events of the write-rules site, as an administrator writes them: words, tags,
// domains and categories that the bench's creations never meet, so each is looked at and none fires.
for (let i = 0; i < 50; i++) {
  const conditions = [{ words: [`refund-${i}`] }, { tags: [`vip-${i}`] }, { domains: [`customer-${i}.example`] }, { categories: [1], words: [`outage ${i}`] }][i % 4]
  await serviceDesk(['rules', 'add', main.site, '--name', `Rule ${i}`, '--events', 'created,customer_replied', '--conditions', JSON.stringify(conditions), '--actions', JSON.stringify([{ type: 'add_tags', tags: ['ruled'] }])], sqliteData['write-rules'].db)
}
// On PostgreSQL, the main dataset, and the writes' two copies of it in schemas of their own.
const pgData: Partial<Record<ServerPlan['data'], Dataset>> = {}
if (engines.includes('postgres')) {
  if (served('main', 'postgres')) pgData.main = await postgresDataset(main, POSTGRES_URL, log)
  if (served('write', 'postgres')) pgData.write = { ...(await postgresDataset(main, POSTGRES_URL, log, `bench_write_${main.discussions}`)), replies: repliable(main) }
  if (served('write-job', 'postgres')) pgData['write-job'] = { ...(await postgresDataset(main, POSTGRES_URL, log, `bench_write_job_${main.discussions}`)), replies: repliable(main) }
}
const dataOf = (plan: ServerPlan): Dataset => (plan.engine === 'postgres' ? pgData[plan.data]! : sqliteData[plan.data])

// ---- the service's JavaScript: cli/build.js compiles dist/ when it is stale, done here so that no timed start includes a build
log(`service: ${execFileSync(process.execPath, [join(REPO, 'cli', 'build.js')], { cwd: REPO, encoding: 'utf8' }).trim()}`)

// A server has started when it answers the listing (the service to a token): the start-up measured.
const firstOf = (plan: ServerPlan) =>
  requestOf({ id: 'first', label: 'first', server: plan.name, path: '{list}', credential: plan.kind === 'service' ? 'token' : 'none', expect: 200 }, dataOf(plan))
const start = (plan: ServerPlan, name = plan.name) => startServer({ name, kind: plan.kind, db: dataOf(plan).db, first: firstOf(plan), logDir: join(RUN, 'logs'), env: plan.env })

// ---- start-up: the service and its baseline alone, from spawn to the first answer, several times;
// and the service on the huge dataset (issue 32: under a second at 1,000,000 discussions)
const startup: Record<string, number> = {}
for (const plan of plans.filter((p) => flags.only === undefined && (p.data === 'main' || p.name === 'service-huge'))) {
  const times: number[] = []
  for (let i = 0; i < STARTS; i++) {
    const server = await start(plan, `${plan.name}-start-${i + 1}`)
    times.push(server.startupMs)
    await server.stop()
  }
  startup[plan.name] = median(times)
}
log(`start-up to the first answer (median of ${STARTS}): ${Object.entries(startup).map(([name, ms]) => `${name} ${ms.toFixed(0)} ms`).join(', ')}`)

// ---- the servers measured, three at a time (their start-up is not what is measured here)
const servers = new Map<string, Server>()
for (let i = 0; i < plans.length; i += 3) for (const server of await Promise.all(plans.slice(i, i + 3).map((plan) => start(plan)))) servers.set(server.name, server)
const planOf = (row: ScenarioRow) => plans.find((plan) => plan.name === row.server)!
/** The resident memory of the servers that serve the whole mix of their engine. */
const residentMb = () => Object.fromEntries(['service', 'baseline', 'pg-service', 'pg-baseline'].filter((name) => servers.has(name)).map((name) => [name, servers.get(name)!.rssMb()]))
// Idle after start, before any request: what a service that was just started holds.
await sleep(5_000)
const startRssMb = residentMb()
// The pages are asked for signed in: the dataset's supporter signs in on each server that serves one, once.
const sessions = new Map<string, string>()
for (const name of new Set(rows.filter((row) => row.credential === 'session').map((row) => row.server))) {
  sessions.set(name, await signIn(servers.get(name)!.url, dataOf(plans.find((plan) => plan.name === name)!)))
}
// A poll sends the ETag of its first answer, asked for once here.
const tags = new Map<string, string>()
for (const row of rows.filter((r) => r.conditional)) {
  const first = await probe(servers.get(row.server)!.url, requestOf(row, dataOf(planOf(row)), sessions.get(row.server)))
  tags.set(row.id, String(first?.headers.etag))
}
function requestFor(row: ScenarioRow) {
  const request = requestOf(row, dataOf(planOf(row)), sessions.get(row.server))
  return row.conditional ? { ...request, headers: { ...request.headers, 'if-none-match': tags.get(row.id)! } } : request
}
const targetOf = (row: ScenarioRow) => ({ ...requestFor(row), url: servers.get(row.server)!.url, expect: row.expect })

// ---- every scenario answers its status, and the service answers the same bytes as the baseline
// for the same page (each engine's baseline the other's too): a difference stops the run
const answers = new Map<string, Answer>()
for (const row of rows.filter((r) => !r.post)) {
  const answer = await probe(servers.get(row.server)!.url, requestFor(row))
  if (answer?.status !== row.expect) throw new Error(`${row.id}: expected ${row.expect}, got ${answer ? `${answer.status}: ${answer.body.slice(0, 200)}` : 'no answer'}`)
  answers.set(row.id, answer)
}
const compared = rows.filter((row) => row.sameAs && answers.has(row.sameAs))
for (const row of compared) {
  const difference = bodyDifference(`${row.id} (${row.sameAs})`, answers.get(row.id)!.body, answers.get(row.sameAs!)!.body)
  if (difference) throw new Error(difference)
}
log(`every scenario answers as expected; the same bytes as the baseline for ${compared.map((row) => row.id).join(', ')}`)

// ---- warm-up: the same budget of load for every server, shared among its scenarios
for (const [name] of servers) {
  const own = rows.filter((row) => row.server === name)
  for (const row of own) await measure(targetOf(row), { duration: Math.max(0.5, WARMUP / own.length), connections: settings.connections })
}

// ---- rounds: every measurement once per round, in alternating order
/** Waits until the server uses under a tenth of a CPU over 200 ms (at most 5 s): what it still serves must not be charged to the next. */
async function quiet(server: Server): Promise<void> {
  for (let i = 0; i < 25; i++) {
    const before = server.cpu()
    await sleep(200)
    if (server.cpu() - before < 0.02) return
  }
}
const rounds: Round[] = []
for (let round = 0; round < settings.rounds; round++) {
  const results: Round = {}
  for (const row of round % 2 === 0 ? rows : [...rows].reverse()) {
    const server = servers.get(row.server)!
    const cpuBefore = server.cpu()
    const result = await measure(targetOf(row), { duration: settings.duration, connections: settings.connections })
    results[row.id] = { ...result, cpuUsPerRequest: ((server.cpu() - cpuBefore) * 1e6) / result.requests }
    await quiet(server)
    const flag = result.unexpected > 0 ? `  UNEXPECTED ${JSON.stringify(result.statuses)}` : ''
    log(`round ${round + 1}/${settings.rounds} ${row.id.padEnd(18)} ${result.rps.toFixed(0).padStart(6)} req/s  p99 ${result.p99.toFixed(2).padStart(7)} ms${flag}`)
  }
  rounds.push(results)
}
// Idle memory after the load.
// (Not for a run of chosen scenarios, which measures no memory: --only.)
if (flags.only === undefined) await sleep(IDLE_AFTER_ROUNDS_MS)
const idleRssMb = residentMb()
await Promise.all([...servers.values()].map((server) => server.stop()))

const run = summarize(rows, rounds, TARGETS, {
  date: new Date().toISOString(),
  // The commit measured, marked when the checkout had changes of its own.
  commit: `${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim()}${execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO, encoding: 'utf8' }).trim() ? ' with uncommitted changes' : ''}`,
  node: process.version,
  machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB`,
  settings: { ...settings, engines },
  startup,
  startRssMb,
  idleRssMb,
})
const full = engines.length === 2 && settings.rounds >= FULL_ROUNDS && !quick && flags.only === undefined
console.log(`\n${table(run)}`)
log(`written: ${record(run, full ? RESULTS : CACHE, full).join(', ')}`)
