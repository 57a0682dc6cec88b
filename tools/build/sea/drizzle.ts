// Stands in for db/drizzle.ts inside the single executable (tools/build/binary.ts swaps the
// modules). There esbuild bundles everything into one script, so drizzle is imported as usual: the
// cost of Node's module loader that db/drizzle.ts avoids does not arise, and a require() of a
// package could not be resolved in a file with no node_modules beside it. The same names as
// db/drizzle.ts (test/house/sea-modules.test.ts compares them).
export { and, asc, count, countDistinct, desc, eq, getTableColumns, gt, gte, inArray, is, isNotNull, isNull, like, lt, lte, ne, notExists, notInArray, notLike, or, sql } from 'drizzle-orm'
export type { Column, Placeholder, SQL, SQLWrapper, Table } from 'drizzle-orm'
export { blob, getTableConfig, index, integer, primaryKey, SQLiteTable, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
export { drizzle } from 'drizzle-orm/better-sqlite3'
export type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3'
export { migrate } from 'drizzle-orm/better-sqlite3/migrator'
