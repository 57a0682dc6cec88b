import t, { type Test } from 'tap'
import { openDatabase } from '../../../db/sqlite/client.ts'
import type { Engine } from '../../../db/engine.ts'
import { openPostgresEngine } from '../../../db/postgres/engine.ts'
import { sqliteEngine } from '../../../db/sqlite/engine.ts'
import type { Searcher } from '../../../db/stores/search.ts'
import { createSecretBox } from '../../../lib/secret-box.ts'
import { POSTGRES_URL, postgresAnswers, postgresTestAddress } from '../../fixtures/postgres.ts'

// Engines: both: it compares the two engines in one process, so it runs in the PostgreSQL pass alone.
// Search finds the same discussions on both engines (docs/decisions.md, "Search"): one corpus,
// written through the stores on SQLite and on PostgreSQL, and the same queries asked of each. Every
// query's answer is also written down here, so that two engines wrong alike fail too.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

const box = createSecretBox('search test key')
const DAY = 24 * 60 * 60 * 1000

async function corpus(engine: Engine) {
  let now = Date.UTC(2026, 2, 1, 9, 0, 0)
  const clock = () => now
  const users = engine.users(clock, box)
  const discussions = engine.discussions(clock, box)
  const site = await engine.sites(clock).add('demo')
  const other = await engine.sites(clock).add('other')
  const ann = await users.insert({ email: 'ann@example.test', name: 'Ann' }, null)
  const bob = await users.insert({ email: 'bob@example.test', name: 'Bob' }, null)
  await users.addStaff(site.id, ann.id)
  await users.addStaff(site.id, bob.id)
  await users.addStaff(other.id, ann.id)
  const general = await engine.categories(clock).add(site.id, 'General', true)
  const billing = await engine.categories(clock).add(site.id, 'Billing', false)
  const elsewhere = await engine.categories(clock).add(other.id, 'General', true)
  const open = async (title: string, body: string, email: string, extra: { categoryId?: number; siteId?: number; public?: boolean } = {}) => {
    now += DAY
    const { discussion } = await discussions.create({ siteId: site.id, categoryId: general.id, title, body, supporterId: ann.id, onBehalfOf: { email }, via: 'api', ...extra })
    return discussion.number
  }
  const reply = async (number: number, body: string, internal = false) => {
    now += 60_000
    await discussions.reply({ siteId: site.id, number, body, internal, supporterId: ann.id, via: 'api' })
  }
  const carol = 'carol@customer.example'
  const dave = 'dave@customer.example'
  const n1 = await open('Printer on fire', 'The office printer is on fire again. The café downstairs smells of smoke.', carol)
  await reply(n1, 'We sent a technician with an extinguisher.')
  await reply(n1, "Carol's printer is a model X-200; its warranty expired.", true)
  await discussions.update(site.id, n1, { assigneeId: bob.id, tags: ['hardware'] })
  const n2 = await open('Invoice missing for March', 'I cannot find the invoice for March 2026.', dave, { categoryId: billing.id })
  await reply(n2, 'I have sent the invoice again.')
  await discussions.act(site.id, n2, 'resolve')
  const n3 = await open('Café Wi-Fi is slow', 'The wifi at the Café is very slow; the naïve fix did not help.', 'eloise@customer.example')
  const n4 = await open('Straße und Größe', 'Die Straße ist groß. Übermorgen kommen wir.', carol)
  const n5 = await open('日本語のサポート', '東京 オフィス の プリンター が 動きません', dave)
  const n6 = await open('Ο εκτυπωτής', 'Ο εκτυπωτής δεν λειτουργεί καθόλου', carol)
  const n7 = await open('Old printer question', 'Is the printer toner covered?', carol)
  await discussions.act(site.id, n7, 'delete')
  const n8 = await open('Password reset email', 'The reset email never arrives.', carol)
  await reply(n8, 'Check your e-mail spam folder, please.')
  const n9 = await open('My private printer invoice', 'The invoice for the printer lease is wrong.', dave, { categoryId: billing.id })
  await discussions.update(site.id, n9, { title: 'My private leasing invoice' })
  now += DAY
  await discussions.create({ siteId: other.id, categoryId: elsewhere.id, title: 'Printer on fire elsewhere', body: 'Another printer on fire.', supporterId: ann.id, onBehalfOf: { email: carol }, via: 'api' })
  const carolId = (await users.find(carol))!.id
  return { engine, site, ann, bob, carolId, numbers: [n1, n2, n3, n4, n5, n6, n7, n8, n9] }
}

