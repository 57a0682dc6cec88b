import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { SETTINGS } from '../../config.ts'
import { commandsReference, COMMANDS_REFERENCE, settingsReference, SETTINGS_REFERENCE } from '../../tools/docs/references.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The references in docs/reference/ are made from the code (tools/docs/references.ts) and must be
// what it makes today: a setting or a command added without its row fails here.

const ROOT = resolve(import.meta.dirname, '..', '..')
const hint = 'run `npm run docs:generate` and commit docs/reference/'

t.test('docs/reference/settings.md is what SETTINGS makes', async (t) => {
  t.equal(readFileSync(join(ROOT, SETTINGS_REFERENCE), 'utf8'), settingsReference(), hint)
})

t.test('docs/reference/commands.md is what the commands print', async (t) => {
  const made = await commandsReference()
  t.equal(readFileSync(join(ROOT, COMMANDS_REFERENCE), 'utf8'), made, hint)
  t.match(made, /\n## service-desk token create\n/, 'a command of two words has its section')
})

const NAME = /\bSERVICE_[A-Z][A-Z_]*[A-Z]\b|'(?:PORT|HOST)'/g

/** The setting names a source names: SERVICE_* anywhere, PORT and HOST as strings (config.ts reads them by name). */
export function namesIn(source: string): string[] {
  return [...source.matchAll(NAME)].map(([name]) => name.replaceAll("'", ''))
}

/** config.ts without its SETTINGS table, which names every documented setting and reads none. */
export function withoutSettingsTable(config: string): string {
  const start = config.indexOf('export const SETTINGS')
  return config.slice(0, start) + config.slice(config.indexOf('\n]\n', start) + 3)
}

/** The settings the product reads, wherever its code names them. */
function settingsRead(): Set<string> {
  const files = ['cli', 'db', 'lib', 'plugins', 'routes']
    .flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true }).map((path) => join(dir, String(path))))
    .filter((path) => path.endsWith('.ts'))
  const sources = [...files, 'app.ts'].map((file) => readFileSync(join(ROOT, file), 'utf8'))
  sources.push(withoutSettingsTable(readFileSync(join(ROOT, 'config.ts'), 'utf8')))
  return new Set(sources.flatMap(namesIn))
}

t.test('every setting the code reads has its row, and every row is read', async (t) => {
  const documented = new Set(SETTINGS.map((s) => s.variable))
  const read = settingsRead()
  t.same([...read].filter((name) => !documented.has(name)).sort(), [], 'read but not documented')
  t.same([...documented].filter((name) => !read.has(name)).sort(), [], 'documented but not read')
})

t.test('the rule sees a name read, and not one the table alone names', async (t) => {
  t.same(namesIn("const x = env.SERVICE_FOO ?? env['SERVICE_BAR']\n{ variable: 'PORT', flag: 'port' }"), ['SERVICE_FOO', 'SERVICE_BAR', 'PORT'])
  const config = "read('SERVICE_ASKED')\nexport const SETTINGS: X = [\n  { variable: 'SERVICE_ONLY_DOCUMENTED' },\n]\nread('SERVICE_BELOW')\n"
  t.same(namesIn(withoutSettingsTable(config)), ['SERVICE_ASKED', 'SERVICE_BELOW'])
})
