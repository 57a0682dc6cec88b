import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { databaseFiles, describeFault, nearlyFull } from '../../cli/faults.ts'
import { EXIT_BUSY, EXIT_DISK_FULL, EXIT_IO, EXIT_READ_ONLY } from '../../cli/main.ts'
import { storageFault } from '../../lib/database-errors.ts'
import { childEnv } from '../fixtures/child.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { BIN } from '../fixtures/server.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// SQLite's own faults, made by stubbing better-sqlite3 or by a real small disk, are SQLite's only:
// on PostgreSQL those tests are skipped, and what a PostgreSQL command does when its transaction
// fails is test/cli/admin.test.ts's.
const sqliteFault = SQLITE_ONLY && "SQLite's own faults (better-sqlite3 stubbed, a small disk under the file)"

// Issue 21, item 5: a command that meets a full disk, a file it cannot write or a locked database
// says what failed, that nothing was changed, and what to do, with an exit code per kind.

type Statement = { source: string; run: (...args: unknown[]) => unknown; get: (...args: unknown[]) => unknown; all: (...args: unknown[]) => unknown }
const probe = new Database(':memory:')
const statementPrototype = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Statement
probe.close()

/**
 * SQLite's own error, as better-sqlite3 throws it, from every statement of the command whose SQL
 * matches: the write fails the way a full disk (or a read-only file, a lock) fails it.
 */
function failStatements(t: Test, code: string, message: string, match = /^\s*(insert|update|delete)\b/i) {
  const original = { run: statementPrototype.run, get: statementPrototype.get, all: statementPrototype.all }
  for (const method of ['run', 'get', 'all'] as const) {
    statementPrototype[method] = function (this: Statement, ...args: unknown[]) {
      if (match.test(this.source)) throw new Database.SqliteError(message, code)
      return original[method].apply(this, args)
    }
  }
  const restore = () => Object.assign(statementPrototype, original)
  t.teardown(restore)
  return restore
}

const sites = (db: string) => {
  const reader = new Database(db, { readonly: true })
  try {
    return reader.prepare('SELECT permalink FROM sites ORDER BY id').pluck().all()
  } finally {
    reader.close()
  }
}

t.test('each fault: what failed, nothing changed, what to do, and its own exit code', { skip: sqliteFault }, async (t) => {
  const { run, db } = await cliRunner(t)
  t.equal((await run(['site', 'add', 'demo'])).code, 0)
  const cases: [string, string, number, RegExp][] = [
    ['SQLITE_FULL', 'database or disk is full', EXIT_DISK_FULL, /^service-desk: the disk is full \(database or disk is full\)\.\nNothing was changed\. Free some space on the disk that holds .+service\.db \(df -h shows it\), then run the command again\.\n$/],
    ['SQLITE_READONLY', 'attempt to write a readonly database', EXIT_READ_ONLY, /^service-desk: the database cannot be written \(attempt to write a readonly database\)\.\nNothing was changed\. Check that .+service\.db is a file \(not a folder\) that this user can write/],
    ['SQLITE_BUSY', 'database is locked', EXIT_BUSY, /^service-desk: the database is locked by another process \(database is locked\)\.\nNothing was changed\. Another process held the write lock of .+service\.db for more than 5 seconds/],
    ['SQLITE_IOERR_WRITE', 'disk I/O error', EXIT_IO, /^service-desk: the disk failed to read or write \(disk I\/O error\)\.\nNothing was changed\. Check the disk that holds .+service\.db/],
  ]
  for (const [code, message, exit, said] of cases) {
    const restore = failStatements(t, code, message)
    const result = await run(['site', 'add', 'acme', '--name', 'Acme'])
    restore()
    t.same([result.code, result.stdout], [exit, ''], code)
    t.match(result.stderr, said, code)
  }
  t.same(sites(db), ['demo'], 'nothing was created')
  t.equal((await run(['site', 'add', 'acme'])).code, 0, 'once the fault is gone, the same command works')
})

t.test('a command of several writes changes all or nothing: user disable', { skip: sqliteFault }, async (t) => {
  const { run, db } = await cliRunner(t)
  await run(['user', 'add', 'ann@example.test'])
  failStatements(t, 'SQLITE_FULL', 'database or disk is full', /^delete from "web_sessions"/i)
  const result = await run(['user', 'disable', 'ann@example.test'])
  t.equal(result.code, EXIT_DISK_FULL)
  t.equal(result.stdout, '')
  const reader = new Database(db, { readonly: true })
  t.teardown(() => reader.close())
  t.equal(reader.prepare('SELECT disabled FROM users').pluck().get(), 0, 'the account was not disabled without its sessions ending')
})

