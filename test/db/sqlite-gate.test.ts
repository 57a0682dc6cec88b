import t from 'tap'
import { openDatabase } from '../../db/sqlite/client.ts'
import { GROUP_MOST, sqlitePort } from '../../db/sqlite/engine.ts'
import { Gate } from '../../db/sqlite/gate.ts'
import { sqliteStores } from '../fixtures/stores.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// One SQLite connection serves every request, and the stores await between their statements
// (db/sqlite/gate.ts): a transaction must have the connection alone while it is open. Each test
// has two parties, one of them trying to cross into the other's transaction.

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

function database() {
  const db = openDatabase(':memory:')
  db.$client.exec('CREATE TABLE notes (who TEXT NOT NULL)')
  const port = sqlitePort(db)
  const notes = () => db.$client.prepare('SELECT who FROM notes ORDER BY rowid').pluck().all()
  const note = (who: string) => db.$client.prepare('INSERT INTO notes (who) VALUES (?)').run(who)
  const guarded = port.guard({
    /** A store method of two statements with a pause between them. */
    async twice(who: string) {
      note(`${who} 1`)
      await tick()
      note(`${who} 2`)
    },
    async note(who: string) {
      note(who)
    },
    /** What a read sees, and whether a transaction is open on the connection as it runs. */
    async read() {
      return { rows: notes(), inTransaction: db.$client.inTransaction }
    },
    /** A store method that opens a transaction of its own. */
    atomically: (who: string) => port.atomic(async () => note(who)),
  })
  return { db, port, notes, note, guarded }
}

t.test("a write asked for while another request's transaction is open waits for it, and survives its rollback", async (t) => {
  const { port, notes, note, guarded } = database()
  const failed = port.atomic(async () => {
    note('A')
    await tick()
    await tick()
    throw new Error('A changes its mind')
  })
  await tick()
  // B arrives while A's transaction is open, between two of its statements.
  const written = guarded.note('B')
  await t.rejects(failed, { message: 'A changes its mind' })
  await written
  t.same(notes(), ['B'], "A's write is rolled back; B's, which waited, is kept")
})

t.test('a transaction waits for the store calls already running, and they finish outside it', async (t) => {
  const { port, notes, note, guarded } = database()
  const running = guarded.twice('share')
  const failed = port.atomic(async () => {
    note('tx')
    throw new Error('rolled back')
  })
  await running
  await t.rejects(failed)
  t.same(notes(), ['share 1', 'share 2'], 'the share finished before BEGIN, so the rollback did not take its second write')
})

t.test('a store method that opens a transaction does not wait on itself, even beside other calls', async (t) => {
  const { notes, guarded } = database()
  await Promise.all([guarded.twice('a'), guarded.atomically('tx'), guarded.twice('b')])
  t.same(notes().sort(), ['a 1', 'a 2', 'b 1', 'b 2', 'tx'])
})

t.test('a transaction inside a transaction is a savepoint: its failure undoes its own writes only', async (t) => {
  const { port, notes, note } = database()
  await port.atomic(async (tx) => {
    note('outer')
    await t.rejects(
      tx.atomic(async () => {
        note('inner')
        throw new Error('inner fails')
      }),
    )
    await tx.atomic(async () => note('inner again'))
  })
  t.same(notes(), ['outer', 'inner again'])
})

t.test('a transaction SQLite ended by itself: the failure that ended it is what is thrown, and nothing more runs in it', async (t) => {
  const { db, port, notes, note } = database()
  // A full disk or an I/O error makes SQLite roll the whole transaction back; ROLLBACK here does the same.
  const ended = port.atomic(async (tx) => {
    note('outer')
    await tx.atomic(async () => {
      note('inner')
      db.$client.exec('ROLLBACK')
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
    })
  })
  await t.rejects(ended, { code: 'SQLITE_FULL' }, 'not a savepoint that is no more')
  t.same(notes(), [], 'nothing of it was kept')
  t.notOk(db.$client.inTransaction)

  const caught = port.atomic(async (tx) => {
    db.$client.exec('ROLLBACK')
    await tx.atomic(async () => note('after the end'))
  })
  await t.rejects(caught, { message: /the transaction has ended/ }, 'a savepoint would have opened a transaction of its own')
  t.same(notes(), [], 'and committed this on its own')
})

