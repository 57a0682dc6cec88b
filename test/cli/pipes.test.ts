import { spawn } from 'node:child_process'
import t from 'tap'
import { childEnv } from '../fixtures/child.ts'
import { BIN } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 31, item 4: a reader that stops early (`| head`) closes the pipe under the command, which
// then ends quietly with 0, as ls and grep do: no unhandled EPIPE, no stack trace.

t.test('a closed pipe ends the command quietly', async (t) => {
  const child = spawn(process.execPath, [BIN, '--help'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  // Closed before the command has written anything: its first write meets EPIPE.
  child.stdout.destroy()
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const code = await new Promise((resolve) => child.once('exit', resolve))
  t.equal(code, 0, 'exit 0, as for head')
  t.equal(stderr, '', 'nothing said')
})
