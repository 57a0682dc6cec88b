import fp from 'fastify-plugin'
import { repeatInBackground } from './background.ts'
import { DAY_MS } from '../lib/clock.ts'

// The security log keeps an event SERVICE_SECURITY_LOG_DAYS (400 by default): older ones are
// deleted an hour after start and then daily, by whichever process runs (a delete of what is
// older than a moment: running it twice changes nothing).

export const PRUNE_EVERY_MS = DAY_MS

export default fp<{ days: number; firstAfterMs?: number; everyMs?: number }>(
  async (fastify, { days, firstAfterMs = 60 * 60 * 1000, everyMs = PRUNE_EVERY_MS }) => {
    const prune = async () => {
      try {
        const removed = await fastify.securityLog.prune(new Date(fastify.clock() - days * DAY_MS))
        if (removed > 0) fastify.log.info({ securityLog: { removed, days } }, 'old security log events removed')
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not remove old security log events')
      }
    }
    repeatInBackground(fastify, { firstAfterMs, everyMs }, prune)
  },
  { name: 'security-log-pruning', fastify: '5.x', dependencies: ['config', 'security-log-store'] },
)
