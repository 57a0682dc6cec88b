import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { pgDumpCommand } from '../../cli/backup.ts'
import { EXIT_READ_ONLY } from '../../cli/main.ts'
import { parsePostgresAddress } from '../../lib/database-address.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { POSTGRES_URL, postgresAnswers } from '../fixtures/postgres.ts'

// Engines: both: the backup of a PostgreSQL database is pg_dump's, of a SQLite file SQLite's own.
// `service-desk backup` on PostgreSQL: pg_dump of the service's schema (SQLite's online backup is
// test/hardening/backup.test.ts). Runs wherever the test server answers.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const pgDump = spawnSync('pg_dump', ['--version']).status === 0 ? false : 'pg_dump is not on the PATH here'

t.test('the pg_dump command line: the schema, the custom format, the password kept out of it', async (t) => {
  const { args, password } = pgDumpCommand('postgresql://svc:p%40ss@db.internal:6432/desk?schema=help_desk&sslmode=require', '/backups/x.dump')
  t.same(args, [
    '--format=custom',
    '--no-owner',
    '--no-privileges',
    '--schema=help_desk',
    '--file=/backups/x.dump',
    '--dbname=postgresql://svc@db.internal:6432/desk?sslmode=require',
  ])
  t.equal(password, 'p@ss', 'for PGPASSWORD')
  t.same(pgDumpCommand('postgres://svc@db.internal/desk', 'x').args.slice(3, 4), ['--schema=public'], 'public unless ?schema= says otherwise')
  t.equal(pgDumpCommand('postgres://svc@db.internal/desk', 'x').password, undefined)
})

t.test('backup on PostgreSQL runs pg_dump: a private file that pg_restore takes back', { skip: down || pgDump }, async (t) => {
  const cli = await cliRunner(t, { engine: 'postgres' })
  const env = { PATH: process.env.PATH! }
  t.equal((await cli.run(['site', 'add', 'acme', '--name', 'Acme Support'])).code, 0)
  const schema = new URL(cli.db).searchParams.get('schema')!
  const file = join(cli.dir, 'desk.dump')
  // A password in the address (the local server does not ask for it) is never shown.
  const address = cli.db.replace('postgres://postgres@', 'postgres://postgres:hunter2@')
  const done = await cli.run(['backup', file, '--db', address], { env })
  t.equal(done.code, 0, done.stderr)
  t.match(done.stdout, new RegExp(`^Backed up schema ${schema} of postgres://postgres:\\*\\*\\*@\\S+ \\(\\d+\\.\\d MB\\) to \\S+desk\\.dump with pg_dump in \\d+ ms\\.\\n`))
  t.match(done.stdout, `\nRestore it into an empty database with: pg_restore --no-owner --no-privileges --dbname=ADDRESS ${file}\n`)
  t.match(done.stdout, 'keep SERVICE_SECRET with it')
  t.notMatch(done.stdout + done.stderr, 'hunter2')
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')

  // Restored into a database of its own, the site is there.
  const database = `restore_${new URL(cli.db).pathname.slice(1)}`
  const admin = new pg.Client({ connectionString: POSTGRES_URL })
  await admin.connect()
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`)
    await admin.end()
  })
  await admin.query(`CREATE DATABASE ${database}`)
  const target = new URL(POSTGRES_URL)
  target.pathname = `/${database}`
  const restored = spawnSync('pg_restore', ['--no-owner', '--no-privileges', `--dbname=${target}`, file], { encoding: 'utf8' })
  t.equal(restored.status, 0, restored.stderr)
  const reader = new pg.Client({ connectionString: target.toString() })
  await reader.connect()
  t.same((await reader.query(`SELECT name FROM "${schema}".sites`)).rows, [{ name: 'Acme Support' }])
  await reader.end()

  // Refusals, and a pg_dump that fails or is missing: nothing left behind.
  const before = readdirSync(cli.dir).sort()
  const refusals: Array<[string[], Record<string, string>, RegExp]> = [
    [['backup', file], env, /desk\.dump already exists; choose a new name/],
    [['backup', join(cli.dir, 'no', 'x.dump')], env, /the folder of .* does not exist/],
    [['backup', join(cli.dir, 'y.dump'), '--db', `${POSTGRES_URL.replace(/\/[^/]*$/, '/no_such_database')}?schema=x`], env, /^service-desk: pg_dump failed \(exit 1\): .*no_such_database/],
    [
      ['backup', join(cli.dir, 'z.dump')],
      { PATH: join(cli.dir, 'nowhere') },
      new RegExp(
        `^service-desk: pg_dump is not on the PATH: install the PostgreSQL client tools \\(the server's major version or later\\), or make the backup where they are: ` +
          `PGPASSWORD=\\.\\.\\. pg_dump '--format=custom' '--no-owner' '--no-privileges' '--schema=${schema}' '--file=\\S+z\\.dump' '--dbname=${parsePostgresAddress(cli.db).connectionString.replace(/[.?]/g, '\\$&')}'\\n$`,
      ),
    ],
  ]
  for (const [argv, environment, message] of refusals) {
    const result = await cli.run(argv, { env: environment })
    t.equal(result.code, 1, argv.join(' '))
    t.match(result.stderr, message)
    t.equal(result.stdout, '')
  }
  t.same(readdirSync(cli.dir).sort(), before, 'no file made or left by a refusal')

  // A folder this user cannot write in: a storage fault of the backup's folder, its own exit code.
  const unwritable = await cli.run(['backup', '/sys/desk.dump'], { env })
  t.equal(unwritable.code, EXIT_READ_ONLY, unwritable.stderr)
  t.match(unwritable.stderr, /^service-desk: the database cannot be written \(.*\)\.\nNo backup was made \(the partial copy was removed\), and the database was not changed\. Check that the folder of \/sys\/desk\.dump is/)
  t.notOk(existsSync(join(cli.dir, 'z.dump')))
})
