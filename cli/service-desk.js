#!/usr/bin/env node
// The service-desk command. It runs the JavaScript that cli/build.js compiles from the TypeScript
// sources into dist/, building it first when it is missing or older than a source: no TypeScript
// loader runs in the service's process.
import { ensureBuilt } from './build.js'

try {
  ensureBuilt()
} catch (error) {
  process.stderr.write(`service-desk: ${error.message}\n`)
  process.exit(1)
}
const { main } = await import('../dist/cli/main.js')
const code = await main(process.argv.slice(2))
if (code !== undefined) process.exitCode = code
