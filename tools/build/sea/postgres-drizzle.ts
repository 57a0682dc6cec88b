// Stands in for db/drizzle-postgres.ts inside the single executable, as sea/drizzle.ts does for
// db/drizzle.ts: the same names (test/house/sea-modules.test.ts compares them).
export { bigint as pgBigint, customType as pgCustomType, pgTable, boolean as pgBoolean, index as pgIndex, integer as pgInteger, primaryKey as pgPrimaryKey, text as pgText, timestamp as pgTimestamp, uniqueIndex as pgUniqueIndex, getTableConfig as getPgTableConfig } from 'drizzle-orm/pg-core'
export { drizzle as drizzlePostgres } from 'drizzle-orm/node-postgres'
export type { NodePgDatabase, NodePgQueryResultHKT } from 'drizzle-orm/node-postgres'
export type { PgDatabase } from 'drizzle-orm/pg-core'
export { migrate as migratePostgres } from 'drizzle-orm/node-postgres/migrator'
