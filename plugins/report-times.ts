import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'

// The reports' times folded in (docs/decisions.md, "A report's times added apart, folded in later"):
// a write that measures a time adds one to its bucket's row (report_times) rather than rewriting its
// day rows' whole histograms; every few minutes each process folds what the writes added into the
// histograms, many writes' at once (db/stores/reports.ts, foldTimes). A report reads both, so what
// it shows does not wait for a fold; two processes folding at once take turns at each site's row.

export const FOLD_EVERY_MS = 5 * 60_000

export default fp<{ everyMs?: number }>(
  async (fastify, { everyMs = FOLD_EVERY_MS }) => {
    repeatInBackground(fastify, { firstAfterMs: everyMs, everyMs }, async () => {
      // A failure is told and left: the buckets stay apart, read by the reports, until the next fold.
      await fastify.reports.foldTimes().then(
        (folded) => folded > 0 && fastify.log.debug({ folded }, "the reports' times folded into their day rows"),
        (error: unknown) => fastify.log.warn({ err: error }, "could not fold the reports' times into their day rows"),
      )
    })
  },
  { name: 'report-times', fastify: '5.x', dependencies: ['discussion-stores'] },
)
