import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'

// Engines: one: nothing here reaches a database of the suite's engine.
// A store written once for both engines runs over the engine port (db/port.ts) and awaits its
// statements: better-sqlite3's synchronous calls (.get() .all() .run() .sync()) exist on
// SQLite alone, so one in a shared store body would work in the SQLite pass and fail on PostgreSQL,
// or hold the one thread. docs/decisions.md, "One store, two engines".

const STORES = resolve(import.meta.dirname, '..', '..', 'db', 'stores')
// A drizzle statement run synchronously: `.get()`, `.all()`, `.run()`, `.sync()`, with
// no argument or with the placeholders' object. A Map's get(key) takes a key, not these.
// \s spans lines: a call whose argument starts on the next line is found too.
const SYNCHRONOUS = /\.(get|all|run|sync)\(\s*(\)|\{)/g

/** Where `source` runs a statement synchronously, as `line: text` of the line the call starts on; comments left out. */
export function synchronousCalls(source: string): string[] {
  const lines = source.split('\n')
  const code = source.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
  return [...code.matchAll(SYNCHRONOUS)].map((m) => {
    const line = code.slice(0, m.index).split('\n').length
    return `${line}: ${lines[line - 1]!.trim()}`
  })
}

const shared = readdirSync(STORES)
  .filter((name) => name.endsWith('.ts'))
  .filter((name) => /from '\.\.\/port\.ts'/.test(readFileSync(join(STORES, name), 'utf8')))

const CONCERNS = ['sites', 'users', 'legacy-tokens', 'sessions', 'tokens', 'categories', 'discussions', 'discussion-counts', 'discussion-authors', 'oauth', 'security-log', 'bootstrap', 'seed']

t.test('every store is written once, over the engine port', async (t) => {
  for (const store of CONCERNS) t.ok(shared.includes(`${store}.ts`), `db/stores/${store}.ts takes the port`)
})

t.test('no store reaches for an engine: db/stores imports neither db/sqlite nor db/postgres', async (t) => {
  for (const name of readdirSync(STORES)) {
    t.notMatch(readFileSync(join(STORES, name), 'utf8'), /from '\.\.\/(sqlite|postgres)\//, name)
  }
})

t.test('no shared store runs a statement synchronously', async (t) => {
  for (const name of shared) t.same(synchronousCalls(readFileSync(join(STORES, name), 'utf8')), [], name)
})

t.test('the rule finds what it looks for', async (t) => {
  t.same(synchronousCalls("const row = byKey.get({ model, id })\nconst all = db.select().from(x).all()\nq.run()\nseen.get(key)\n// an example: .get()\n/* and .all() */\nconst one = byKey.get(\n  { model, id },\n)"), [
    '1: const row = byKey.get({ model, id })',
    '2: const all = db.select().from(x).all()',
    '3: q.run()',
    '7: const one = byKey.get(',
  ])
})

t.test('no engine keeps stores of its own', async (t) => {
  for (const engine of ['sqlite', 'postgres']) {
    t.notOk(readdirSync(resolve(STORES, '..', engine)).includes('stores'), `db/${engine}/stores`)
  }
})

// A store's statements are built at their first use (`onFirstUse`, db/port.ts), not as the store is
// made: every app makes every store as it starts and runs few of their statements (docs/decisions.md,
// "What every build paid for"). A statement bound in a store's factory (`create…Store`)
// straight from its drizzle database or its port's `prepared` is built with the store.
const EAGER = /^ {2}const \w+ = (?:port\.db|db|port\.prepared)\b/

/** The statements `source`'s store factories build as they run, as `line: text`. */
export function eagerStatements(source: string): string[] {
  const found: string[] = []
  let inFactory = false
  source.split('\n').forEach((line, i) => {
    if (/^export function create\w*Store\(/.test(line)) inFactory = true
    else if (line === '}') inFactory = false
    else if (inFactory && EAGER.test(line)) found.push(`${i + 1}: ${line.trim()}`)
  })
  return found
}

t.test("no store builds its statements as it is made: each at its first use", async (t) => {
  for (const name of shared) t.same(eagerStatements(readFileSync(join(STORES, name), 'utf8')), [], name)
})

t.test('the eager statements rule finds what it looks for', async (t) => {
  const source = [
    'function helper(port: StorePort) {',
    "  const read = port.prepared('per_call', (db) => db.select().from(x).prepare('per_call'))",
    '}',
    'export function createThingStore(port: StorePort) {',
    "  const byId = db.select().from(x).prepare('by_id')",
    "  const byKey = port.db.select().from(x).prepare('by_key')",
    "  const kept = port.prepared('kept', (db) => db.select().from(x).prepare('kept'))",
    "  const later = onFirstUse(() => db.select().from(x).prepare('later'))",
    '  const { db } = port',
    '}',
  ].join('\n')
  t.same(eagerStatements(source), [
    "5: const byId = db.select().from(x).prepare('by_id')",
    "6: const byKey = port.db.select().from(x).prepare('by_key')",
    "7: const kept = port.prepared('kept', (db) => db.select().from(x).prepare('kept'))",
  ])
})
