import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'

// The weekly digest of the reports (issue 69; docs/decisions.md, "Reports"): every ten minutes,
// each process looks for sites whose digest of the week just ended is not sent; one process claims
// each site's week in the transaction that queues its mails (db/stores/reports.ts, sendDigests),
// so however many processes run, a week's digest goes once, and a week every process slept
// through goes at the next run.

export const DIGEST_EVERY_MS = 10 * 60_000

declare module 'fastify' {
  interface FastifyInstance {
    reportDigest: { sendDue(): Promise<number> }
  }
}

export default fp<{ everyMs?: number }>(
  async (fastify, { everyMs = DIGEST_EVERY_MS }) => {
    const sendDue = () => fastify.reports.sendDigests()
    fastify.decorate('reportDigest', { sendDue })
    repeatInBackground(fastify, { firstAfterMs: everyMs, everyMs }, async () => {
      try {
        const told = await sendDue()
        if (told > 0) fastify.log.info({ digests: told }, 'weekly digests of the reports queued')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not queue the weekly digests of the reports')
      }
    })
  },
  { name: 'report-digest', fastify: '5.x', dependencies: ['discussion-stores'] },
)
