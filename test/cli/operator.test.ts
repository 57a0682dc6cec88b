import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { verifyPassword } from '../../lib/password.ts'
import { openEngine } from '../../db/open.ts'
import { buildTestApp } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'

// Engines: one: the operator's commands: a lost password, a database address refused, help and slips. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// Issue 31: the operator's command line recovers a lost password, refuses a database address it
// cannot mean, explains itself, and says what it means in words.

t.test('user set-password: a new password, the old one gone, the sessions ended, the event logged', async (t) => {
  const { run, query, db, env, clock } = await cliRunner(t)
  await run(['site', 'add', 'acme'])
  await run(['user', 'add', 'ann@example.test', '--password-stdin'], { stdin: 'the old password\n' })
  await run(['user', 'add', 'bob@example.test', '--password-stdin'], { stdin: "bob's own password\n" })
  await run(['staff', 'add', 'acme', 'ann@example.test'])
  await run(['staff', 'add', 'acme', 'bob@example.test'])

  // A web session for each of the two.
  const engine = await openEngine(db)
  t.teardown(() => engine.close())
  const sessions = engine.sessions(clock)
  const [ann, bob] = [1, 2]
  await sessions.create(1, ann)
  await sessions.create(1, ann)
  await sessions.create(1, bob)

  const given = await run(['user', 'set-password', 'ANN@example.test', '--password-stdin'], { stdin: 'a brand new password\n' })
  t.same(given, { code: 0, stdout: 'password of ann@example.test set; 2 web sessions ended\n', stderr: '' })
  const hash = async (email: string) => (await query<{ password_hash: string }>(`SELECT password_hash FROM users WHERE email = '${email}'`))[0]!.password_hash
  t.ok(await verifyPassword(await hash('ann@example.test'), 'a brand new password'), 'the new password is hers')
  t.notOk(await verifyPassword(await hash('ann@example.test'), 'the old password'), 'the old one no longer is')
  t.equal(await sessions.activeCount(ann), 0, "her sessions ended: whoever held one signs in again")
  t.equal(await sessions.activeCount(bob), 1, "Bob's session is his own and stays")
  t.ok(await verifyPassword(await hash('bob@example.test'), "bob's own password"), "Bob's password is untouched")

  const random = await run(['user', 'set-password', 'ann@example.test'])
  t.equal(random.code, 0)
  const shown = /^password of ann@example\.test set to ([\w-]{20}) \(shown once\); 0 web sessions ended\n$/.exec(random.stdout)
  t.ok(shown, 'a random password, printed once')
  t.ok(await verifyPassword(await hash('ann@example.test'), shown![1]!), 'and it is the one set')

  await sessions.create(1, ann)
  t.match((await run(['user', 'set-password', 'ann@example.test'])).stdout, /; 1 web session ended\n$/, 'one session, said so')
  // An event from the pages, with its address: the text names it, and who did it, in words.
  await engine.securityLog(clock).append({ userId: ann, siteId: 1, kind: 'sign_in_succeeded', address: '203.0.113.9', actor: 'page' })

  const log = await run(['security-log', 'acme', '--user', 'ann@example.test'])
  const lines = log.stdout.split('\n').filter(Boolean)
  t.equal(lines[0], '2026-03-01 12:00 UTC\tann@example.test\tSigned in\t203.0.113.9\ton the pages\t', 'newest first, in words, her email, the page\'s time')
  t.equal(lines[1], '2026-03-01 12:00 UTC\tann@example.test\tPassword set\t-\tby the command line\t')
  t.equal(lines.filter((line) => line.includes('\tPassword set\t')).length, 3, 'once per change')
  const json = JSON.parse((await run(['security-log', 'acme', '--user', 'ann@example.test', '--json'])).stdout) as Array<{ kind: string; user_id: number }>
  t.match(json[1], { kind: 'password_set', user_id: ann, actor: 'cli' }, '--json keeps the codes and ids')

  const before = await hash('ann@example.test')
  t.same(await run(['user', 'set-password', 'nobody@example.test', '--password-stdin'], { stdin: 'long enough password\n' }), {
    code: 1,
    stdout: '',
    stderr: 'service-desk: there is no user "nobody@example.test"\n',
  })
  t.same(await run(['user', 'set-password', 'ann@example.test', '--password-stdin'], { stdin: 'short\n' }), {
    code: 1,
    stdout: '',
    stderr: 'service-desk: a password must be at least 8 characters\n',
  })
  t.equal(await hash('ann@example.test'), before, 'a refused change changed nothing')
  t.same(env.SERVICE_DB, db)
})

