import t from 'tap'
import { rawRowsAt } from '../fixtures/app.ts'
import { apiCall as call, bannerToken, startServer } from '../fixtures/server.ts'
import { eventually, sharedDatabase } from './two-apps.ts'

// Engines: both: each batch of the retention takes the site's lock, which each engine holds its own way.
// Issue 74, item 3: two real service processes on one database, each running the retention every
// second (SERVICE_RETENTION_SECONDS), delete each discussion past the site's age once between
// them: the record of changes names each once, and no more after. The discussions are aged behind
// the service's back (the retention counts months).

t.test('two processes delete each discussion past the retention once between them', async (t) => {
  const { databaseAddress, secret } = await sharedDatabase(t)
  const env = { SERVICE_DB: databaseAddress, ...(secret === undefined ? {} : { SERVICE_SECRET: secret }), SERVICE_RETENTION_SECONDS: '1' }
  const first = await startServer(t, env)
  const token = await bannerToken(first)
  const [category] = (await call(first, token, 'GET', '/demo/categories')).json.categories as Array<{ id: number }>
  const numbers: number[] = []
  for (let i = 0; i < 30; i++) {
    const { number } = (await call(first, token, 'POST', `/demo/categories/${category!.id}/discussions`, { title: `Old ${i}`, body: 'Please.', author_email: 'carol@customer.test' })).json as { number: number }
    t.equal((await call(first, token, 'POST', `/demo/discussions/${number}/resolve`, {})).status, 200)
    numbers.push(number)
  }
  await rawRowsAt(databaseAddress, "update discussions set last_updated_at = ? where state = 'resolved'", [new Date(Date.now() - 400 * 24 * 60 * 60 * 1000)])
  const second = await startServer(t, env)
  t.equal((await call(second, token, 'PUT', '/demo/privacy', { retention_months: 12 })).status, 200)

  const deleted = async () => {
    const { entries } = (await call(first, token, 'GET', '/demo/audit_log?action=retention.deleted')).json as { entries: Array<{ detail: { numbers: string[] } }> }
    return entries.flatMap((entry) => entry.detail.numbers.map(Number)).sort((a, b) => a - b)
  }
  t.ok(await eventually(async () => (await deleted()).length >= numbers.length, 30_000), 'every one deleted')
  // Two more runs of each process: nothing more.
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  t.same(await deleted(), numbers, 'each once')
  t.match((await call(second, token, 'GET', '/demo/privacy')).json, { retention_months: 12, retention_due: 0 })
  t.equal((await call(first, token, 'GET', '/demo/discussions/resolved')).json.total, 0)
})