t.test('a commit that fails prints nothing but the fault: no token is shown that was not stored', { skip: sqliteFault }, async (t) => {
  const { run, db } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  await run(['user', 'add', 'ann@example.test'])
  await run(['staff', 'add', 'demo', 'ann@example.test'])
  const exec = Database.prototype.exec
  Database.prototype.exec = function (this: Database.Database, sql: string) {
    if (sql === 'COMMIT') throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL')
    return exec.call(this, sql)
  }
  t.teardown(() => void (Database.prototype.exec = exec))
  const result = await run(['token', 'create', 'demo', 'ann@example.test', '--name', 'nightly'])
  Database.prototype.exec = exec
  t.equal(result.code, EXIT_DISK_FULL)
  t.equal(result.stdout, '', 'the token value was held back, and dropped')
  t.match(result.stderr, /^service-desk: the disk is full/)
  const reader = new Database(db, { readonly: true })
  t.teardown(() => reader.close())
  t.equal(reader.prepare('SELECT count(*) FROM personal_tokens').pluck().get(), 0)
})

t.test('seed and backup say what they kept and where the room is missing', { skip: sqliteFault }, async (t) => {
  const { run, dir } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const restore = failStatements(t, 'SQLITE_FULL', 'database or disk is full', /^insert into "?discussions"?/i)
  const seeded = await run(['seed', 'demo', '--discussions', '10'])
  restore()
  t.equal(seeded.code, EXIT_DISK_FULL)
  t.match(seeded.stderr, /\nThe discussions of the batches finished before it were kept, each batch whole; nothing is half-written\. Free some space/)

  // The search index's batches likewise: what was indexed stays, the rest is done again later.
  await run(['seed', 'demo', '--discussions', '10'])
  const full = failStatements(t, 'SQLITE_FULL', 'database or disk is full', /^insert into discussion_search/i)
  const indexed = await run(['search', 'index', '--again'])
  full()
  t.equal(indexed.code, EXIT_DISK_FULL)
  t.match(indexed.stderr, /\nThe batches finished before it stay indexed; the service \(or this command again\) goes on from there\. Free some space/)
  t.match((await run(['search', 'index'])).stdout, /^10 discussions indexed for search/, 'and then it goes on')

  const backup = Database.prototype.backup
  Database.prototype.backup = async function () {
    throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL')
  }
  t.teardown(() => void (Database.prototype.backup = backup))
  const copied = await run(['backup', `${dir}/copy.db`])
  Database.prototype.backup = backup
  t.equal(copied.code, EXIT_DISK_FULL)
  t.match(copied.stderr, /\nNo backup was made \(the partial copy was removed\), and the database was not changed\. Free some space on the disk that holds .+service\.db or the folder of .+copy\.db/)
  t.same(readdirSync(dir).filter((name) => name.includes('copy')), [], 'no copy, whole or partial')
})

t.test('a database locked by another process: exit 3 after the wait, nothing changed', { skip: sqliteFault }, async (t) => {
  const { run, db } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  const other = new Database(db)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const started = Date.now()
  const result = await run(['site', 'add', 'acme'])
  t.equal(result.code, EXIT_BUSY, `after ${Date.now() - started} ms`)
  t.match(result.stderr, /^service-desk: the database is locked by another process \(database is locked\)\.\nNothing was changed\./)
  other.exec('ROLLBACK')
  t.same(sites(db), ['demo'])
})

t.test('which errors are storage faults', async (t) => {
  const error = (fields: Record<string, unknown>) => Object.assign(new Error('x'), fields)
  t.equal(storageFault(error({ code: 'SQLITE_FULL' })), 'full')
  t.equal(storageFault(error({ code: 'SQLITE_IOERR_SHMSIZE' })), 'io')
  t.equal(storageFault(error({ code: 'SQLITE_CANTOPEN' })), 'read_only')
  t.equal(storageFault(error({ code: 'SQLITE_LOCKED_SHAREDCACHE' })), 'busy')
  t.equal(storageFault(error({ code: 'SQLITE_CONSTRAINT_UNIQUE' })), null)
  t.equal(storageFault(error({ code: 'ENOSPC', syscall: 'write' })), 'full', 'a failed write names no path')
  t.equal(storageFault(error({ code: 'EROFS', syscall: 'open', path: '/srv/service.key.1' })), 'read_only')
  t.equal(storageFault(error({ code: 'EACCES', syscall: 'mkdir', path: '/srv/data' })), 'read_only')
  t.equal(storageFault(error({ code: 'EIO', syscall: 'fsync' })), 'io')
  t.equal(storageFault(error({ code: 'EACCES', syscall: 'listen', address: '0.0.0.0', port: 80 })), null, 'a port the user may not take is no storage fault')
  t.equal(storageFault(error({ code: 'ENOENT', path: '/srv/x' })), null)
  t.equal(storageFault(error({})), null)
  t.equal(storageFault(null), null)
  t.equal(storageFault('SQLITE_FULL'), null)
})

t.test('an I/O error on a disk with no room left is told as a full disk', async (t) => {
  t.ok(nearlyFull(['/proc/self/status']), '/proc has no room')
  t.notOk(nearlyFull(['/no/such/folder/service.db']), 'a disk that cannot be looked at is not called full')
  const io = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_SHMSIZE' })
  const scope = (paths: string[]) => () => ({ files: 'the file', paths, outcome: 'Nothing was changed.' })
  t.match(describeFault(io, scope(['/proc/self/status'])), { code: EXIT_DISK_FULL, message: /^service-desk: the disk is full \(disk I\/O error\)/ })
  t.match(describeFault(io, scope(['/no/such/folder/x'])), { code: EXIT_IO })
  t.equal(describeFault(new Error('other'), scope([])), null)
})

