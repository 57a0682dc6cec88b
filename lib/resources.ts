import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/** The files the service reads at run time, and how the SQLite addon is found. */
export interface Resources {
  /** db/sqlite/migrations: drizzle's journal and SQL files. */
  migrations: string
  /** db/postgres/migrations: the same for PostgreSQL. */
  postgresMigrations: string
  /** views/: the page templates and views/assets. */
  views: string
  /** The README served at /README.md. */
  readme: string
  /** @simplewebauthn/browser's bundle, served to the pages that offer a passkey. */
  webauthnBrowser: string
  /** better-sqlite3's `nativeBinding` option; undefined lets it find its addon in node_modules. */
  sqliteBinding: string | undefined
}

// Resolved from the package root, which is the same in a checkout and in an installed package: the
// parent of this module's folder, lib/ for the sources, dist/ for the built service (cli/build.js
// bundles it into dist/ itself; views/ and the migrations stay where they are). The single
// executable swaps this module for tools/build/sea/resources.ts, which unpacks the same files from itself.
/** The package root, seen from the folder of this module. */
export function packageRoot(moduleDir: string): string {
  return dirname(moduleDir)
}

const ROOT = packageRoot(import.meta.dirname)

/** The browser bundle of @simplewebauthn/browser (its exports name only the modules, so from its main file). */
export function webauthnBundle(require: NodeJS.Require): string {
  return join(dirname(require.resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js')
}

export const resources: Resources = {
  migrations: join(ROOT, 'db', 'sqlite', 'migrations'),
  postgresMigrations: join(ROOT, 'db', 'postgres', 'migrations'),
  views: join(ROOT, 'views'),
  readme: join(ROOT, 'README.md'),
  webauthnBrowser: webauthnBundle(createRequire(join(ROOT, 'package.json'))),
  sqliteBinding: undefined,
}
