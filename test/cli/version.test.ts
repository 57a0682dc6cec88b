import { readFileSync } from 'node:fs'
import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'

// Engines: one: the version command. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

t.test('--version prints the package version, alone, and nothing else', async (t) => {
  const { run } = await cliRunner(t)
  t.same(await run(['--version']), { code: 0, stdout: `service-desk ${version}\n`, stderr: '' })
  t.same(await run(['-v']), { code: 0, stdout: `service-desk ${version}\n`, stderr: '' })
  t.match((await run(['--help'])).stdout, '--version prints the version')
  t.equal((await run(['--version', 'extra'])).code, 2, 'not a flag of other words')
})
