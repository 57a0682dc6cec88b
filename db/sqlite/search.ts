import { sql } from '../drizzle.ts'
import type { SearchIndex } from '../port.ts'
import { discussions } from '../schema/sqlite.ts'
import type { Statement } from 'better-sqlite3'
import { ftsMatchOf, SECTIONS, type SearchDocument } from '../../lib/search-text.ts'
import type { Db } from './client.ts'

// The full-text index on SQLite (docs/decisions.md, "Search"): the FTS5 table `discussion_search`
// of migration 0019, contentless, one row per discussion (its rowid the discussion's id), its
// columns title, text and notes given the words of lib/search-text.ts separated by spaces.

/** bm25's weight of each column: a word of the title counts four times one of the text. */
const WEIGHTS = '4.0, 1.0, 1.0'

/**
 * Writes a discussion's document in place of the one it had, synchronously (the seed's batches
 * run so). Prepared on first use: a port is made before the migrations have run on a new file.
 */
export function documentWriter(db: Db): (discussionId: number, document: SearchDocument, fresh?: boolean) => void {
  let statements: { remove: Statement; insert: Statement } | undefined
  return (discussionId, document, fresh = false) => {
    statements ??= {
      remove: db.$client.prepare('delete from discussion_search where rowid = ?'),
      insert: db.$client.prepare('insert into discussion_search (rowid, title, text, notes) values (?, ?, ?, ?)'),
    }
    // A new discussion's has nothing to replace: the delete (a look-up in every segment) is spared.
    if (!fresh) statements.remove.run(discussionId)
    statements.insert.run(discussionId, ...SECTIONS.map((section) => document.words[section].join(' ')))
  }
}

export function sqliteSearch(db: Db): SearchIndex {
  const writeDocument = documentWriter(db)
  return {
    async write(discussionId, document, fresh) {
      writeDocument(discussionId, document, fresh)
    },

    // A batch of the backfill runs in a transaction of its own, which no other write can enter on
    // SQLite: what it read is what is there, and replacing is keeping.
    async writeBatch(documents) {
      for (const { discussionId, document } of documents) writeDocument(discussionId, document)
    },

    async settle() {},

    async window({ query, sections, where, limit }) {
      // The index drives (CROSS JOIN keeps SQLite from starting at the discussions), newest first,
      // which FTS5 reads in its own order; each row is kept or passed over by `where`, and the read
      // stops at `limit`. bm25 is smaller for a better match.
      return db.all<{ id: number; score: number }>(sql`
        select ${discussions.id} as id, -bm25(discussion_search, ${sql.raw(WEIGHTS)}) as score
        from discussion_search cross join ${discussions} on ${discussions.id} = discussion_search.rowid
        where discussion_search match ${ftsMatchOf(query, sections)} and ${where}
        order by discussion_search.rowid desc
        limit ${limit}`)
    },
  }
}
