import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { V1 } from '../fixtures/clock.ts'
import { bannerToken, startServer } from '../fixtures/server.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Issue 6, item 3: kill the server with SIGKILL in the middle of a burst of writes, and find every
// write it acknowledged (a 2xx) in the database afterwards, which must pass integrity_check.
// db/sqlite/client.ts syncs each commit (synchronous = FULL) before the answer goes out.

const WORKERS = 8
const KILL_AFTER = 120

t.test('SIGKILL mid-burst: every acknowledged write is there after a restart, and the file is sound', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-crash-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = { SERVICE_DB: join(dir, 'service.db') }
  const server = await startServer(t, env)
  const token = await bannerToken(server)
  const headers = { authorization: `Bearer ${token}`, accept: V1, 'content-type': 'application/json' }
  const categories = (await (await fetch(`${server.base}/demo/categories`, { headers })).json()) as { categories: { id: number }[] }
  const categoryId = categories.categories[0].id as number

  const discussions = new Map<number, string>()
  const comments: { number: number; comment: number; body: string }[] = []
  let sent = 0
  let failed = 0
  const acknowledged = () => discussions.size + comments.length

  async function worker(id: number) {
    for (let i = 0; ; i++) {
      const title = `Worker ${id} discussion ${i}`
      sent++
      try {
        const created = await fetch(`${server.base}/demo/categories/${categoryId}/discussions`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ title, body: `Opening post ${id}/${i}` }),
        })
        if (created.status !== 201) throw new Error(`unexpected ${created.status}`)
        const { number } = (await created.json()) as { number: number }
        discussions.set(number, title)
        const body = `Reply ${id}/${i}`
        sent++
        const replied = await fetch(`${server.base}/demo/discussions/${number}/comments`, { method: 'POST', headers, body: JSON.stringify({ body }) })
        if (replied.status !== 201) throw new Error(`unexpected ${replied.status}`)
        comments.push({ number, comment: ((await replied.json()) as { number: number }).number, body })
      } catch {
        // The connection was cut by the kill: this write was never acknowledged.
        failed++
        return
      }
    }
  }

  const burst = Array.from({ length: WORKERS }, (_, id) => worker(id))
  while (acknowledged() < KILL_AFTER) await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(await server.stop('SIGKILL'), null, 'killed, not exited')
  await Promise.all(burst)
  const acked = acknowledged()
  t.ok(failed > 0, `the kill cut requests in flight (${failed} of ${sent} sent)`)
  t.comment(`writes sent: ${sent}; acknowledged: ${acked} (${discussions.size} discussions, ${comments.length} replies); cut: ${failed}`)

  // Restart: the WAL is recovered and the server answers from the same file.
  const restarted = await startServer(t, env)
  const listing = (await (await fetch(`${restarted.base}/demo/discussions?per_page=1`, { headers })).json()) as { total: number }
  t.ok(listing.total >= discussions.size + 1, `the listing counts every acknowledged discussion (${listing.total})`)
  for (const [number, title] of [...discussions].slice(0, 5)) {
    const res = await fetch(`${restarted.base}/demo/discussions/${number}`, { headers })
    t.equal(((await res.json()) as { title: string }).title, title, `discussion ${number} is served again`)
  }
  t.equal(await restarted.stop(), 0, 'the restarted server stops cleanly')

  const db = new Database(env.SERVICE_DB, { readonly: true })
  t.teardown(() => db.close())
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok', 'integrity_check: ok')
  const title = db.prepare('SELECT title FROM discussions WHERE number = ?').pluck()
  const comment = db.prepare('SELECT c.body FROM comments c JOIN discussions d ON d.id = c.discussion_id WHERE d.number = ? AND c.number = ?').pluck()
  let found = 0
  for (const [number, expected] of discussions) if (title.get(number) === expected) found++
  for (const c of comments) if (comment.get(c.number, c.comment) === c.body) found++
  t.equal(found, acked, `every acknowledged write was found (${found} of ${acked})`)
  const counted = db.prepare('SELECT sum(count) FROM discussion_counts').pluck().get()
  t.equal(counted, db.prepare('SELECT count(*) FROM discussions').pluck().get(), 'the counters agree with the rows')
})
