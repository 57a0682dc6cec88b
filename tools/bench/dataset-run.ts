import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CACHE, postgresUnavailable } from './datasets.ts'

// What the benches over a seeded dataset (search, reports, fields) start with: their command line
// (--size, --engine sqlite|postgres|both, --queries, --postgres, --rounds), a fresh folder of their
// own under the cache, a log line with the seconds since the start, and PostgreSQL checked first
// when it is among the engines.

export interface DatasetRun {
  size: number
  queries: number
  rounds: number
  postgresUrl: string
  engines: string[]
  /** The run's own folder (tools/bench/.cache/<name>-run), emptied. */
  dir: string
  log(line: string): void
}

export async function datasetRun(name: string, defaults: { queries: number; rounds?: number }): Promise<DatasetRun> {
  const { values: flags } = parseArgs({ options: { size: { type: 'string' }, engine: { type: 'string' }, queries: { type: 'string' }, postgres: { type: 'string' }, rounds: { type: 'string' } } })
  const began = performance.now()
  const dir = join(CACHE, `${name}-run`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const engines = (flags.engine ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [flags.engine!]
  const postgresUrl = flags.postgres ?? process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  if (engines.includes('postgres') && (await postgresUnavailable(postgresUrl))) throw new Error(`PostgreSQL does not answer at ${new URL(postgresUrl).host}`)
  return {
    size: Number(flags.size ?? 1_000_000),
    queries: Number(flags.queries ?? defaults.queries),
    rounds: Number(flags.rounds ?? defaults.rounds ?? 1),
    postgresUrl,
    engines,
    dir,
    log: (line) => console.log(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}`),
  }
}
