import { readFileSync } from 'node:fs'
import t from 'tap'
import { unreachable } from '../../cli/postgres.ts'
import { isWellFormedPersonalToken } from '../../lib/token-format.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'

// Engines: one: the administration commands' words, options and exits. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// The administration commands, on the engine the suite runs on (test/fixtures/cli.ts): the same
// test code on a SQLite file and on a PostgreSQL schema.

/** A stable picture of everything in the database, to prove a refused command changed nothing. */
async function snapshot(query: Awaited<ReturnType<typeof cliRunner>>['query']): Promise<string> {
  const tables = ['sites', 'users', 'memberships', 'personal_tokens', 'web_sessions']
  const pictures = []
  for (const table of tables) pictures.push(await query(`SELECT * FROM ${table} ORDER BY 1, 2`))
  return JSON.stringify(pictures)
}

t.test('sites, users, staff and tokens from the command line', async (t) => {
  const { run } = await cliRunner(t)
  t.same(await run(['site', 'add', 'acme', '--name', 'Acme Support']), { code: 0, stdout: 'site acme created ("Acme Support") with the category General (id 1); add more with: service-desk category add acme NAME\n', stderr: '' })
  t.same((await run(['site', 'list'])).stdout, 'acme\tAcme Support\n')

  const added = await run(['user', 'add', 'Ann@Example.test', '--name', 'Ann'])
  t.equal(added.code, 0)
  t.match(added.stdout, /^user Ann@Example\.test created; password: [\w-]{20}\n$/, 'a random password, shown once')
  t.same(await run(['user', 'add', 'bob@example.test', '--password-stdin'], { stdin: 'correct horse battery\n' }), {
    code: 0,
    stdout: 'user bob@example.test created\n',
    stderr: '',
  })

  t.equal((await run(['staff', 'add', 'acme', 'ann@example.test'])).stdout, 'Ann@Example.test is now support staff of acme\n', 'email found without regard to case')
  const created = await run(['token', 'create', 'acme', 'ann@example.test', '--name', 'CI', '--access', 'read', '--expires', '7'])
  t.equal(created.code, 0)
  const value = created.stdout.trim()
  t.ok(isWellFormedPersonalToken(value), 'the value alone on stdout')
  t.equal(created.stdout, `${value}\n`)
  const second = await run(['token', 'create', 'acme', 'ann@example.test', '--name', 'deploy'])
  t.equal(second.code, 0, 'access and expiry have defaults')

  const listed = await run(['token', 'list', 'acme'])
  const lines = listed.stdout.trim().split('\n')
  t.equal(lines.length, 2)
  t.match(lines[1], new RegExp(`^1\\tAnn@Example\\.test\\tCI\\tread\\tservice_pat_\\.\\.\\.${value.slice(-4)}\\tcreated 2026-03-01\\tlast used never\\texpires 2026-03-08\\tactive$`))
  t.match(lines[0], /^2\t.*\tdeploy\tread\t.*expires 2026-05-30\tactive$/, 'read only (least access), 90 days by default')
  t.notMatch(listed.stdout, value.slice(12, 50), 'never a value')
  t.equal((await run(['token', 'list', 'acme', 'bob@example.test'])).stdout, '', 'filtered by owner')

  t.same(await run(['token', 'revoke', 'acme', '1']), { code: 0, stdout: 'token 1 (CI) revoked\n', stderr: '' })
  t.match((await run(['token', 'list', 'acme', 'ann@example.test'])).stdout, /\tCI\t.*\trevoked\n/)

  t.equal((await run(['user', 'disable', 'ann@example.test'])).stdout, 'user Ann@Example.test disabled\n')
  t.match((await run(['token', 'list', 'acme'])).stdout, /\tdeploy\t.*\tunusable\n/)
  t.equal((await run(['user', 'enable', 'ann@example.test'])).stdout, 'user Ann@Example.test enabled\n')
  t.equal((await run(['staff', 'remove', 'acme', 'ann@example.test'])).stdout, 'Ann@Example.test is no longer support staff of acme\n')
  t.match((await run(['token', 'list', 'acme'])).stdout, /\tdeploy\t.*\tunusable\n/, 'off the staff')
})

