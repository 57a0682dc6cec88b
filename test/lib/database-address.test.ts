import t from 'tap'
import { isPostgresAddress, parsePostgresAddress, redactPostgresAddress } from '../../lib/database-address.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// SERVICE_DB is a SQLite file or a PostgreSQL address (docs/decisions.md, "PostgreSQL"): which one,
// the schema an address names, and the address as logs and messages show it.

t.test('a postgres:// or postgresql:// address, in any case, is PostgreSQL; anything else a SQLite file', async (t) => {
  for (const address of ['postgres://h/db', 'postgresql://u:p@h:5432/db', 'POSTGRES://h/db', 'PostgreSQL://h/db']) t.ok(isPostgresAddress(address), address)
  for (const file of ['./data/service.db', ':memory:', 'postgres.db', '/srv/postgres://x', 'postgres:/h/db', 'mysql://h/db']) t.notOk(isPostgresAddress(file), file)
})

t.test('?schema= names the schema, public by default, and is taken out of what the driver gets', async (t) => {
  t.same(parsePostgresAddress('postgres://u:p@h:5432/db'), { connectionString: 'postgres://u:p@h:5432/db', schema: 'public' })
  t.same(parsePostgresAddress('postgres://u:p@h:5432/db?schema=help_desk2&sslmode=require'), {
    connectionString: 'postgres://u:p@h:5432/db?sslmode=require',
    schema: 'help_desk2',
  })
  t.same(parsePostgresAddress(`postgres://h/db?schema=_${'a'.repeat(62)}`).schema, `_${'a'.repeat(62)}`, '63 characters, PostgreSQL\'s longest name')
})

t.test('a schema name that is not plain lower-case letters, digits and _ is refused before any connection', async (t) => {
  // The name goes into CREATE SCHEMA and search_path as it is, so nothing that needs quoting passes.
  for (const name of ['Help', '2desk', 'help-desk', 'a"; DROP SCHEMA public; --', 'help desk', '', 'é', `a${'b'.repeat(63)}`]) {
    t.throws(
      () => parsePostgresAddress(`postgres://h/db?schema=${encodeURIComponent(name)}`),
      { message: `the schema "${name}" must be lower-case letters, digits and _ (at most 63)` },
      JSON.stringify(name),
    )
  }
  t.throws(() => parsePostgresAddress('postgres://[not an address'), { code: 'ERR_INVALID_URL' })
})

t.test('the address shown in logs and messages has its password hidden', async (t) => {
  t.equal(redactPostgresAddress('postgres://desk:s3cret@db.example.com:5432/desk?schema=help'), 'postgres://desk:***@db.example.com:5432/desk?schema=help')
  t.equal(redactPostgresAddress('postgres://desk@db.example.com/desk'), 'postgres://desk@db.example.com/desk', 'no password, nothing to hide')
  t.equal(redactPostgresAddress('postgresql://:only%20password@h/db'), 'postgresql://:***@h/db')
  const broken = redactPostgresAddress('postgres://desk:s3cret@[broken/desk')
  t.equal(broken, 'postgres://(an address that does not parse)')
  t.notMatch(broken, 's3cret', 'an address that does not parse is never echoed')
})
