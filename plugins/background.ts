import type { FastifyInstance } from 'fastify'

/**
 * Runs `task` in the background of the app: first `firstAfterMs` after it is ready, then
 * `everyMs` after each run ends, one run at a time, never holding start-up or a request up, and
 * none once it closes (a run under way is awaited; its signal is aborted). `task` reports its own failures.
 */
export function repeatInBackground(fastify: FastifyInstance, { firstAfterMs, everyMs }: { firstAfterMs: number; everyMs: number }, task: (closing: AbortSignal) => Promise<void>) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  // Aborted when the app closes: a long task (in steps) stops at its next step.
  const closing = new AbortController()
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      running = task(closing.signal).finally(() => {
        if (!closing.signal.aborted) schedule(everyMs)
      })
    }, ms).unref()
  }
  fastify.addHook('onReady', async () => {
    schedule(firstAfterMs)
  })
  fastify.addHook('onClose', async () => {
    closing.abort()
    clearTimeout(timer)
    await running
  })
}
