import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { build, type Plugin } from 'esbuild'
import { inject } from 'postject'
import { sha256, type Manifest } from './sea/cache.ts'
import { webauthnBundle } from '../../lib/resources.ts'

// `npm run build:binary`: Service Desk as one executable file, with Node's single executable
// application support. esbuild bundles the CLI into one CommonJS script (the only kind a Node 20
// SEA runs); the files the service reads at run time ride along as SEA assets; the blob is
// injected into a copy of the node binary running this build.

export const REPO = resolve(import.meta.dirname, '..', '..')
export const BINARY = join(REPO, 'dist', 'service-desk-linux-x64')
// The fuse Node looks for to know that it carries a blob (from Node's SEA documentation).
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

function filesUnder(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort()
}

/** Asset name (its path in the cache folder) → the file in this checkout. */
function assetFiles(): Record<string, string> {
  const require = createRequire(join(REPO, 'package.json'))
  const argon2 = createRequire(require.resolve('@node-rs/argon2'))
  const assets: Record<string, string> = {
    'README.md': join(REPO, 'README.md'),
    'vendor/webauthn.js': webauthnBundle(require),
    // better-sqlite3 ships a Node-API build per platform; the package's exports hide the folder.
    'native/better_sqlite3.node': join(dirname(require.resolve('better-sqlite3/package.json')), 'prebuilds', 'linux-x64.node'),
    'native/argon2.node': argon2.resolve('@node-rs/argon2-linux-x64-gnu/argon2.linux-x64-gnu.node'),
  }
  for (const file of filesUnder('views')) assets[file] = join(REPO, file)
  for (const folder of [join('db', 'sqlite', 'migrations'), join('db', 'postgres', 'migrations')]) {
    for (const file of filesUnder(folder)) assets[relative('db', file)] = join(REPO, file)
  }
  return assets
}

// Inside the executable, lib/resources.ts, lib/packages.ts, db/drizzle.ts, db/drizzle-postgres.ts and @node-rs/argon2 are replaced by the versions in sea/.
function seaModules(): Plugin {
  const swaps = new Map([
    [join(REPO, 'lib', 'resources.ts'), join(REPO, 'tools', 'build', 'sea', 'resources.ts')],
    [join(REPO, 'lib', 'packages.ts'), join(REPO, 'tools', 'build', 'sea', 'packages.ts')],
    [join(REPO, 'db', 'drizzle.ts'), join(REPO, 'tools', 'build', 'sea', 'drizzle.ts')],
    [join(REPO, 'db', 'drizzle-postgres.ts'), join(REPO, 'tools', 'build', 'sea', 'postgres-drizzle.ts')],
    ['@node-rs/argon2', join(REPO, 'tools', 'build', 'sea', 'argon2.ts')],
  ])
  return {
    name: 'sea-modules',
    setup(esbuild) {
      esbuild.onResolve({ filter: /resources\.ts$|packages\.ts$|drizzle(-postgres)?\.ts$|^@node-rs\/argon2$/ }, (args) => {
        const key = args.path.startsWith('.') ? resolve(args.resolveDir, args.path) : args.path
        const swap = swaps.get(key)
        return swap && !args.importer.startsWith(join(REPO, 'tools', 'build')) ? { path: swap } : undefined
      })
    },
  }
}

export async function buildBinary(out = BINARY): Promise<{ file: string; size: number }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error('the single executable is built on linux-x64 only')
  const work = join(dirname(out), 'sea')
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })

  const assets = assetFiles()
  const files = Object.entries(assets)
    .map(([name, file]) => ({ name, sha256: sha256(readFileSync(file)) }))
    .sort((a, b) => a.name.localeCompare(b.name))
  const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }
  const manifest: Manifest = { version, hash: sha256(Buffer.from(JSON.stringify(files))).slice(0, 16), files }

  const script = join(work, 'service-desk.cjs')
  const result = await build({
    absWorkingDir: REPO,
    entryPoints: [join(REPO, 'tools', 'build', 'sea', 'main.ts')],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outfile: script,
    define: { SEA_MANIFEST: JSON.stringify(manifest) },
    plugins: [seaModules()],
    logLevel: 'silent',
  })
  // A warning here is a path that would not resolve inside the executable (import.meta, say).
  if (result.warnings.length > 0) throw new Error(`esbuild: ${result.warnings.map((w) => w.text).join('; ')}`)

  const blob = join(work, 'service-desk.blob')
  const config = join(work, 'sea-config.json')
  // Relative to `work`: the blob records the main script's name, and a machine's path has no business in it.
  const seaConfig = { main: basename(script), output: basename(blob), disableExperimentalSEAWarning: true, useCodeCache: true, assets }
  writeFileSync(config, JSON.stringify(seaConfig, null, 2))
  execFileSync(process.execPath, ['--experimental-sea-config', config], { cwd: work, stdio: 'pipe' })

  const temp = join(work, 'service-desk')
  copyFileSync(process.execPath, temp)
  chmodSync(temp, 0o755)
  // postject's ELF reader complains about node's note sections, harmlessly (Node's SEA documentation
  // shows the same lines); anything else it says is let through.
  const warn = console.warn
  console.warn = (...args: unknown[]) => void (/^warning: Can't find string offset for section name/.test(String(args[0])) || warn(...args))
  try {
    await inject(temp, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: FUSE })
  } finally {
    console.warn = warn
  }
  renameSync(temp, out)
  return { file: out, size: statSync(out).size }
}

/* c8 ignore start: the command-line entry; test/binary/binary.test.ts calls buildBinary() */
if (import.meta.filename === process.argv[1]) {
  const started = Date.now()
  const { file, size } = await buildBinary()
  console.log(`${relative(process.cwd(), file)}: ${(size / 1e6).toFixed(1)} MB, built in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
/* c8 ignore stop */
