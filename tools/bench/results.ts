import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Measurement } from './load.ts'
import { REPO } from './service-cli.ts'
import type { ScenarioRow } from './scenarios.ts'
import { DEFAULT_IDLE_MEMORY } from '../../plugins/idle-memory.ts'

/** How long the servers are left idle after the rounds before their memory is read: a little longer than the service waits, idle, before it gives memory back (plugins/idle-memory.ts). */
export const IDLE_AFTER_ROUNDS_MS = DEFAULT_IDLE_MEMORY.idleMs + 5_000

// From the rounds to the figures: each scenario's median over the rounds, and each ratio taken
// within a round (both sides measured minutes apart at most) and reported as the median, min and
// max of the rounds. A run of the full set (both engines, 5 rounds or more) is added to the
// history, tools/bench/results/history.jsonl, and its table written to tools/bench/results/latest.md.

export const RESULTS = join(REPO, 'tools', 'bench', 'results')
export const FULL_ROUNDS = 5

export type Round = Record<string, Measurement & { cpuUsPerRequest: number }>

export interface Run {
  date: string
  commit: string
  node: string
  machine: string
  settings: { rounds: number; duration: number; connections: number; engines: string[] }
  /** Per scenario: medians over the rounds; `ratio` to its pair as median, min and max of the rounds. */
  scenarios: Array<{ id: string; label: string; rps: number; p50: number; p99: number; cpuUs: number; unexpected: number; ratio?: [number, number, number]; pair?: string }>
  startup: Record<string, number>
  /** Idle, 5 s after start, before any request. */
  startRssMb: Record<string, number>
  idleRssMb: Record<string, number>
  targets: Array<{ id: string; atLeast: number; ratio: number | null; met: boolean | null }>
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

export function summarize(
  rows: ScenarioRow[],
  rounds: Round[],
  targets: Array<{ id: string; atLeast: number }>,
  rest: Pick<Run, 'date' | 'commit' | 'node' | 'machine' | 'settings' | 'startup' | 'startRssMb' | 'idleRssMb'>,
): Run {
  const of = (id: string, pick: (m: Round[string]) => number) => median(rounds.map((round) => pick(round[id])))
  const scenarios = rows.map((row) => {
    const ratios = row.pair ? rounds.map((round) => round[row.id].rps / round[row.pair!].rps) : []
    return {
      id: row.id,
      label: row.label,
      rps: of(row.id, (m) => m.rps),
      p50: of(row.id, (m) => m.p50),
      p99: of(row.id, (m) => m.p99),
      cpuUs: of(row.id, (m) => m.cpuUsPerRequest),
      unexpected: rounds.reduce((sum, round) => sum + round[row.id].unexpected, 0),
      ...(row.pair ? { pair: row.pair, ratio: [median(ratios), Math.min(...ratios), Math.max(...ratios)] as [number, number, number] } : {}),
    }
  })
  const ratioOf = (id: string) => scenarios.find((s) => s.id === id)?.ratio?.[0] ?? null
  return {
    ...rest,
    scenarios,
    targets: targets.map(({ id, atLeast }) => {
      const ratio = ratioOf(id)
      return { id, atLeast, ratio, met: ratio === null ? null : ratio >= atLeast }
    }),
  }
}

const fixed = (n: number, digits = 2) => n.toFixed(digits)

/** The run as a Markdown table, with its targets. */
export function table(run: Run): string {
  const lines = [
    `# Benchmark, ${run.date} (${run.commit})`,
    '',
    `${run.machine}; Node ${run.node}; ${run.settings.rounds} rounds of ${run.settings.duration} s at ${run.settings.connections} connections; engines: ${run.settings.engines.join(', ')}.`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | CPU us/req | ratio to its pair (median, min-max) |',
    '|---|---:|---:|---:|---:|---|',
    ...run.scenarios.map(
      (s) =>
        `| ${s.label}${s.unexpected ? ` (${s.unexpected} unexpected answers)` : ''} | ${fixed(s.rps, 0)} | ${fixed(s.p50)} | ${fixed(s.p99)} | ${fixed(s.cpuUs, 0)} | ` +
        (s.ratio ? `${fixed(s.ratio[0])} (${fixed(s.ratio[1])}-${fixed(s.ratio[2])}) of ${s.pair}` : '') +
        ' |',
    ),
    '',
    '| target | ratio | at least | |',
    '|---|---:|---:|---|',
    ...run.targets.map((t) => `| ${t.id} | ${t.ratio === null ? 'not measured' : fixed(t.ratio)} | ${fixed(t.atLeast)} | ${t.met === null ? '' : t.met ? 'met' : 'MISSED'} |`),
    '',
    `Start-up to the first answer (median, ms): ${Object.entries(run.startup).map(([name, ms]) => `${name} ${fixed(ms, 0)}`).join(', ')}.`,
    `Idle RSS 5 s after start (MB): ${Object.entries(run.startRssMb).map(([name, mb]) => `${name} ${fixed(mb, 1)}`).join(', ')}.`,
    `Idle RSS after the rounds, idle ${IDLE_AFTER_ROUNDS_MS / 1000} s (MB): ${Object.entries(run.idleRssMb).map(([name, mb]) => `${name} ${fixed(mb, 1)}`).join(', ')}.`,
    '',
  ]
  return lines.join('\n')
}

/** Writes the run's table to `dir` (and, for a full run, adds it to the history); the files written. */
export function record(run: Run, dir: string, full: boolean): string[] {
  mkdirSync(dir, { recursive: true })
  const latest = join(dir, 'latest.md')
  writeFileSync(latest, table(run))
  if (!full) return [latest]
  const history = join(RESULTS, 'history.jsonl')
  appendFileSync(history, `${JSON.stringify(run)}\n`)
  return [latest, history]
}
