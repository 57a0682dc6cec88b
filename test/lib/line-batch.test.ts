import t from 'tap'
import { LineBatch } from '../../lib/line-batch.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('lines are handed on in batches of about the given size, in order, and on a flush', async (t) => {
  const writes: string[] = []
  const batch = new LineBatch({ write: (text) => writes.push(text) }, 10)
  t.equal(batch.write('abc\n'), true)
  t.equal(batch.write('def\n'), true)
  t.same(writes, [], '8 characters: kept')
  batch.write('ghi\n')
  t.same(writes, ['abc\ndef\nghi\n'], '12: handed on as one write')
  batch.write('é€😀\n')
  batch.flush()
  batch.flush()
  t.same(writes, ['abc\ndef\nghi\n', 'é€😀\n'], 'a flush hands on the rest, and nothing when there is none')
  batch.write('x'.repeat(25))
  t.same(writes.at(-1), 'x'.repeat(25), 'a line longer than a batch goes at once')
})
