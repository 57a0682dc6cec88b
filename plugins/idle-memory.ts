import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import fp from 'fastify-plugin'

// Memory given back when the server is idle (issue 32, item 4; docs/decisions.md, "Memory is
// given back when the server is idle"). Under load V8 grows its young generation to tens of
// megabytes and keeps it; a service that is busy for a minute and idle for an hour held it all
// hour. Once the server has been idle for a while after it grew, one full collection that also
// shrinks the heap's spaces gives the pages back, as a browser does for a tab in the background.

export interface IdleMemorySettings {
  /** How long without a request counts as idle; looked at this often. */
  idleMs: number
  /** How much the resident memory must have grown since the last reduction for another. */
  growthBytes: number
}

export const DEFAULT_IDLE_MEMORY: IdleMemorySettings = { idleMs: 2000, growthBytes: 8 * 1024 * 1024 }

let collect: ((options: object) => void) | undefined

/**
 * V8's full collection in its memory-reducing flavour, which shrinks the young generation and
 * releases free pages. Node has no API for it: V8's `gc` function is exposed to a context of its
 * own (never to the service's globals), made once.
 */
export function reduceMemory(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc')
    collect = runInNewContext('gc') as (options: object) => void
  }
  collect({ type: 'major', execution: 'sync', flavor: 'last-resort' })
}

export interface IdleMemoryOptions extends Partial<IdleMemorySettings> {
  /** The resident memory now, in bytes (tests give their own). */
  residentBytes?: () => number
  reduce?: () => void
}

/**
 * Looks every `idleMs`: when no request arrived during the last look's interval, at least one
 * did since the last reduction (or it is the first look after start), and the resident memory
 * grew by `growthBytes` since then, memory is reduced once. A server kept busy never pays for it;
 * an idle one pays once per busy spell, some tens of milliseconds.
 */
export default fp<IdleMemoryOptions>(
  async (fastify, options) => {
    const { idleMs, growthBytes } = { ...DEFAULT_IDLE_MEMORY, ...options }
    const residentBytes = options.residentBytes ?? (() => process.memoryUsage.rss())
    const reduce = options.reduce ?? reduceMemory
    let arrived = 0
    let arrivedAtLastLook = 0
    // The first look after start counts the start-up's garbage as a busy spell.
    let arrivedAtReduction = -1
    let residentAfterReduction = 0
    let timer: NodeJS.Timeout | undefined

    // A hook with a callback, not async: one addition per request.
    fastify.addHook('onRequest', (_request, _reply, done) => {
      arrived++
      done()
    })

    const look = () => {
      const idle = arrived === arrivedAtLastLook
      arrivedAtLastLook = arrived
      if (!idle || arrived === arrivedAtReduction || residentBytes() - residentAfterReduction < growthBytes) return
      reduce()
      arrivedAtReduction = arrived
      residentAfterReduction = residentBytes()
      fastify.log.debug({ residentBytes: residentAfterReduction }, 'memory reduced while idle')
    }

    fastify.addHook('onListen', (done) => {
      timer = setInterval(look, idleMs).unref()
      done()
    })
    fastify.addHook('onClose', (_instance, done) => {
      clearInterval(timer)
      done()
    })
  },
  { name: 'idle-memory', fastify: '5.x' },
)