t.test('the sign-in page says who can reset a forgotten password', async (t) => {
  const { app } = await buildTestApp(t)
  await personWithPassword(app)
  const page = await webClient(app).get('/demo/login')
  t.equal(page.statusCode, 200)
  t.match(page.body, /<a href="[^"]*\/login\/forgot">Forgot your password\?<\/a>/)
})

t.test('a database address of another kind is refused with one line, and nothing is made', { skip: SQLITE_ONLY }, async (t) => {
  const { run, dir } = await cliRunner(t)
  const cases: Array<[string, string]> = [
    ['mysql://localhost/db', "service-desk: --db is a mysql: address; a database is a SQLite file's path or a postgres:// (or postgresql://) address\n"],
    ['sqlite:./data/service.db', "service-desk: --db is a sqlite: address; give the SQLite file's path alone (./data/service.db)\n"],
    ['file:///srv/desk.db', "service-desk: --db is a file: address; give the SQLite file's path alone (/srv/desk.db)\n"],
    ['sqlite:', "service-desk: --db is a sqlite: address; give the SQLite file's path alone (./data/service.db)\n"],
    ['postgres://[oops', 'service-desk: --db is not a PostgreSQL address this service can read: postgres://user:password@host:5432/database\n'],
  ]
  const cwd = readdirSync('.')
  for (const [address, line] of cases) {
    t.same(await run(['site', 'list', '--db', address]), { code: 2, stdout: '', stderr: line }, address)
  }
  t.same(await run(['site', 'list'], { env: { SERVICE_DB: 'mysql://localhost/db' } }), {
    code: 2,
    stdout: '',
    stderr: "service-desk: SERVICE_DB is a mysql: address; a database is a SQLite file's path or a postgres:// (or postgresql://) address\n",
  })
  t.same(readdirSync('.'), cwd, 'no file or folder was made under a strange name')
  t.same(readdirSync(dir), ['service.db'], 'nor anywhere else: only the runner\'s own database is there')
})

t.test('only serve, migrate and site add make a database that is not there', { skip: SQLITE_ONLY }, async (t) => {
  const { run, dir } = await cliRunner(t)
  const missing = join(dir, 'typo.db')
  for (const argv of [['site', 'list'], ['token', 'list', 'demo'], ['security-log', 'demo'], ['category', 'list', 'demo'], ['user', 'set-password', 'a@b.test'], ['seed', 'demo', '--discussions', '1']]) {
    t.same(
      await run([...argv, '--db', missing]),
      { code: 2, stdout: '', stderr: `service-desk: there is no database at ${missing} (${resolve(missing)}): check --db or SERVICE_DB; nothing was created\n` },
      argv.join(' '),
    )
  }
  t.same(readdirSync(dir), ['service.db'], 'neither the file nor a key file')

  const made = join(dir, 'new', 'desk.db')
  t.same(await run(['site', 'add', 'acme', '--db', made]), { code: 0, stdout: 'site acme created ("acme") with the category General (id 1); add more with: service-desk category add acme NAME\n', stderr: `service-desk: made a new database at ${made}\n` })
  t.same(await run(['site', 'list', '--db', made]), { code: 0, stdout: 'acme\tacme\n', stderr: '' }, 'then it is read')
  t.equal((await run(['site', 'add', 'other', '--db', made])).stderr, '', 'said once, when made')

  const migrated = join(dir, 'migrated.db')
  const first = await run(['migrate', '--db', migrated])
  t.equal(first.code, 0)
  t.equal(first.stderr, `service-desk: made a new database at ${migrated}\n`)
  t.ok(existsSync(migrated))
})