/** The connection's transaction statements as they run, and what the test marks between them. */
function logged(db: ReturnType<typeof database>['db']) {
  const log: string[] = []
  const exec = db.$client.exec.bind(db.$client)
  let failCommit: { error: Error; rolledBack: boolean } | undefined
  db.$client.exec = (source: string) => {
    log.push(source.replace(/ sd_\d+$/, ''))
    if (source === 'COMMIT' && failCommit) {
      const { error, rolledBack } = failCommit
      failCommit = undefined
      // SQLite ends the transaction itself on some failures (a full disk, an I/O error).
      if (rolledBack) exec('ROLLBACK')
      throw error
    }
    return exec(source)
  }
  return { log, failNextCommit: (error: Error, rolledBack = false) => void (failCommit = { error, rolledBack }) }
}

t.test('transactions that end while others wait are committed together, each answered only once its COMMIT has returned', async (t) => {
  const { db, port, notes, note } = database()
  const { log } = logged(db)
  const write = (who: string) =>
    port.atomic(async () => {
      note(who)
      await tick()
      return who
    }).then((result) => {
      log.push(`answered ${result}`)
      return result
    })
  t.same(await Promise.all([write('A'), write('B'), write('C')]), ['A', 'B', 'C'])
  t.same(log, ['BEGIN IMMEDIATE', 'SAVEPOINT', 'RELEASE', 'SAVEPOINT', 'RELEASE', 'COMMIT', 'answered A', 'answered B', 'answered C'], 'one BEGIN, one COMMIT, and no answer before it')
  t.same(notes(), ['A', 'B', 'C'])
  t.notOk(db.$client.inTransaction)

  // The other party: one that comes alone is committed at once, as before.
  log.length = 0
  await write('D')
  t.same(log, ['BEGIN IMMEDIATE', 'COMMIT', 'answered D'])
})

t.test('in a group, a transaction that fails undoes its own work only; the others are committed', async (t) => {
  const { db, port, notes, note } = database()
  const { log } = logged(db)
  const kept = port.atomic(async () => note('A'))
  const failed = port.atomic(async () => {
    note('B')
    await tick()
    throw new Error('B changes its mind')
  })
  const after = port.atomic(async () => note('C'))
  await t.rejects(failed, { message: 'B changes its mind' })
  await Promise.all([kept, after])
  t.same(notes(), ['A', 'C'], "B's write alone is undone")
  t.same(log, ['BEGIN IMMEDIATE', 'SAVEPOINT', 'ROLLBACK TO', 'RELEASE', 'SAVEPOINT', 'RELEASE', 'COMMIT'])

  // The last of a group failing: the ones before it are still committed.
  log.length = 0
  const first = port.atomic(async () => note('D'))
  const last = port.atomic(async () => {
    note('E')
    throw new Error('E fails')
  })
  await t.rejects(last, { message: 'E fails' })
  await first
  t.same(notes(), ['A', 'C', 'D'])
  t.same(log, ['BEGIN IMMEDIATE', 'SAVEPOINT', 'ROLLBACK TO', 'RELEASE', 'COMMIT'])
  t.notOk(db.$client.inTransaction)
})

t.test('a COMMIT that fails loses every transaction it held, and each of them is told', async (t) => {
  const { db, port, notes, note } = database()
  const { failNextCommit } = logged(db)
  failNextCommit(Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' }))
  const writes = ['A', 'B', 'C'].map((who) => port.atomic(async () => note(who)))
  for (const write of writes) await t.rejects(write, { code: 'SQLITE_IOERR' })
  t.same(notes(), [], 'none of them was kept')
  t.notOk(db.$client.inTransaction, 'rolled back')
  await port.atomic(async () => note('later'))
  t.same(notes(), ['later'], 'and the next one is committed as usual')

  // The same when SQLite itself ended the transaction it could not commit.
  failNextCommit(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }), true)
  const ended = ['X', 'Y'].map((who) => port.atomic(async () => note(who)))
  for (const write of ended) await t.rejects(write, { code: 'SQLITE_FULL' })
  t.same(notes(), ['later'])
  t.notOk(db.$client.inTransaction)

  // A transaction of a group failing while the COMMIT it left to the group fails too: its own failure is what it is told.
  failNextCommit(new Error('disk I/O error'))
  const held = port.atomic(async () => note('D'))
  const failing = port.atomic(async () => {
    throw new Error('its own failure')
  })
  await t.rejects(failing, { message: 'its own failure' })
  await t.rejects(held, { message: 'disk I/O error' })
  t.same(notes(), ['later'])
})

t.test('a transaction of a group that SQLite ended by itself loses those before it, and each is told', async (t) => {
  const { db, port, notes, note } = database()
  const before = port.atomic(async () => note('A'))
  const ending = port.atomic(async () => {
    note('B')
    db.$client.exec('ROLLBACK')
    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
  })
  const after = port.atomic(async () => note('C'))
  await t.rejects(ending, { code: 'SQLITE_FULL' })
  await t.rejects(before, { code: 'SQLITE_FULL' }, 'what it held was lost with it')
  await after
  t.same(notes(), ['C'], 'the one after began a transaction of its own')
})

