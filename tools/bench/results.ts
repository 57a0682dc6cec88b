import type { Measurement } from './load.ts'
import type { Memory } from './processes.ts'
import type { Section } from './scenarios.ts'

// From the rounds' measurements to the figures reported: medians over rounds, and every ratio
// taken within a round (both sides measured minutes apart at most) before its median is taken.

export interface StartupSeries {
  name: string
  ms: number[]
  status: number[]
  memory: Memory[]
}

export interface RawResults {
  date: string
  node: string
  machine: { cpus: number; model: string; memoryGb: number; loadBefore: number[]; loadAfter: number[] }
  settings: { rounds: number; duration: number; connections: number; warmup: number; starts: number; settle: number }
  datasets: Array<{ discussions: number; seedSeconds: number; buildSeconds: number; builtAt: string; bytes: number; fromCache: boolean }>
  tokenInserts: Record<number, number>
  /** The listing query alone, in-process (tools/bench/query.ts). */
  queries: Array<{ discussions: number; p50Us: number; p99Us: number; plan: string[] }>
  startups: StartupSeries[]
  /** The single executable (tools/bench/binary.ts), or why it was not measured. */
  binary: { bytes: number; buildSeconds: number; unpackMs: number } | { skipped: string }
  smallYoungGeneration: string
  /** Right after the warm-up, after the rounds and a pause (idle: what the targets use), at the end of the rounds. */
  afterWarmup: Record<string, Memory>
  idle: Record<string, Memory>
  peak: Record<string, Memory>
  scenarios: Array<{ id: string; section: Section; label: string; short: string; server: string; baseline?: string; logged?: string; size?: number }>
  rounds: Array<Record<string, Measurement & { rssMaxMb: number; cpuUsPerRequest: number; window: [number, number] }>>
  firstCall: { accounts: number; used: number; wrapped: boolean }
  seconds: number
}

export interface Row {
  id: string
  section: Section
  label: string
  short: string
  size?: number
  rps: number
  p50: number
  p99: number
  /** req/s over the baseline's, median of the rounds' ratios. */
  ratio?: number
  /** req/s over that of the baseline with the service's logging. */
  ratioLogged?: number
  /** Server CPU (all threads, user + system) per request, and the baseline's over this one's. */
  cpuUs: number
  cpuRatio?: number
  unexpected: number
  rssMaxMb: number
}

export interface Target {
  name: string
  /** Which form of the service: the checkout (`service-desk serve`) or the single executable. */
  form: string
  goal: string
  value: string
  met: boolean | undefined
}

export interface Summary {
  rows: Row[]
  targets: Target[]
  /** Latency of the listing against the number of discussions, service and baseline. */
  scale: Array<{ size: number; service: Row; baseline: Row }>
  tokens: Array<{ size: number; row: Row }>
  ratios: { listingP50: number; listingP99: number; baselineP99: number; tokensP50: number; tokensP99: number; tokensVsFewP99: number }
  text: string
}

export function median(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (finite.length === 0) return NaN
  const middle = finite.length >> 1
  return finite.length % 2 ? finite[middle] : (finite[middle - 1] + finite[middle]) / 2
}

const MB = (m: number) => `${m.toFixed(0)} MB`

