// What every test process loads first (.taprc's node-arg), to spend less of each file's time
// loading the service's modules (docs/development.md, "Where the time goes"):
//
// - Our TypeScript, type-stripped once per content and kept: Node strips each file's types again
//   in every process (its WebAssembly stripper alone is about 0.3 s a process). Stripping keeps
//   every line and column (types become blanks), so coverage and stack traces are as before.
// - TypeBox, bundled once per version: its ES modules are 683 files, which Node resolves and
//   reads one by one in every process (0.3-0.4 s). Each of its entry points (typebox,
//   typebox/compile, ...) is an entry of one esbuild build that shares its chunks, so the classes
//   and registries the entry points share are still one copy.
//
// Both live in node_modules/.cache (never in git), keyed by what they are made from; a process that
// finds one missing makes it and swaps it in by a rename, so processes that start together agree.
// Only files of this project and unadorned URLs (no query: tap's mocks add one) are touched.
// Not the product's code, nor a tool the tests call: its coverage is not counted (every test's
// process runs it, each a different part of it, as the caches are found or made).
/* c8 ignore start */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire, registerHooks, stripTypeScriptTypes } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = join(import.meta.dirname, '..', '..')
const ROOT_URL = pathToFileURL(ROOT).href + '/'
const CACHE = join(ROOT, 'node_modules', '.cache', 'service-desk-tests')
const STRIPPED = join(CACHE, 'stripped')

/** A file written whole or not at all: written beside, then renamed over. */
function writeWhole(path, text) {
  const beside = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}`
  writeFileSync(beside, text)
  renameSync(beside, path)
}

/** The source of one of our TypeScript files without its types, from the cache when it was stripped before. */
export function strippedSource(path) {
  const source = readFileSync(path, 'utf8')
  const kept = join(STRIPPED, `${createHash('sha1').update(path).update('\0').update(source).digest('hex')}.js`)
  if (existsSync(kept)) return readFileSync(kept, 'utf8')
  // Node says once that stripTypeScriptTypes is experimental; a test's output is not the place.
  const warn = process.emitWarning
  process.emitWarning = () => {}
  let stripped
  try {
    stripped = stripTypeScriptTypes(source, { mode: 'strip' })
  } finally {
    process.emitWarning = warn
  }
  mkdirSync(STRIPPED, { recursive: true })
  writeWhole(kept, stripped)
  return stripped
}

/** The folder of TypeBox's bundle (made when missing): an .mjs per entry point, named by the entry's subpath. */
export function typeboxBundle() {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'typebox', 'package.json'), 'utf8'))
  const folder = join(CACHE, `typebox-${manifest.version}`)
  if (existsSync(folder)) return folder
  const entryPoints = Object.entries(manifest.exports).map(([subpath, target]) => ({
    in: join(ROOT, 'node_modules', 'typebox', target.import),
    out: subpath === '.' ? 'index' : subpath.slice(2),
  }))
  const building = `${folder}.${process.pid}.${Math.random().toString(36).slice(2)}`
  // esbuild is one of the project's development packages (package.json), as the single executable's build uses it.
  const esbuild = createRequire(join(ROOT, 'package.json'))('esbuild')
  esbuild.buildSync({ entryPoints, bundle: true, splitting: true, format: 'esm', platform: 'node', outdir: building, outExtension: { '.js': '.mjs' }, logLevel: 'error' })
  try {
    renameSync(building, folder)
  } catch (error) {
    // Another process made it first: theirs is the same.
    rmSync(building, { recursive: true, force: true })
    if (!existsSync(folder)) throw error
  }
  return folder
}

const bundle = typeboxBundle()
const bundled = (specifier) => {
  if (specifier !== 'typebox' && !specifier.startsWith('typebox/')) return undefined
  const file = join(bundle, `${specifier === 'typebox' ? 'index' : specifier.slice('typebox/'.length)}.mjs`)
  return existsSync(file) ? pathToFileURL(file).href : undefined
}

// - No source maps: tap's process tracking turns them on in every test process and every process
//   a test starts (a service, a command), and Node then reads the map of each module that names
//   one as it loads it (drizzle's 447, the MCP SDK's 174, dist/'s 4 MB). None is ours to read: our
//   TypeScript is stripped in place, so its lines and columns are the source's, in stack traces
//   and coverage alike.
process.setSourceMapsEnabled(false)

registerHooks({
  resolve(specifier, context, next) {
    const url = bundled(specifier)
    return url ? { url, format: 'module', shortCircuit: true } : next(specifier, context)
  },
  load(url, context, next) {
    if (!url.startsWith(ROOT_URL) || !url.endsWith('.ts') || url.includes('/node_modules/')) return next(url, context)
    return { format: 'module', source: strippedSource(fileURLToPath(url)), shortCircuit: true }
  },
})
/* c8 ignore stop */
