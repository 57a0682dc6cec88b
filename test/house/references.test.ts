import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { SETTINGS } from '../../config.ts'
import { commandsReference, COMMANDS_REFERENCE, settingsReference, SETTINGS_REFERENCE } from '../../tools/docs/references.ts'

// The references in docs/reference/ are made from the code (tools/docs/references.ts) and must be
// what it makes today: a setting or a command added without its row fails here.

const ROOT = resolve(import.meta.dirname, '..', '..')
const hint = 'run `npm run docs:generate` and commit docs/reference/'

t.test('docs/reference/settings.md is what SETTINGS makes', async (t) => {
  t.equal(readFileSync(join(ROOT, SETTINGS_REFERENCE), 'utf8'), settingsReference(), hint)
})

t.test('docs/reference/commands.md is what the commands print', async (t) => {
  t.equal(readFileSync(join(ROOT, COMMANDS_REFERENCE), 'utf8'), await commandsReference(), hint)
  t.match(await commandsReference(), /\n## service-desk token create\n/, 'a command of two words has its section')
})

/** The settings the product reads: SERVICE_* names and PORT and HOST, wherever the code names them. */
function settingsRead(): Set<string> {
  const found = new Set<string>()
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) {
        const text = readFileSync(join(ROOT, path), 'utf8')
        for (const [name] of text.matchAll(/\bSERVICE_[A-Z][A-Z_]*[A-Z]\b/g)) found.add(name)
        for (const [, name] of text.matchAll(/env\.(PORT|HOST)\b|variable: '(PORT|HOST)'/g)) if (name) found.add(name)
      }
    }
  }
  for (const dir of ['cli', 'db', 'lib', 'plugins', 'routes']) walk(dir)
  for (const file of ['app.ts', 'config.ts']) {
    for (const [name] of readFileSync(join(ROOT, file), 'utf8').matchAll(/\bSERVICE_[A-Z][A-Z_]*[A-Z]\b|'PORT'|'HOST'/g)) found.add(name.replaceAll("'", ''))
  }
  return found
}

t.test('every setting the code reads has its row, and every row is read', async (t) => {
  const documented = new Set(SETTINGS.map((s) => s.variable))
  const read = settingsRead()
  t.same([...read].filter((name) => !documented.has(name)).sort(), [], 'read but not documented')
  t.same([...documented].filter((name) => !read.has(name)).sort(), [], 'documented but not read')
})
