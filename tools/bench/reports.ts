import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { breakdowns, counters, reportNames, reportStep, tallyRows, timings, type ReportFacts } from '../../lib/reports.ts'
import { seededRandom } from '../../db/stores/seed.ts'
import { copyDataset, postgresDataset, seededDataset, type Dataset } from './datasets.ts'
import { datasetRun } from './dataset-run.ts'
import { percentile, timedGet } from './load.ts'
import { startServer } from './servers.ts'

// npm run bench:reports [-- options]: each report over a year of a million discussions (issue 69),
// on `service-desk serve` as an operator runs it, on both engines. A report reads the day rows the
// writes keep (db/stores/reports.ts), never a discussion: what a year of a million discussions
// leaves in them is made here by the product's own step (lib/reports.ts reportStep, each
// discussion created, first answered, resolved, some reopened and rated, under one of 10
// supporters, 5 categories, 3 channels and 0 to 2 of 20 tags), written into the day rows of a small
// seeded site, and copied to PostgreSQL with the rest (`service-desk copy`). Then each report by
// week, day, supporter, category, channel and tag over the whole year, one request after another
// on one kept-alive connection: the median and the 99th percentile (target: 200 ms).
// The table goes to tools/bench/results/reports.md.

const { size: SIZE, queries: QUERIES, postgresUrl: POSTGRES_URL, engines, dir: RUN, log } = await datasetRun('reports', { queries: 20 })
const TARGET_MS = 200
const V1 = 'application/vnd.service-v1+json'
const DAY = 86_400_000
const MINUTE = 60_000

/** The day rows a year of SIZE discussions leaves, ending yesterday (UTC): made by reportStep, as the writes make them. */
function yearOfDayRows(siteId: number, end: number) {
  const random = seededRandom(69)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!
  const supporters = Array.from({ length: 10 }, (_, i) => 1000 + i)
  const tags = Array.from({ length: 20 }, (_, i) => `tag-${i}`)
  const rows = tallyRows()
  const add = rows.add
  const start = end - 365 * DAY
  for (let i = 0; i < SIZE; i++) {
    const createdAt = new Date(start + Math.floor(((i + random()) / SIZE) * 365 * DAY))
    const after = { state: 'new', assigneeId: random() < 0.2 ? null : pick(supporters), categoryId: 1 + Math.floor(random() * 5), channel: pick(['mail', 'web', 'api']), tags: random() < 0.4 ? [] : [...new Set([pick(tags), ...(random() < 0.3 ? [pick(tags)] : [])])].sort(), createdAt }
    const sla = { policyId: random() < 0.7 ? 1 : null, breached: random() < 0.15 ? 'first_reply' : '' }
    const step = (before: (ReportFacts & { state: string }) | null, state: string, at: number, comment?: { bySupporter: boolean; internal: boolean; authorId: number }) => {
      const done = reportStep({ before, after: { ...after, state }, comment, sla, schedule: null, at: new Date(Math.min(at, end - 1)) })
      done.tallies.forEach(add)
      return { ...done.facts, state }
    }
    let facts = step(null, 'new', createdAt.getTime())
    if (random() < 0.05) continue
    const replied = createdAt.getTime() + Math.floor(-Math.log(1 - random()) * 240) * MINUTE
    facts = step(facts, 'open', replied, { bySupporter: true, internal: false, authorId: after.assigneeId ?? pick(supporters) })
    if (random() < 0.1) continue
    const resolved = replied + Math.floor(-Math.log(1 - random()) * 2 * 1440) * MINUTE
    facts = step(facts, 'resolved', resolved)
    if (random() < 0.05) step(facts, 'open', resolved + DAY)
    else if (random() < 0.3) add({ day: new Date(Math.min(resolved + 3600_000, end - 1)).toISOString().slice(0, 10), keys: { ...after, supporterId: after.assigneeId }, counts: random() < 0.8 ? { ratedGood: 1 } : { ratedBad: 1 }, times: {} })
  }
  return rows.rows().map((row) => ({
    site_id: siteId,
    dimension: row.dimension,
    day: row.day,
    key: row.key,
    ...Object.fromEntries(counters.map((c) => [c.replace(/[A-Z]/g, (l) => `_${l.toLowerCase()}`), row.counts[c] ?? 0])),
    ...Object.fromEntries(timings.map((t) => [t.replace(/[A-Z]/g, (l) => `_${l.toLowerCase()}`), JSON.stringify(row.times[t] ?? {})])),
  }))
}

