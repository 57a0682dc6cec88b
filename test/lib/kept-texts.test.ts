import t from 'tap'
import { createKeptTexts } from '../../lib/kept-texts.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a text is made once per key, and the oldest go first past the limit', async (t) => {
  const made: string[] = []
  const kept = createKeptTexts(19)
  const text = (key: string, value: string) => kept(key, () => (made.push(key), value))
  t.equal(text('a', 'aaaa'), 'aaaa')
  t.equal(text('a', 'other'), 'aaaa', 'kept: not made again')
  t.equal(text('b', 'bbbb'), 'bbbb')
  t.equal(text('c', 'cccc'), 'cccc')
  t.same(made, ['a', 'b', 'c'], '15 characters: all kept')
  t.equal(text('d', 'dddd'), 'dddd')
  t.equal(text('a', 'new'), 'new', '19 exceeded: the oldest, a, was forgotten and is made again')
  t.same(made, ['a', 'b', 'c', 'd', 'a'])
  t.equal(text('c', 'x'), 'cccc', 'a later one is still kept')
  t.equal(text('big', 'y'.repeat(30)), 'y'.repeat(30), 'a text over the limit is answered')
  t.equal(text('big', 'z'), 'z', 'but not kept')
})
