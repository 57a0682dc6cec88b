import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

// Engines: one: nothing here reaches a database of the suite's engine.
// No import cycle between the project's own files: a cycle means two modules that cannot be read,
// tested or moved apart (docs/architecture.md). Type-only imports count too, since a reader
// follows them all the same.

const ROOT = resolve(import.meta.dirname, '..', '..')
const SKIP = new Set(['node_modules', '.git', '.tap', 'coverage', 'dist', 'data'])
const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^'"`]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name) || entry.name.startsWith('.')) return []
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return /\.(ts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** The project's own import graph: file -> the project files it imports, paths relative to the root. */
export function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sources(root)) {
    const text = readFileSync(file, 'utf8')
    const targets = [...text.matchAll(SPECIFIER)].map((m) => relative(root, resolve(dirname(file), m[1] ?? m[2])))
    graph.set(relative(root, file), targets)
  }
  return graph
}

/** Every cycle found by a depth-first walk, each as the files in order with the first repeated at the end. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return cycles
}

t.test('the walk finds a cycle, and only a cycle', async (t) => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'x.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['b.ts']],
  ])
  t.same(findCycles(graph), [['a.ts', 'b.ts', 'c.ts', 'a.ts']])
  t.same(findCycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]])), [])
})

t.test('no import cycle between the files of this repository', async (t) => {
  const graph = importGraph(ROOT)
  t.ok(graph.has('app.ts') && graph.get('app.ts')!.includes('plugins/auth/authenticate.ts'), 'the graph is read')
  t.same(findCycles(graph).map((cycle) => cycle.join(' -> ')), [])
})

t.test('the layers: lib/ and db/ import no setting, plugin, route or command; plugins and routes no setting; no route builds a store', async (t) => {
  const graph = importGraph(ROOT)
  const upward = /^(config\.ts|app\.ts|plugins\/|routes\/|cli\/)/
  const offending = [...graph]
    .filter(([file]) => /^(lib|db)\//.test(file))
    .flatMap(([file, targets]) => targets.filter((target) => upward.test(target)).map((target) => `${file} -> ${target}`))
  t.same(offending, [])
  const service = [...graph]
    .filter(([file]) => /^(plugins|routes)\//.test(file))
    .flatMap(([file, targets]) => targets.filter((target) => /^(config\.ts|app\.ts|cli\/)/.test(target)).map((target) => `${file} -> ${target}`))
  t.same(service, [], 'plugins and routes get their settings as options, not from config.ts')
  const building = [...graph.keys()]
    .filter((file) => file.startsWith('routes/'))
    .filter((file) => /\bcreate\w+Store\(/.test(readFileSync(join(ROOT, file), 'utf8')))
  t.same(building, [], 'routes use the stores of plugins/stores.ts')
  const drizzleDirect = [...graph.keys()]
    .filter((file) => file !== 'db/drizzle.ts' && file !== 'db/drizzle-postgres.ts' && !file.startsWith('tools/'))
    .filter((file) => /^\s*import\b[^\n]*\bfrom\s+['"]drizzle-orm/m.test(readFileSync(join(ROOT, file), 'utf8')))
  t.same(drizzleDirect, [], 'drizzle-orm is loaded once, through db/drizzle.ts (and its PostgreSQL side through db/drizzle-postgres.ts)')
})

t.test('lib/ holds pure modules: none imports a web framework or the database layer', async (t) => {
  // docs/architecture.md: lib/ is small pure modules; what serves Fastify lives with the plugins
  // (plugins/http/, plugins/background.ts), what serves the database in db/.
  const FRAMEWORK = /(?:^|\n)\s*import\b[^'"]*?from\s*['"](fastify|fastify-plugin|@fastify\/[^'"]+|oidc-provider|drizzle-orm[^'"]*|better-sqlite3|pg)['"]/g
  const lib = join(ROOT, 'lib')
  const found = readdirSync(lib)
    .filter((name) => name.endsWith('.ts'))
    .flatMap((name) => [...readFileSync(join(lib, name), 'utf8').matchAll(FRAMEWORK)].map((m) => `lib/${name} imports ${m[1]}`))
  t.same(found, [])
  t.same([..."import type { FastifyRequest } from 'fastify'\nimport pg from 'pg'\nimport { x } from './y.ts'".matchAll(FRAMEWORK)].map((m) => m[1]), ['fastify', 'pg'], 'the rule sees an import')
})
