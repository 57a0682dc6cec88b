import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { childEnv } from '../fixtures/child.ts'
import { freePort } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 46: a process manager stops `npm start` with SIGTERM. npm passes it to the script's
// process; the script execs the server (package.json), so no shell sits between them that would
// die alone and leave the server running as an orphan.

const ROOT = new URL('../..', import.meta.url).pathname

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('SIGTERM to npm start stops the server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-npm-start-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const port = await freePort()
  const npm = spawn('npm', ['start', '--silent', '--', '--port', String(port)], {
    cwd: ROOT,
    env: childEnv({ SERVICE_DB: join(dir, 'service.db') }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  npm.stdout.on('data', (chunk) => (output += chunk))
  npm.stderr.on('data', (chunk) => (output += chunk))
  const npmExited = new Promise<void>((resolve) => npm.once('exit', () => resolve()))
  let server = 0
  t.teardown(() => {
    if (server && alive(server)) process.kill(server, 'SIGKILL')
    if (npm.exitCode === null) npm.kill('SIGKILL')
  })
  for (;;) {
    const listening = /"pid":(\d+)[^\n]*"msg":"Server listening/.exec(output)
    if (listening) {
      server = Number(listening[1])
      break
    }
    if (npm.exitCode !== null) throw new Error(`npm start ended: ${output}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.not(server, npm.pid, 'the server is a process of its own')
  t.ok(alive(server), 'it runs')
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)

  npm.kill('SIGTERM')
  await npmExited
  for (let i = 0; i < 200 && alive(server); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.notOk(alive(server), 'the server stopped with npm, no orphan left')
})
