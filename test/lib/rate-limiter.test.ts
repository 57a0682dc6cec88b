import t from 'tap'
import { createRateLimiter, granted, leaseSize, rateLimitHeaders, type RateVerdict, type RateWindowStore } from '../../lib/rate-limiter.ts'
import { START, testClock } from '../fixtures/clock.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The counting of fair use (lib/rate-limiter.ts) over a store that keeps its rows in a Map and
// answers after a turn of the event loop, as a database across a connection does. The stores on
// both engines are in test/plugins/rate-limits.test.ts, through the whole service.

function slowStore() {
  const rows = new Map<string, number>()
  const takes: number[] = []
  const pruned: number[] = []
  const store: RateWindowStore = {
    async take(key, windowStart, count) {
      await new Promise((resolve) => setImmediate(resolve))
      const row = `${key}@${windowStart.getTime()}`
      rows.set(row, (rows.get(row) ?? 0) + count)
      takes.push(count)
      return rows.get(row)!
    },
    async prune(before) {
      pruned.push(before.getTime())
    },
  }
  return { store, rows, takes, pruned }
}

const reads = { name: 'reads', limit: 100 }
/** Where a test does not expect the store to fail: a failure fails the test. */
const unexpected = (error: unknown) => {
  throw error
}
const loud = { onPruneError: unexpected, onLeaseError: unexpected }

t.test('a lease is a 64th of the limit, then a quarter of what is left, at least one; a grant is what was left', async (t) => {
  t.equal(leaseSize(10_000, 0), 157)
  t.equal(leaseSize(10_000, 9_600), 100, 'a quarter of the 400 left')
  t.equal(leaseSize(10_000, 9_999), 1)
  t.equal(leaseSize(3, 0), 1)
  t.equal(granted(10, 5, 5), 5, 'all of it, when the total stays within the limit')
  t.equal(granted(10, 12, 5), 3, 'what was left before it')
  t.equal(granted(10, 20, 5), 0, 'nothing once others took it all')
})

t.test('requests that wait on one lease each get their share, and together never pass the limit', async (t) => {
  const { store, takes } = slowStore()
  const limiter = createRateLimiter({ store, clock: testClock(), windowSeconds: 3600, ...loud })
  const verdicts = await Promise.all(Array.from({ length: 130 }, () => limiter.take('k', reads)))
  t.equal(verdicts.filter((v) => v.allowed).length, 100)
  t.same(verdicts.slice(0, 100).map((v) => v.remaining), Array.from({ length: 100 }, (_, i) => 99 - i), 'counted down one by one')
  t.equal(takes.reduce((a, b) => a + b, 0) >= 100, true)
  const sync = limiter.take('k', reads)
  t.notOk(sync instanceof Promise, 'a spent window answers from memory')
  t.equal((sync as RateVerdict).allowed, false)
})

t.test('two limiters on one store (two processes) share the limit exactly', async (t) => {
  const { store } = slowStore()
  const clock = testClock()
  const [one, two] = [createRateLimiter({ store, clock, windowSeconds: 60, ...loud }), createRateLimiter({ store, clock, windowSeconds: 60, ...loud })]
  const policy = { name: 'reads', limit: 37 }
  const verdicts = await Promise.all(Array.from({ length: 90 }, (_, i) => (i % 3 ? one : two).take('k', policy)))
  t.equal(verdicts.filter((v) => v.allowed).length, 37)
})

t.test('a new window starts afresh, forgets the old lease, and prunes the windows before it once', async (t) => {
  const { store, rows, pruned } = slowStore()
  const clock = testClock()
  const limiter = createRateLimiter({ store, clock, windowSeconds: 60, ...loud })
  const first = await limiter.take('k', { name: 'reads', limit: 640 })
  t.same([first.remaining, first.resetSeconds, first.resetAt], [639, 60, START + 60_000])
  clock.advance(59_500)
  t.equal((limiter.take('k', { name: 'reads', limit: 640 }) as RateVerdict).resetSeconds, 1, 'whole seconds, at least one')
  clock.advance(500)
  const next = await limiter.take('k', { name: 'reads', limit: 640 })
  t.equal(next.remaining, 639, 'the new window has the whole limit')
  t.same([...rows.values()], [10, 10], 'one lease in each window')
  await limiter.take('other', reads)
  t.same(pruned, [START, START + 60_000], 'one prune per window, not per key')
})

t.test('a failed prune is reported and counting goes on', async (t) => {
  const { store } = slowStore()
  const failures: unknown[] = []
  const limiter = createRateLimiter({ store: { ...store, prune: () => Promise.reject(new Error('database gone')) }, clock: testClock(), windowSeconds: 60, onPruneError: (e) => failures.push(e), onLeaseError: unexpected })
  t.equal((await limiter.take('k', reads)).allowed, true)
  await new Promise((resolve) => setImmediate(resolve))
  t.match(failures, [{ message: 'database gone' }])
})

