import t from 'tap'
import { createBoundedMap, createBoundedSet } from '../../lib/bounded-set.ts'

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

t.test('a bounded map keeps the newest entries, at most its size', async (t) => {
  const map = createBoundedMap<number, string>(2)
  map.set(1, 'one')
  map.set(2, 'two')
  map.set(1, 'uno')
  t.equal(map.get(1), 'uno', 'set again: the new value')
  map.set(3, 'three')
  t.same([map.get(1), map.get(2), map.get(3)], [undefined, 'two', 'three'], 'the oldest forgotten first')
})
