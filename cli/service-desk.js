#!/usr/bin/env node
// The service-desk command. The sources are TypeScript, loaded through tsx, so a checkout runs
// without a build step.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('./main.ts')
const code = await main(process.argv.slice(2))
if (code !== undefined) process.exitCode = code