export function summarize(raw: RawResults): Summary {
  type Measured = RawResults['rounds'][number][string]
  const perRound = (id: string, pick: (m: Measured) => number) => raw.rounds.map((round) => (round[id] ? pick(round[id]) : NaN))
  const roundRatio = (a: string, b: string, pick: (m: Measured) => number) =>
    median(raw.rounds.map((round) => (round[a] && round[b] ? pick(round[a]) / pick(round[b]) : NaN)))

  const rows: Row[] = raw.scenarios.map((s) => ({
    id: s.id,
    section: s.section,
    label: s.label,
    short: s.short,
    size: s.size,
    rps: median(perRound(s.id, (m) => m.rps)),
    p50: median(perRound(s.id, (m) => m.p50)),
    p99: median(perRound(s.id, (m) => m.p99)),
    ratio: s.baseline ? roundRatio(s.id, s.baseline, (m) => m.rps) : undefined,
    ratioLogged: s.logged ? roundRatio(s.id, s.logged, (m) => m.rps) : undefined,
    cpuUs: median(perRound(s.id, (m) => m.cpuUsPerRequest)),
    cpuRatio: s.baseline ? roundRatio(s.baseline, s.id, (m) => m.cpuUsPerRequest) : undefined,
    unexpected: raw.rounds.reduce((sum, round) => sum + (round[s.id]?.unexpected ?? 0), 0),
    rssMaxMb: Math.max(...raw.rounds.map((round) => round[s.id]?.rssMaxMb ?? 0)),
  }))
  const row = (id: string) => rows.find((r) => r.id === id)

  const bySize = (section: Section, kind: string) =>
    rows.filter((r) => r.section === section && r.id.startsWith(`${section}.${kind}`)).sort((a, b) => a.size! - b.size!)
  const scale = bySize('scale', 'service.').map((service) => ({ size: service.size!, service, baseline: row(`scale.baseline.${service.size}`)! }))
  const tokens = bySize('tokens', '').map((r) => ({ size: r.size!, row: r }))
  const first = scale[0]
  const last = scale[scale.length - 1]
  // The issue's pair for tokens: the most stored against 10,000 (the few of the main database are context).
  const tokenFrom = tokens.find((t) => t.size === 10_000) ?? tokens[0]
  const tokenTo = tokens[tokens.length - 1]
  const ratios = {
    listingP50: roundRatio(last.service.id, first.service.id, (m) => m.p50),
    listingP99: roundRatio(last.service.id, first.service.id, (m) => m.p99),
    baselineP99: roundRatio(last.baseline.id, first.baseline.id, (m) => m.p99),
    tokensP50: roundRatio(tokenTo.row.id, tokenFrom.row.id, (m) => m.p50),
    tokensP99: roundRatio(tokenTo.row.id, tokenFrom.row.id, (m) => m.p99),
    tokensVsFewP99: roundRatio(tokenTo.row.id, tokens[0].row.id, (m) => m.p99),
  }
  const largestScale = last

  const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : `${(x * 100).toFixed(0)}%`)
  const basicRatio = roundRatio('list.basic-remembered', 'list.pat-write', (m) => m.rps)
  const basicSiteRatio = roundRatio('site.basic-remembered', 'site.pat-write', (m) => m.rps)
  const basicCpuRatio = roundRatio('list.pat-write', 'list.basic-remembered', (m) => m.cpuUsPerRequest)
  const pctOf = (id: string) => {
    const r = row(id)!
    return `${pct(r.ratio)} (by server CPU per request: ${pct(r.cpuRatio)}; vs the baseline with the service's logging: ${pct(r.ratioLogged)})`
  }
  const startupMs = (name: string) => {
    const series = raw.startups.find((s) => s.name === name)
    return series && { ms: median(series.ms), starts: series.ms.length }
  }
  const CHECKOUT = 'checkout'
  const SINGLE = 'single executable'
  const SINGLE_SMALL = `single executable, ${raw.smallYoungGeneration}`
  const notMeasured = (name: string, form: string, goal: string, why: string): Target => ({ name, form, goal, value: `not measured (${why})`, met: undefined })
  const noBinary = 'skipped' in raw.binary ? raw.binary.skipped : ''
  const throughput = (form: string, id: string): Target => {
    const name = 'Personal-token GET /<site>/discussions vs baseline'
    if (!row(id)) return notMeasured(name, form, '>= 90% of req/s', noBinary)
    return { name, form, goal: '>= 90% of req/s', value: pctOf(id), met: row(id)!.ratio! >= 0.9 }
  }
  const idle = (form: string, server: string): Target => {
    const memory = raw.idle[server]
    if (!memory) return notMeasured('Idle RSS', form, '< 100 MB', noBinary)
    return { name: 'Idle RSS', form, goal: '< 100 MB', value: MB(memory.rssMb), met: memory.rssMb < 100 }
  }
  const startup = (form: string, name: string): Target => {
    const measured = startupMs(name)
    const title = 'Start-up to first answer, 1M discussions'
    if (!measured) return notMeasured(title, form, '< 1 s', largestScale.size === 1_000_000 ? noBinary : 'no 1M database')
    return { name: title, form, goal: '< 1 s', value: `${(measured.ms / 1000).toFixed(2)} s (median of ${measured.starts})`, met: measured.ms < 1000 }
  }
  const targets: Target[] = [
    throughput(CHECKOUT, 'list.pat-write'),
    throughput(SINGLE, 'binary.binary'),
    throughput(SINGLE_SMALL, 'binary.binary-small-young'),
    largestScale.size === 1_000_000 && first.size === 10_000
      ? { name: 'Listing p99 at 1M vs 10k discussions', form: CHECKOUT, goal: '<= 1.5x', value: `${ratios.listingP99.toFixed(2)}x (p50 ${ratios.listingP50.toFixed(2)}x)`, met: ratios.listingP99 <= 1.5 }
      : notMeasured('Listing p99 at 1M vs 10k discussions', CHECKOUT, '<= 1.5x', 'no 1M database'),
    {
      name: 'Remembered Basic vs personal token (listing)',
      form: CHECKOUT,
      goal: '>= 80% of req/s',
      value: `${pct(basicRatio)} (CPU per request: ${pct(basicCpuRatio)}; GET /<site>: ${pct(basicSiteRatio)})`,
      met: basicRatio >= 0.8,
    },
    idle(CHECKOUT, 'service'),
    idle(SINGLE, 'binary'),
    idle(SINGLE_SMALL, 'binary-small-young'),
    startup(CHECKOUT, 'service, 1,000,000 discussions'),
    startup(SINGLE, 'single executable, 1,000,000 discussions'),
  ]
  const verdict = (met: boolean | undefined) => (met === undefined ? 'n/a ' : met ? 'MET ' : 'MISS')
  const lines = [
    '',
    `Service Desk benchmark, ${raw.date}, node ${raw.node}, ${raw.machine.cpus} CPUs, load ${raw.machine.loadBefore.map((l) => l.toFixed(1)).join('/')}`,
    `${raw.settings.rounds} round(s) x ${raw.settings.duration} s per measurement, ${raw.settings.connections} connections; medians of rounds`,
    '',
    ...rows.map(
      (r) =>
        `${r.label.padEnd(74)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(6)} ms  p99 ${r.p99.toFixed(1).padStart(6)} ms` +
        `  cpu ${r.cpuUs.toFixed(0).padStart(5)} us/req${r.ratio === undefined ? '' : `  ${pct(r.ratio).padStart(5)} of baseline (cpu ${pct(r.cpuRatio)})`}` +
        `${r.ratioLogged === undefined ? '' : `, ${pct(r.ratioLogged)} of logged baseline`}` +
        `${r.unexpected ? `  (${r.unexpected} unexpected answers)` : ''}`,
    ),
    '',
    `Listing, ${last.size.toLocaleString('en')} vs ${first.size.toLocaleString('en')} discussions: p50 x${ratios.listingP50.toFixed(2)}, p99 x${ratios.listingP99.toFixed(2)} (baseline p99 x${ratios.baselineP99.toFixed(2)})`,
    `Token look-up, ${tokenTo.size.toLocaleString('en')} vs ${tokenFrom.size.toLocaleString('en')} tokens: p50 x${ratios.tokensP50.toFixed(2)}, p99 x${ratios.tokensP99.toFixed(2)} (vs ${tokens[0].size}: p99 x${ratios.tokensVsFewP99.toFixed(2)})`,
    `Listing query alone, in-process: ${raw.queries.map((q) => `${q.discussions.toLocaleString('en')}: p50 ${q.p50Us.toFixed(0)} us, p99 ${q.p99Us.toFixed(0)} us`).join('; ')}`,
    ...raw.startups.map((s) => `Start-up, ${s.name}: ${(median(s.ms) / 1000).toFixed(2)} s (${s.ms.map((ms) => (ms / 1000).toFixed(2)).join(', ')}), RSS ${MB(median(s.memory.map((m) => m.rssMb)))}`),
    ...(
      [
        ['checkout', 'service', 'list.pat-write'],
        ['single executable', 'binary', 'binary.binary'],
        [`single executable, ${raw.smallYoungGeneration}`, 'binary-small-young', 'binary.binary-small-young'],
        ['baseline', 'baseline', 'list.baseline'],
      ] as const
    )
      .filter(([, server]) => raw.idle[server])
      .map(([form, server, id]) => `RSS, ${form}: after warm-up ${MB(raw.afterWarmup[server]?.rssMb ?? NaN)}, under load ${MB(row(id)?.rssMaxMb ?? NaN)}, idle ${MB(raw.idle[server].rssMb)}`),
    '',
    'Targets:',
    ...targets.map((t) => `  ${verdict(t.met)}  ${t.name}, ${t.form}: ${t.value} (target ${t.goal})`),
    '',
  ]
  return { rows, targets, scale, tokens, ratios, text: lines.join('\n') }
}
