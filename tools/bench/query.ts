import { openDatabase } from '../../db/client.ts'
import { createDiscussionCounts } from '../../db/stores/discussion-counts.ts'
import { createDiscussionListing } from '../../db/stores/discussion-listing.ts'
import type { Dataset } from './datasets.ts'
import { percentile } from './load.ts'
import { median } from './results.ts'

// The listing's data layer alone, in this process, without HTTP: the module the service and the
// baseline both use (db/stores/discussion-listing.ts), asked for the first page of the site's live
// discussions as GET /<site>/discussions asks for it. Separates what the query costs at each size
// from what the network, the framework and a noisy machine add.

export interface QueryTiming {
  discussions: number
  calls: number
  p50Us: number
  p99Us: number
  plan: string[]
}

export function timeListingQuery(dataset: Dataset, calls: number): QueryTiming {
  const db = openDatabase(dataset.file)
  try {
    const site = db.$client.prepare('select id from sites where permalink = ?').get(dataset.site) as { id: number }
    const listing = createDiscussionListing(db, createDiscussionCounts(db))
    const query = { siteId: site.id, state: 'live' as const, sort: 'activity' as const, offset: 0, limit: 30 }
    for (let i = 0; i < Math.min(500, calls); i++) listing.list(query)
    const times = new Float64Array(calls)
    for (let i = 0; i < calls; i++) {
      const started = process.hrtime.bigint()
      listing.list(query)
      times[i] = Number(process.hrtime.bigint() - started) / 1000
    }
    times.sort()
    return { discussions: dataset.discussions, calls, p50Us: percentile(times, 50), p99Us: percentile(times, 99), plan: listing.explain(query) }
  } finally {
    db.$client.close()
  }
}

/** Every size timed in each pass, the passes interleaved; the median of the passes per size. */
export function timeListingQueries(datasets: Dataset[], passes: number, calls: number): Array<Omit<QueryTiming, 'calls'>> {
  const timings: QueryTiming[][] = []
  for (let pass = 0; pass < passes; pass++) timings.push(datasets.map((d) => timeListingQuery(d, calls)))
  return datasets.map((d, i) => ({
    discussions: d.discussions,
    p50Us: median(timings.map((t) => t[i].p50Us)),
    p99Us: median(timings.map((t) => t[i].p99Us)),
    plan: timings[0][i].plan,
  }))
}
