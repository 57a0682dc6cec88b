import { spawnSync } from 'node:child_process'
import t, { type Test } from 'tap'
import { childEnv } from '../fixtures/child.ts'

// Engines: one: how the suite starts its child processes, the same whatever it runs on.
// A process a test starts (a service process, a command) runs without tap's coverage and without
// its recording of the modules it loads: tap's process tracking puts its hook into every spawned
// process, and the hook read and measured each module again (test/fixtures/child.ts).

/** What a child started with `env` learns of tap's tracking: its hook, the exclusion it applies, and whether V8 collects coverage. */
function seenByChild(t: Test, env: NodeJS.ProcessEnv) {
  const script = 'process.stdout.write(JSON.stringify({ options: process.env.NODE_OPTIONS ?? "", exclude: process.env._TAPJS_PROCESSINFO_EXCLUDE_, coverage: process.env.NODE_V8_COVERAGE ?? null }))'
  const child = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })
  t.equal(child.status, 0, child.stderr)
  return JSON.parse(child.stdout) as { options: string; exclude: string | undefined; coverage: string | null }
}

t.test("a child started with childEnv has tap's hook, told to record nothing, and no coverage", async (t) => {
  const plain = seenByChild(t, process.env)
  t.match(plain.options, '@tapjs/processinfo', "tap's hook is put into a child's NODE_OPTIONS")
  t.not(plain.exclude, '/./', "a child started with the tests' own environment records the files it loads")

  const child = seenByChild(t, childEnv({ SERVICE_EXAMPLE: 'kept' }))
  t.match(child.options, '@tapjs/processinfo', 'the hook is still put in: childEnv cannot take it out')
  t.equal(child.exclude, '/./', 'but its exclusion matches every file, so it records none')
  t.equal(new RegExp(child.exclude!.slice(1, -1)).test('/any/module.js'), true)
  t.equal(child.coverage, null, 'and V8 collects no coverage')
  t.equal(childEnv({ SERVICE_EXAMPLE: 'kept' }).SERVICE_EXAMPLE, 'kept', "the test's own variables are passed")
})
