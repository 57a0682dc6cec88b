import fp from 'fastify-plugin'
import { ERASURE_BATCH, yieldAfter } from '../db/stores/erasure.ts'
import { repeatInBackground } from './background.ts'

// The sites' retention (issue 74; db/stores/erasure.ts, retain; docs/decisions.md, "A customer's
// data on request"): a site that keeps its resolved discussions N months has those past the age
// deleted for good, a batch at a time, each batch a short transaction under the site's lock, a pause
// between them (db/stores/erasure.ts, yieldAfter). Every process runs it (first a few minutes after start, then
// hourly); under the site's lock a discussion is deleted once however many run it at once.

export const RETENTION_EVERY_MS = 60 * 60 * 1000

declare module 'fastify' {
  interface FastifyInstance {
    /** Runs the retention of every site until nothing is due; how many discussions it deleted. */
    retention: { run(): Promise<number> }
  }
}

export default fp<{ firstAfterMs?: number; everyMs?: number }>(
  async (fastify, { everyMs = RETENTION_EVERY_MS, firstAfterMs = Math.min(everyMs, 5 * 60 * 1000) }) => {
    async function run(): Promise<number> {
      let deleted = 0
      for (;;) {
        const began = performance.now()
        const batches = await fastify.erasure.retain()
        deleted += batches.reduce((sum, batch) => sum + batch.numbers.length, 0)
        if (!batches.some((batch) => batch.numbers.length === ERASURE_BATCH)) return deleted
        await yieldAfter(performance.now() - began)
      }
    }
    fastify.decorate('retention', { run })
    repeatInBackground(fastify, { firstAfterMs, everyMs }, async () => {
      try {
        const deleted = await run()
        if (deleted > 0) fastify.log.info({ retention_deleted: deleted }, "discussions past their site's retention deleted")
      } catch (error) {
        fastify.log.warn({ err: error }, "could not delete the discussions past their site's retention")
      }
    })
  },
  { name: 'retention', fastify: '5.x', dependencies: ['discussion-stores'] },
)
