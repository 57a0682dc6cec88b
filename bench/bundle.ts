import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CACHE } from './datasets.ts'
import { REPO } from './service-cli.ts'

// Experiments, not the service as shipped: the same sources compiled ahead of time by esbuild
// (tsx's own compiler) and started by plain node, without tsx. Two builds:
// - precompiled: the sources in one JavaScript file, dependencies loaded from node_modules (what
//   a `tsc` or esbuild build step gives);
// - single file: the dependencies bundled in as well, the native addons (better-sqlite3,
//   @node-rs/argon2) left in node_modules.
// Comparing them with `service-desk serve` measures what tsx, and then resolving and loading
// hundreds of dependency files, cost at every start and in memory.
//
// The layout keeps every path the sources compute from import.meta.dirname where they expect it:
// db/client.ts reads <dir>/migrations, plugins/views.ts <dir>/../views, routes/readme.ts
// <dir>/../README.md; packages resolve upwards to the repository's node_modules.

export type Build = 'precompiled' | 'single-file'

const ROOT = join(CACHE, 'bundle')
const NATIVE = ['better-sqlite3', '@node-rs/argon2']
// Bundled CommonJS modules call require(); an ES module has none of its own.
const REQUIRE = "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);"

/** Builds both; each one's entry point (`node <entry> serve ...`), or why it could not be made. */
export async function buildBundles(): Promise<Record<Build, { entry: string } | { error: string }>> {
  let esbuild: typeof import('esbuild')
  try {
    esbuild = await import('esbuild')
  } catch (error) {
    const failed = { error: `esbuild cannot be loaded: ${(error as Error).message}` }
    return { precompiled: failed, 'single-file': failed }
  }
  rmSync(ROOT, { recursive: true, force: true })
  const build = async (name: Build, options: import('esbuild').BuildOptions): Promise<{ entry: string } | { error: string }> => {
    const root = join(ROOT, name)
    const dir = join(root, 'app')
    mkdirSync(dir, { recursive: true })
    try {
      await esbuild.build({
        entryPoints: [join(REPO, 'cli', 'main.ts')],
        bundle: true,
        format: 'esm',
        platform: 'node',
        target: 'node20',
        outfile: join(dir, 'main.mjs'),
        logLevel: 'silent',
        ...options,
      })
    } catch (error) {
      return { error: `esbuild failed: ${(error as Error).message.split('\n')[0]}` }
    }
    cpSync(join(REPO, 'db', 'migrations'), join(dir, 'migrations'), { recursive: true })
    cpSync(join(REPO, 'views'), join(root, 'views'), { recursive: true })
    if (existsSync(join(REPO, 'README.md'))) cpSync(join(REPO, 'README.md'), join(root, 'README.md'))
    // What bin/service-desk.js does once tsx is registered.
    const entry = join(dir, 'service-desk.mjs')
    writeFileSync(
      entry,
      "const { main } = await import('./main.mjs')\nconst code = await main(process.argv.slice(2))\nif (code !== undefined) process.exitCode = code\n",
    )
    return { entry }
  }
  return {
    precompiled: await build('precompiled', { packages: 'external' }),
    'single-file': await build('single-file', { external: NATIVE, banner: { js: REQUIRE } }),
  }
}
