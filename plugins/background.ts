import type { FastifyInstance } from 'fastify'

/**
 * Runs `task` in the background of the app: first `firstAfterMs` after it is ready, then
 * `everyMs` after each run ends, one run at a time, never holding start-up or a request up, and
 * none once it closes (a run under way is awaited). `task` reports its own failures.
 */
export function repeatInBackground(fastify: FastifyInstance, { firstAfterMs, everyMs }: { firstAfterMs: number; everyMs: number }, task: () => Promise<void>) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  let closed = false
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      running = task().finally(() => {
        if (!closed) schedule(everyMs)
      })
    }, ms).unref()
  }
  fastify.addHook('onReady', async () => {
    schedule(firstAfterMs)
  })
  fastify.addHook('onClose', async () => {
    closed = true
    clearTimeout(timer)
    await running
  })
}
