import { Socket } from 'node:net'
import t from 'tap'
import { sql } from '../../../db/drizzle.ts'
import { openPostgres } from '../../../db/postgres/client.ts'
import { ABORTED, postgresPort } from '../../../db/postgres/engine.ts'
import { lastly, lastlyNow, namedStatement, STATEMENT_NAME_MOST, together, type StorePort } from '../../../db/port.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'
import { tcpProxy } from '../../fixtures/tcp-proxy.ts'
import { until } from '../../fixtures/until.ts'

// Engines: both: it is about PostgreSQL's connections alone, so it runs in the PostgreSQL pass alone.
// A transaction on the pool gives its connection back whatever happens (db/postgres/engine.ts,
// pooledTransaction): drizzle's own kept it lent for good when BEGIN failed, and a pool that lost
// every connection so answered no one until the process restarted. A pool of one connection, behind
// a proxy of the test's (test/fixtures/tcp-proxy.ts) that makes the network's bad moments, shows it.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)

/** The server process a transaction runs on. */
const backendOf = (port: StorePort) => port.atomic(async (tx) => (await tx.db.execute(sql`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid as number)

t.test('BEGIN unanswered, a work that fails, a connection cut mid-work: a pool of one serves again each time', { skip: down }, async (t) => {
  const real = new URL(POSTGRES_URL)
  const proxy = await tcpProxy(t, { host: real.hostname, port: Number(real.port || 5432) })
  const through = new URL(await postgresTestAddress(t))
  through.host = `127.0.0.1:${proxy.port}`
  // A statement has 300 ms (the client gives up 1 s after); waiting for a connection, 2 s.
  const db = await openPostgres(through.toString(), { poolSize: 1, statementTimeoutMs: 300, connectTimeoutMs: 2_000 })
  t.teardown(() => db.$client.end())
  const port = postgresPort(db)
  const first = await backendOf(port)

  // A work that fails on its own terms: rolled back, and the connection, as good as before, is kept.
  await t.rejects(port.atomic(async (tx) => {
    await tx.db.execute(sql`SELECT 1`)
    throw new Error('not this one')
  }), { message: 'not this one' })
  t.equal(await backendOf(port), first, 'the same connection serves the next transaction')

  // Every byte of the open connection dropped: its BEGIN is never answered, and fails past the deadline.
  proxy.set('silence')
  await t.rejects(port.atomic(async () => t.fail('the work of a transaction that did not begin')), { message: /^Failed query: begin/, cause: { message: /timeout/i } })
  proxy.set('pass')
  const second = await backendOf(port)
  t.not(second, first, 'served by a new connection: the silent one was given back, destroyed, not kept lent')

  // Cut while its work runs: the work's statement and the rollback fail; the connection is dropped, not lent again.
  await t.rejects(port.atomic(async (tx) => {
    proxy.set('sever')
    await tx.db.execute(sql`SELECT 1`)
  }))
  proxy.set('pass')
  const third = await backendOf(port)
  t.not(third, second, 'a new connection again')
  t.equal(db.$client.totalCount, 1, 'and the pool holds one, as it may')
})

t.test("a statement is built once on the pool, and a transaction runs it on its own connection", { skip: down }, async (t) => {
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 3 })
  t.teardown(() => db.$client.end())
  const port = postgresPort(db)
  await db.execute(sql`CREATE TABLE prepared_probe (n integer NOT NULL)`)
  let builds = 0
  // What the statement sees, and on which server process it runs.
  const probe = (on: StorePort) =>
    on.prepared('prepared_probe', (q) => {
      builds++
      return q.select({ count: sql<number>`count(*)::int`, pid: sql<number>`pg_backend_pid()` }).from(sql`prepared_probe`).prepare('prepared_probe')
    })
  const read = async (on: StorePort) => (await probe(on).execute())[0]!

  await port.atomic(async (tx) => {
    await tx.db.execute(sql`INSERT INTO prepared_probe VALUES (1)`)
    const inside = await read(tx)
    t.equal(inside.count, 1, "the transaction's statement sees its own row, not yet committed")
    t.equal(inside.pid, (await tx.db.execute(sql`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid, "it runs on the transaction's connection")
    // Another connection of the pool, at the same moment, does not see it: the pool's own statement.
    t.equal((await read(port)).count, 0, 'the pool outside sees nothing uncommitted')
    await tx.atomic(async (savepoint) => t.equal((await read(savepoint)).count, 1, 'a savepoint runs it on the same connection'))
  })
  await port.atomic(async (tx) => t.equal((await read(tx)).count, 1, 'a later transaction sees the commit'))
  t.equal(builds, 1, 'built once, for the pool, whatever the transactions that ran it')

  // A statement that does not run on the pool (one made on a client of the test's) cannot be moved.
  const elsewhere = await openPostgres(await postgresTestAddress(t), { poolSize: 1 })
  t.teardown(() => elsewhere.$client.end())
  await t.rejects(
    port.atomic(async (tx) => tx.prepared('prepared_elsewhere', () => elsewhere.select({ one: sql`1` }).from(sql`(select 1) one`).prepare('prepared_elsewhere'))),
    { message: "the statement prepared_elsewhere does not run on the pool's connections, so it cannot run on a transaction's" },
  )

  // PostgreSQL keeps 63 bytes of a name: two longer ones alike in those would be one statement on
  // the server and two to node-postgres (the second one's Parse fails as a duplicate). Refused.
  const named = (name: string) => port.prepared(name, (q) => q.select({ one: sql<number>`1` }).from(sql`(select 1) one`).prepare(name))
  t.same(await named('n'.repeat(63)).execute(), [{ one: 1 }], 'a name of 63 characters')
  t.throws(() => named('n'.repeat(64)), { message: `a statement's name has at most ${STATEMENT_NAME_MOST} characters: ${'n'.repeat(64)}` })
})

