import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { median, type RawResults, type Row, type Summary } from './results.ts'
import { REPO } from './service-cli.ts'

// bench/results/: results.md (the tables), chart.svg (hand-written SVG, no dependencies) and
// results.json (every round's figures). Each is written beside itself as .tmp and renamed.

export const RESULTS = join(REPO, 'bench', 'results')

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
  const scenarioRow = (r: Row) => [
    r.label + (r.unexpected ? ` (${r.unexpected} unexpected answers)` : ''),
    f0(r.rps),
    f2(r.p50),
    f2(r.p99),
    pct(r.ratio),
    pct(r.ratioLogged),
    f0(r.cpuUs),
    pct(r.cpuRatio),
  ]
  const main = summary.rows.filter((r) => r.section === 'site' || r.section === 'list' || r.section === 'create')
  const experiments = summary.rows.filter((r) => r.section === 'experiment')
  const loadOf = (id: string) => summary.rows.find((r) => r.id === id)?.rssMaxMb ?? NaN
  const memoryRows: Array<[string, string, string]> = [
    ['service (10,000 discussions)', 'service', 'list.pat-write'],
    ['baseline (10,000 discussions)', 'baseline', 'list.baseline'],
    ['service built into a single file (experiment)', 'single-file', 'experiment.single-file'],
    [`single-file build, ${raw.smallYoungGeneration} (experiment)`, 'single-file-small-young', 'experiment.single-file-small-young'],
    ['service (1,000,000 discussions)', 'service-scale-1000000', 'scale.service.1000000'],
  ]
  const columns = ['Scenario', 'req/s', 'p50 ms', 'p99 ms', 'vs baseline', 'vs baseline + logging', 'server CPU us/req', 'CPU vs baseline']
  const right = ['', 'r', 'r', 'r', 'r', 'r', 'r', 'r']

  return `# Benchmark results

Produced by \`npm run bench\` on ${raw.date.slice(0, 16).replace('T', ' ')} UTC: Node ${raw.node}, ${machine.cpus} CPUs (${machine.model}),
${f0(machine.memoryGb)} GB, load average ${machine.loadBefore.map(f1).join(' / ')} before and ${machine.loadAfter.map(f1).join(' / ')} after
(a shared machine: absolute figures are noisy, ratios are what to read). Servers and load generator
on the same machine, over 127.0.0.1. ${settings.rounds} round(s) of every measurement in alternating order,
${settings.duration} s each at ${settings.connections} connections, after at least ${settings.warmup} s of load on every server; figures are medians of the rounds and
every ratio is taken within a round. The whole run took ${f0(raw.seconds)} s.

![Throughput and p99 per scenario; latency against data size](chart.svg)

## Targets

${table(
  ['Target', 'Goal', 'Measured', 'Result'],
  summary.targets.map((t) => [t.name, t.goal, t.value, verdict(t.met)]),
)}

## Scenarios (10,000 discussions)

The baseline is a bare Fastify app (\`bench/baseline.ts\`) with the service's own database plugin and
route plugins, so it runs the same listing module and prepared statements and answers the same
bytes from the same SQLite file (checked at every run), without authentication, media-type
negotiation or logging; a second instance of it logs every request as the service does (two JSON
lines to standard output, here a file), so "vs baseline + logging" leaves what authentication and
media-type negotiation cost. "vs baseline" is req/s over the baseline's for the same route; "server
CPU" is the server process's CPU time (all threads, from \`/proc/<pid>/stat\`) per request, which
other load on the machine does not inflate, and "CPU vs baseline" the baseline's CPU per request
over the scenario's: the throughput ratio a CPU-bound server would reach on a quiet machine.

${table(columns, main.map(scenarioRow), right)}
${
  experiments.length
    ? `
### Experiments: the service built ahead of time

Not how the service ships. The same sources and their dependencies built by esbuild into one
JavaScript file (\`bench/bundle.ts\`; the native addons stay in node_modules) and started by plain
node, without tsx; then the same with \`${raw.smallYoungGeneration}\` (V8's default young generation is
two 16 MB semi-spaces). Measured in the same rounds as the listing above, on the same database,
after the same warm-up mix.

${table(columns, experiments.map(scenarioRow), right)}
`
    : ''
}
## Scale: the same listing against the number of discussions

${table(
  ['Discussions', 'service req/s', 'service p50 ms', 'service p99 ms', 'baseline req/s', 'baseline p50 ms', 'baseline p99 ms', 'service vs baseline'],
  summary.scale.map((s) => [n(s.size), f0(s.service.rps), f2(s.service.p50), f2(s.service.p99), f0(s.baseline.rps), f2(s.baseline.p50), f2(s.baseline.p99), pct(s.service.ratio)]),
  ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
)}

Largest over smallest (per round, median): p50 x${f2(summary.ratios.listingP50)}, p99 x${f2(summary.ratios.listingP99)}; the baseline's p99 x${f2(summary.ratios.baselineP99)}.

