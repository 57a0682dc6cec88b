import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { chart } from './chart.ts'
import { FULL_ROUNDS, formatSpread, median, type RawResults, type Row, type Summary } from './results.ts'
import { REPO } from './service-cli.ts'

// tools/bench/results/: results.md (the tables), chart.svg (tools/bench/chart.ts) and results.json (every
// round's figures). Each is written beside itself as .tmp and renamed. A quick run, or one of fewer
// rounds than the issue asks for, writes them to tools/bench/.cache/quick-results/ instead.

export const RESULTS = join(REPO, 'tools', 'bench', 'results')
export const QUICK_RESULTS = join(REPO, 'tools', 'bench', '.cache', 'quick-results')

const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-')
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-')
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-')
const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '' : `${(x * 100).toFixed(0)}%`)
const n = (x: number) => x.toLocaleString('en')

function table(head: string[], rows: string[][], align: string[] = []): string {
  const rule = head.map((_, i) => (align[i] === 'r' ? '---:' : '---'))
  return [head, rule, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

export function markdown(raw: RawResults, summary: Summary): string {
  const { settings, machine } = raw
  const verdict = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? '**met**' : '**missed**')
  const labelOf = (id: string | undefined) => raw.scenarios.find((s) => s.id === id)?.short ?? ''
  const scenarioRow = (r: Row) => [
    r.label + (r.unexpected ? ` (${r.unexpected} unexpected answers)` : ''),
    f0(r.rps),
    f2(r.p50),
    f2(r.p99),
    r.ratio ? labelOf(raw.scenarios.find((s) => s.id === r.id)?.baseline) : '',
    r.ratio ? formatSpread(r.ratio) : '',
    f0(r.cpuUs),
    pct(r.cpuRatio),
  ]
  const main = summary.rows.filter((r) => r.section === 'site' || r.section === 'list' || r.section === 'deep' || r.section === 'create')
  const binaries = summary.rows.filter((r) => r.section === 'binary')
  const loadOf = (id: string) => summary.rows.find((r) => r.id === id)?.rssMaxMb ?? NaN
  const memoryRows: Array<[string, string, string]> = [
    ['service (10,000 discussions)', 'service', 'list.pat-write'],
    ['baseline (10,000 discussions)', 'baseline', 'list.baseline'],
    ['single executable (10,000 discussions)', 'binary', 'binary.binary'],
    [`single executable, ${raw.smallYoungGeneration}`, 'binary-small-young', 'binary.binary-small-young'],
    ['service (1,000,000 discussions)', 'service-scale-1000000', 'scale.service.1000000'],
    ['service on PostgreSQL (10,000 discussions)', 'pg-service', 'pg.list.pat-write'],
    ['baseline on PostgreSQL (10,000 discussions)', 'pg-baseline', 'pg.list.baseline'],
  ]
  const pgRows = summary.rows.filter((r) => r.section === 'pg')
  const withSqlite = (raw.engines ?? ['sqlite']).includes('sqlite')
  const columns = ['Scenario', 'req/s', 'p50 ms', 'p99 ms', 'Pair', 'req/s vs pair: median (min-max)', 'server CPU us/req', 'CPU vs pair']
  const right = ['', 'r', 'r', 'r', 'r', 'r', 'r', 'r']

  function sqliteSections(): string {
    return `## Scenarios (10,000 discussions)

The baseline (\`tools/bench/baseline.ts\`) is written independently of the project's modules: bare
Fastify, better-sqlite3 prepared statements of its own and a hand-written mapping from rows to the
v1 JSON, with no authentication, no logging and no media-type negotiation. For the listing (its
first page and \`?page=166\`) and for \`GET /<site>\` it answers the same bytes as the service for the
same rows, which the run checks before measuring; its bare JSON route (\`GET /bare\`, a constant
object) is the limit for the pairs that build no page: \`GET /<site>\` with a credential and the 401.
"Pair" is the scenario a row's req/s is divided by, round by round; "server CPU" is the server
process's CPU time (all threads, from \`/proc/<pid>/stat\`) per request, which other load on the
machine does not inflate, and "CPU vs pair" the pair's CPU per request over the row's: the
throughput ratio a CPU-bound server would reach on a quiet machine. Creating a discussion has no
pair (the baseline answers no writes): it is there as context.

${table(columns, main.map(scenarioRow), right)}
${
  binaries.length
    ? `
### The single executable

The same listing with a personal token, answered by the single executable (\`dist/service-desk-linux-x64\`
as \`npm run build:binary\` makes it) on the same database, in the same rounds, after the same
warm-up mix as the checkout; then the same file with \`${raw.smallYoungGeneration}\` in its
environment, as the README's systemd example runs it (V8's default young generation is two 16 MB
semi-spaces, and glibc's malloc keeps an arena per thread; the executable reads NODE_OPTIONS as node does).

${table(columns, binaries.map(scenarioRow), right)}
`
    : ''
}
## Scale: the same listing against the number of discussions

${table(
  ['Discussions', 'service req/s', 'service p50 ms', 'service p99 ms', 'baseline req/s', 'baseline p50 ms', 'baseline p99 ms', 'service vs baseline'],
  summary.scale.map((s) => [n(s.size), f0(s.service.rps), f2(s.service.p50), f2(s.service.p99), f0(s.baseline.rps), f2(s.baseline.p50), f2(s.baseline.p99), formatSpread(s.service.ratio)]),
  ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
)}

Largest over smallest (per round; median and range): p50 ${formatSpread(summary.ratios.listingP50, 'p50')}, p99 ${formatSpread(summary.ratios.listingP99, 'p99')}; the baseline's p99 ${formatSpread(summary.ratios.baselineP99, 'p99')}.

The listing query alone, in the benchmark's own process through the service's \`db/sqlite/listing.ts\`
(first page of the live discussions, as the route asks for it), timed call by call:

${table(
  ['Discussions', 'p50 us', 'p99 us', 'SQLite plan'],
  raw.queries.map((q) => [n(q.discussions), f0(q.p50Us), f0(q.p99Us), q.plan.join('; ')]),
  ['r', 'r', 'r', ''],
)}

## Token look-ups against the number of personal tokens stored

\`GET /<site>\` with a personal token (the cheapest route, so the look-up weighs most). Tokens were
inserted as the service stores them (SHA-256 fingerprint of a real token value), 20 per owner.

${table(
  ['Tokens stored', 'req/s', 'p50 ms', 'p99 ms'],
  summary.tokens.map((t) => [n(t.size), f0(t.row.rps), f2(t.row.p50), f2(t.row.p99)]),
  ['r', 'r', 'r', 'r'],
)}

${n(summary.tokens[summary.tokens.length - 1].size)} over ${n(summary.tokens[1]?.size ?? 0)} tokens (per round; median and range): p50 ${formatSpread(summary.ratios.tokensP50, 'p50')}, p99 ${formatSpread(summary.ratios.tokensP99, 'p99')}.

`
  }

  function postgresSection(): string {
    const pgRaw = raw.postgres
    if (!pgRaw || pgRows.length === 0) return `## PostgreSQL\n\nNot measured in this run${pgRaw?.skipped ? `: ${pgRaw.skipped}` : ''}.\n`
    return `## PostgreSQL

The service on PostgreSQL (\`service-desk serve --db postgres://...?schema=bench_10k\`, its pool of
${pgRaw.poolSize} connections) against the PostgreSQL baseline (\`tools/bench/baseline-postgres.ts\`):
bare Fastify and \`pg\` with the same pool size, its own SQL as named prepared statements, the same
hand-written mapping to the v1 JSON as the SQLite baseline (\`tools/bench/baseline-shape.ts\`), none of
the project's modules. The server: ${pgRaw.url}, on the same machine. The rows are the SQLite
datasets' own, copied into a schema per size; before measuring, the run checks that the service's
listing, deep page and \`GET /<site>\` are the PostgreSQL baseline's bytes${
      withSqlite ? ", and that the PostgreSQL baseline's pages are the SQLite baseline's bytes at every size" : ''
    }. Server CPU is the Node process's alone: the PostgreSQL backends' work is not in it.

${table(columns, pgRows.map(scenarioRow), right)}

### The listing against the number of discussions, on PostgreSQL

${table(
  ['Discussions', 'service req/s', 'service p50 ms', 'service p99 ms', 'baseline req/s', 'baseline p50 ms', 'baseline p99 ms', 'service vs baseline'],
  summary.pgScale.map((s) => [n(s.size), f0(s.service.rps), f2(s.service.p50), f2(s.service.p99), f0(s.baseline.rps), f2(s.baseline.p50), f2(s.baseline.p99), formatSpread(s.service.ratio)]),
  ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
)}

Largest over smallest (per round; median and range): p50 ${formatSpread(summary.pgRatios.listingP50, 'p50')}, p99 ${formatSpread(summary.pgRatios.listingP99, 'p99')}; the baseline's p99 ${formatSpread(summary.pgRatios.baselineP99, 'p99')}.

The listing query alone, in the benchmark's own process through the service's \`db/postgres/listing.ts\`
(a pool of the default size; one call at a time, so this is the round trips' latency):

${table(
  ['Discussions', 'p50 us', 'p99 us', 'PostgreSQL plan'],
  pgRaw.queries.map((q) => [n(q.discussions), f0(q.p50Us), f0(q.p99Us), q.plan.map((line) => line.trim().replace(/\s+\(cost=[^)]*\)/, '')).join('; ')]),
  ['r', 'r', 'r', ''],
)}

${table(
  ['Discussions', 'Schema', 'Size on the server', 'Copied from SQLite'],
  pgRaw.datasets.map((d) => [n(d.discussions), d.schema, `${f0(d.bytes / 2 ** 20)} MB`, d.fromCache ? 'kept from an earlier run' : `in ${f1(d.copySeconds ?? NaN)} s`]),
  ['r', '', 'r', ''],
)}
`
  }

  return `# Benchmark results

Produced by \`npm run bench\` on ${raw.date.slice(0, 16).replace('T', ' ')} UTC: Node ${raw.node}, ${machine.cpus} CPUs (${machine.model}),
${f0(machine.memoryGb)} GB, load average ${machine.loadBefore.map(f1).join(' / ')} before and ${machine.loadAfter.map(f1).join(' / ')} after
(a shared machine: absolute figures are noisy, ratios are what to read). Servers and load generator
on the same machine, over 127.0.0.1. ${settings.rounds} round(s) of every measurement in alternating order,
${settings.duration} s each at ${settings.connections} connections, after at least ${settings.warmup} s of load on every server; figures are medians of the rounds and
every ratio is taken within a round, then given as the median and the range (min-max) of the rounds. The whole run took ${f0(raw.seconds)} s.${
    settings.rounds < FULL_ROUNDS ? `\n\n**${settings.rounds} round(s) only: a check that every pair runs, not a measurement of the targets (they need ${FULL_ROUNDS} rounds or more).**` : ''
  }

![Throughput and p99 per scenario; latency against data size](chart.svg)

## Targets

${table(
  ['Target', 'Form', 'Goal', 'Measured: median (min-max)', 'Result'],
  summary.targets.map((t) => [t.name, t.form, t.goal, t.value, verdict(t.met)]),
)}

Every pair is taken round by round (both sides measured in the same round, the rounds in
alternating order); the table gives the median of the rounds and their range. The service runs
with its request logging as \`npm start\` runs it (one line per request at the default level, to a
file); the baseline has none.

## Pairs

${table(
  ['Pair', 'Form', 'Metric', 'Median', 'Min', 'Max', 'Rounds', 'CPU per request (pair\'s over this one\'s)'],
  summary.pairs.map((p) => {
    const f = (x: number) => (p.metric === 'req/s' ? pct(x) : `${f2(x)}x`)
    return [p.name, p.form, p.metric === 'req/s' ? 'req/s ratio' : `${p.metric} ratio`, f(p.spread.median), f(p.spread.min), f(p.spread.max), String(p.spread.rounds), pct(p.cpu)]
  }),
  ['', '', '', 'r', 'r', 'r', 'r', 'r'],
)}

Two forms of the service are measured: the **checkout**, \`node cli/service-desk.js serve\` (the
JavaScript that \`cli/build.js\` compiles into \`dist/\`, as \`npm start\` runs it), and the **single executable** that
\`npm run build:binary\` makes (README, "Deploy as one file"), built from the same checkout at the
start of the run${singleExecutableNote(raw)}

${withSqlite ? sqliteSections() : '_SQLite: not in this run (`--engine postgres`)._\n'}
${postgresSection()}
## Resources

Start-up is from spawning the process to the first answer to an authenticated listing (the
baseline: unauthenticated), each server started alone, the starts interleaved. The single
executable had been started once before (see above), so each timed start is a normal one: its
files already unpacked, only checked against their digests.

${table(
  ['Server', 'Start-up (median)', 'Each start', 'RSS after first answer'],
  raw.startups.map((s) => [s.name, `${f2(median(s.ms) / 1000)} s`, s.ms.map((ms) => f2(ms / 1000)).join(', '), `${f0(median(s.memory.map((m) => m.rssMb)))} MB`]),
  ['', 'r', 'r', 'r'],
)}

Memory from \`/proc/<pid>/status\` (VmRSS; RssAnon is heap and other private memory, RssFile mapped
code such as node itself and native addons): 2 s after the warm-up, at most during its own
scenario, and idle: ${raw.settings.settle} s after the last request of the run (a 40 s pause there changed
no server's RSS). The first-call Basic scenario does not raise it: argon2's 19 MiB per check is
given back.

${table(
  ['Server', 'After warm-up', 'Under load (max)', 'Idle', 'of which anon / file', 'Peak (VmHWM)'],
  memoryRows
    .filter(([, server]) => raw.idle[server])
    .map(([name, server, id]) => {
      const idle = raw.idle[server]
      return [name, `${f0(raw.afterWarmup[server]?.rssMb ?? NaN)} MB`, `${f0(loadOf(id))} MB`, `${f0(idle.rssMb)} MB`, `${f0(idle.anonMb)} / ${f0(idle.fileMb)} MB`, `${f0(raw.peak[server]?.peakMb ?? NaN)} MB`]
    }),
  ['', 'r', 'r', 'r', 'r', 'r'],
)}

## Data

${table(
  ['Discussions', 'File', 'seed command', 'Whole build', 'Built'],
  raw.datasets.map((d) => [n(d.discussions), `${f0(d.bytes / 2 ** 20)} MB`, `${f1(d.seedSeconds)} s`, `${f1(d.buildSeconds)} s`, `${d.builtAt.slice(0, 10)}${d.fromCache ? ' (cached)' : ''}`]),
  ['r', 'r', 'r', 'r', ''],
)}

Databases are built with the service's own command line (\`site add\`, \`user add\`, \`staff add\`,
\`seed --discussions N\`, \`token create\`, \`legacy-token show\`) and cached under \`tools/bench/.cache/\`
(git-ignored), keyed by the migrations and the seed; the PostgreSQL schemas are copies of them
(tools/bench/postgres.ts).${
    withSqlite
      ? ` Personal tokens for the look-up scale were
inserted in ${Object.entries(raw.tokenInserts).map(([size, s]) => `${f1(s)} s (${n(Number(size))})`).join(' and ')}.
The first-call Basic scenario used ${n(raw.firstCall.used)} of ${n(raw.firstCall.accounts)} accounts${raw.firstCall.wrapped ? ' and ran out: some of its calls were remembered' : ', each once'}.`
      : ''
  }
`
}

export function writeReport(raw: RawResults, summary: Summary, dir = RESULTS): string[] {
  mkdirSync(dir, { recursive: true })
  const files: Array<[string, string]> = [
    ['results.md', markdown(raw, summary)],
    ['chart.svg', chart(summary)],
    ['results.json', `${JSON.stringify(raw, null, 2)}\n`],
  ]
  for (const [name, content] of files) {
    const file = join(dir, name)
    writeFileSync(`${file}.tmp`, content)
    renameSync(`${file}.tmp`, file)
  }
  return files.map(([name]) => relative(REPO, join(dir, name)))
}

/** What the targets table says about the single executable: how it was built and first started, or why not. */
function singleExecutableNote(raw: RawResults): string {
  if ('skipped' in raw.binary) return `. It was not measured in this run: ${raw.binary.skipped}.`
  const { bytes, buildSeconds, unpackMs } = raw.binary
  return ` (${f1(bytes / 1e6)} MB, built in ${f1(buildSeconds)} s), its \`XDG_CACHE_HOME\` pointed at a folder of the
run's own (\`tools/bench/.cache/binary/xdg\`). The run starts it once before timing anything (\`--version\`,
${f0(unpackMs)} ms), which unpacks its native addons, migrations and views there; every start timed
below is a normal start, with those files already unpacked. Targets that concern the service as a
whole (data size, Basic against tokens) are measured on the checkout only.`
}
