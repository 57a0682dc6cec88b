import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import { postgresFix } from '../../cli/faults.ts'
import { main } from '../../cli/main.ts'
import { listeningAt, servingLine } from '../../cli/serve.ts'
import { loadConfig } from '../../config.ts'
import { testClock } from '../fixtures/clock.ts'
import { POSTGRES_URL, TEST_ENGINE } from '../fixtures/postgres.ts'

// Engines: both: the real PostgreSQL server's refusals and the fixes said for them.
// Issue 31, item 6: a PostgreSQL refusal with a known fix says it, on the real server: a role that
// may not create the service's schema, a database not made yet, a role not made yet. The same for a
// command and for serve, which open the database by different paths.

const server = new URL(POSTGRES_URL)
const address = (role: string, database: string, schema = 'x') => `postgres://${role}@${server.host}/${database}?schema=${schema}`

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

async function run(argv: string[]) {
  let stderr = ''
  const env = { SERVICE_SECRET: randomBytes(32).toString('hex') }
  const code = await main(argv, { stdout: () => {}, stderr: (text) => void (stderr += text), env, readStdin: async () => '', clock: testClock() })
  return { code, stderr }
}

t.test('a refusal with a known fix says the fix', { skip: TEST_ENGINE !== 'postgres' && 'the PostgreSQL pass runs it' }, async (t) => {
  const role = `sd_${randomBytes(4).toString('hex')}`
  const database = server.pathname.slice(1)
  await admin(`CREATE ROLE ${role} LOGIN`)
  t.teardown(() => admin(`DROP ROLE IF EXISTS ${role}`))

  const noRights = address(role, database)
  const fix = `. The role ${role} must own the database ${database}, or have CREATE on it, to make the service's schema; as a superuser: ` +
    `ALTER DATABASE "${database}" OWNER TO "${role}"; (or GRANT CREATE ON DATABASE "${database}" TO "${role}";)\n`
  t.same(await run(['migrate', '--db', noRights]), {
    code: 1,
    stderr: `service-desk: cannot open the PostgreSQL database ${noRights}: permission denied for database ${database}${fix}`,
  }, 'a command')
  t.same(await run(['serve', '--db', noRights, '--port', '0']), { code: 1, stderr: `service-desk: permission denied for database ${database}${fix}` }, 'serve')

  // A schema that another role owns: the fix is about the schema.
  const schema = `sd_owned_${randomBytes(4).toString('hex')}`
  await admin(`CREATE SCHEMA ${schema}; GRANT CREATE ON DATABASE "${database}" TO ${role}`)
  t.teardown(() => admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE; REVOKE CREATE ON DATABASE "${database}" FROM ${role}`))
  t.same(await run(['site', 'list', '--db', address(role, database, schema)]), {
    code: 1,
    stderr: `service-desk: cannot open the PostgreSQL database ${address(role, database, schema)}: permission denied for schema ${schema}. The role ${role} must own the schema ${schema} to make the service's tables in it; as a superuser: ALTER SCHEMA "${schema}" OWNER TO "${role}";\n`,
  })

  const missing = `sd_missing_${randomBytes(4).toString('hex')}`
  t.same(await run(['migrate', '--db', address('postgres', missing)]), {
    code: 1,
    stderr:
      `service-desk: cannot open the PostgreSQL database ${address('postgres', missing)}: database "${missing}" does not exist. ` +
      `Create it first, owned by the service's role: createdb --owner=postgres ${missing} (in psql: CREATE DATABASE "${missing}" OWNER "postgres";)\n`,
  })
  const nobody = `sd_nobody_${randomBytes(4).toString('hex')}`
  t.same(await run(['migrate', '--db', address(nobody, database)]), {
    code: 1,
    stderr:
      `service-desk: cannot open the PostgreSQL database ${address(nobody, database)}: role "${nobody}" does not exist. ` +
      `Create the role first: createuser --pwprompt ${nobody} (in psql: CREATE ROLE "${nobody}" LOGIN PASSWORD '...';)\n`,
  })
  t.same(await run(['migrate', '--db', 'postgres://127.0.0.1:1/x']), { code: 1, stderr: 'service-desk: cannot open the PostgreSQL database postgres://127.0.0.1:1/x: connect ECONNREFUSED 127.0.0.1:1\n' }, 'no fix to say: none said')
})

t.test('the fix names what the address names, and nothing for what it cannot read', async (t) => {
  const refused = (code: string, message = 'permission denied for database desk') => Object.assign(new Error(message), { code })
  t.equal(postgresFix(refused('42501'), 'postgres://db.internal/desk'), ' The role ROLE must own the database desk, or have CREATE on it, to make the service\'s schema; as a superuser: ALTER DATABASE "desk" OWNER TO "ROLE"; (or GRANT CREATE ON DATABASE "desk" TO "ROLE";)', 'no role in the address: a placeholder')
  t.match(postgresFix(refused('3D000'), 'postgres://desk@db.internal'), /createdb --owner=desk desk /, 'no database in the address: the role\'s name, as PostgreSQL takes it')
  t.match(postgresFix(refused('42501', 'permission denied for schema public'), 'postgres://desk@db.internal/desk'), /ALTER SCHEMA "public" OWNER TO "desk";$/, 'no schema in the address: public')
  t.match(postgresFix(new Error('wrapped', { cause: refused('3D000') }), 'postgres://desk@h/d'), /^ Create it first/, 'the refusal a wrapper carries')
  t.equal(postgresFix(refused('57P01'), 'postgres://desk@h/d'), '', 'a refusal without a known fix')
  t.equal(postgresFix(new Error('no code'), 'postgres://desk@h/d'), '', 'not a PostgreSQL refusal')
  t.equal(postgresFix(refused('42501'), undefined), '', 'no address')
  t.equal(postgresFix(refused('42501'), './data/service.db'), '', 'a SQLite file')
  t.equal(postgresFix(refused('42501'), 'postgres://[oops'), '', 'an address that does not parse')
})

t.test('the start line: the first site, how many more, and a PostgreSQL address without its password', async (t) => {
  const config = loadConfig({ env: { SERVICE_DB: 'postgres://desk:hunter2@db.internal/desk', SERVICE_SECRET: 'k'.repeat(40) }, flags: {}, openFiles: 1024 })
  t.equal(listeningAt({ address: '::1', family: 'IPv6', port: 3000 }), 'http://[::1]:3000', 'an IPv6 address in brackets')
  const line = (permalinks: string[]) => servingLine(config, 'http://127.0.0.1:3000', permalinks, false)
  t.match(line([]), 'the API at http://localhost:3000/<site>, the supporter pages at http://localhost:3000/<site>/login; database postgres://desk:***@db.internal/desk\n')
  t.match(line(['acme', 'beta']), '/acme/login (and 1 more site); database')
  t.match(line(['acme', 'beta', 'gamma']), '/acme/login (and 2 more sites); database')
  t.notMatch(line(['acme']), 'hunter2')
})
