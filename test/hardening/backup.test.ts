import { closeSync, existsSync, openSync, readdirSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { cliRunner } from '../fixtures/cli.ts'
import { V1 } from '../fixtures/app.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'

// Engines: one: SQLite's online backup (PostgreSQL's, pg_dump, is test/cli/backup.test.ts, on both). Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// The online backup of a SQLite file (on PostgreSQL, backup runs pg_dump: test/cli/backup.test.ts).

t.test('backup: a checked, private, self-contained copy, and refusals that leave nothing behind', async (t) => {
  const cli = await cliRunner(t, { engine: 'sqlite' })
  t.equal((await cli.run(['site', 'add', 'acme', '--name', 'Acme Support'])).code, 0)
  t.equal((await cli.run(['user', 'add', 'ann@example.test'])).code, 0)

  const copy = join(cli.dir, 'copy.db')
  const done = await cli.run(['backup', copy])
  t.equal(done.code, 0, done.stderr)
  t.match(done.stdout, /^Backed up \d+ pages \(\d+\.\d MB\) to .*copy\.db in \d+ ms; integrity check: ok\.\n/)
  t.match(done.stdout, `The server key is not in the copy: keep ${join(cli.dir, 'service.key')} with it`)
  t.equal(statSync(copy).mode & 0o777, 0o600, 'readable by its owner only')
  const opened = new Database(copy, { readonly: true })
  t.equal(opened.prepare("SELECT name FROM sites WHERE permalink = 'acme'").pluck().get(), 'Acme Support', 'the data is there')
  t.equal(opened.pragma('journal_mode', { simple: true }), 'delete', 'one file, no WAL beside it')
  opened.close()

  const withSecret = await cli.run(['backup', join(cli.dir, 'second.db')], { env: { SERVICE_SECRET: 'k'.repeat(40) } })
  t.match(withSecret.stdout, 'keep SERVICE_SECRET with it')

  const before = readdirSync(cli.dir).sort()
  const refusals: [string[], RegExp][] = [
    [['backup', copy], /copy\.db already exists; choose a new name/],
    [['backup', cli.db], /the backup must go to another file than the database/],
    [['backup', join(cli.dir, 'no', 'such', 'folder', 'x.db')], /the folder of .* does not exist/],
    [['backup', join(cli.dir, 'y.db'), '--db', join(cli.dir, 'missing.db')], /there is no database at .*missing\.db/],
  ]
  for (const [argv, message] of refusals) {
    const res = await cli.run(argv)
    t.equal(res.code, 1, argv.join(' '))
    t.match(res.stderr, message)
  }
  t.same(readdirSync(cli.dir).sort(), before, 'no file made or left by a refusal')
  t.equal((await cli.run(['backup'])).code, 2, 'the file is required')
})

t.test('a failed copy leaves no partial file under the real name', async (t) => {
  const cli = await cliRunner(t, { engine: 'sqlite' })
  t.equal((await cli.run(['site', 'list'])).code, 0)
  // Another backup's temporary file, with this process's id, is in the way.
  const target = join(cli.dir, 'busy.db')
  writeFileSync(join(cli.dir, `.busy.db.partial-${process.pid}`), 'in the way')
  const res = await cli.run(['backup', target])
  t.equal(res.code, 1)
  t.notOk(existsSync(target), 'the real name was never written')
})

t.test('backup of a live server under writes is consistent', async (t) => {
  const cli = await cliRunner(t, { engine: 'sqlite' })
  const server = await startServer(t, { SERVICE_DB: cli.db })
  const token = await bannerToken(server)
  const headers = { authorization: `Bearer ${token}`, accept: V1, 'content-type': 'application/json' }
  const categoryId = ((await (await fetch(`${server.base}/demo/categories`, { headers })).json()) as { categories: { id: number }[] }).categories[0]!.id
  let writing = true
  let written = 0
  const writer = (async () => {
    while (writing) {
      const res = await fetch(`${server.base}/demo/categories/${categoryId}/discussions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ title: `Written during the backup ${written}`, body: 'x'.repeat(2000) }),
      })
      if (res.status === 201) written++
    }
  })()
  while (written < 20) await new Promise((resolve) => setTimeout(resolve, 20))
  const copy = join(cli.dir, 'live.db')
  const res = await cli.run(['backup', copy])
  writing = false
  await writer
  t.equal(res.code, 0, res.stderr)
  const opened = new Database(copy, { readonly: true })
  t.equal(opened.pragma('integrity_check', { simple: true }), 'ok')
  const inCopy = opened.prepare('SELECT count(*) FROM discussions').pluck().get() as number
  const counted = opened.prepare('SELECT sum(count) FROM discussion_counts').pluck().get() as number
  opened.close()
  t.ok(inCopy >= 20, `the copy holds the discussions written before it (${inCopy} of ${written})`)
  t.equal(counted, inCopy, 'and counters that agree with them: one snapshot, not a torn copy')
  t.equal((await server.stop()), 0)
})

t.test('a damaged database is not saved as a good backup', async (t) => {
  const cli = await cliRunner(t, { engine: 'sqlite' })
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  // Damage a page of the sites table: the copy carries the damage, and its check finds it.
  const db = new Database(cli.db)
  db.pragma('journal_mode = DELETE')
  const page = db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'sites'").pluck().get() as number
  const pageSize = db.pragma('page_size', { simple: true }) as number
  db.close()
  const fd = openSync(cli.db, 'r+')
  writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, (page - 1) * pageSize + 8)
  closeSync(fd)
  const target = join(cli.dir, 'damaged.db')
  const res = await cli.run(['backup', target])
  t.equal(res.code, 1)
  t.match(res.stderr, /the copy failed its integrity check/)
  t.notOk(existsSync(target), 'no backup under the real name')
  t.same(readdirSync(cli.dir).filter((name) => name.includes('partial')), [], 'and no temporary file left')
})
