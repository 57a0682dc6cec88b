import { join } from 'node:path'
import { getAsset } from 'node:sea'
import type { Resources } from '../../../lib/resources.ts'
import { cacheRoot, unpack, type Manifest } from './cache.ts'

// Stands in for lib/resources.ts inside the single executable (tools/build/binary.ts swaps the
// modules). The migrations, views, README and native addons travel in the executable as SEA
// assets; Node can only load an addon from a file, and drizzle and eta read folders, so they are
// unpacked once per build into a private cache folder and checked at every start.

declare const SEA_MANIFEST: Manifest

const folder = (() => {
  const root = cacheRoot(process.env)
  try {
    return unpack(SEA_MANIFEST, (name) => new Uint8Array(getAsset(name)), root)
  } catch (error) {
    throw new Error(`cannot prepare the cache folder ${root}: ${(error as Error).message}`)
  }
})()

/** Loads a native addon by absolute path; the SEA's own require() only knows built-in modules. */
export function loadAddon(name: string): unknown {
  const module = { exports: {} }
  process.dlopen(module, join(folder, name))
  return module.exports
}

export const resources: Resources = {
  migrations: join(folder, 'sqlite', 'migrations'),
  postgresMigrations: join(folder, 'postgres', 'migrations'),
  views: join(folder, 'views'),
  readme: join(folder, 'README.md'),
  webauthnBrowser: join(folder, 'vendor', 'webauthn.js'),
  // better-sqlite3 takes the loaded addon itself as well as a path (its types only say string);
  // given a path it would call require(), which here cannot load a file.
  sqliteBinding: loadAddon('native/better_sqlite3.node') as string,
}
