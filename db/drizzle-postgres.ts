import { createRequire } from 'node:module'

// drizzle's PostgreSQL side, loaded only when the database is PostgreSQL (db/open.ts), through
// Node's CommonJS loader for the reason db/drizzle.ts gives. The single executable swaps this module
// for tools/build/sea/postgres-drizzle.ts (test/house/sea-modules.test.ts compares the names).
/* c8 ignore next: the CommonJS side runs only under drizzle-kit, outside the tests */
const require = createRequire(typeof __filename === 'string' ? __filename : import.meta.url)

const pgCore: typeof import('drizzle-orm/pg-core') = require('drizzle-orm/pg-core')
const pgDriver: typeof import('drizzle-orm/node-postgres') = require('drizzle-orm/node-postgres')
const pgMigrator: typeof import('drizzle-orm/node-postgres/migrator') = require('drizzle-orm/node-postgres/migrator')

// The same names as SQLite's under a pg prefix, where they would clash.
export const { bigint: pgBigint, customType: pgCustomType, pgTable, boolean: pgBoolean, index: pgIndex, integer: pgInteger, primaryKey: pgPrimaryKey, text: pgText, timestamp: pgTimestamp, uniqueIndex: pgUniqueIndex, getTableConfig: getPgTableConfig } = pgCore
export const { drizzle: drizzlePostgres } = pgDriver
export type { NodePgDatabase, NodePgQueryResultHKT } from 'drizzle-orm/node-postgres'
export type { PgDatabase, PgTable } from 'drizzle-orm/pg-core'
export const { migrate: migratePostgres } = pgMigrator