t.test('what waits for a commit runs after it, never after a rollback; what is kept is the pool\'s, whatever the transaction', { skip: down }, async (t) => {
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 2 })
  t.teardown(() => db.$client.end())
  const port = postgresPort(db)
  const ran: string[] = []
  const committed = port.atomic(async (tx) => {
    tx.onCommitted!(() => ran.push('the transaction'))
    await tx.atomic(async (savepoint) => savepoint.onCommitted!(() => ran.push('its savepoint')))
    await t.rejects(
      tx.atomic(async (savepoint) => {
        savepoint.onCommitted!(() => ran.push('a savepoint rolled back'))
        throw new Error('undone')
      }),
    )
    t.same(ran, [], 'nothing runs before the COMMIT')
    return 'done'
  })
  t.equal(await committed, 'done')
  t.same(ran, ['the transaction', 'its savepoint'], "after it, the transaction's own and its released savepoint's, in order; the rolled back savepoint's never")

  ran.length = 0
  await t.rejects(
    port.atomic(async (tx) => {
      tx.onCommitted!(() => ran.push('a transaction rolled back'))
      throw new Error('undone')
    }),
  )
  t.same(ran, [], 'a transaction that rolls back runs none of it')
  port.onCommitted!(() => ran.push('outside any transaction'))
  t.same(ran, ['outside any transaction'], 'outside one, at once')

  // A transaction opened elsewhere (a test's, the seeder's): its port cannot know when it commits.
  await db.transaction(async (tx) => postgresPort(tx).onCommitted!(() => ran.push('elsewhere')))
  t.same(ran, ['outside any transaction'], "on a transaction opened elsewhere, never")

  const made = () => new Map<number, string>()
  const kept = port.kept('probe', made)
  await port.atomic(async (tx) => t.equal(tx.kept('probe', made), kept, "a transaction's is the pool's"))
  t.equal(port.kept('probe', made), kept, 'made once, kept by its name')
})