t.test('wrong input exits non-zero with one clear line and changes nothing', async (t) => {
  const { run, query } = await cliRunner(t)
  await run(['site', 'add', 'acme'])
  await run(['user', 'add', 'ann@example.test'])
  await run(['user', 'add', 'cust@example.test'])
  await run(['staff', 'add', 'acme', 'ann@example.test'])
  for (let i = 0; i < 20; i++) await run(['token', 'create', 'acme', 'ann@example.test', '--name', `t${i}`])
  const before = await snapshot(query)

  const refusals: [string[], number, RegExp, string?][] = [
    [['site', 'add', 'Acme'], 1, /1 to 63 characters/],
    [['site', 'add', 'healthz'], 1, /reserved/],
    [['site', 'add', 'acme'], 1, /already exists/],
    [['site', 'add', 'x', '--name', ''], 1, /1 to 100 characters/],
    [['user', 'add', 'ANN@example.test'], 1, /already exists/],
    [['user', 'add', 'not-an-email'], 1, /is not an email address/],
    [['user', 'add', 'new@example.test', '--password-stdin'], 1, /at least 8 characters/, 'short\n'],
    [['user', 'disable', 'nobody@example.test'], 1, /there is no user "nobody@example.test"/],
    [['staff', 'add', 'nosite', 'ann@example.test'], 1, /there is no site "nosite"/],
    [['staff', 'remove', 'acme', 'cust@example.test'], 1, /is not support staff of acme/],
    [['token', 'create', 'acme', 'ann@example.test', '--name', 'x', '--expires', '366'], 2, /--expires must be one of 7, 30, 90, 365/],
    [['token', 'create', 'acme', 'ann@example.test', '--name', 'x', '--expires', '9e1'], 2, /--expires must be one of/],
    [['token', 'create', 'acme', 'ann@example.test', '--name', 'x', '--access', 'admin'], 2, /--access must be read or write/],
    [['token', 'create', 'acme', 'ann@example.test'], 2, /--name is required/],
    [['token', 'create', 'acme', 'ann@example.test', '--name', 'x'], 1, /already have 20 active tokens/],
    [['token', 'create', 'acme', 'cust@example.test', '--name', 'x'], 1, /only support staff/],
    [['token', 'create', 'acme', 'nobody@example.test', '--name', 'x'], 1, /there is no user/],
    [['token', 'revoke', 'acme', '99'], 1, /there is no token 99/],
    [['token', 'revoke', 'acme', 'abc'], 2, /a token id is a positive whole number/],
    [['token', 'list', 'nosite'], 1, /there is no site/],
    [['token', 'list'], 2, /usage: service-desk token list <site> \[<email>\]/],
    [['token', 'list', 'a', 'b', 'c'], 2, /usage:/],
    [['token', 'create', 'acme', 'ann@example.test', '--nmae', 'x'], 2, /^service-desk: unknown option --nmae; did you mean --name\? \(service-desk token create --help lists them\)\n$/],
    [['frobnicate'], 2, /unknown command "frobnicate"; run service-desk --help/],
    [['site', 'add', 'x', '--db', ''], 2, /--db must not be empty/],
  ]
  for (const [argv, code, message, stdin] of refusals) {
    const result = await run(argv, { stdin })
    t.equal(result.code, code, argv.join(' '))
    t.match(result.stderr, message, argv.join(' '))
    t.match(result.stderr, /^service-desk: [^\n]+\n$/, 'one line')
    t.equal(result.stdout, '')
  }
  t.equal(await snapshot(query), before, 'the database is exactly as before')
})

t.test('--help on every command, and the overview', async (t) => {
  const { run } = await cliRunner(t)
  const overview = await run(['--help'])
  t.equal(overview.code, 0)
  const commands = ['serve', 'migrate', 'site add', 'site list', 'user add', 'user disable', 'user enable', 'staff add', 'staff remove', 'token create', 'token list', 'token revoke']
  for (const command of commands) {
    t.match(overview.stdout, `  ${command}`, `overview lists ${command}`)
    const help = await run([...command.split(' '), '--help'])
    t.equal(help.code, 0, `${command} --help`)
    t.match(help.stdout, new RegExp(`^Usage: service-desk ${command}`))
    t.match(help.stdout, /\n {2}--db ADDRESS +\S/)
  }
  t.equal((await run([])).code, 0, 'no arguments shows the overview')
  t.equal((await run(['token', 'create', '-h'])).code, 0)
})

