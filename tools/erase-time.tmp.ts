import { copyFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { buildApp } from '../app.ts'
import { OPERATOR } from '../db/stores/audit.ts'
const src = process.argv[2]!
copyFileSync(src, '/work/erase-time.db')
const db = new Database('/work/erase-time.db')
const site = (db.prepare("SELECT id FROM sites WHERE permalink = 'bench'").get() as { id: number }).id
const { userId } = db.prepare("SELECT m.user_id AS userId FROM memberships m WHERE m.site_id = ? AND m.role = 'customer' ORDER BY m.user_id LIMIT 1").get(site) as { userId: number }
const total = (db.prepare('select count(*) n from discussions').get() as { n: number }).n
const step = Math.floor(total / 1000)
db.transaction(() => { for (let n = 1; n <= 1000; n++) { db.prepare('UPDATE discussions SET author_id = ? WHERE site_id = ? AND number = ?').run(userId, site, n * step); db.prepare('UPDATE comments SET author_id = ? WHERE number = 1 AND discussion_id = (SELECT id FROM discussions WHERE site_id = ? AND number = ?)').run(userId, site, n * step) } })()
db.close()
const app = buildApp({ config: { baseUrl: 'http://x.example', siteUrl: 'http://x.example/{site}', databaseAddress: '/work/erase-time.db', secret: 'bench-secret-not-for-production-0123456789abcdef' } as never })
await app.ready(); if (process.env.NOCKPT) (app as any).database.sqlite.$client.pragma('wal_autocheckpoint = 0')
let t = performance.now()
const lap = (what: string) => { const now = performance.now(); console.log(what, (now - t).toFixed(1), 'ms'); t = now }
const plan = await app.erasure.plan(site, userId); lap(`plan ${plan?.discussions}`)
const steps: number[] = []
for (;;) { const s0 = performance.now(); const r = await app.erasure.step(site, userId); steps.push(performance.now() - s0); if (r.deleted.length + r.anonymised.length + r.others.length === 0) break }
lap(`steps ${steps.length}`)
console.log('top', [...steps].sort((a, b) => b - a).slice(0, 8).map((x) => x.toFixed(1)).join(' '), 'first', steps[0]!.toFixed(1)); console.log('step max', Math.max(...steps).toFixed(1), 'median', steps.sort((a, b) => a - b)[Math.floor(steps.length / 2)]!.toFixed(1))
await app.erasure.finish(site, userId, OPERATOR, { deleted: [], anonymised: [], others: [] }); lap('finish')
await app.close()
