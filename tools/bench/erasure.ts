import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { copyDataset, postgresDataset, seededDataset, type Dataset } from './datasets.ts'
import { datasetRun } from './dataset-run.ts'
import { percentile, timedGet } from './load.ts'
import { REPO, serviceDesk } from './service-cli.ts'
import { startServer } from './servers.ts'

// npm run bench:erasure [-- options]: how long a request waits while a customer with 1,000
// discussions is erased at a million discussions (issue 74: "does not hold a request up more than
// 50 ms"), on `service-desk serve` as an operator runs it, on both engines. One customer of the
// seeded million is made the author of 1,000 of its discussions (and their opening posts), the way
// the stores keep them. A reader asks for a discussion at a time (GET /<site>/discussions/<n>, one
// after another on one kept-alive connection) for a few seconds alone, then while an administrator
// erases the customer (POST /<site>/customers/<id>/erase, the site's default: anonymise): the
// reader's median, 99th percentile and slowest answer in each phase, and the hold-up (the slowest
// answer during the erasure less the median alone; target: at most 50 ms). The table goes to
// tools/bench/results/erasure.md.

const { size: SIZE, postgresUrl: POSTGRES_URL, engines, dir: RUN, log } = await datasetRun('erasure', { queries: 0 })
const TARGET_MS = 50
const THEIRS = 1_000
const ALONE_MS = 3_000
const V1 = 'application/vnd.service-v1+json'

/** A copy of the dataset whose customer `customer` started 1,000 of its discussions, spread over the table. */
function withCustomer(dataset: Dataset): { dataset: Dataset; customer: number; email: string } {
  const copy = copyDataset(dataset, join(RUN, 'erasure.db'))
  const db = new Database(copy.db)
  db.pragma('journal_mode = WAL')
  const site = (db.prepare('SELECT id FROM sites WHERE permalink = ?').get(dataset.site) as { id: number }).id
  const { userId, email } = db.prepare("SELECT m.user_id AS userId, u.email AS email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.site_id = ? AND m.role = 'customer' ORDER BY m.user_id LIMIT 1").get(site) as { userId: number; email: string }
  const step = Math.floor(SIZE / THEIRS)
  db.transaction(() => {
    for (let n = 1; n <= THEIRS; n++) {
      const number = n * step
      db.prepare('UPDATE discussions SET author_id = ? WHERE site_id = ? AND number = ?').run(userId, site, number)
      db.prepare('UPDATE comments SET author_id = ? WHERE number = 1 AND discussion_id = (SELECT id FROM discussions WHERE site_id = ? AND number = ?)').run(userId, site, number)
    }
  })()
  db.close()
  return { dataset: copy, customer: userId, email }
}

/** Reads discussions one after another until `until` resolves; each answer's time in ms. */
async function reader(url: string, dataset: Dataset, agent: http.Agent, until: Promise<unknown>): Promise<number[]> {
  let done = false
  void until.finally(() => (done = true))
  const times: number[] = []
  for (let i = 0; !done; i++) {
    const number = 1 + ((i * 7919) % SIZE)
    const answer = await timedGet(agent, `${url}/${dataset.site}/discussions/${number}`, { authorization: `Bearer ${dataset.token}`, accept: V1 })
    if (answer.status !== 200) throw new Error(`GET discussion ${number}: ${answer.status} ${answer.body.slice(0, 200)}`)
    times.push(answer.ms)
  }
  return times
}

const summary = (times: number[]) => {
  const sorted = Float64Array.from(times).sort()
  return { n: times.length, median: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]! }
}

