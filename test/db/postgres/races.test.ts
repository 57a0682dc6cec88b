import t, { type Test } from 'tap'
import { sql } from '../../../db/drizzle.ts'
import { openPostgres, type PgDb } from '../../../db/postgres/client.ts'
import { postgresEngine, postgresPort } from '../../../db/postgres/engine.ts'
import { users as usersTable } from '../../../db/schema/postgres.ts'
import type { Executor } from '../../../db/port.ts'
import { createAuthors } from '../../../db/stores/discussion-authors.ts'
import { insertUser } from '../../../db/stores/users.ts'
import { StoreError } from '../../../db/stores/errors.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// What only PostgreSQL can get wrong: two processes (here two pools on one schema) naming one new
// address at the same moment. Each race is made to happen, not hoped for: one transaction holds its
// new account uncommitted, and the other is seen waiting on it before the first ends.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

const box = createSecretBox('races test key')
const clock = () => Date.UTC(2024, 0, 15, 9, 0, 0)

/** Two processes' pools on one new schema, a site and its supporter. */
async function setup(t: Test) {
  const address = await postgresTestAddress(t)
  const [one, two] = [await openPostgres(address, { poolSize: 3 }), await openPostgres(address, { poolSize: 3 })]
  t.teardown(() => Promise.all([one.$client.end(), two.$client.end()]))
  const engine = postgresEngine(one)
  const site = await engine.sites(clock).add('demo')
  const users = engine.users(clock, box)
  const ann = await users.insert({ email: 'ann@example.test' }, null)
  await users.addStaff(site.id, ann.id)
  return { one, two, site, ann, users }
}

/** The server process of a transaction, asked inside it. */
async function backend(q: Executor): Promise<number> {
  const { rows } = await q.execute<{ pid: number }>(sql`SELECT pg_backend_pid() AS pid`)
  return rows[0]!.pid
}

