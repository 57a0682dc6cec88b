import t from 'tap'
import { mergeTarget } from '../../lib/merge-target.ts'

// Engines: one: a pure function of its text.
// What a merge names as the discussion to merge into (lib/merge-target.ts).

const OWN = ['https://api.example.test/demo/discussions', 'https://help.example.test/demo/discussions']

t.test('a number, #number, or an address of the site, the API\'s or the page\'s', async (t) => {
  t.same(mergeTarget(12, OWN), { number: 12 })
  t.same(mergeTarget('12', OWN), { number: 12 })
  t.same(mergeTarget(' #12 ', OWN), { number: 12 })
  t.same(mergeTarget('https://api.example.test/demo/discussions/12', OWN), { number: 12 })
  t.same(mergeTarget('https://help.example.test/demo/discussions/12/', OWN), { number: 12 })
  t.same(mergeTarget('https://help.example.test/demo/discussions/12?done=sent#comment-3', OWN), { number: 12 })
})

t.test('what is none: no number, too large, another site, another resource, odd text', async (t) => {
  const not = { problem: "is not a discussion's number or address" }
  t.same(mergeTarget(0, OWN), { problem: 'is not a discussion number' })
  t.same(mergeTarget(2 ** 31, OWN), { problem: 'is not a discussion number' })
  t.same(mergeTarget('0', OWN), { problem: 'is not a discussion number' })
  t.same(mergeTarget('9999999999', OWN), { problem: 'is not a discussion number' })
  t.match(mergeTarget('https://api.example.test/other/discussions/12', OWN), { problem: /another site/ })
  t.match(mergeTarget('https://evil.example/demo/discussions/12', OWN), { problem: /another site/ })
  t.same(mergeTarget('https://api.example.test/demo/discussions/12/comments/3', OWN), not)
  t.same(mergeTarget('https://api.example.test/demo/discussions/0', OWN), { problem: 'is not a discussion number' })
  t.same(mergeTarget('https://api.example.test/demo/discussionsX/12', OWN), not)
  t.same(mergeTarget('twelve', OWN), not)
  t.same(mergeTarget('#12\u0000', OWN), not)
  t.same(mergeTarget('１２', OWN), not, 'full-width digits are not a number')
})