type Corpus = Awaited<ReturnType<typeof corpus>>

// [query, who asks, the discussion numbers found]
const QUERIES: Array<[string, 'staff' | 'carol', number[]]> = [
  ['printer', 'staff', [1, 9]],
  ['PRINTER', 'staff', [1, 9]],
  ['cafe', 'staff', [1, 3]],
  ['café', 'staff', [1, 3]],
  ['"on fire"', 'staff', [1]],
  ['"fire on"', 'staff', []],
  ['printer -fire', 'staff', [9]],
  ['printer -"on fire"', 'staff', [9]],
  ['warranty', 'staff', [1]],
  ['state:resolved', 'staff', [2]],
  ['invoice state:resolved', 'staff', [2]],
  ['invoice category:billing', 'staff', [2, 9]],
  ['invoice category:"BILLING"', 'staff', [2, 9]],
  ['printer from:carol@customer.example', 'staff', [1]],
  ['assignee:bob@example.test', 'staff', [1]],
  ['printer assignee:none', 'staff', [9]],
  ['tag:hardware', 'staff', [1]],
  ['invoice after:2026-03-04', 'staff', [9]],
  ['invoice before:2026-03-04', 'staff', [2]],
  ['e-mail', 'staff', [8]],
  ['email', 'staff', [8]],
  ['straße', 'staff', [4]],
  ['GROSS', 'staff', []],
  ['groß übermorgen', 'staff', [4]],
  ['εκτυπωτης', 'staff', [6]],
  ['東京', 'staff', [5]],
  ['naive', 'staff', [3]],
  ['"wi fi"', 'staff', [3]],
  ['printer state:deleted', 'staff', [7]],
  ['state:todo printer', 'staff', [1, 9]],
  ['"march 2026"', 'staff', [2]],
  ['x-200', 'staff', [1]],
  ['leasing', 'staff', [9]],
  ['nothing-like-this-anywhere', 'staff', []],
  ['printer', 'carol', [1]],
  ['warranty', 'carol', []],
  ['invoice', 'carol', []],
  ['café', 'carol', [1, 3]],
  ['"the office printer" -warranty', 'carol', [1]],
]

async function answers(c: Corpus) {
  const search = c.engine.search()
  const searchers: Record<'staff' | 'carol', Searcher> = { staff: { staff: true, userId: c.ann.id }, carol: { staff: false, userId: c.carolId, publicToo: true } }
  const found: number[][] = []
  for (const [q, who] of QUERIES) {
    const { results } = await search.find({ siteId: c.site.id, searcher: searchers[who], q, offset: 0, limit: 50 })
    found.push(results.map((r) => r.discussion.number).sort((a, b) => a - b))
  }
  return found
}

async function bothEngines(t: Test) {
  const sqlite = sqliteEngine(openDatabase(':memory:'))
  const postgres = await openPostgresEngine(await postgresTestAddress(t), { poolSize: 3 })
  t.teardown(async () => {
    await sqlite.close()
    await postgres.close()
  })
  return [await corpus(sqlite), await corpus(postgres)] as const
}

t.test('a fixed corpus: every query finds the same discussions on SQLite and PostgreSQL, the ones written here', options, async (t) => {
  const [sqlite, postgres] = await bothEngines(t)
  t.same(sqlite.numbers, [1, 2, 3, 4, 5, 6, 7, 8, 9])
  const [left, right] = [await answers(sqlite), await answers(postgres)]
  QUERIES.forEach(([q, who, expected], i) => {
    t.same(left[i], expected, `SQLite, ${who}: ${q}`)
    t.same(right[i], expected, `PostgreSQL, ${who}: ${q}`)
  })
})