/** Resolves once the server process `pid` waits on a lock another transaction holds. */
async function blocked(db: PgDb, pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.$client.query<{ waiting: boolean }>('SELECT cardinality(pg_blocking_pids($1)) > 0 AS waiting', [pid])
    if (rows[0]!.waiting) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A promise and its resolve, to hold a transaction open until the test says. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

async function accounts(db: PgDb, email: string): Promise<number> {
  const { rows } = await db.$client.query<{ n: number }>('SELECT count(*)::integer AS n FROM users WHERE email_key = $1', [email.toLowerCase()])
  return rows[0]!.n
}

t.test('a post on behalf of a new address while another process makes that account: both name the one account', options, async (t) => {
  const { one, two, site, ann } = await setup(t)
  const authorOf = createAuthors(clock, box)
  const posted = (email: string) => ({ supporterId: ann.id, onBehalfOf: { email, name: 'Nia' } })

  const hold = gate()
  const made = gate()
  const first = one.transaction(async (tx) => {
    const author = await authorOf(postgresPort(tx), site.id, posted('Nia@Example.test'))
    made.open()
    await hold.opened
    return author
  })
  // The first has made the account and holds it uncommitted; the second cannot see it yet.
  await made.opened
  let secondPid = 0
  const second = two.transaction(async (tx) => {
    secondPid = await backend(tx)
    const author = await authorOf(postgresPort(tx), site.id, posted('nia@example.test'))
    // The transaction is still usable after the insert that ON CONFLICT turned down.
    await tx.execute(sql`SELECT 1`)
    return author
  })
  while (secondPid === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  await blocked(two, secondPid)
  hold.open()
  const [a, b] = await Promise.all([first, second])
  t.same(a, b, 'the same author for both posts')
  t.equal(a.bySupporter, false)
  t.equal(await accounts(one, 'nia@example.test'), 1, 'one account')
  const { rows } = await one.$client.query('SELECT role FROM memberships WHERE user_id = $1 AND site_id = $2', [a.id, site.id])
  t.same(rows, [{ role: 'customer' }], 'a customer of the site, once')
})

t.test('the same race when the first process rolls back: the second makes the account', options, async (t) => {
  const { one, two, site, ann } = await setup(t)
  const authorOf = createAuthors(clock, box)
  const posted = { supporterId: ann.id, onBehalfOf: { email: 'kai@example.test' } }

  const hold = gate()
  const made = gate()
  const first = one
    .transaction(async (tx) => {
      await authorOf(postgresPort(tx), site.id, posted)
      made.open()
      await hold.opened
      tx.rollback()
    })
    .catch((e: unknown) => e)
  await made.opened
  let secondPid = 0
  const second = two.transaction(async (tx) => {
    secondPid = await backend(tx)
    return authorOf(postgresPort(tx), site.id, posted)
  })
  while (secondPid === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  await blocked(two, secondPid)
  hold.open()
  t.match(await first, { message: 'Rollback' })
  const author = await second
  t.equal(await accounts(one, 'kai@example.test'), 1)
  const { rows } = await one.$client.query('SELECT id FROM users WHERE email_key = $1', ['kai@example.test'])
  t.same(rows, [{ id: author.id }], "the account is the second's own")
})

t.test('many posts on behalf of one new address, on many sites, from two processes at once: one account', options, async (t) => {
  const { one, two, site, ann, users } = await setup(t)
  const engines = [postgresEngine(one), postgresEngine(two)]
  const sites = [site, ...(await Promise.all([1, 2, 3].map((i) => engines[0]!.sites(clock).add(`site-${i}`))))]
  for (const s of sites.slice(1)) await users.addStaff(s.id, ann.id)
  const categories = await Promise.all(sites.map((s) => engines[0]!.categories(clock).add(s.id, 'General', true)))
  // Each site's numbering lock orders the posts of one site; posts on different sites race freely.
  const created = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      engines[i % 2]!.discussions(clock, box).create({
        siteId: sites[i % 4]!.id,
        categoryId: categories[i % 4]!.id,
        title: `t${i}`,
        body: 'b',
        supporterId: ann.id,
        onBehalfOf: { email: i % 3 ? 'Lee@example.test' : 'lee@EXAMPLE.test' },
        via: 'api',
      }),
    ),
  )
  t.equal(new Set(created.map((c) => c.discussion.authorId)).size, 1, 'one author')
  t.equal(await accounts(one, 'lee@example.test'), 1, 'one account')
  for (const s of sites) t.equal(await users.role(s.id, created[0]!.discussion.authorId), 'customer', `a customer of ${s.permalink}`)
})

/**
 * The executor `q` with a step run just before and just after its next insert into users: what
 * another process might do at that moment, placed there exactly.
 */
function aroundUserInsert(q: Executor, before: (values: Record<string, unknown>) => Promise<void>, after: () => Promise<void>): Executor {
  return new Proxy(q, {
    get(target, key, receiver) {
      const member = Reflect.get(target, key, receiver) as unknown
      if (key !== 'insert') return member
      return (table: unknown) => {
        const builder = target.insert(table as typeof usersTable)
        if (table !== usersTable) return builder
        const values = builder.values.bind(builder)
        builder.values = ((row: Record<string, unknown>) => {
          const query = values(row as never)
          const execute = query.execute.bind(query)
          query.execute = (async (...args: Parameters<typeof execute>) => {
            await before(row)
            try {
              return await execute(...args)
            } finally {
              await after()
            }
          }) as typeof execute
          return query
        }) as unknown as typeof builder.values
        return builder
      }
    },
  })
}

/** The same, as the port the stores take. */
const aroundUserInsertOn = (...args: Parameters<typeof aroundUserInsert>) => postgresPort(aroundUserInsert(...args))

t.test('an address taken at the moment of the insert and gone again before it is read: the conflict', options, async (t) => {
  const { one, two, site, ann } = await setup(t)
  const authorOf = createAuthors(clock, box)
  const other = postgresEngine(two).users(clock, box)
  const error = await one
    .transaction((tx) =>
      authorOf(
        aroundUserInsertOn(
          tx,
          async () => void (await other.insert({ email: 'max@example.test' }, null)),
          async () => void (await two.$client.query("DELETE FROM users WHERE email_key = 'max@example.test'")),
        ),
        site.id,
        { supporterId: ann.id, onBehalfOf: { email: 'max@example.test' } },
      ),
    )
    .catch((e: unknown) => e)
  t.ok(error instanceof StoreError)
  t.match(error, { code: 'conflict', field: 'email', message: 'a user with the email "max@example.test" already exists' })
  t.equal(await accounts(one, 'max@example.test'), 0, 'nothing was written')
})

t.test('a new account whose legacy token collides with another account\'s: the database\'s refusal, not a conflict of addresses', options, async (t) => {
  const { one, two } = await setup(t)
  const users = postgresEngine(one).users(clock, box)
  await users.insert({ email: 'zoe@example.test' }, null)
  // An insert, with another process giving an account the same fingerprint just before.
  const collided = await insertUser(
    aroundUserInsertOn(
      one,
      async (row) => {
        await two.$client.query('UPDATE users SET legacy_token_fingerprint = $1 WHERE email_key = $2', [row.legacyTokenFingerprint, 'zoe@example.test'])
      },
      async () => {},
    ),
    clock,
    box,
    { email: 'ada@example.test', name: 'Ada' },
    null,
  ).catch((e: unknown) => e)
  t.notOk(collided instanceof StoreError, 'not told as an address taken')
  t.match(collided, { cause: { code: '23505', constraint: 'users_legacy_token_unique' } })
  t.equal(await users.find('ada@example.test'), undefined, 'nothing was written')
})

t.test('a unique violation of the address that ON CONFLICT did not absorb is the conflict too', options, async (t) => {
  // PostgreSQL does not raise one on the arbiter index of ON CONFLICT itself, however the
  // inserts race (the tests above); a trigger that writes the address again is how one is made.
  const { one } = await setup(t)
  await one.$client.query(`
    CREATE FUNCTION twice() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF pg_trigger_depth() = 1 THEN
        INSERT INTO users (email, email_key, name, created_at) VALUES (NEW.email, NEW.email_key, NEW.name, NEW.created_at);
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER twice AFTER INSERT ON users FOR EACH ROW WHEN (NEW.email_key = 'eve@example.test') EXECUTE FUNCTION twice();
  `)
  const users = postgresEngine(one).users(clock, box)
  const error = await users.insert({ email: 'eve@example.test' }, null).catch((e: unknown) => e)
  t.ok(error instanceof StoreError)
  t.match(error, { code: 'conflict', field: 'email', message: 'a user with the email "eve@example.test" already exists' })
  t.equal(await accounts(one, 'eve@example.test'), 0, 'nothing was written')
})

t.test('a post on behalf of a new address that fails for another reason: that failure, not a search for the account', options, async (t) => {
  const { one, two, site, ann, users } = await setup(t)
  const authorOf = createAuthors(clock, box)
  // Another account given the new one's legacy-token fingerprint at the moment of the insert.
  const error = await one
    .transaction((tx) =>
      authorOf(
        aroundUserInsertOn(
          tx,
          async (row) => void (await two.$client.query('UPDATE users SET legacy_token_fingerprint = $1 WHERE id = $2', [row.legacyTokenFingerprint, ann.id])),
          async () => {},
        ),
        site.id,
        { supporterId: ann.id, onBehalfOf: { email: 'bo@example.test' } },
      ),
    )
    .catch((e: unknown) => e)
  t.notOk(error instanceof StoreError)
  t.match(error, { cause: { code: '23505', constraint: 'users_legacy_token_unique' } })
  t.equal(await users.find('bo@example.test'), undefined, 'nothing was written')
})

t.test('two first runs at once, the second past its look for a site before the first commits: one bootstraps, the other writes nothing', options, async (t) => {
  const address = await postgresTestAddress(t)
  const [one, two] = [await openPostgres(address, { poolSize: 3 }), await openPostgres(address, { poolSize: 3 })]
  t.teardown(() => Promise.all([one.$client.end(), two.$client.end()]))
  // The first insert of a site holds its transaction open a moment: the other has looked by then.
  await one.$client.query(`
    CREATE FUNCTION linger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
    CREATE TRIGGER linger AFTER INSERT ON sites FOR EACH ROW EXECUTE FUNCTION linger();
  `)
  const runs = await Promise.all([postgresEngine(one).bootstrapFirstRun(clock, box), postgresEngine(two).bootstrapFirstRun(clock, box)])
  t.equal(runs.filter((run) => run !== null).length, 1, 'one first run')
  const { rows } = await one.$client.query<{ sites: number; users: number }>('SELECT (SELECT count(*)::integer FROM sites) AS sites, (SELECT count(*)::integer FROM users) AS users')
  t.same(rows[0], { sites: 1, users: 2 }, 'one demo site, its supporter and the welcome customer: nothing of the other')
})

t.test('inside a transaction of the engine, the listing reads on that transaction: it sees what it wrote, with one connection', options, async (t) => {
  const engine = postgresEngine(await openPostgres(await postgresTestAddress(t), { poolSize: 1 }))
  t.teardown(() => engine.close())
  const first = (await engine.bootstrapFirstRun(clock, box))!
  const stuck = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the listing waits for a second connection')), 5_000).unref())
  const total = await Promise.race([
    engine.atomic(async (stores) => {
      const discussions = stores.discussions(clock, box)
      const [category] = (await stores.categories(clock).list(first.site.id, 0, 1)).categories
      const supporter = (await stores.users(clock, box).find(first.email))!
      await discussions.create({ siteId: first.site.id, categoryId: category!.id, title: 'Inside', body: 'b', supporterId: supporter.id, via: 'api' })
      return (await discussions.list({ siteId: first.site.id, state: 'live', sort: 'activity', since: { kind: 'number', after: 0 }, offset: 0, limit: 30 })).total
    }),
    stuck,
  ])
  t.equal(total, 2, 'the welcome discussion and the one just written, uncommitted')
})
