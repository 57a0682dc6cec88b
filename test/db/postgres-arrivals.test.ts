import t from 'tap'
import { arrivals } from '../../db/postgres/arrivals.ts'

// The PostgreSQL engine's admission of requests and the read it shares among them
// (db/postgres/arrivals.ts): a read is shared only by requests that had arrived before it started.

/** A load whose reads the test settles, each with the number of the read. */
function reads() {
  const started: Array<{ key: string; settle: () => void }> = []
  const load = (key: string) =>
    new Promise<string>((resolve) => {
      const n = started.length + 1
      started.push({ key, settle: () => resolve(`${key} read ${n}`) })
    })
  return { started, load }
}

/** Admits one request and resolves once it is let go on. */
const admitted = (a: ReturnType<typeof arrivals>) => new Promise<void>((resolve) => a.arrived(resolve))

t.test('requests that arrived together share one read of a key; another key is read apart', async (t) => {
  const a = arrivals()
  const { started, load } = reads()
  const read = a.shared(load)
  await Promise.all([admitted(a), admitted(a), admitted(a)])
  const answers = [read('ann'), read('ann'), read('bob')]
  t.same(started.map((s) => s.key), ['ann', 'bob'], 'one read a key')
  for (const s of started) s.settle()
  t.same(await Promise.all(answers), ['ann read 1', 'ann read 1', 'bob read 2'])
})

t.test('a request that arrives while a read is under way never gets that read: it makes its own', async (t) => {
  const a = arrivals()
  const { started, load } = reads()
  const read = a.shared(load)
  await admitted(a)
  const first = read('ann')
  // A revocation commits, then a request arrives: the read under way may have missed the commit.
  await admitted(a)
  const second = read('ann')
  t.equal(started.length, 2, 'a second read, started after the second request arrived')
  started[1]!.settle()
  t.equal(await second, 'ann read 2')
  started[0]!.settle()
  t.equal(await first, 'ann read 1')
})

t.test('a read that has settled is not kept: the next call of the same requests reads again', async (t) => {
  const a = arrivals()
  const { started, load } = reads()
  const read = a.shared(load)
  await admitted(a)
  const first = read('ann')
  started[0]!.settle()
  await first
  const again = read('ann')
  t.equal(started.length, 2)
  started[1]!.settle()
  t.equal(await again, 'ann read 2')
})

t.test('a failed read is not shared once it has failed', async (t) => {
  const a = arrivals()
  let n = 0
  const read = a.shared(async () => {
    n++
    if (n === 1) throw new Error('the database went away')
    return 'read'
  })
  await admitted(a)
  await t.rejects(read('ann'), /went away/)
  t.equal(await read('ann'), 'read')
})

t.test('requests arriving in one turn of the event loop are let go on together, after it', async (t) => {
  const a = arrivals()
  const order: string[] = []
  a.arrived(() => order.push('one'))
  a.arrived(() => order.push('two'))
  order.push('still arriving')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(order, ['still arriving', 'one', 'two'])
})