t.test("a statement's failure caught by its work: the transaction fails rather than committing nothing in silence; caught in a savepoint, it commits", { skip: down }, async (t) => {
  // Through a proxy that delivers the server's ready-for-query apart from the rest of its answer:
  // node-postgres gives the failed statement its error before it knows the transaction aborted.
  const real = new URL(POSTGRES_URL)
  const proxy = await tcpProxy(t, { host: real.hostname, port: Number(real.port || 5432) })
  const through = new URL(await postgresTestAddress(t))
  through.host = `127.0.0.1:${proxy.port}`
  const db = await openPostgres(through.toString(), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  const port = postgresPort(db)
  await db.execute(sql`CREATE TABLE caught_probe (n integer PRIMARY KEY)`)
  proxy.set('split-answers')
  const rows = async () => (await db.execute(sql`SELECT n FROM caught_probe ORDER BY n`)).rows.map((row) => row.n)
  const duplicate = (on: StorePort) => on.db.execute(sql`INSERT INTO caught_probe VALUES (0), (0)`)

  // The server aborts the transaction at the failed statement and answers its COMMIT as a
  // ROLLBACK, without an error: before this, the transaction resolved 'made' with nothing written.
  let ran = false
  await t.rejects(
    port.atomic(async (tx) => {
      tx.onCommitted!(() => (ran = true))
      await tx.db.execute(sql`INSERT INTO caught_probe VALUES (1)`)
      await duplicate(tx).catch(() => 'a caller that goes on')
      return 'made'
    }),
    { message: ABORTED },
  )
  t.same(await rows(), [], 'nothing of it written')
  t.equal(ran, false, 'and what waits for its commit never runs')

  // The same with last statements queued: refused before they are sent, not failed by them.
  await t.rejects(
    port.atomic(async (tx) => {
      await lastly(tx, '0', () => tx.db.execute(sql`INSERT INTO caught_probe VALUES (2)`))
      await duplicate(tx).catch(() => undefined)
    }),
    { message: ABORTED },
  )
  t.same(await rows(), [], 'its last statements never written')

  // Caught around a savepoint, as the message says: the savepoint is undone, the rest commits.
  const made = await port.atomic(async (tx) => {
    await tx.db.execute(sql`INSERT INTO caught_probe VALUES (3)`)
    await t.rejects(tx.atomic((savepoint) => duplicate(savepoint)), { cause: { code: '23505' } })
    // Caught inside a savepoint's own work: that savepoint fails with the refusal, and is undone.
    await t.rejects(
      tx.atomic(async (savepoint) => {
        await savepoint.db.execute(sql`INSERT INTO caught_probe VALUES (4)`)
        await duplicate(savepoint).catch(() => undefined)
      }),
      { message: ABORTED },
    )
    return 'made'
  })
  t.equal(made, 'made')
  t.same(await rows(), [3], 'the transaction committed, without what its failed savepoints wrote')
  t.same((await db.execute(sql`SELECT 1 AS one`)).rows, [{ one: 1 }], 'and the pool of one serves again')

  // The connection cut while the ready-for-query is on its way: the transaction fails, it does not wait for good.
  await t.rejects(
    port.atomic(async (tx) => {
      await duplicate(tx).catch(() => proxy.set('sever'))
    }),
  )
  proxy.set('pass')
  t.same(await rows(), [3], 'nothing of it written')
})

t.test("a transaction's last statements: after its work, in their order, sent with its COMMIT; one that fails fails it, and a savepoint's its savepoint", { skip: down }, async (t) => {
  const address = await postgresTestAddress(t)
  const direct = await openPostgres(address, { poolSize: 2 })
  t.teardown(() => direct.$client.end())
  await direct.execute(sql`CREATE TABLE last_probe (id serial PRIMARY KEY, n integer NOT NULL)`)
  const real = new URL(POSTGRES_URL)
  const proxy = await tcpProxy(t, { host: real.hostname, port: Number(real.port || 5432) })
  const through = new URL(address)
  through.host = `127.0.0.1:${proxy.port}`
  const db = await openPostgres(through.toString(), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  const port = postgresPort(db)
  const probe = async () => (await direct.execute(sql`SELECT n FROM last_probe ORDER BY id`)).rows.map((row) => Number(row.n))
  const insert = (tx: StorePort) => tx.prepared('last_probe_insert', (db) => namedStatement(db, 'last_probe_insert', sql`INSERT INTO last_probe (n) VALUES (${sql.placeholder('n')})`))
  const add = (tx: StorePort, n: number | string) => () => insert(tx).execute({ n })

  // The server is answered nothing back once the work is done: only a client that sends the last
  // statements and the COMMIT without waiting for their answers has the transaction committed.
  const ran: string[] = []
  const committing = port.atomic(async (tx) => {
    await lastly(tx, 'b', add(tx, 2))
    await lastly(tx, 'a', add(tx, 1))
    tx.onCommitted!(() => ran.push('committed'))
    await add(tx, 0)()
    t.same(await probe(), [], 'nothing seen before the COMMIT')
    proxy.set('hold-answers')
  })
  const seen = await until('the transaction committed with no answer back', async () => {
    const rows = await probe()
    return rows.length >= 3 && rows
  }, 5_000, 20).catch((error: unknown) => {
    proxy.set('pass')
    throw error
  })
  t.same(seen, [0, 1, 2], 'committed while no answer has come back: the work\'s statement, then the last ones in their order')
  t.same(ran, [], 'what waits for the commit waits for its answer')
  proxy.set('pass')
  await committing
  t.same(ran, ['committed'])

  // A last statement that fails: the transaction is rolled back, with that statement's error.
  await direct.execute(sql`TRUNCATE last_probe`)
  ran.length = 0
  await t.rejects(
    port.atomic(async (tx) => {
      await add(tx, 0)()
      await lastly(tx, 'a', add(tx, 'not a number'))
      await lastly(tx, 'b', add(tx, 2))
      tx.onCommitted!(() => ran.push('committed'))
    }),
    { cause: { message: /invalid input syntax for type integer/ } },
  )
  t.same(await probe(), [], 'nothing of it stays')
  t.same(ran, [], 'and nothing that waited for its commit runs')

  // A savepoint's last statements are sent at its end: one that fails undoes the savepoint alone.
  await port.atomic(async (tx) => {
    await tx.atomic(async (savepoint) => lastly(savepoint, 'a', add(savepoint, 1)))
    await t.rejects(tx.atomic(async (savepoint) => {
      await add(savepoint, 3)()
      await lastly(savepoint, 'a', add(savepoint, 'not a number'))
    }), { cause: { message: /invalid input syntax for type integer/ } }, "the savepoint fails with its last statement's error")
    await lastly(tx, 'a', add(tx, 2))
  })
  t.same(await probe(), [1, 2], "the released savepoint's last statement and the transaction's; the failed savepoint's none")

  // Sent now when what follows needs them done; one that fails, thrown there.
  const failedNow = port.atomic(async (tx) => {
    await lastly(tx, 'a', add(tx, 4))
    await lastlyNow(tx)
    t.equal((await tx.db.execute(sql`SELECT n FROM last_probe WHERE n = 4`)).rows.length, 1, "sent now: the transaction's next statement sees it")
    await lastly(tx, 'a', add(tx, 'not a number'))
    await t.rejects(lastlyNow(tx), { cause: { message: /invalid input syntax for type integer/ } }, 'a failure of theirs, thrown where they are sent')
  })
  await t.rejects(failedNow, { message: ABORTED }, 'and the transaction, aborted by it and its failure caught, fails')
  t.same(await probe(), [1, 2], 'nothing of it stays')

  // One that awaits before it sends would go after the COMMIT: refused, and the transaction rolled back.
  await t.rejects(port.atomic(async (tx) => {
    await add(tx, 5)()
    await lastly(tx, 'a', async () => {
      await Promise.resolve()
      return tx.db.execute(sql`SELECT 1`)
    })
  }), { message: 'a last statement must be sent before its first await (db/port.ts, lastly)' })
  t.same(await probe(), [1, 2], 'nothing of it stays')

  // Outside a transaction of the pool, at once.
  await lastly(port, 'a', add(port, 9))
  await lastlyNow(port)
  t.same(await probe(), [1, 2, 9], 'on the pool, sent at once')
  await direct.execute(sql`DROP TABLE last_probe`)
})

t.test("a transaction's last statements and its COMMIT leave in one write to the socket, as statements sent together or now do", { skip: down }, async (t) => {
  const db = await openPostgres(await postgresTestAddress(t), { poolSize: 1 })
  t.teardown(() => db.$client.end())
  await db.execute(sql`CREATE TEMP TABLE IF NOT EXISTS last_writes (n integer)`)
  const port = postgresPort(db)
  type Chunks = Array<{ chunk: Buffer }>
  const { _writev: writev, _write: write } = Socket.prototype as unknown as { _writev(chunks: Chunks, done: () => void): void; _write(chunk: Buffer, encoding: string, done: () => void): void }
  const socket = Socket.prototype as unknown as { _writev: typeof writev; _write: typeof write }
  const unrecorded = () => Object.assign(socket, { _writev: writev, _write: write })
  t.teardown(unrecorded)
  /** Records each write to a socket, from now until `unrecorded`, in `writes`. */
  const recorded = (writes: string[]) => {
    socket._writev = function (this: Socket, chunks: Chunks, done: () => void) {
      writes.push(Buffer.concat(chunks.map((c) => c.chunk)).toString('latin1'))
      return writev.call(this, chunks, done)
    }
    socket._write = function (this: Socket, chunk: Buffer, encoding: string, done: () => void) {
      writes.push(chunk.toString('latin1'))
      return write.call(this, chunk, encoding, done)
    }
    return writes
  }
  const writes = recorded([])
  const insert = (tx: StorePort, n: number) => tx.prepared(`last_writes_${n}`, (db) => namedStatement(db, `last_writes_${n}`, sql`INSERT INTO last_writes (n) VALUES (${sql.raw(String(n))})`)).execute({})
  let between: string[] = []
  let answers: unknown[] = []
  await port.atomic(async (tx) => {
    await lastly(tx, 'a', () => insert(tx, 1))
    await lastly(tx, 'b', () => insert(tx, 2))
    await insert(tx, 0)
    writes.length = 0
    answers = await together(tx, () => insert(tx, 3), async () => (await tx.prepared('last_writes_count', (db) => namedStatement(db, 'last_writes_count', sql`SELECT count(*)::int AS n FROM last_writes`)).execute({})).rows[0])
    between = writes.splice(0)
  })
  unrecorded()
  t.equal(between.length, 1, 'statements sent together: one write')
  t.match(between[0], /VALUES \(3\)[\s\S]*count/, 'in their order')
  t.same(answers[1], { n: 2 }, 'run by the server one after the other: the second sees what the first wrote')
  t.equal(writes.length, 1, 'one write once the work is done')
  t.match(writes[0], /VALUES \(1\)[\s\S]*VALUES \(2\)[\s\S]*commit/i, 'with the last statements, in their order, and the COMMIT')

  // Sent now (lastlyNow), pipelined too: one write, not one statement queued behind the other.
  let now: string[] = []
  await port.atomic(async (tx) => {
    await lastly(tx, 'b', () => insert(tx, 5))
    await lastly(tx, 'a', () => insert(tx, 4))
    now = recorded([])
    await lastlyNow(tx)
    unrecorded()
  })
  t.equal(now.length, 1, 'statements sent now: one write')
  t.match(now[0], /VALUES \(4\)[\s\S]*VALUES \(5\)/, 'in their order')
})
