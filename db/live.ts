import { sql, type SQLWrapper } from './drizzle.ts'

/**
 * The live discussions: every state but deleted, spam and merged (the plain listing, the counts' `live`, what
 * a customer may see). Written everywhere as the partial listing indexes' WHERE is (db/schema), the
 * same text, so that both engines' planners may use those indexes for a query that says it.
 */
export const isLive = (state: SQLWrapper) => sql`${state} not in ('deleted', 'spam', 'merged')`