/** A small seeded site whose day rows are a year of SIZE discussions' (SQLite), for both engines. */
async function dataset(): Promise<{ dataset: Dataset; rows: number; from: string; to: string }> {
  const seeded = copyDataset(await seededDataset(1_000, log), join(RUN, 'reports.db'))
  const end = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`)
  const db = new Database(seeded.db)
  try {
    const siteId = (db.prepare('SELECT id FROM sites WHERE permalink = ?').get(seeded.site) as { id: number }).id
    const made = performance.now()
    const rows = yearOfDayRows(siteId, end)
    log(`a year of ${SIZE.toLocaleString('en')} discussions: ${rows.length.toLocaleString('en')} day and month rows, made in ${((performance.now() - made) / 1000).toFixed(1)} s`)
    const columns = Object.keys(rows[0]!)
    const insert = db.prepare(`INSERT INTO report_days (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`)
    db.transaction(() => {
      db.prepare('DELETE FROM report_days WHERE site_id = ?').run(siteId)
      for (const row of rows) insert.run(row)
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    return { dataset: seeded, rows: rows.length, from: new Date(end - 365 * DAY).toISOString().slice(0, 10), to: new Date(end - DAY).toISOString().slice(0, 10) }
  } finally {
    db.close()
  }
}

async function latencies(engine: string, data: Dataset, range: { from: string; to: string }) {
  const server = await startServer({ name: `reports-${engine}`, kind: 'service', db: data.db, first: { path: `/${data.site}/reports`, headers: { authorization: `Bearer ${data.token}`, accept: V1 } }, logDir: join(RUN, 'logs') })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const results: Array<{ report: string; by: string; median: number; p99: number; lines: number; total: string }> = []
  try {
    for (const name of reportNames) {
      for (const by of breakdowns) {
        const url = `${server.url}/${data.site}/reports/${name}?from=${range.from}&to=${range.to}&by=${by}`
        const times: number[] = []
        let body = ''
        for (let i = 0; i < QUERIES + 3; i++) {
          const answer = await timedGet(agent, url, { authorization: `Bearer ${data.token}`, accept: V1 })
          if (answer.status !== 200) throw new Error(`${name} by ${by}: ${answer.status} ${answer.body.slice(0, 200)}`)
          if (i >= 3) times.push(answer.ms)
          body = answer.body
        }
        const report = JSON.parse(body) as { lines: unknown[]; total: Record<string, unknown> }
        const sorted = Float64Array.from(times).sort()
        const first = Object.entries(report.total).find(([k]) => k !== 'key' && k !== 'label')
        results.push({ report: name, by, median: percentile(sorted, 50), p99: percentile(sorted, 99), lines: report.lines.length, total: `${first?.[0]} ${String(first?.[1])}` })
        log(`  ${engine} ${name} by ${by}: median ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms (${report.lines.length} lines)`)
      }
    }
    return { results, rssMb: server.rssMb() }
  } finally {
    agent.destroy()
    await server.stop()
  }
}

const made = await dataset()
const ms = (n: number) => `${n.toFixed(1)} ms`
const lines = [
  `# Reports over a year of ${SIZE.toLocaleString('en')} discussions (npm run bench:reports, ${new Date().toISOString().slice(0, 10)})`,
  '',
  `Each report over ${made.from} to ${made.to} (365 days), by each breakdown: ${QUERIES} requests one after the other on one kept-alive connection after 3 to warm up, personal token, v1 JSON. The day rows of the year: ${made.rows.toLocaleString('en')} (the site, 10 supporters and nobody, 5 categories, 3 channels, 20 tags), made by lib/reports.ts reportStep from ${SIZE.toLocaleString('en')} discussions (95% answered, 85% resolved, 4% reopened, 25% rated). Target: ${TARGET_MS} ms, held to the 99th percentile.`,
  '',
  '| engine | report | by | lines | median | p99 | target |',
  '|---|---|---|---|---|---|---|',
]
for (const engine of engines) {
  const data = engine === 'sqlite' ? made.dataset : await postgresDataset(made.dataset, POSTGRES_URL, log, 'bench_reports')
  const { results, rssMb } = await latencies(engine, data, made)
  for (const r of results) lines.push(`| ${engine} | ${r.report} | ${r.by} | ${r.lines} | ${ms(r.median)} | ${ms(r.p99)} | ${r.p99 <= TARGET_MS ? 'met' : '**MISSED**'} |`)
  lines.push(`| ${engine} | (the server's resident memory after: ${rssMb.toFixed(0)} MB) | | | | | |`)
}
writeFileSync(join('tools', 'bench', 'results', 'reports.md'), `${lines.join('\n')}\n`)
log('written to tools/bench/results/reports.md')
