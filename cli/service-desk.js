#!/usr/bin/env node
// The service-desk command. It runs the JavaScript that cli/build.js compiles from the TypeScript
// sources into dist/, building it first when it is missing or older than a source: no TypeScript
// loader runs in the service's process. It runs on the Node.js the project installs (the `node`
// package, Node 24 LTS), which npm scripts and npx put first on the PATH; started by an older Node
// (the machine's own), it hands itself over to that one.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

const LOWEST_MAJOR = 22
if (Number(process.versions.node.split('.')[0]) < LOWEST_MAJOR) {
  const own = join(import.meta.dirname, '..', 'node_modules', '.bin', 'node')
  if (!existsSync(own)) {
    process.stderr.write(`service-desk: Node.js ${LOWEST_MAJOR} or later is needed (this is ${process.version}); run npm ci, which installs it\n`)
    process.exit(1)
  }
  const child = spawn(own, [import.meta.filename, ...process.argv.slice(2)], { stdio: 'inherit' })
  // The service stops on the signals its operator sends this process.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal))
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)))
} else {
  await run()
}

async function run() {
  const { ensureBuilt } = await import('./build.js')
  try {
    ensureBuilt()
  } catch (error) {
    process.stderr.write(`service-desk: ${error.message}\n`)
    process.exit(1)
  }
  // V8's compiled code of what the command loads, kept on disk between starts (Node's compile
  // cache, in the system's temporary folder; NODE_DISABLE_COMPILE_CACHE=1 turns it off): a start
  // that finds it compiles less, about a tenth of the time to the first answer (docs/decisions.md,
  // "Compiled JavaScript in production"). Enabled here, not for the tests' own processes, whose
  // coverage V8 counts differently when code comes from the cache (docs/development.md).
  // (Loaded here: an older Node, which hands itself over above, has no such export.)
  const { enableCompileCache } = await import('node:module')
  enableCompileCache()
  const { main } = await import('../dist/main.js')
  const code = await main(process.argv.slice(2))
  if (code !== undefined) process.exitCode = code
}

