// npm run docs:generate: writes the references of docs/reference/ (tools/docs/references.ts).
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { commandsReference, COMMANDS_REFERENCE, settingsReference, SETTINGS_REFERENCE } from './references.ts'

const ROOT = join(import.meta.dirname, '..', '..')
for (const [file, text] of [[SETTINGS_REFERENCE, settingsReference()], [COMMANDS_REFERENCE, await commandsReference()]] as const) {
  mkdirSync(dirname(join(ROOT, file)), { recursive: true })
  writeFileSync(join(ROOT, file), text)
  console.log(`wrote ${file}`)
}
