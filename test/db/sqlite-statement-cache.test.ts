import Database from 'better-sqlite3'
import t from 'tap'
import { STATEMENT_CACHE_SIZE, withStatementCache } from '../../db/sqlite/client.ts'
import { resources } from '../../lib/resources.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// drizzle's side of a SQLite connection keeps its statements by their SQL (db/sqlite/client.ts):
// compiled once, given out again in their default mode, the least recently used dropped past the limit.

function connection() {
  const sqlite = new Database(':memory:', { nativeBinding: resources.sqliteBinding })
  sqlite.exec('CREATE TABLE notes (n INTEGER)')
  return { sqlite, cached: withStatementCache(sqlite) }
}

t.test('one statement per SQL text, back in its default mode each time it is given out', async (t) => {
  const { cached } = connection()
  const first = cached.prepare('SELECT 1 AS one')
  t.same(first.raw(true).all(), [[1]], 'drizzle asks for arrays')
  const again = cached.prepare('SELECT 1 AS one')
  t.equal(again, first, 'the same statement, not compiled again')
  t.same(again.all(), [{ one: 1 }], 'and rows as objects again unless asked')
  const insert = cached.prepare('INSERT INTO notes (n) VALUES (?)')
  insert.run(1)
  t.equal(cached.prepare('INSERT INTO notes (n) VALUES (?)').run(2).changes, 1, 'a statement that returns no rows is given out again too')
  t.same(cached.prepare('SELECT n FROM notes ORDER BY n').all(), [{ n: 1 }, { n: 2 }])
})

t.test('past the limit the least recently used goes; the rest of the connection is the connection', async (t) => {
  const { sqlite, cached } = connection()
  const oldest = cached.prepare('SELECT 0')
  const kept = cached.prepare('SELECT -1')
  for (let i = 1; i < STATEMENT_CACHE_SIZE; i++) {
    cached.prepare(`SELECT ${i}`)
    if (i % 100 === 0) cached.prepare('SELECT -1')
  }
  t.not(cached.prepare('SELECT 0'), oldest, 'compiled anew')
  t.equal(cached.prepare('SELECT -1'), kept, 'a statement in use stays')
  cached.exec('BEGIN')
  t.ok(sqlite.inTransaction, 'other members act on the connection itself')
  cached.exec('ROLLBACK')
  t.equal(cached.name, sqlite.name)
})
