import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { childEnv } from '../fixtures/child.ts'
import { dovecot, haveDovecot } from '../fixtures/dovecot.ts'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { BIN, bannerToken, startServer, type RunningServer } from '../fixtures/server.ts'

// Engines: both: two service processes on one PostgreSQL database fetch one mailbox (SQLite: one process killed twice); a child's coverage is not collected.
// Issue 48, nothing lost and nothing doubled across processes: `service-desk serve` fetching an
// IMAP mailbox (Dovecot) of 200 messages is killed (SIGKILL) in the middle, twice, on SQLite; two
// processes on one PostgreSQL database fetch one mailbox, the one holding it killed mid-way. Each
// time every message becomes exactly one discussion. (One engine each: the pass of that engine.)

if (!haveDovecot(t)) process.exit(0)

const MESSAGES = 200

/** 200 messages from 20 senders (ten each: under the per-sender limit of a minute). */
const mailbox = () =>
  Array.from({ length: MESSAGES }, (_, i) =>
    [`From: customer${i % 20}@customer.example`, 'To: support@demo.example', `Subject: Message ${i}`, `Message-ID: <m${i}@customer.example>`, '', `Text of message ${i}.`, ''].join('\r\n'),
  )

async function total(server: RunningServer, token: string): Promise<number> {
  const res = await fetch(`${server.base}/demo/discussions`, { headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.service-v1+json' } })
  return ((await res.json()) as { total: number }).total - 1 // less the demo site's own first discussion
}

/** Waits until `server` has taken at least `n` messages; the count then. */
async function taken(server: RunningServer, token: string, n: number): Promise<number> {
  const end = Date.now() + 60_000
  for (;;) {
    const count = await total(server, token)
    if (count >= n) return count
    if (Date.now() > end) throw new Error(`only ${count} of ${n} taken: ${server.output().slice(-2000)}`)
    await new Promise((resolve) => setTimeout(resolve, 15))
  }
}

t.test('SQLite: the fetching process killed twice mid-way, 200 messages give exactly 200 discussions', { skip: TEST_ENGINE !== 'sqlite' }, async (t) => {
  const imap = await dovecot(t)
  const url = imap.user('support')
  await imap.deliver('support', mailbox())
  const db = join(t.testdir({}), 'service.db')
  const env = { SERVICE_DB: db, SERVICE_MAIL_FETCH_SECONDS: '1' }
  let server = await startServer(t, env)
  const token = await bannerToken(server)
  const before = await total(server, token)
  t.equal(before, 0)
  execFileSync(process.execPath, [BIN, 'mailbox', 'add', 'demo', 'support@demo.example', '--imap', url, '--db', db], { env: childEnv() })
  for (const killAt of [40, 120]) {
    const at = await taken(server, token, killAt)
    t.ok(at < MESSAGES, `killed at ${at}`)
    await server.stop('SIGKILL')
    server = await startServer(t, env)
  }
  // The last process takes the mailbox once the dead one's lease runs out (3 s), and the rest.
  t.equal(await taken(server, token, MESSAGES), MESSAGES)
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal(await total(server, token), MESSAGES, 'still exactly 200: nothing taken twice')
  const titles = new Set<string>()
  for (let page = 1; ; page++) {
    const res = await fetch(`${server.base}/demo/discussions?page=${page}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.service-v1+json' } })
    const { discussions } = (await res.json()) as { discussions: Array<{ title: string }> }
    if (discussions.length === 0) break
    for (const d of discussions) titles.add(d.title)
  }
  t.equal([...titles].filter((title) => title.startsWith('Message ')).length, MESSAGES, 'each message once')
})

t.test('PostgreSQL: two processes fetch one mailbox; the holder killed, the other takes over; each message once', { skip: TEST_ENGINE !== 'postgres' }, async (t) => {
  const imap = await dovecot(t)
  const url = imap.user('support')
  await imap.deliver('support', mailbox())
  // Leases of 6 s (three looks of 2 s), renewed during the fetch, so a busy machine does not let one run out.
  const env = { SERVICE_DB: await postgresTestAddress(t), SERVICE_SECRET: 'a-shared-secret-of-the-two-processes-0123456789', SERVICE_MAIL_FETCH_SECONDS: '2' }
  const first = await startServer(t, env)
  const token = await bannerToken(first)
  const second = await startServer(t, env)
  execFileSync(process.execPath, [BIN, 'mailbox', 'add', 'demo', 'support@demo.example', '--imap', url, '--db', env.SERVICE_DB], { env: childEnv({ SERVICE_SECRET: env.SERVICE_SECRET }) })
  await taken(first, token, 60)
  // Whichever holds the lease says so in its log; it is killed, the other goes on.
  const holder = [first, second].find((server) => server.output().includes('"door":"imap"'))!
  const other = holder === first ? second : first
  t.notOk(other.output().includes('"door":"imap"'), 'one process fetched, the other waited')
  await holder.stop('SIGKILL')
  t.equal(await taken(other, token, MESSAGES), MESSAGES)
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.equal(await total(other, token), MESSAGES, 'exactly 200')
  t.match(other.output(), '"door":"imap"', 'the other process took over')
})
