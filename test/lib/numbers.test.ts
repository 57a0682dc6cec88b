import t from 'tap'
import { grouped } from '../../lib/numbers.ts'

// Engines: one: a pure function.

t.test('whole numbers grouped by three, as English writes them', async (t) => {
  for (const n of [0, 7, 999, 1_000, 10_000, 123_456, 1_000_000, 25_000_000, -1_234, Number.MAX_SAFE_INTEGER]) t.equal(grouped(n), n.toLocaleString('en'), String(n))
})
