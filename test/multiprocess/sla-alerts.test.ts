import t, { type Test } from 'tap'
import { rawRowsAt } from '../fixtures/app.ts'
import { apiCall, bannerToken, startServer, type RunningServer } from '../fixtures/server.ts'
import { receiver, type Received } from '../fixtures/webhooks.ts'
import { eventually, sharedDatabase } from './two-apps.ts'

// Engines: both: the alerts are told under each discussion's row lock, which each engine must hold alike.
// Issue 68: SLA warnings and breaches told by real service processes (plugins/sla-alerts.ts), each
// looking every second: two processes on one database tell each of forty discussions' warning and
// breach once between them; then one killed (SIGKILL) after a warning, the other stopped, none
// running at the due time, the breach is left to a process started later, which tells it late,
// and only it. The due times are moved seconds ahead behind the service's back (its targets are minutes).

const call = apiCall
const MINUTE = 60_000

async function setUpSite(t: Test) {
  const { databaseAddress, secret } = await sharedDatabase(t)
  const env = { SERVICE_DB: databaseAddress, ...(secret === undefined ? {} : { SERVICE_SECRET: secret }), SERVICE_WEBHOOK_ALLOW: '127.0.0.0/8', SERVICE_SLA_ALERT_SECONDS: '1' }
  const hook = await receiver(t)
  const first = await startServer(t, env)
  const token = await bannerToken(first)
  t.equal((await call(first, token, 'POST', '/demo/webhooks', { url: hook.url, events: ['sla.warning', 'sla.breached'] })).status, 201)
  t.equal((await call(first, token, 'POST', '/demo/sla_policies', { name: 'Fast', first_reply_minutes: 60, warn_minutes: 30 })).status, 201)
  const [category] = (await call(first, token, 'GET', '/demo/categories')).json.categories as Array<{ id: number }>
  const create = async () => (await call(first, token, 'POST', `/demo/categories/${category!.id}/discussions`, { title: 'Help', body: 'Please.', author_email: 'carol@customer.test' })).json
  /** Every clock (or discussion `number`'s) due `ms` from now: its warning due already. */
  const dueIn = (ms: number, number = 0) => {
    const due = new Date(Date.now() + ms)
    return rawRowsAt(databaseAddress, 'update discussions set first_reply_due_at = ?, due_at = ?, sla_alert_at = ? where sla_policy_id is not null and (? = 0 or number = ?)', [due, due, new Date(due.getTime() - 30 * MINUTE), number, number])
  }
  return { env, hook, first, create, dueIn }
}

/** What the receiver got, once per event (a retried delivery repeats its webhook-id): `type #number` of each. */
function told(received: Received[]): string[] {
  const seen = new Map<string, string>()
  for (const r of received) {
    const event = JSON.parse(r.body) as { type: string; data: { number: number } }
    seen.set(String(r.headers['webhook-id']), `${event.type} #${event.data.number}`)
  }
  return [...seen.values()].sort()
}

t.test('two processes tell each warning and each breach once between them; one killed leaves what it had not told to the next', async (t) => {
  const { env, hook, first, create, dueIn } = await setUpSite(t)
  const numbers: number[] = []
  for (let i = 0; i < 40; i++) numbers.push(((await create()) as { number: number }).number)
  const second = await startServer(t, env)
  await dueIn(3_000)
  const breaches = () => told(hook.received).filter((e) => e.startsWith('sla.breached')).length
  t.ok(await eventually(() => breaches() === 40, 30_000), 'every breach told')
  // A look and more of each process: nothing more is told.
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  const expected = numbers.flatMap((n) => [`sla.breached #${n}`, `sla.warning #${n}`])
  t.same(told(hook.received), expected.sort(), 'each warning and each breach, once')

  // One more, its warning due now and its breach in 4 s: told the warning, both processes go (the
  // first killed), none runs at the due time, and a process started later tells the breach, once.
  const { number } = (await create()) as { number: number }
  const due = Date.now() + 4_000
  await dueIn(4_000, number)
  const warned = async () => String((await rawRowsAt(env.SERVICE_DB, 'select sla_told from discussions where number = ?', [number]))[0]!.sla_told).includes('warning')
  t.ok(await eventually(warned, 20_000), 'the warning told')
  first.child.kill('SIGKILL')
  await first.stop()
  await second.stop()
  t.ok(Date.now() < due, 'both gone before the due time')
  await new Promise((resolve) => setTimeout(resolve, due - Date.now() + 500))
  const third: RunningServer = await startServer(t, env)
  t.ok(await eventually(() => told(hook.received).includes(`sla.breached #${number}`), 20_000), 'the breach told by the process started later')
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  t.same(told(hook.received), [...expected, `sla.breached #${number}`, `sla.warning #${number}`].sort(), 'each once')
  t.ok(third.child.exitCode === null, 'the third process runs on')
})
