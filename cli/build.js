// Builds the TypeScript sources into dist/ with esbuild, so that the service runs plain JavaScript:
// no TypeScript loader in the production process (docs/decisions.md, "Compiled JavaScript in
// production"). The command (cli/service-desk.js) calls ensureBuilt() at every start: a fresh build
// costs a few file stats, a stale or missing one is rebuilt first. `npm run build` (and npm's
// prepare) calls it too. The service's own modules are bundled into a few files, split where it
// loads a module at first use (OAuth, MCP, mail...), with TypeBox (683 small modules of its own);
// every other package stays in node_modules as it is. Loading about 1,000 modules fewer is a third
// of the service's start (1.13-1.24 s to the first answer before, 0.83-0.94 s after, on an empty
// site). The build does not check types: the type check is `npm run check`'s (tools/check/run.ts),
// which CI runs; a syntax error still fails the build.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

export const ROOT = join(import.meta.dirname, '..')
export const DIST = join(ROOT, 'dist')
const STAMP = join(DIST, '.built')
// This file too: a build made by another version of it is not this one's.
const SOURCES = ['app.ts', 'config.ts', 'package.json', 'cli/build.js', 'cli', 'lib', 'db', 'plugins', 'routes']
const SKIP = new Set(['migrations', 'node_modules'])

/** The newest modification time among the sources that dist/ is built from. */
function newestSource(path = ROOT, names = SOURCES) {
  let newest = 0
  for (const name of names) {
    const file = join(path, name)
    if (SKIP.has(name) || !existsSync(file)) continue
    const stat = statSync(file)
    newest = Math.max(newest, stat.isDirectory() ? newestSource(file, readdirSync(file)) : name.endsWith('.ts') || path === ROOT ? stat.mtimeMs : 0)
  }
  return newest
}

/** Whether dist/ is missing or older than a source. */
export function isStale() {
  // The stamp's time goes through utimes, which keeps a microsecond at best: a millisecond of slack.
  return !existsSync(STAMP) || statSync(STAMP).mtimeMs + 1 < newestSource()
}

/** Whether the process that holds the lock still runs (a lock just made may not name it yet). */
function alive(lockDir) {
  let pid
  try {
    pid = Number(readFileSync(join(lockDir, 'pid'), 'utf8'))
  } catch {
    return Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 5_000
  }
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

/** Waits (a build takes seconds) until no other process is building. */
function lock() {
  const lockDir = `${DIST}.lock`
  for (let waited = 0; ; waited += 100) {
    try {
      mkdirSync(lockDir)
      writeFileSync(join(lockDir, 'pid'), String(process.pid))
      return () => rmSync(lockDir, { recursive: true, force: true })
    } catch (error) {
      if (error.code !== 'EEXIST') throw error
      // A lock whose builder is gone (killed mid-build) is taken over.
      if (!alive(lockDir)) rmSync(lockDir, { recursive: true, force: true })
      else if (waited > 180_000) throw new Error(`${lockDir} is held: another build is running; wait for it or remove the folder`)
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
    }
  }
}

/** The packages the service finds in node_modules at run time: every dependency but TypeBox, which is bundled. */
function externals() {
  const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  return Object.keys(dependencies)
    .filter((name) => name !== 'typebox')
    .flatMap((name) => [name, `${name}/*`])
}

/** esbuild's settings: cli/main.ts (what cli/service-desk.js runs) and what it imports, as ES modules in `outdir`. */
function buildOptions(outdir) {
  return {
    absWorkingDir: ROOT,
    entryPoints: [{ in: join(ROOT, 'cli', 'main.ts'), out: 'main' }],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: externals(),
    outdir,
    sourcemap: true,
    logLevel: 'error',
  }
}

/**
 * Builds dist/ when it is stale. The build goes to a private folder that then replaces dist/ in
 * one rename, so a process starting meanwhile sees the old build or the new one, never half of one.
 */
export function ensureBuilt() {
  if (!isStale()) return false
  const unlock = lock()
  try {
    if (!isStale()) return false
    let esbuild
    try {
      esbuild = createRequire(import.meta.url)('esbuild')
    } catch {
      throw new Error('dist/ is missing or out of date and esbuild is not installed: run npm ci (with the dev dependencies) first')
    }
    const started = newestSource()
    const out = `${DIST}.${process.pid}`
    rmSync(out, { recursive: true, force: true })
    try {
      esbuild.buildSync(buildOptions(out))
    } catch {
      // esbuild has printed what is wrong, and where.
      rmSync(out, { recursive: true, force: true })
      throw new Error('the build failed (see above)')
    }
    // Stamped with the time of the sources it started from: an edit during the build leaves it stale.
    writeFileSync(join(out, '.built'), '')
    utimesSync(join(out, '.built'), new Date(started), new Date(started))
    const old = `${DIST}.old.${process.pid}`
    if (existsSync(DIST)) renameSync(DIST, old)
    renameSync(out, DIST)
    rmSync(old, { recursive: true, force: true })
    return true
  } finally {
    unlock()
  }
}

if (process.argv[1] === import.meta.filename) {
  try {
    console.log(ensureBuilt() ? 'dist/ built' : 'dist/ is up to date')
  } catch (error) {
    console.error(`build: ${error.message}`)
    process.exitCode = 1
  }
}