t.test('help: for every command and group, two ways; each option with its meaning, default and variable', async (t) => {
  const { run } = await cliRunner(t)
  const group = await run(['token', '--help'])
  t.equal(group.code, 0)
  t.match(group.stdout, /^Usage: service-desk token <command> \[options\]\n\nCommands:\n {2}token create <site> <email> --name TEXT/)
  t.match(group.stdout, /\n {2}token list <site> \[<email>\]\n {6}One line per token/)
  t.match(group.stdout, /\n {2}token revoke <site> <id>\n/)
  t.same(await run(['help', 'token']), group, 'help <group> is the same')
  t.same(await run(['site', '-h']), await run(['help', 'site']))

  const own = await run(['token', 'create', '--help'])
  t.same(await run(['help', 'token', 'create']), own, 'help <command> is <command> --help')
  t.match(own.stdout, /\n {2}--access read\|write +read only, or read and write \(default: read\)\n/, "least access by default, as on the token page")
  t.match(own.stdout, /\n {2}--expires DAYS +days until it expires: 7, 30, 90, 365 \(default: 90\)\n/)
  t.match(own.stdout, /\n {2}--db ADDRESS +the database: a SQLite file's path, or a postgres:\/\/ address \(which needs\n +SERVICE_SECRET\) \(default: \.\/data\/service\.db; environment: SERVICE_DB\)\n/)
  t.match(own.stdout, /\n {2}-h, --help +this help\n/)

  const serve = (await run(['serve', '--help'])).stdout
  t.match(serve, /\n {2}--port N +TCP port to listen on \(default: 3000; environment: PORT\)\n/, "serve's options from the settings table")
  t.match(serve, /\n {2}--log-level LEVEL +trace, debug, info, warn, error, fatal or silent;/)
  t.match(serve, /environment: SERVICE_MAX_CONNECTIONS_PER_ADDRESS\)/)

  t.same((await run(['help'])).stdout, (await run(['--help'])).stdout, 'help alone is the overview')
  t.match((await run(['--help'])).stdout, /service-desk <command> --help \(or service-desk help <command>\)/)
})

t.test('a slip gets one line with the closest known word, exit 2', async (t) => {
  const { run } = await cliRunner(t)
  const cases: Array<[string[], string]> = [
    [['token', 'create', 'acme', 'a@b.test', '--name', 'x', '--acess', 'read'], 'service-desk: unknown option --acess; did you mean --access? (service-desk token create --help lists them)\n'],
    [['site', 'list', '--jsn'], 'service-desk: unknown option --jsn (service-desk site list --help lists them; a value that begins with - goes after --)\n'],
    [['token', 'create', 'acme', 'a@b.test', '--name'], 'service-desk: --name needs a value (service-desk token create --help)\n'],
    [['site', 'list', '--help=yes'], 'service-desk: --help takes no value (service-desk site list --help)\n'],
    [['tokn', 'list', 'acme'], 'service-desk: unknown command "tokn list acme"; did you mean "token list"? run service-desk --help\n'],
    [['token', 'lst'], 'service-desk: unknown command "token lst"; did you mean "token list"? run service-desk --help\n'],
    [['token'], 'service-desk: token needs one of: create, list, revoke (service-desk token --help)\n'],
    [['help', 'nothing'], 'service-desk: unknown command "nothing"; run service-desk --help\n'],
  ]
  for (const [argv, line] of cases) t.same(await run(argv), { code: 2, stdout: '', stderr: line }, argv.join(' '))
})
