import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import t from 'tap'

// Engines: one: a shell function of CI, the same whatever the suite runs on.
// CI's budget (.ci/budget, sourced by .ci/run): a run that passed but took past the budget says so
// and where its time went (the report npm test keeps), and fails past the limit; a run within it,
// or one that failed already, is left as it is.

const BUDGET = resolve(import.meta.dirname, '..', '..', '.ci', 'budget')

function overBudget(cwd: string, status: number, total: number, budget = 1200, limit = 2400) {
  const run = spawnSync('bash', ['-c', `. '${BUDGET}'; over_budget ${status} ${total} ${budget} ${limit}`], { cwd, encoding: 'utf8' })
  return { code: run.status, out: run.stdout }
}

t.test('past the budget a run that passed says so with where its time went; past the limit it fails; within it, or failed already, nothing changes', async (t) => {
  const dir = t.testdir({ '.tap': { 'time-report.txt': "== where the postgres pass's time went: 900 s\n   61.1 s  test/multiprocess/webhooks.test.ts\n" } })
  const past = overBudget(dir, 0, 1300)
  t.equal(past.code, 0, 'past the budget, within the limit: said, not failed')
  t.match(past.out, /^== CI PAST ITS BUDGET: 1300 s, where the budget is 1200 s/)
  t.match(past.out, '61.1 s  test/multiprocess/webhooks.test.ts', 'the slowest files named')
  const over = overBudget(dir, 0, 2401)
  t.equal(over.code, 1)
  t.match(over.out, /^== CI FAILED: 2401 s is past the limit of 2400 s/)
  t.match(over.out, '61.1 s  test/multiprocess/webhooks.test.ts')
  t.equal(overBudget(dir, 0, 1300, 1200, 1200).code, 1, 'with the limit at the budget, past it fails')
  t.same(overBudget(dir, 0, 1200), { code: 0, out: '' }, 'at the budget')
  t.same(overBudget(dir, 1, 5000), { code: 0, out: '' }, 'a run that failed already keeps its own failure')
  const bare = overBudget(t.testdir({}), 0, 2500)
  t.equal(bare.code, 1)
  t.match(bare.out, '(npm test wrote no report of its time)')
})