t.test('a lease the store cannot take is granted from the process\'s own count, reported once per run of failures', async (t) => {
  const { store, rows } = slowStore()
  let down = true
  const failures: unknown[] = []
  const flaky: RateWindowStore = { ...store, take: (...args) => (down ? Promise.reject(new Error('database is locked')) : store.take(...args)) }
  const limiter = createRateLimiter({ store: flaky, clock: testClock(), windowSeconds: 60, onLeaseError: (e) => failures.push(e), onPruneError: unexpected })
  const policy = { name: 'reads', limit: 8 }
  const verdicts = []
  for (let i = 0; i < 10; i++) verdicts.push(await limiter.take('k', policy))
  t.same(verdicts.map((v) => v.allowed), [true, true, true, true, true, true, true, true, false, false], 'served, and still limited by this process alone')
  t.match(failures, [{ message: 'database is locked' }], 'one report for the run')
  down = false
  t.equal((await limiter.take('other', policy)).allowed, true)
  t.same([...rows.values()], [1], 'the store is used again once it answers')
  down = true
  await limiter.take('third', policy)
  t.equal(failures.length, 2, 'a new run of failures is reported again')
})

t.test("a 304's share is given back into its own window only; a refusal gives nothing back", async (t) => {
  const { store } = slowStore()
  const clock = testClock()
  const limiter = createRateLimiter({ store, clock, windowSeconds: 60, ...loud })
  const policy = { name: 'reads', limit: 2 }
  const first = await limiter.take('k', policy)
  t.equal(first.giveBack().remaining, 2)
  await limiter.take('k', policy)
  const second = await limiter.take('k', policy)
  const refused = await limiter.take('k', policy)
  t.equal(refused.allowed, false)
  t.equal(refused.giveBack(), refused, 'a refused request had no share')
  clock.advance(60_000)
  t.equal(second.giveBack(), second, 'a share of the last window is worth nothing in this one')
  t.equal((await limiter.take('k', policy)).remaining, 1)
})

t.test('closing gives back what the process still holds, so the next process can spend it', async (t) => {
  const { store, rows } = slowStore()
  const clock = testClock()
  const limiter = createRateLimiter({ store, clock, windowSeconds: 60, ...loud })
  const policy = { name: 'reads', limit: 6400 }
  await limiter.take('a', policy)
  await limiter.take('b', policy)
  t.same([...rows.values()], [100, 100])
  await limiter.release()
  t.same([...rows.values()], [1, 1], 'only what was spent stays taken')
  const next = createRateLimiter({ store, clock, windowSeconds: 60, ...loud })
  t.equal((await next.take('a', policy)).remaining, 6398)
})

t.test('at most maxKeys keys are kept; the least recently started is forgotten first', async (t) => {
  const { store, takes } = slowStore()
  const limiter = createRateLimiter({ store, clock: testClock(), windowSeconds: 60, maxKeys: 2, ...loud })
  for (const key of ['a', 'b', 'c']) await limiter.take(key, reads)
  t.equal(takes.length, 3)
  await limiter.take('c', reads)
  t.equal(takes.length, 3, 'c is still in memory')
  await limiter.take('a', reads)
  t.equal(takes.length, 4, 'a was forgotten, and leases again')
})

t.test('the headers: the draft\'s two fields with one item per standing, and GitHub\'s names for the first', async (t) => {
  const standing = (name: string, limit: number, remaining: number) => ({ policy: { name, limit }, windowSeconds: 300, remaining, resetSeconds: 12, resetAt: START + 12_000 })
  t.same(rateLimitHeaders([standing('failures', 20, 19), standing('anonymous', 1000, 998)]), {
    'ratelimit-policy': '"failures";q=20;w=300, "anonymous";q=1000;w=300',
    ratelimit: '"failures";r=19;t=12, "anonymous";r=998;t=12',
    'x-ratelimit-limit': '20',
    'x-ratelimit-remaining': '19',
    'x-ratelimit-used': '1',
    'x-ratelimit-reset': String(START / 1000 + 12),
    'x-ratelimit-resource': 'failures',
  })
  const reads = { name: 'reads', limit: 10 }
  const at = (windowSeconds: number) => ({ policy: reads, windowSeconds, remaining: 9, resetSeconds: 5, resetAt: START })
  t.equal(rateLimitHeaders([at(60)])['ratelimit-policy'], '"reads";q=10;w=60')
  t.equal(rateLimitHeaders([at(60)])['ratelimit-policy'], '"reads";q=10;w=60', 'the same policy, its parts made once')
  t.equal(rateLimitHeaders([at(3600)])['ratelimit-policy'], '"reads";q=10;w=3600', 'the same policy in another window is told so')
})
