import { createRequire } from 'node:module'

// drizzle-orm, loaded through Node's CommonJS loader. Node 24's ES module loader reads drizzle's
// 179 KB package.json again for each of the hundreds of files it imports; the garbage grows the
// young generation to about 150 MB, which the heap then keeps (an idle service of 220 MB instead of
// 50). drizzle's CommonJS build, loaded by require, costs none of that. Every module of the service
// takes drizzle from here, so there is one copy of it (its `is()` checks need that).
// drizzle-kit (npm run db:generate) loads the schema as CommonJS, where import.meta.url is not set.
/* c8 ignore next: the CommonJS side runs only under drizzle-kit, outside the tests */
const require = createRequire(typeof __filename === 'string' ? __filename : import.meta.url)

const orm: typeof import('drizzle-orm') = require('drizzle-orm')
const sqliteCore: typeof import('drizzle-orm/sqlite-core') = require('drizzle-orm/sqlite-core')
const driver: typeof import('drizzle-orm/better-sqlite3') = require('drizzle-orm/better-sqlite3')
const migrator: typeof import('drizzle-orm/better-sqlite3/migrator') = require('drizzle-orm/better-sqlite3/migrator')

export const { and, asc, count, countDistinct, desc, eq, getTableColumns, gt, gte, inArray, is, isNotNull, isNull, like, lt, lte, ne, notExists, notInArray, notLike, or, sql } = orm
export type { Column, Placeholder, SQL, SQLWrapper, Table } from 'drizzle-orm'
export const { blob, getTableConfig, index, integer, primaryKey, SQLiteTable, sqliteTable, text, uniqueIndex } = sqliteCore
export const { drizzle } = driver
export type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3'
export const { migrate } = migrator

