import { getHeapStatistics } from 'node:v8'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import idleMemory, { type IdleMemoryOptions } from '../../plugins/idle-memory.ts'
import { settleMemory } from '../../lib/memory.ts'
import { buildTestApp } from '../fixtures/app.ts'

// Engines: one: HTTP's own rules (headers, limits, refusals, memory), decided before any store is reached.
// Issue 32, item 4: a listening server gives the start-up's garbage back at its first pause, and
// memory again once it has been idle for a while after a busy spell that grew it; never while
// requests keep coming, nor after a short pause between spells.

const LOOK_MS = 100
const IDLE_MS = 500
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A server with the plugin alone, its reductions counted, its resident memory what the test says. */
async function server(t: Test, options: Partial<IdleMemoryOptions> = {}) {
  const app = Fastify()
  const seen = { reductions: 0, resident: 100 * 1024 * 1024 }
  await app.register(idleMemory, {
    lookMs: LOOK_MS,
    idleMs: IDLE_MS,
    growthBytes: 1024 * 1024,
    residentBytes: () => seen.resident,
    reduce: () => {
      seen.reductions++
      seen.resident -= 30 * 1024 * 1024
    },
    ...options,
  })
  app.get('/', async () => ({ ok: true }))
  t.teardown(() => app.close())
  return { app, seen }
}

/** Until `done()` holds, for at most 5 s: on a loaded machine the looks come late, never early. */
async function eventually(done: () => boolean) {
  const until = Date.now() + 5000
  while (!done() && Date.now() < until) await sleep(10)
}

/** Requests every few milliseconds for `ms`: busier than one look's interval. */
async function busy(app: { inject(path: string): Promise<unknown> }, ms: number, grow: () => void) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    await app.inject('/')
    grow()
    await sleep(2)
  }
}

t.test("after start, once; after a busy spell that grew, once it has been idle for idleMs; never during it or sooner", async (t) => {
  const { app, seen } = await server(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  await eventually(() => seen.reductions > 0)
  t.equal(seen.reductions, 1, "the start-up's garbage, at the first look")
  await busy(app, LOOK_MS * 4, () => (seen.resident += 1024 * 1024))
  t.equal(seen.reductions, 1, 'not while requests keep coming')
  await sleep(LOOK_MS * 2)
  await busy(app, LOOK_MS * 2, () => {})
  await sleep(IDLE_MS / 2)
  t.equal(seen.reductions, 1, 'nor after a pause shorter than idleMs')
  await eventually(() => seen.reductions > 1)
  t.equal(seen.reductions, 2, 'once idle for idleMs')
  await sleep(IDLE_MS + LOOK_MS * 2)
  t.equal(seen.reductions, 2, 'and only once while it stays idle')
})

t.test("a server busy from its start gives the start-up's garbage back at its first pause, then waits idleMs", async (t) => {
  const { app, seen } = await server(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  await busy(app, LOOK_MS * 3, () => (seen.resident += 1024 * 1024))
  t.equal(seen.reductions, 0, 'not while requests keep coming')
  await eventually(() => seen.reductions > 0)
  t.equal(seen.reductions, 1, 'at the first look without a request')
  await busy(app, LOOK_MS * 3, () => (seen.resident += 1024 * 1024))
  await sleep(LOOK_MS * 3)
  t.equal(seen.reductions, 1, 'the next spell waits idleMs')
  await eventually(() => seen.reductions > 1)
  t.equal(seen.reductions, 2, 'then once idle for idleMs')
})

t.test('a busy spell that did not grow the memory costs no reduction', async (t) => {
  const { app, seen } = await server(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  await eventually(() => seen.reductions > 0)
  t.equal(seen.reductions, 1, 'after start, the memory having grown from nothing')
  await busy(app, LOOK_MS * 3, () => (seen.resident += 1024))
  await sleep(IDLE_MS + LOOK_MS * 3)
  t.equal(seen.reductions, 1, 'grown by less than growthBytes since: left as it is')
})

t.test('an app that never listens (tests, a command) never looks', async (t) => {
  const { app, seen } = await server(t)
  await app.ready()
  await app.inject('/')
  await sleep(LOOK_MS * 4)
  t.equal(seen.reductions, 0)
})

t.test('the reduction gives the heap back for real, and exposes nothing to the globals', async (t) => {
  let garbage: number[][] | undefined = Array.from({ length: 400 }, () => Array.from({ length: 10_000 }, (_, i) => i))
  const before = getHeapStatistics().total_heap_size
  t.ok(garbage.length)
  garbage = undefined
  settleMemory()
  const after = getHeapStatistics().total_heap_size
  t.ok(before - after > 16 * 1024 * 1024, `the heap shrank from ${before} to ${after} bytes`)
  settleMemory()
  t.equal('gc' in globalThis, false, 'V8 gc function stays in a context of its own')
})

t.test('the service registers it', async (t) => {
  const { app } = await buildTestApp(t)
  t.ok(app.hasPlugin('idle-memory'))
})
