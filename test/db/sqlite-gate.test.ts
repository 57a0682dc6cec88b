import t from 'tap'
import { openDatabase } from '../../db/sqlite/client.ts'
import { sqlitePort } from '../../db/sqlite/engine.ts'
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
