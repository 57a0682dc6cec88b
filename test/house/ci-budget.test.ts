import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import t from 'tap'

// Engines: one: a shell function of CI, the same whatever the suite runs on.
// CI's budget (.ci/budget, sourced by .ci/run): a run that passed but took past the budget fails,
// and says where its time went (the report npm test keeps); a run within it, or one that failed
// already, is left as it is.

const BUDGET = resolve(import.meta.dirname, '..', '..', '.ci', 'budget')

function overBudget(cwd: string, status: number, total: number, budget: number) {
  const run = spawnSync('bash', ['-c', `. '${BUDGET}'; over_budget ${status} ${total} ${budget}`], { cwd, encoding: 'utf8' })
  return { code: run.status, out: run.stdout }
}

t.test('past the budget a run that passed fails, with where its time went; within it, or failed already, nothing changes', async (t) => {
  const dir = t.testdir({ '.tap': { 'time-report.txt': "== where the postgres pass's time went: 900 s\n   61.1 s  test/multiprocess/webhooks.test.ts\n" } })
  const over = overBudget(dir, 0, 1300, 1200)
  t.equal(over.code, 1)
  t.match(over.out, /^== CI FAILED: 1300 s is past the budget of 1200 s/)
  t.match(over.out, '61.1 s  test/multiprocess/webhooks.test.ts', 'the slowest files named')
  t.same(overBudget(dir, 0, 1200, 1200), { code: 0, out: '' }, 'at the budget')
  t.same(overBudget(dir, 1, 5000, 1200), { code: 0, out: '' }, 'a run that failed already keeps its own failure')
  const bare = overBudget(t.testdir({}), 0, 1300, 1200)
  t.equal(bare.code, 1)
  t.match(bare.out, '(npm test wrote no report of its time)')
})
