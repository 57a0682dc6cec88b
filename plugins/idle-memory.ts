import fp from 'fastify-plugin'
import { settleMemory } from '../lib/memory.ts'

// Memory given back when the server is idle (issue 32, item 4; docs/decisions.md, "Memory is
// given back when the server is idle"). Under load V8 grows its young generation to tens of
// megabytes and keeps it; a service that is busy for a minute and idle for an hour held it all
// hour. Once the server has been idle for a minute after it grew, one full collection that also
// shrinks the heap's spaces gives the pages back, as a browser does for a tab in the background:
// the collection a started service runs once (lib/memory.ts).

export interface IdleMemorySettings {
  /** How often the server looks whether requests arrived. */
  lookMs: number
  /** How long without a request after a busy spell before memory is given back. */
  idleMs: number
  /** How much the resident memory must have grown since the last reduction for another. */
  growthBytes: number
}

export const DEFAULT_IDLE_MEMORY: IdleMemorySettings = { lookMs: 2000, idleMs: 60_000, growthBytes: 8 * 1024 * 1024 }

export interface IdleMemoryOptions extends Partial<IdleMemorySettings> {
  /** The resident memory now, in bytes (tests give their own). */
  residentBytes?: () => number
  reduce?: () => void
}

/**
 * Looks every `lookMs`. The start-up's garbage is given back at the first look that finds no new
 * request (a health check right after start included). After that, once no request has arrived
 * for `idleMs` after a busy spell that grew the resident memory by `growthBytes` since the last
 * reduction, memory is reduced once. The wait is long on purpose: after a reduction the young
 * generation grows back under load, and the first seconds of the next spell pay for it (twice the
 * CPU per request on PostgreSQL when the wait was 2 s, measured with `npm run bench`), so a
 * service busy in spells a few seconds apart keeps its heap warm.
 */
export default fp<IdleMemoryOptions>(
  async (fastify, options) => {
    const { lookMs, idleMs, growthBytes } = { ...DEFAULT_IDLE_MEMORY, ...options }
    const residentBytes = options.residentBytes ?? (() => process.memoryUsage.rss())
    const reduce = options.reduce ?? settleMemory
    let arrived = 0
    let arrivedAtLastLook = 0
    let idleFor = 0
    let arrivedAtReduction: number | undefined
    let residentAfterReduction = 0
    let timer: NodeJS.Timeout | undefined

    // A hook with a callback, not async: one addition per request.
    fastify.addHook('onRequest', (_request, _reply, done) => {
      arrived++
      done()
    })

    const look = () => {
      if (arrived !== arrivedAtLastLook) {
        arrivedAtLastLook = arrived
        idleFor = 0
        return
      }
      idleFor += lookMs
      // The first reduction comes at the first look without a request: nothing was warm yet.
      const first = arrivedAtReduction === undefined
      if (!first && (arrived === arrivedAtReduction || idleFor < idleMs)) return
      if (residentBytes() - residentAfterReduction < growthBytes) return
      reduce()
      arrivedAtReduction = arrived
      residentAfterReduction = residentBytes()
      fastify.log.debug({ residentBytes: residentAfterReduction }, 'memory reduced while idle')
    }

    fastify.addHook('onListen', (done) => {
      timer = setInterval(look, lookMs).unref()
      done()
    })
    fastify.addHook('onClose', (_instance, done) => {
      clearInterval(timer)
      done()
    })
  },
  { name: 'idle-memory', fastify: '5.x' },
)