The listing query alone, in the benchmark's own process through \`store/discussion-listing.ts\`
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

${n(summary.tokens[summary.tokens.length - 1].size)} over ${n(summary.tokens[1]?.size ?? 0)} tokens (per round, median): p50 x${f2(summary.ratios.tokensP50)}, p99 x${f2(summary.ratios.tokensP99)}.

## Resources

Start-up is from spawning the process to the first answer to an authenticated listing (the
baseline: unauthenticated), each server started alone, the starts interleaved. The experiments
(\`bench/bundle.ts\`): "precompiled" is the sources compiled by esbuild into one file with the
dependencies loaded from node_modules, as a build step would give, which removes tsx; "single
file" bundles the dependencies in as well, which also removes resolving and loading each of their
files.
${raw.bundleError ? `\nSkipped: ${raw.bundleError}\n` : ''}
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
\`seed --discussions N\`, \`token create\`, \`legacy-token show\`) and cached under \`bench/.cache/\`
(git-ignored), keyed by the migrations and the seed. Personal tokens for the look-up scale were
inserted in ${Object.entries(raw.tokenInserts).map(([size, s]) => `${f1(s)} s (${n(Number(size))})`).join(' and ')}.
The first-call Basic scenario used ${n(raw.firstCall.used)} of ${n(raw.firstCall.accounts)} accounts${raw.firstCall.wrapped ? ' and ran out: some of its calls were remembered' : ', each once'}.
`
}

// ---- chart

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const text = (x: number, y: number, s: string, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`
const COLORS = { service: '#2563eb', baseline: '#9ca3af', p99: '#ea580c', p50: '#2563eb', grid: '#e5e7eb', ink: '#111827', muted: '#6b7280' }

function logTicks(max: number): number[] {
  const ticks = [1]
  while (ticks[ticks.length - 1] < max) ticks.push(ticks[ticks.length - 1] * 10)
  return ticks
}

/** A line chart of latency (linear ms) against a logarithmic size axis. */
function lineChart(x0: number, y0: number, w: number, h: number, title: string, xLabel: string, sizes: number[], series: Array<{ name: string; color: string; dash?: boolean; values: number[] }>): string[] {
  const out: string[] = [text(x0, y0 - 12, title, 'font-weight="600" font-size="13"')]
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter(Number.isFinite))) * 1.15
  const minX = Math.log10(Math.min(...sizes))
  const maxX = Math.log10(Math.max(...sizes))
  const px = (size: number) => x0 + (maxX === minX ? w / 2 : ((Math.log10(size) - minX) / (maxX - minX)) * w)
  const py = (ms: number) => y0 + h - (ms / max) * h
  const step = Math.pow(10, Math.floor(Math.log10(max / 2)))
  for (let v = 0; v <= max; v += step * (max / step > 8 ? 2 : 1)) {
    out.push(`<line x1="${x0}" x2="${x0 + w}" y1="${py(v).toFixed(1)}" y2="${py(v).toFixed(1)}" stroke="${COLORS.grid}"/>`)
    out.push(text(x0 - 6, py(v) + 4, f0(v), `text-anchor="end" fill="${COLORS.muted}"`))
  }
  for (const size of sizes) out.push(text(px(size), y0 + h + 16, n(size), `text-anchor="middle" fill="${COLORS.muted}"`))
  out.push(text(x0 + w / 2, y0 + h + 32, xLabel, `text-anchor="middle" fill="${COLORS.muted}"`))
  out.push(text(x0 - 34, y0 + h / 2, 'ms', `text-anchor="middle" fill="${COLORS.muted}"`))
  series.forEach((s, i) => {
    const points = sizes.map((size, j) => [px(size), py(s.values[j])] as const).filter(([, y]) => Number.isFinite(y))
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5 4"' : ''} points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`)
    for (const [x, y] of points) out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${s.color}"/>`)
    const ly = y0 + 4 + i * 15
    out.push(`<line x1="${x0 + w + 12}" x2="${x0 + w + 30}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5 4"' : ''}/>`)
    out.push(text(x0 + w + 34, ly + 4, s.name, `fill="${COLORS.ink}"`))
  })
  return out
}

const GROUPS: Array<[Row['section'], string]> = [
  ['site', 'GET /<site>'],
  ['list', 'GET /<site>/discussions'],
  ['experiment', 'GET /<site>/discussions: experiments'],
  ['create', 'POST /<site>/categories/<id>/discussions'],
]

