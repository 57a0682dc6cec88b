import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'

// Uploads no comment took are removed once expired (a day), files no attachment names any more
// with them, and what an interrupted upload left half-written after six hours
// (db/stores/files.ts, sweep): a minute after start, then hourly, by whichever process runs;
// running it twice changes nothing.

export const SWEEP_EVERY_MS = 60 * 60 * 1000

export default fp<{ firstAfterMs?: number; everyMs?: number }>(
  async (fastify, { firstAfterMs = 60 * 1000, everyMs = SWEEP_EVERY_MS }) => {
    const sweep = async () => {
      try {
        const removed = await fastify.files.sweep()
        if (removed.uploads + removed.files > 0) fastify.log.info({ files: removed }, 'unused uploads and files removed')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not remove unused uploads and files')
      }
    }
    repeatInBackground(fastify, { firstAfterMs, everyMs }, sweep)
  },
  { name: 'file-sweep', fastify: '5.x', dependencies: ['discussion-stores'] },
)
