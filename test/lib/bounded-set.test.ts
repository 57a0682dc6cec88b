import t from 'tap'
import { createBoundedSet } from '../../lib/bounded-set.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('the oldest value is forgotten first once the set is full', async (t) => {
  const set = createBoundedSet<string>(2)
  set.add('a')
  set.add('b')
  t.ok(set.has('a') && set.has('b'))
  set.add('c')
  t.notOk(set.has('a'), 'a was the oldest')
  t.ok(set.has('b') && set.has('c'))
  set.add('c')
  t.ok(set.has('b'), 'adding a value already there forgets nothing')
})
