import { sql } from '../drizzle.ts'
import { namedStatement, type Executor, type SearchIndex, type StorePort } from '../port.ts'
import { discussions } from '../schema/postgres.ts'
import { tsqueryOf, tsvectorOf } from '../../lib/search-text.ts'

// The full-text index on PostgreSQL (docs/decisions.md, "Search"): the table `discussion_search`
// of migration 0018, one row per discussion, its tsvector written out by lib/search-text.ts (each
// word with its positions, weighted by section), under a GIN index. No text search configuration
// is applied, so the words are SQLite's.

export function postgresSearch(q: Executor, prepared: StorePort['prepared']): SearchIndex {
  return {
    // `fresh` changes nothing here: one statement either way, prepared once (every write of a discussion's texts runs it).
    async write(discussionId, document) {
      const write = prepared('search_write', (db) =>
        namedStatement(db, 'search_write', sql`
          insert into discussion_search (discussion_id, document) values (${sql.placeholder('id')}, cast(${sql.placeholder('document')} as tsvector))
          on conflict (discussion_id) do update set document = excluded.document`),
      )
      await write.execute({ id: discussionId, document: tsvectorOf(document) })
    },

    // One statement a batch. A write since the batch read the comments wrote a fresher document
    // (it reads them under the discussion's lock): that one is kept.
    async writeBatch(documents) {
      if (documents.length === 0) return
      const ids = sql.param(documents.map((d) => d.discussionId))
      const vectors = sql.param(documents.map((d) => tsvectorOf(d.document)))
      await q.execute(sql`
        insert into discussion_search (discussion_id, document)
        select v.id, v.document::tsvector from unnest(${ids}::integer[], ${vectors}::text[]) as v(id, document)
        on conflict (discussion_id) do nothing`)
    },

    async settle() {
      await q.execute(sql`analyze discussion_search`)
    },

    async window({ query, sections, where, limit }) {
      // Newest first, so the planner may walk the index's ids backwards and test each document
      // when a word is common, or take the GIN index's matches when it is rare.
      const match = sql`cast(${tsqueryOf(query, sections)} as tsquery)`
      const { rows } = await q.execute<{ id: number; score: number }>(sql`
        select ${discussions.id} as id, ts_rank(s.document, ${match}) as score
        from discussion_search s join ${discussions} on ${discussions.id} = s.discussion_id
        where s.document @@ ${match} and ${where}
        order by s.discussion_id desc
        limit ${limit}`)
      return rows
    },
  }
}
