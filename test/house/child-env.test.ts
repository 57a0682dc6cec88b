import { spawnSync } from 'node:child_process'
import t, { type Test } from 'tap'
import { childEnv } from '../fixtures/child.ts'

// Engines: one: how the suite starts its child processes, the same whatever it runs on.
// A process a test starts (a service process, a command) runs without tap's coverage and without
// its recording of the modules it loads: tap's process tracking puts its hook into every spawned
// process, and the hook read and measured each module again (test/fixtures/child.ts). Within npm
// test, a test process itself records the project's modules and leaves node_modules out, but for
// the one module whose recording starts the tracking in time (tools/test/tap-runner.mjs).

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
  t.match(child.options, /--import=file:\S+\/tools\/test\/preload\.mjs/, 'it loads the preload first, as the test processes do')
  t.equal(childEnv({ SERVICE_EXAMPLE: 'kept' }).SERVICE_EXAMPLE, 'kept', "the test's own variables are passed")
})

t.test("within npm test, a test process records the modules of the project and leaves node_modules out", { skip: process.env.SERVICE_TEST_RUN ? false : 'only npm test names this exclusion (tools/test/tap-runner.mjs); tap run directly names its own' }, async (t) => {
  const exclude = process.env._TAPJS_PROCESSINFO_EXCLUDE_
  t.ok(exclude, "tap's runner named what this process leaves out")
  const leftOut = new RegExp(exclude!.slice(1, exclude!.lastIndexOf('/')))
  t.equal(leftOut.test(`${process.cwd()}/node_modules/fastify/fastify.js`), true, 'a module of a package: left out')
  t.equal(leftOut.test(`${process.cwd()}/node_modules/@tapjs/core/dist/esm/index.js`), true, "tap's own: left out")
  t.equal(leftOut.test(`${process.cwd()}/db/stores/users.ts`), false, 'a module of the project: recorded')
  t.equal(leftOut.test(`${process.cwd()}/test/house/child-env.test.ts`), false, 'a test file: recorded')
  t.equal(leftOut.test(`${process.cwd()}/.tap/batches/sqlite-000-x.test.ts`), true, "tap's own folder: left out, as tap has it")
  t.equal(leftOut.test(`${process.cwd()}/node_modules/@tapjs/mock/dist/esm/import.mjs`), false, "but the first module tap loads is recorded: that starts the tracking in time (the runner's file says why)")
  const recorded = (globalThis as Record<symbol, { files: string[] } | undefined>)[Symbol.for('@tapjs/processinfo.ProcessInfoNodeData')]?.files ?? []
  t.ok(recorded.some((file) => file.endsWith('/@tapjs/mock/dist/esm/import.mjs')), 'this process recorded it')
  t.notOk(recorded.some((file) => file.includes('/node_modules/@tapjs/core/')), "and none of tap's core")
})
