import { randomBytes } from 'node:crypto'
import { connect, createServer, type Server, type Socket } from 'node:net'
import pg from 'pg'
import t, { type Test } from 'tap'
import { EVENT_PAYLOAD_MAX_BYTES, type Engine } from '../../db/engine.ts'
import { openEngine } from '../../db/open.ts'
import { parsePostgresAddress } from '../../lib/database-address.ts'
import { POSTGRES_URL, TEST_ENGINE } from '../fixtures/postgres.ts'
import { eventually, sharedDatabase } from './two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The engine's events (db/engine.ts): what the processes of one database tell each other. On
// PostgreSQL, LISTEN/NOTIFY on a connection of their own; on SQLite, within the process. Two
// engines on one database stand for two processes.

const POSTGRES_ONLY = { skip: TEST_ENGINE !== 'postgres' && 'LISTEN/NOTIFY: runs in the PostgreSQL run of the suite' }

async function engines(t: Test, count: number, databaseAddress?: string) {
  databaseAddress ??= (await sharedDatabase(t)).databaseAddress
  const opened: Engine[] = []
  for (let i = 0; i < count; i++) {
    const engine = await openEngine(databaseAddress)
    t.teardown(() => engine.close().catch(() => {}))
    opened.push(engine)
  }
  return opened
}

/** What a subscription hears, in order. */
async function hearing(engine: Engine, channel = 'test_events') {
  const heard: string[] = []
  await engine.events.subscribe(channel, (payload) => void heard.push(payload))
  return heard
}

t.test('every subscriber hears every payload, its own included, in one same order', async (t) => {
  const [one, two] = await engines(t, 2)
  const heard = [await hearing(one!), await hearing(one!), await hearing(two!)]
  const sent = Array.from({ length: 20 }, (_, i) => `payload ${i}`)
  await Promise.all(sent.map((payload, i) => (i % 2 ? one! : two!).events.publish('test_events', payload)))
  t.ok(await eventually(() => heard.every((list) => list.length === sent.length)), 'each hears all')
  t.same(new Set(heard[0]), new Set(sent))
  t.same(heard[1], heard[0], 'in the same order')
  t.same(heard[2], heard[0])
  t.equal(heard[0]!.join().includes('payload 0'), true)
})

t.test('a channel hears only its own, on its own database; a closed engine hears nothing', async (t) => {
  const [one, two, three] = await engines(t, 3)
  const [elsewhere] = await engines(t, 1)
  const other = await hearing(two!, 'other_events')
  const apart = await hearing(elsewhere!)
  const closed = await hearing(three!)
  const heard = await hearing(two!)
  await three!.close()
  await one!.events.publish('test_events', 'hello')
  t.ok(await eventually(() => heard.length === 1))
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.same([other, apart, closed], [[], [], []])
})

t.test('names and payloads that an engine could not carry are refused', async (t) => {
  const [one] = await engines(t, 1)
  const heard = await hearing(one!)
  await t.rejects(one!.events.publish('Test-Events', 'x'), { message: 'an event channel is lower-case letters, digits and _, not "Test-Events"' })
  await t.rejects(one!.events.subscribe('x'.repeat(32), () => {}), /an event channel is/)
  await t.rejects(one!.events.publish('test_events', 'é'.repeat(EVENT_PAYLOAD_MAX_BYTES / 2 + 1)), { message: `an event payload holds at most ${EVENT_PAYLOAD_MAX_BYTES} bytes` })
  const largest = 'x'.repeat(EVENT_PAYLOAD_MAX_BYTES)
  await one!.events.publish('test_events', largest)
  t.ok(await eventually(() => heard.length === 1 && heard[0] === largest), 'the largest payload goes through')
})

/** A connection of the test's own on the database at `address` (the suite's, by default), closed after the test. */
async function rawClient(t: Test, address = POSTGRES_URL) {
  const client = new pg.Client({ connectionString: parsePostgresAddress(address).connectionString })
  await client.connect()
  t.teardown(() => client.end())
  return client
}