t.test('what a fault names for the database: the file, or the PostgreSQL address without its password', async (t) => {
  t.same(databaseFiles('./data/service.db'), { files: './data/service.db', paths: ['./data/service.db'] })
  t.same(databaseFiles('postgres://svc:pw@db.internal/desk?schema=a'), { files: 'postgres://svc:***@db.internal/desk?schema=a', paths: [] })
})

t.test('a copy whose source cannot be opened names that file: nothing was copied', async (t) => {
  const { run, dir } = await cliRunner(t)
  const result = await run(['copy', '--from', dir, '--to', 'postgres://nobody@127.0.0.1:1/x'])
  // SQLite opens a folder read-only only to fail its first read: an I/O error, on a disk with room.
  t.equal(result.code, EXIT_IO)
  t.match(result.stderr, new RegExp(`^service-desk: the disk failed to read or write \\(disk I/O error\\)\\.\\nNothing was copied\\. Check the disk that holds ${dir}`))
})

t.test('the overview lists the exit codes, once; the help of a command points there', async (t) => {
  const { run } = await cliRunner(t)
  const { stdout } = await run(['--help'])
  t.match(stdout, /Exit codes:\n  0  done\n  1  refused[^\n]*\n  2  [^\n]*\n  3  the database is locked by another process[^\n]*\n  4  the disk is full[^\n]*\n  5  the database, or its folder, cannot be written\n  6  the disk failed to read or write\n/)
  for (const argv of [['site', 'add', '--help'], ['serve', '--help']]) {
    const help = (await run(argv)).stdout
    t.notMatch(help, /\n  0  done\n/, `${argv.join(' ')}: not repeated`)
    t.match(help, /\nExit codes: service-desk --help\.\n$/, argv.join(' '))
  }
})

/** Runs a shell script as root of a new user and mount namespace, where it may mount a small tmpfs. */
function inNamespace(script: string, env: Record<string, string> = {}) {
  return spawnSync('unshare', ['-rm', 'sh', '-c', script], { env: childEnv(env), encoding: 'utf8', timeout: 180_000 })
}
const namespaces = inNamespace('mount -t tmpfs -o size=64k tmpfs /mnt && echo ok')
const noNamespace = namespaces.stdout?.trim() === 'ok' ? false : `unshare -rm cannot mount a tmpfs here: ${namespaces.error?.message ?? namespaces.stderr}`

t.test('a real full disk and a real read-only one: a small tmpfs', { skip: sqliteFault || noNamespace }, async (t) => {
  // In a mount namespace of its own: a 2 MiB tmpfs holding the database (about 0.5 MiB, and its
  // write-ahead log as a write grows it), filled to the last byte
  // with another file, then freed; then mounted read-only.
  const run = (args: string) => `node ${BIN} ${args} 2>&1; echo "exit=$?"`
  const script = [
    'set -u',
    'M=$(mktemp -d)',
    'mount -t tmpfs -o size=2m tmpfs "$M"',
    'export SERVICE_DB="$M/service.db"',
    run('site add demo'),
    'head -c 100m /dev/zero > "$M/fill" 2>/dev/null; echo "filled"',
    run('site add acme'),
    `SERVICE_SECRET=${'k'.repeat(32)} ${run('site add acme')}`,
    'rm "$M/fill"',
    run('site list'),
    run('site add acme'),
    'mount -o remount,ro "$M"',
    `SERVICE_SECRET=${'k'.repeat(32)} ${run('site add other')}`,
  ].join('\n')
  const result = inNamespace(script)
  const steps = result.stdout.split(/exit=(\d+)\n/)
  t.equal(result.status, 0, result.stderr)
  t.match(steps[0], /site demo created/)
  t.equal(steps[1], '0')
  t.match(
    steps[2],
    /^filled\nservice-desk: the disk is full \((disk I\/O error|database or disk is full)\)\.\nNothing was changed\. Free some space on the disk that holds \S+\/service\.db \(df -h shows it\), then run the command again\.\n$/,
    'the key file made by the first start is only read: the database write is what fails',
  )
  t.equal(steps[3], String(EXIT_DISK_FULL))
  t.match(steps[4], /^service-desk: the disk is full \((disk I\/O error|database or disk is full)\)\.\nNothing was changed\./, 'the database could not be written')
  t.equal(steps[5], String(EXIT_DISK_FULL))
  t.equal(steps[6], 'demo\tdemo\n', 'nothing was created, and the database reads once there is room')
  t.equal(steps[8], 'site acme created ("acme") with the category General (id 2); add more with: service-desk category add acme NAME\n', 'and takes writes again: no restart, no repair')
  t.match(steps[10], /^service-desk: the database cannot be written \(unable to open database file\)\.\nNothing was changed\. Check that \S+\/service\.db is a file \(not a folder\) that this user can write, in a folder it can write \(ls -l\), on a file system not mounted read-only/)
  t.equal(steps[11], String(EXIT_READ_ONLY))
})