export function chart(summary: Summary): string {
  const W = 980
  const labelW = 300
  const barW = 270
  const rowH = 19
  const out: string[] = []
  out.push(text(20, 24, 'Service Desk: throughput and p99 per scenario (10,000 discussions)', 'font-weight="600" font-size="15"'))
  const rpsX = labelW
  const p99X = labelW + barW + 110
  const top = 56
  out.push(text(rpsX, top - 10, 'requests per second (scale of each group; % of its baseline)', `fill="${COLORS.muted}"`))
  out.push(text(p99X, top - 10, 'p99 latency, ms (log scale)', `fill="${COLORS.muted}"`))
  const shown = summary.rows.filter((r) => GROUPS.some(([section]) => section === r.section))
  const ticks = logTicks(Math.max(...shown.map((r) => r.p99).filter(Number.isFinite)))
  const logMax = Math.log10(ticks[ticks.length - 1])
  const p99W = (ms: number) => (Math.max(0, Math.log10(Math.max(ms, 1))) / logMax) * barW
  let y = top
  for (const [section, title] of GROUPS) {
    const rows = shown.filter((r) => r.section === section)
    if (rows.length === 0) continue
    out.push(text(20, y + 14, title, `font-weight="600" fill="${COLORS.ink}"`))
    y += rowH
    // The experiments are compared with the listing's baseline, so they share its scale. A refusal
    // (the 401 path, which builds no page) is drawn off the scale rather than setting it.
    const scaleRows = (section === 'experiment' ? [...rows, ...shown.filter((r) => r.section === 'list')] : rows).filter((r) => !r.id.endsWith('.none'))
    const maxRps = Math.max(...scaleRows.map((r) => r.rps).filter(Number.isFinite)) * 1.15
    for (const r of rows) {
      const baseline = r.id.includes('.baseline')
      out.push(text(labelW - 8, y + 13, r.short, `text-anchor="end" fill="${COLORS.ink}"`))
      const offScale = r.rps > maxRps
      const w = Number.isFinite(r.rps) ? (Math.min(r.rps, maxRps) / maxRps) * barW : 0
      out.push(`<rect x="${rpsX}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 6}" fill="${baseline ? COLORS.baseline : COLORS.service}"${offScale ? ' fill-opacity="0.45"' : ''}/>`)
      out.push(text(rpsX + w + 4, y + 13, `${f0(r.rps)}${r.ratio === undefined ? '' : ` (${pct(r.ratio)})`}${offScale ? ' (off scale)' : ''}`, `fill="${COLORS.ink}"`))
      const pw = Number.isFinite(r.p99) ? p99W(r.p99) : 0
      out.push(`<rect x="${p99X}" y="${y + 3}" width="${pw.toFixed(1)}" height="${rowH - 6}" fill="${baseline ? COLORS.baseline : COLORS.p99}"/>`)
      out.push(text(p99X + pw + 4, y + 13, f1(r.p99), `fill="${COLORS.ink}"`))
      y += rowH
    }
    y += 6
  }
  const barsBottom = y
  // The grid goes under the bars: after the three header texts.
  const grid = ticks.flatMap((t) => {
    const x = p99X + p99W(t)
    return [
      `<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top - 4}" y2="${barsBottom}" stroke="${COLORS.grid}"/>`,
      text(x, barsBottom + 14, f0(t), `text-anchor="middle" fill="${COLORS.muted}"`),
    ]
  })
  out.splice(3, 0, ...grid)

  const chartsTop = barsBottom + 70
  const sizes = summary.scale.map((s) => s.size)
  out.push(
    ...lineChart(70, chartsTop, 290, 180, 'Listing latency against discussions stored', 'discussions (log scale)', sizes, [
      { name: 'service p99', color: COLORS.p99, values: summary.scale.map((s) => s.service.p99) },
      { name: 'service p50', color: COLORS.p50, values: summary.scale.map((s) => s.service.p50) },
      { name: 'baseline p99', color: COLORS.p99, dash: true, values: summary.scale.map((s) => s.baseline.p99) },
      { name: 'baseline p50', color: COLORS.p50, dash: true, values: summary.scale.map((s) => s.baseline.p50) },
    ]),
  )
  out.push(
    ...lineChart(560, chartsTop, 270, 180, 'Token look-up (GET /<site>) against tokens stored', 'personal tokens stored (log scale)', summary.tokens.map((t) => t.size), [
      { name: 'p99', color: COLORS.p99, values: summary.tokens.map((t) => t.row.p99) },
      { name: 'p50', color: COLORS.p50, values: summary.tokens.map((t) => t.row.p50) },
    ]),
  )
  const H = chartsTop + 180 + 50
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n')
}

export function writeReport(raw: RawResults, summary: Summary): string[] {
  mkdirSync(RESULTS, { recursive: true })
  const files: Array<[string, string]> = [
    ['results.md', markdown(raw, summary)],
    ['chart.svg', chart(summary)],
    ['results.json', `${JSON.stringify(raw, null, 2)}\n`],
  ]
  for (const [name, content] of files) {
    const file = join(RESULTS, name)
    writeFileSync(`${file}.tmp`, content)
    renameSync(`${file}.tmp`, file)
  }
  return files.map(([name]) => relative(REPO, join(RESULTS, name)))
}