/** The server process behind an engine's events connection: the one that sends its NOTIFY. */
async function eventsBackend(t: Test, engine: Engine, address: string, channel = 'test_events') {
  const client = await rawClient(t, address)
  const name = `${channel}:${parsePostgresAddress(address).schema}`
  const pid = new Promise<number>((resolve) => client.once('notification', (message) => resolve(message.processId)))
  await client.query(`LISTEN "${name}"`)
  await engine.events.publish(channel, 'who is there')
  const found = await pid
  await client.query(`UNLISTEN "${name}"`)
  return { pid: found, terminate: () => client.query('SELECT pg_terminate_backend($1)', [found]) }
}

t.test('a broken events connection is opened again and listens again; one that only publishes, when next used', POSTGRES_ONLY, async (t) => {
  const { databaseAddress } = await sharedDatabase(t)
  const [listener, talker, publisher] = await engines(t, 3, databaseAddress)
  const heard = await hearing(listener!)
  const listening = await eventsBackend(t, listener!, databaseAddress)
  await listening.terminate()
  let n = 0
  t.ok(
    await eventually(async () => {
      await talker!.events.publish('test_events', `after ${++n}`)
      return heard.some((payload) => payload.startsWith('after'))
    }, 5_000),
    'heard again after the connection was opened again',
  )
  const publishing = await eventsBackend(t, publisher!, databaseAddress)
  await publishing.terminate()
  await eventually(async () => (await rawClient(t)).query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [publishing.pid]).then((r) => r.rowCount === 0))
  await publisher!.events.publish('test_events', 'from the publisher again')
  t.ok(await eventually(() => heard.includes('from the publisher again')), 'it opened a new connection for it')
  const again = await eventsBackend(t, publisher!, databaseAddress)
  t.not(again.pid, publishing.pid, 'a new connection')
})

t.test('closed: a subscription being opened is refused, and nothing more is sent', POSTGRES_ONLY, async (t) => {
  const [engine] = await engines(t, 1)
  const pending = engine!.events.subscribe('test_events', () => {})
  // Its connection is being opened.
  await new Promise((resolve) => setImmediate(resolve))
  await engine!.close()
  await t.rejects(pending, { message: 'the database is closed' })
  await t.rejects(engine!.events.publish('test_events', 'x'), { message: 'the database is closed' })
  await t.rejects(engine!.events.subscribe('test_events', () => {}), { message: 'the database is closed' })
})

t.test('a schema whose name makes the channel too long is named by a hash of it', POSTGRES_ONLY, async (t) => {
  const schema = `t_${randomBytes(29).toString('hex')}`.slice(0, 63)
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('schema', schema)
  t.teardown(async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.end()
  })
  const [one, two] = await engines(t, 2, url.toString())
  const heard = await hearing(two!)
  await one!.events.publish('test_events', 'long')
  t.ok(await eventually(() => heard[0] === 'long'))
})

/** A TCP relay to PostgreSQL that can be cut (every connection dropped, no more accepted) and restored. */
async function relay(target: URL) {
  const sockets = new Set<Socket>()
  let server: Server
  let port = 0
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('close', () => sockets.delete(socket))
          socket.on('error', () => socket.destroy())
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as { port: number }).port
        resolve()
      })
    })
  await open()
  const via = (address: string) => {
    const url = new URL(address)
    url.hostname = '127.0.0.1'
    url.port = String(port)
    return url.toString()
  }
  const cut = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    })
  return { via, cut, restore: open }
}

t.test('a subscription made while the database cannot be reached is refused, and made once it can', POSTGRES_ONLY, async (t) => {
  const { databaseAddress } = await sharedDatabase(t)
  const link = await relay(new URL(databaseAddress))
  t.teardown(() => link.cut())
  const [direct] = await engines(t, 1, databaseAddress)
  const [cut] = await engines(t, 1, link.via(databaseAddress))
  await link.cut()
  const heard: string[] = []
  await t.rejects(cut!.events.subscribe('test_events', (payload) => void heard.push(payload)))
  // A few tries fail meanwhile, each after a longer pause.
  await new Promise((resolve) => setTimeout(resolve, 400))
  await link.restore()
  t.ok(
    await eventually(async () => {
      await direct!.events.publish('test_events', 'through')
      return heard.includes('through')
    }, 5_000),
    'it listens once the database answers',
  )
})