const huge = await seededDataset(SIZE, log)
const prepared = withCustomer(huge)
// The bench's supporter administers the site: the erasure is an administrator's.
await serviceDesk(['staff', 'admin', prepared.dataset.site, prepared.dataset.email], prepared.dataset.db)
log(`customer ${prepared.customer} (${prepared.email}) started ${THEIRS} of ${SIZE.toLocaleString('en')} discussions`)
const ms = (n: number) => `${n.toFixed(1)} ms`
const rows: string[] = []
// PostgreSQL's copy is made first: the SQLite run erases the customer in the file it is copied from.
const datasets = new Map<string, Dataset>()
for (const engine of engines) datasets.set(engine, engine === 'sqlite' ? prepared.dataset : await postgresDataset(prepared.dataset, POSTGRES_URL, log, `bench_erasure_${SIZE}`))
for (const engine of engines) {
  const dataset = datasets.get(engine)!
  const headers = { authorization: `Bearer ${dataset.token}`, accept: V1 }
  const server = await startServer({ name: `erasure-${engine}`, kind: 'service', db: dataset.db, first: { path: `/${dataset.site}/discussions`, headers }, logDir: join(RUN, 'logs') })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const plan = JSON.parse((await post(`${server.url}/${dataset.site}/customers/${prepared.customer}/erase`, headers, { dry_run: true })).body) as { discussions: number; comments: number }
    if (!(plan.discussions >= THEIRS)) throw new Error(`the dry run says ${plan.discussions} discussions, fewer than ${THEIRS}`)
    log(`the dry run: ${plan.discussions} discussions they started, ${plan.comments} comments`)
    await reader(server.url, dataset, agent, new Promise((resolve) => setTimeout(resolve, 1_000)))
    const alone = summary(await reader(server.url, dataset, agent, new Promise((resolve) => setTimeout(resolve, ALONE_MS))))
    const started = performance.now()
    const erasure = post(`${server.url}/${dataset.site}/customers/${prepared.customer}/erase`, headers, {})
    const during = summary(await reader(server.url, dataset, agent, erasure))
    const answer = await erasure
    const seconds = (performance.now() - started) / 1000
    if (answer.status !== 200) throw new Error(`the erasure answered ${answer.status}: ${answer.body.slice(0, 300)}`)
    const holdUp = during.max - alone.median
    rows.push(`| ${engine} | ${seconds.toFixed(1)} s | ${ms(alone.median)} / ${ms(alone.p99)} / ${ms(alone.max)} | ${ms(during.median)} / ${ms(during.p99)} / ${ms(during.max)} (${during.n}) | ${ms(holdUp)} | ${holdUp <= TARGET_MS ? 'met' : '**MISSED**'} |`)
    log(rows.at(-1)!)
  } finally {
    agent.destroy()
    await server.stop()
  }
}

/** A POST of JSON on a connection of its own. */
function post(url: string, headers: Record<string, string>, body: object): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = http.request(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode!, body: text }))
    })
    sent.on('error', reject)
    sent.end(JSON.stringify(body))
  })
}

const lines = [
  `# Erasing a customer with ${THEIRS.toLocaleString('en')} discussions at ${SIZE.toLocaleString('en')} discussions (npm run bench:erasure, ${new Date().toISOString().slice(0, 10)})`,
  '',
  '| engine | the erasure took | a read alone: median / p99 / slowest | during the erasure: median / p99 / slowest (reads) | hold-up (slowest during - median alone) | target (at most 50 ms) |',
  '|---|---|---|---|---|---|',
  ...rows,
  '',
  `One customer of the seeded ${SIZE.toLocaleString('en')} made the author of every ${Math.floor(SIZE / THEIRS).toLocaleString('en')}th discussion (${THEIRS.toLocaleString('en')}) and its opening post. A reader asks GET /<site>/discussions/<n> one after another on one kept-alive connection: ${ALONE_MS / 1000} s alone, then while POST /<site>/customers/<id>/erase runs (anonymise, the default: each discussion's texts rewritten, its search document written again, a change in the feed), 5 discussions a transaction, each followed by a pause as long as it took.`,
  '',
]
writeFileSync(join(REPO, 'tools', 'bench', 'results', 'erasure.md'), lines.join('\n'))
console.log(lines.join('\n'))
