import { getHeapSpaceStatistics } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { settleMemory } from '../../lib/memory.ts'

// Engines: one: nothing here reaches a database.
// lib/memory.ts: the collection a started service runs once, which gives back the young generation
// its start grew.

const newSpaceMb = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size / 1048576

t.test('the young generation a burst of allocation grew is given back, and no context is left with gc', async (t) => {
  // Objects that live across a few scavenges make V8 grow the young generation, as a start does.
  let kept: Array<Array<{ i: number }>> | null = []
  for (let round = 0; round < 200; round++) {
    kept.push(Array.from({ length: 20_000 }, (_, i) => ({ i })))
    if (kept.length > 20) kept.shift()
  }
  kept = null
  const grown = newSpaceMb()
  t.ok(grown >= 16, `grown to ${grown} MB`)
  settleMemory()
  const settled = newSpaceMb()
  t.ok(settled <= grown / 4, `given back: ${grown} MB -> ${settled} MB`)
  t.equal(runInNewContext('typeof gc'), 'undefined', 'a context made afterwards has no gc')
  t.doesNotThrow(() => settleMemory(), 'and it runs again')
})
