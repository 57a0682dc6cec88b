import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'

// The search index of the discussions a database held before it had one (an upgrade, a copy):
// made in batches of a few hundred, each a transaction of its own, newest discussions first, from
// a second after start until none is left, with everything else running between two batches
// (db/stores/search.ts, backfill); looked at again hourly. Every process may run it: the batches
// take turns. What is written meanwhile is indexed by its own write.

export const BACKFILL_EVERY_MS = 60 * 60 * 1000

export default fp<{ firstAfterMs?: number; everyMs?: number }>(
  async (fastify, { firstAfterMs = 1_000, everyMs = BACKFILL_EVERY_MS }) => {
    repeatInBackground(fastify, { firstAfterMs, everyMs }, async (closing) => {
      const started = performance.now()
      try {
        const indexed = await fastify.discussionSearch.backfillAll({ closing })
        if (indexed > 0) fastify.log.info({ indexed, ms: Math.round(performance.now() - started) }, 'discussions indexed for search')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not index discussions for search; tried again later')
      }
    })
  },
  { name: 'search-backfill', fastify: '5.x', dependencies: ['discussion-stores'] },
)
