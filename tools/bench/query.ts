import { randomBytes } from 'node:crypto'
import { openEngine } from '../../db/open.ts'
import { systemClock } from '../../lib/clock.ts'
import { createSecretBox } from '../../lib/secret-box.ts'
import type { Dataset } from './datasets.ts'
import { percentile } from './load.ts'
import { median } from './results.ts'

// The listing's data layer alone, in this process, without HTTP: the discussion store the service
// uses (db/sqlite/listing.ts on SQLite, db/postgres/listing.ts on
// PostgreSQL, through its engine), asked for the first
// page of the site's live discussions as GET /<site>/discussions asks for it. Separates what the
// query costs at each size from what the network, the framework and a noisy machine add; on
// PostgreSQL, one call at a time, it is mostly the round trips' latency.

export interface QueryTiming {
  discussions: number
  calls: number
  p50Us: number
  p99Us: number
  plan: string[]
}

export async function timeListingQuery(dataset: Dataset, calls: number): Promise<QueryTiming> {
  // A SQLite file, or a postgres:// address (a pool of the service's default size).
  const engine = await openEngine(dataset.file)
  try {
    const site = await engine.sites(systemClock).get(dataset.site)
    // The listing reads no sealed value: any key will do.
    const listing = engine.discussions(systemClock, createSecretBox(randomBytes(32).toString('hex')))
    const query = { siteId: site.id, state: 'live' as const, sort: 'activity' as const, offset: 0, limit: 30 }
    for (let i = 0; i < Math.min(500, calls); i++) await listing.list(query)
    const times = new Float64Array(calls)
    for (let i = 0; i < calls; i++) {
      const started = process.hrtime.bigint()
      await listing.list(query)
      times[i] = Number(process.hrtime.bigint() - started) / 1000
    }
    times.sort()
    return { discussions: dataset.discussions, calls, p50Us: percentile(times, 50), p99Us: percentile(times, 99), plan: await listing.explain(query) }
  } finally {
    await engine.close()
  }
}

/** Every size timed in each pass, the passes interleaved; the median of the passes per size. */
export async function timeListingQueries(datasets: Dataset[], passes: number, calls: number): Promise<Array<Omit<QueryTiming, 'calls'>>> {
  const timings: QueryTiming[][] = []
  for (let pass = 0; pass < passes; pass++) {
    const sizes: QueryTiming[] = []
    for (const d of datasets) sizes.push(await timeListingQuery(d, calls))
    timings.push(sizes)
  }
  return datasets.map((d, i) => ({
    discussions: d.discussions,
    p50Us: median(timings.map((t) => t[i].p50Us)),
    p99Us: median(timings.map((t) => t[i].p99Us)),
    plan: timings[0][i].plan,
  }))
}
