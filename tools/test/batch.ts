// A batch of test files in one process (tools/test/run.js writes the file that calls runEntry;
// tools/test/plan.ts, batchesOf, says which files share one): each file is imported in turn, its
// tests queued on the root test as when it runs alone, and the next file is imported only once
// they have all ended, so no two files' tests ever run at once. How long each file took is
// appended to the file SERVICE_TEST_BATCH_TIMES names (`file<TAB>seconds`), for the time report
// and the recorded durations, as tap's own `# time=` is for a file alone.
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { startBatch } from './batch-end.ts'

const ROOT = join(import.meta.dirname, '..', '..')

/**
 * One process of a run (tools/test/run.js writes the file that calls this): the environment the
 * run gave this process (its engine, where its set-up times and its files' times go) set, then its
 * file imported as when tap runs it alone, or its files in turn.
 */
export async function runEntry(env: Record<string, string>, files: string[]): Promise<void> {
  // Before any test file is imported: the fixtures read the engine as they load (test/fixtures/postgres.ts).
  Object.assign(process.env, env)
  if (files.length === 1) await import(pathToFileURL(join(ROOT, files[0]!)).href)
  else await runInTurn(files)
}

/** Runs the test files (paths from the root) one after another in this process. */
export async function runInTurn(files: string[], times = process.env.SERVICE_TEST_BATCH_TIMES): Promise<void> {
  const closings = startBatch()
  for (const file of files) {
    const started = performance.now()
    await import(pathToFileURL(join(ROOT, file)).href)
    // Queued after the file's own tests: it ends once they have.
    await t.test(`${file}: its tests have ended`, async (t) => void t.pass(file))
    if (times) appendFileSync(times, `${file}\t${((performance.now() - started) / 1000).toFixed(1)}\n`)
  }
  // What the files shared (test/fixtures/browser.ts: Chromium), closed once they have all run.
  if (closings.length > 0) await t.test('what the batch shared is closed', async (t) => {
    for (const close of closings) await close()
    t.pass(`${closings.length} closed`)
  })
}
