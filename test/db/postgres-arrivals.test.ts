import t from 'tap'
import { arrivals } from '../../db/postgres/arrivals.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The PostgreSQL engine's admission of requests and the reads it makes for them together
// (db/postgres/arrivals.ts): a read serves only requests that had arrived before it started.

/** A loadMany whose reads the test settles, each read's values naming the read. */
function reads() {
  const started: Array<{ keys: string[]; settle: () => void; fail: (error: Error) => void }> = []
  const loadMany = (keys: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      const n = started.length + 1
      started.push({ keys, settle: () => resolve(keys.map((key) => `${key} read ${n}`)), fail: reject })
    })
  return { started, loadMany }
}

/** Admits one request and resolves once it is let go on. */
const admitted = (a: ReturnType<typeof arrivals>) => new Promise<void>((resolve) => a.arrived(resolve))
const turn = () => new Promise((resolve) => setImmediate(resolve))

/** One request admitted, and its read of 'ann' started. */
async function firstRead() {
  const a = arrivals()
  const { started, loadMany } = reads()
  const read = a.batched(loadMany)
  await admitted(a)
  const first = read('ann')
  await turn()
  return { a, started, read, first }
}

/** Asks for 'ann' again once the first read is over: a second read starts, and is answered. */
async function secondRead(read: (key: string) => Promise<string>, started: ReturnType<typeof reads>['started']) {
  const again = read('ann')
  await turn()
  if (started.length !== 2) throw new Error(`${started.length} reads, not a second one`)
  started[1]!.settle()
  return again
}

t.test('the keys the requests admitted together ask for are one read; a key asked twice is read once', async (t) => {
  const a = arrivals()
  const { started, loadMany } = reads()
  const read = a.batched(loadMany)
  await Promise.all([admitted(a), admitted(a), admitted(a)])
  const answers = [read('ann'), read('ann'), read('bob')]
  await turn()
  t.same(started.map((s) => s.keys), [['ann', 'bob']], 'one read of both keys')
  started[0]!.settle()
  t.same(await Promise.all(answers), ['ann read 1', 'ann read 1', 'bob read 1'])
})

t.test('a request that arrives while a read is under way never gets that read: it makes its own', async (t) => {
  const { a, started, read, first } = await firstRead()
  // A revocation commits, then a request arrives: the read under way may have missed the commit.
  await admitted(a)
  const second = read('ann')
  await turn()
  t.equal(started.length, 2, 'a second read, started after the second request arrived')
  started[1]!.settle()
  t.equal(await second, 'ann read 2')
  started[0]!.settle()
  t.equal(await first, 'ann read 1')
})

t.test('a read that has settled is not kept: the next call of the same requests reads again', async (t) => {
  const { started, read, first } = await firstRead()
  started[0]!.settle()
  await first
  t.equal(await secondRead(read, started), 'ann read 2')
})

t.test('a failed read fails every request of it, and is not shared once it has failed', async (t) => {
  const a = arrivals()
  const { started, loadMany } = reads()
  const read = a.batched(loadMany)
  await admitted(a)
  const failing = [read('ann'), read('bob')]
  await turn()
  started[0]!.fail(new Error('the database went away'))
  for (const answer of failing) await t.rejects(answer, /went away/)
  t.equal(await secondRead(read, started), 'ann read 2')
})

t.test('requests arriving in one turn of the event loop are let go on together, after it', async (t) => {
  const a = arrivals()
  const order: string[] = []
  a.arrived(() => order.push('one'))
  a.arrived(() => order.push('two'))
  order.push('still arriving')
  await turn()
  t.same(order, ['still arriving', 'one', 'two'])
})