t.test('a database that cannot be opened says so, and what to check, with exit 5 (test/cli/faults.test.ts)', { skip: SQLITE_ONLY && 'a file that cannot be opened: SQLite only' }, async (t) => {
  const { run, dir } = await cliRunner(t)
  const result = await run(['site', 'list', '--db', dir])
  t.equal(result.code, 5)
  t.equal(
    result.stderr,
    'service-desk: the database cannot be written (unable to open database file).\n' +
      `Nothing was changed. Check that ${dir} is a file (not a folder) that this user can write, in a folder it can write (ls -l), ` +
      'on a file system not mounted read-only; then run the command again.\n',
  )
})

t.test('the database file is created where --db says, folders included', { skip: SQLITE_ONLY && 'a SQLite file' }, async (t) => {
  const { run, dir } = await cliRunner(t)
  const file = `${dir}/nested/deeper/s.db`
  t.equal((await run(['site', 'add', 'x', '--db', file])).code, 0)
  t.ok(readFileSync(file).length > 0)
})

t.test('a PostgreSQL database that cannot be reached: one line, without the password, exit 1', async (t) => {
  const { run } = await cliRunner(t)
  const secret = { SERVICE_SECRET: 'k'.repeat(40) }
  const address = 'postgres://service:hunter2-secret@127.0.0.1:1/nowhere?schema=x'
  for (const argv of [['site', 'list'], ['migrate']]) {
    const result = await run([...argv, '--db', address], { env: secret })
    t.equal(result.code, 1, argv.join(' '))
    t.match(result.stderr, /^service-desk: cannot open the PostgreSQL database postgres:\/\/service:\*\*\*@127\.0\.0\.1:1\/nowhere\?schema=x: \S.*\n$/)
    t.notMatch(result.stderr, 'hunter2')
    t.equal(result.stdout, '')
  }
  const withoutSecret = await run(['site', 'list', '--db', address], { env: { SERVICE_SECRET: '' } })
  t.equal(withoutSecret.code, 2, 'a postgres:// address needs SERVICE_SECRET')
  // A name with several addresses, all refusing, fails with an AggregateError that has no message.
  const refused = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' })
  t.equal(unreachable(address, refused).message, 'cannot open the PostgreSQL database postgres://service:***@127.0.0.1:1/nowhere?schema=x: ECONNREFUSED')
})

t.test('migrate: which engine, which migrations ran, or that the schema was current', async (t) => {
  const { run, engine } = await cliRunner(t, { unmigrated: true })
  const name = engine === 'postgres' ? /^PostgreSQL database postgres:\/\/\S+\?schema=\w+/ : /^SQLite database \S+service\.db/
  const first = await run(['migrate'])
  t.equal(first.code, 0)
  t.match(first.stdout, name)
  t.match(first.stdout, /: ran 0000_init(, \w+)*; the schema is current \(\d+ migrations?\)\.\n$/)
  const again = await run(['migrate'])
  t.match(again.stdout, name)
  t.match(again.stdout, /: the schema was current \(\d+ migrations?, the last \w+\); nothing ran\.\n$/)
  t.equal((await run(['site', 'add', 'demo'])).code, 0, 'the migrated database serves the commands')
  t.match((await run(['migrate'])).stdout, /nothing ran/)
})

t.test('migrate on a SQLite file that was never migrated', { skip: SQLITE_ONLY && 'a SQLite file' }, async (t) => {
  const { run, dir } = await cliRunner(t)
  const empty = `${dir}/empty.db`
  const { default: Database } = await import('better-sqlite3')
  new Database(empty).close()
  t.match((await run(['migrate', '--db', empty])).stdout, /^SQLite database \S+empty\.db: ran 0000_init, 0001_discussions(, \w+)*; the schema is current/)
})