t.test('a read asked for between two transactions comes after a COMMIT: it never sees what is not committed', async (t) => {
  const { db, port, notes, note, guarded } = database()
  const { log } = logged(db)
  const first = port.atomic(async () => {
    note('A')
    await tick()
  })
  // The other party: a read, in line behind A, before B.
  const read = guarded.read()
  const second = port.atomic(async () => note('B'))
  await Promise.all([first, second])
  const seen = await read
  t.same(seen, { rows: ['A'], inTransaction: false }, 'A alone, committed')
  t.same(log, ['BEGIN IMMEDIATE', 'COMMIT', 'BEGIN IMMEDIATE', 'COMMIT'], 'A was not left open for B across the read')
  t.same(notes(), ['A', 'B'])
})

t.test("two ports of one connection share its group: one's transaction joins what the other left open", async (t) => {
  const { db, port, notes, note } = database()
  const { log } = logged(db)
  const other = sqlitePort(db)
  await Promise.all([port.atomic(async () => note('A')), other.atomic(async () => note('B')), port.atomic(async () => note('C'))])
  t.same(notes(), ['A', 'B', 'C'])
  t.same(log, ['BEGIN IMMEDIATE', 'SAVEPOINT', 'RELEASE', 'SAVEPOINT', 'RELEASE', 'COMMIT'], 'one transaction, not a BEGIN inside it')
})

t.test(`at most ${GROUP_MOST} transactions in one COMMIT`, async (t) => {
  const { db, port, notes, note } = database()
  const { log } = logged(db)
  const many = Array.from({ length: GROUP_MOST + 5 }, (_, i) => port.atomic(async () => note(`w${i}`)))
  await Promise.all(many)
  t.equal(log.filter((s) => s === 'COMMIT').length, 2, 'a full group is committed, and the rest form the next')
  t.equal(log.indexOf('COMMIT'), log.indexOf('BEGIN IMMEDIATE') + 1 + 2 * (GROUP_MOST - 1), `the first COMMIT after ${GROUP_MOST} transactions`)
  t.equal(notes().length, GROUP_MOST + 5)
})

t.test('a timer set inside a store call waits like anyone once the call has ended', async (t) => {
  const gate = new Gate()
  const order: string[] = []
  let later!: Promise<void>
  await gate.shared(async () => {
    later = new Promise((resolve) => setTimeout(() => void gate.shared(async () => void order.push('timer')).then(resolve), 5))
  })
  const closed = gate.exclusive(async () => {
    order.push('tx begins')
    await new Promise((resolve) => setTimeout(resolve, 20))
    order.push('tx ends')
  })
  await Promise.all([later, closed])
  t.same(order, ['tx begins', 'tx ends', 'timer'], 'the timer did not slip into the transaction on its old context')
  t.equal(await gate.exclusive(() => gate.exclusive(async () => 'nested')), 'nested', 'inside a transaction, another goes on at once')
})

t.test("the service's stores: a command's transaction rolled back, a request's write made meanwhile kept", async (t) => {
  const { engine, clock, box, users } = sqliteStores()
  const failed = engine.atomic(async (inside) => {
    await inside.users(clock, box).insert({ email: 'ann@example.test' }, null)
    await tick()
    await tick()
    throw new Error('the command is refused')
  })
  await tick()
  const bob = users.insert({ email: 'bob@example.test' }, null)
  await t.rejects(failed, { message: 'the command is refused' })
  await bob
  t.equal(await users.find('ann@example.test'), undefined, "the command's account is rolled back")
  t.ok(await users.find('bob@example.test'), "the request's account, which waited, is kept")
})

t.test("a remembered read asked for while another request's transaction is open waits for it, and never sees what it rolls back", async (t) => {
  const { engine, clock, sites } = sqliteStores()
  const site = await sites.add('acme')
  t.equal((await sites.find('acme'))?.multipassKey, site.multipassKey, 'remembered once read')
  const failed = engine.atomic(async (inside) => {
    await inside.sites(clock).setMultipassKey(site.id, 'changed-then-rolled-back')
    await tick()
    await tick()
    throw new Error('the command is refused')
  })
  await tick()
  // Read while the transaction is open, between two of its steps: remembered, and not yet read.
  const [remembered, unknown] = [sites.find('acme'), sites.find('nobody')]
  await t.rejects(failed, { message: 'the command is refused' })
  t.equal((await remembered)?.multipassKey, site.multipassKey, 'the key the transaction set and rolled back was never answered')
  t.equal(await unknown, undefined)
  t.equal((await sites.find('acme'))?.multipassKey, site.multipassKey)
})
