import { buildApp } from '/work/main/app.ts'
import { testClock } from '/work/main/test/fixtures/clock.ts'
const make = async () => { const app = buildApp({ config: { baseUrl: 'https://a.test', siteUrl: 'https://h.test/{site}', databaseAddress: ':memory:', outboxSend: false } as any, clock: testClock() }); await app.ready(); await app.inject({ url: '/healthz' }); await app.close() }
for (let i = 0; i < 5; i++) await make()
const c0 = process.cpuUsage()
for (let i = 0; i < 40; i++) await make()
const c = process.cpuUsage(c0)
console.log(process.execArgv.filter(a=>a.includes('semi')).join() || 'default', 'cpu ms per app', ((c.user + c.system) / 1000 / 40).toFixed(1))
