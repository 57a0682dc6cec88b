import t from 'tap'
import { ENGINE_CODE, gainOf, KEPT_BY_KIND, linesOf, pickFiles, ranOffsets, type Ran } from '../../tools/test/coverage-sets.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The counting behind tools/test/engine-coverage.ts, which says which files of the PostgreSQL pass
// run engine code no other file runs there (docs/development.md, "What runs where").

const bits = (s: string) => Uint8Array.from(s, (c) => (c === '1' ? 1 : 0))
const text = (ran: Uint8Array) => [...ran].join('')

t.test('an offset takes the count of the innermost range around it', async (t) => {
  // A function over 0..10 that ran, a block 2..6 inside it that did not, a block 3..4 inside that one that did (a loop's body entered by another path).
  const ran = ranOffsets([{ ranges: [{ startOffset: 0, endOffset: 10, count: 1 }, { startOffset: 2, endOffset: 6, count: 0 }, { startOffset: 3, endOffset: 4, count: 2 }] }])
  t.equal(text(ran), '1101001111')
  // Ranges given inner first, and over two functions: the same answer.
  const again = ranOffsets([{ ranges: [{ startOffset: 3, endOffset: 4, count: 2 }] }, { ranges: [{ startOffset: 2, endOffset: 6, count: 0 }, { startOffset: 0, endOffset: 10, count: 1 }] }])
  t.equal(text(again), '1101001111')
  // A function that never ran, beside one that did.
  t.equal(text(ranOffsets([{ ranges: [{ startOffset: 0, endOffset: 3, count: 0 }] }, { ranges: [{ startOffset: 3, endOffset: 5, count: 4 }] }])), '00011')
  t.equal(ranOffsets([]).length, 0)
})

t.test('what a file adds is what it ran that the others have not, by source', async (t) => {
  const file: Ran = new Map([['db/a.ts', bits('0110')], ['db/b.ts', bits('11')]])
  const already: Ran = new Map([['db/a.ts', bits('0100')]])
  t.same(Object.fromEntries(gainOf(file, already)), { 'db/a.ts': [2], 'db/b.ts': [0, 1] })
  t.same(Object.fromEntries(gainOf(file, file)), {})
})

t.test('files are picked until every part any of them ran is run: those kept by kind first, then the most for each second', async (t) => {
  const ran = new Map<string, Ran>([
    ['test/db/x.test.ts', new Map([['db/a.ts', bits('1100')]])],
    // Runs what the cheap pair below runs together, in three times their seconds.
    ['test/slow.test.ts', new Map([['db/a.ts', bits('0011')], ['db/b.ts', bits('1')]])],
    ['test/cheap-a.test.ts', new Map([['db/a.ts', bits('0010')]])],
    ['test/cheap-b.test.ts', new Map([['db/a.ts', bits('0001')], ['db/b.ts', bits('1')]])],
    // Runs only what the kept file runs.
    ['test/page.test.ts', new Map([['db/a.ts', bits('1000')]])],
  ])
  const seconds = new Map([['test/db/x.test.ts', 9], ['test/slow.test.ts', 6], ['test/cheap-a.test.ts', 1], ['test/cheap-b.test.ts', 1], ['test/page.test.ts', 1]])
  const picked = pickFiles(ran, seconds, ['test/db/x.test.ts'])
  t.same(picked.map((p) => [p.file, p.byKind]), [['test/db/x.test.ts', true], ['test/cheap-b.test.ts', false], ['test/cheap-a.test.ts', false]])
  t.same(Object.fromEntries(picked[1]!.gain), { 'db/a.ts': [3], 'db/b.ts': [0] })
  // Kept by kind though it adds nothing: still listed, with nothing of its own.
  const withPage = pickFiles(ran, seconds, ['test/db/x.test.ts', 'test/page.test.ts'])
  t.same(Object.fromEntries(withPage[1]!.gain), {})
  t.equal(withPage.length, 4)
})

t.test('offsets are told as lines', async (t) => {
  t.same(linesOf('ab\ncd\n\nef', [0, 1, 3, 7, 8]), [1, 2, 4])
  t.same(linesOf('', []), [])
})

t.test('the engine code and the kept kinds', async (t) => {
  for (const path of ['db/stores/users.ts', 'db/postgres/client.ts', 'plugins/database.ts', 'lib/database-errors.ts']) t.match(path, ENGINE_CODE)
  for (const path of ['routes/api/discussions.ts', 'plugins/database-tools.ts', 'lib/database-address.ts', 'lib/server-key.ts']) t.notMatch(path, ENGINE_CODE)
  t.match('test/db/postgres/races.test.ts', KEPT_BY_KIND)
  t.match('test/multiprocess/webhooks.test.ts', KEPT_BY_KIND)
  t.notMatch('test/web/queue.test.ts', KEPT_BY_KIND)
})
