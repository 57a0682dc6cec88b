import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { copyDataset, postgresDataset, seededDataset, type Dataset } from './datasets.ts'
import { datasetRun } from './dataset-run.ts'
import { percentile, timedGet } from './load.ts'
import { REPO } from './service-cli.ts'
import { startServer } from './servers.ts'

// npm run bench:fields [-- options]: the listing filtered by a custom field against the same listing
// filtered by a tag, at a million discussions (issue 72: "a filter by a field at a million
// discussions within 20% of the tag filter"), on `service-desk serve` as an operator runs it, on
// both engines. The seeded million is given, in SQLite, one of 20 tags and the choice field's value
// of the same number each, the way the product keeps them (the row's own text and one indexed row each:
// discussion_tags, field_values), so each tag and each value finds 50,000 discussions; copied to
// PostgreSQL with the rest (`service-desk copy`). Then GET /<site>/discussions?tag=<t> and
// ?field.plan=<v>, alternating, one after another on one kept-alive connection, the first page
// of 30 by activity: the median and the 99th percentile of each, and their ratio (target: the
// field's median at most 1.2 times the tag's). A narrow filter too (one discussion in 1,000: a
// text field's values), where the index, not the page, is the cost. The table goes to
// tools/bench/results/fields.md.

const { size: SIZE, queries: QUERIES, postgresUrl: POSTGRES_URL, engines, dir: RUN, log } = await datasetRun('fields', { queries: 400 })
const TARGET = 1.2
const V1 = 'application/vnd.service-v1+json'
const VALUES = 20
/** The narrow filter's values: one discussion in NARROW has each. */
const NARROW = 1_000

/**
 * Tags and field values written into a copy of the dataset as the stores write them: tag `t<i>`
 * and plan `p<i>` on the same discussions (every 20th: the filters find the same rows, spread
 * alike over the table, so what differs is the filter alone), and a narrow tag `n<k>` beside a
 * text field `ref` of the same value, one discussion in 7,000 each.
 */
function withTagsAndFields(dataset: Dataset): Dataset {
  const copy = copyDataset(dataset, join(RUN, 'fields.db'))
  const db = new Database(copy.db)
  db.pragma('journal_mode = WAL')
  const site = (db.prepare('SELECT id FROM sites WHERE permalink = ?').get(dataset.site) as { id: number }).id
  const now = Date.now()
  const field = (key: string, kind: string, choices: string[], position: number) =>
    Number(db.prepare("INSERT INTO fields (site_id, key, name, kind, audience, required, choices, position, created_at) VALUES (?, ?, ?, ?, 'team', 0, ?, ?, ?)").run(site, key, key, kind, JSON.stringify(choices), position, now).lastInsertRowid)
  const plan = field('plan', 'choice', Array.from({ length: VALUES }, (_, i) => `p${i}`), 1)
  const ref = field('ref', 'text', [], 2)
  const ids = (db.prepare('SELECT id FROM discussions WHERE site_id = ? ORDER BY id').all(site) as Array<{ id: number }>).map((r) => r.id)
  const setRow = db.prepare('UPDATE discussions SET tags = ?, fields = ? WHERE id = ?')
  const tag = db.prepare('INSERT INTO discussion_tags (discussion_id, site_id, tag) VALUES (?, ?, ?)')
  const value = db.prepare('INSERT INTO field_values (site_id, field_id, discussion_id, value) VALUES (?, ?, ?, ?)')
  db.transaction(() => {
    for (const [n, id] of ids.entries()) {
      const t = `t${n % VALUES}`
      // The same discussions as the tag of the same number: both filters read the same rows, spread alike.
      const p = `p${n % VALUES}`
      const narrow = Math.floor(n / 7) % NARROW
      const tags = [t, ...(n % 7 === 0 ? [`n${narrow}`] : [])].sort()
      const values: Record<string, string> = { plan: p, ...(n % 7 === 0 ? { ref: `r${narrow}` } : {}) }
      setRow.run(tags.join(' '), JSON.stringify(values), id)
      for (const one of tags) tag.run(id, site, one)
      value.run(site, plan, id, p)
      if (values.ref) value.run(site, ref, id, values.ref)
    }
  })()
  db.exec('ANALYZE')
  db.close()
  return copy
}

/** Each filter in turn, QUERIES times over, after 50 to warm up: the time of each in ms. */
async function latencies(dataset: Dataset, filters: Record<string, (i: number) => string>) {
  const server = await startServer({ name: `fields-${dataset.db.startsWith('postgres') ? 'postgres' : 'sqlite'}`, kind: 'service', db: dataset.db, first: { path: `/${dataset.site}/discussions`, headers: { authorization: `Bearer ${dataset.token}`, accept: V1 } }, logDir: join(RUN, 'logs') })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const times = Object.fromEntries(Object.keys(filters).map((name) => [name, [] as number[]]))
  const totals = Object.fromEntries(Object.keys(filters).map((name) => [name, 0]))
  try {
    for (let i = -50; i < QUERIES; i++) {
      for (const [name, query] of Object.entries(filters)) {
        const answer = await timedGet(agent, `${server.url}/${dataset.site}/discussions?${query(Math.abs(i))}`, { authorization: `Bearer ${dataset.token}`, accept: V1 })
        if (answer.status !== 200) throw new Error(`${name}: ${answer.status} ${answer.body.slice(0, 200)}`)
        const body = JSON.parse(answer.body) as { total: number; discussions: unknown[] }
        // A narrow value's few discussions may all be deleted or spam (out of the listing); a broad one's never.
        if (body.discussions.length === 0 && !name.startsWith('narrow')) throw new Error(`${name} (${query(Math.abs(i))}) found nothing: the dataset is not what this bench wrote`)
        if (i >= 0) {
          times[name]!.push(answer.ms)
          totals[name] = body.total
        }
      }
    }
  } finally {
    agent.destroy()
    await server.stop()
  }
  const sorted = (values: number[]) => Float64Array.from(values).sort()
  return Object.fromEntries(Object.entries(times).map(([name, list]) => [name, { median: percentile(sorted(list), 50), p99: percentile(sorted(list), 99), total: totals[name]! }]))
}

const huge = await seededDataset(SIZE, log)
log(`writing a tag and a field value on each of ${SIZE.toLocaleString('en')} discussions`)
const tagged = withTagsAndFields(huge)
log('written')
const ms = (n: number) => `${n.toFixed(1)} ms`
const rows: string[] = []
for (const engine of engines) {
  const dataset = engine === 'sqlite' ? tagged : await postgresDataset(tagged, POSTGRES_URL, log, `bench_fields_${SIZE}`)
  const found = await latencies(dataset, {
    tag: (i) => `tag=t${i % VALUES}`,
    field: (i) => `field.plan=p${i % VALUES}`,
    narrowTag: (i) => `tag=n${(i * 37) % NARROW}`,
    narrowField: (i) => `field.ref=r${(i * 37) % NARROW}`,
  })
  for (const [what, tag, field] of [['1 in 20', found.tag!, found.field!], ['1 in 7,000', found.narrowTag!, found.narrowField!]] as const) {
    const ratio = field.median / tag.median
    rows.push(`| ${engine} | ${what} | ${tag.total.toLocaleString('en')} / ${field.total.toLocaleString('en')} | ${ms(tag.median)} / ${ms(tag.p99)} | ${ms(field.median)} / ${ms(field.p99)} | ${ratio.toFixed(2)} | ${ratio <= TARGET ? 'met' : '**MISSED**'} |`)
    log(rows.at(-1)!)
  }
}
const lines = [
  `# A field filter against a tag filter at ${SIZE.toLocaleString('en')} discussions (npm run bench:fields, ${new Date().toISOString().slice(0, 10)})`,
  '',
  '| engine | each finds | matches (tag / field) | tag: median / p99 | field: median / p99 | field / tag (median) | target (at most 1.2) |',
  '|---|---|---|---|---|---|---|',
  ...rows,
  '',
  `GET /<site>/discussions?tag=… against ?field.plan=… (a choice field) and, narrow, ?tag=n… against ?field.ref=… (a text field): the first page of 30 by activity, ${QUERIES} of each, alternating, one after another on one kept-alive connection after 50 to warm up. Each discussion of the seeded ${SIZE.toLocaleString('en')} has one of 20 tags and the value of plan of the same number (so both filters find the same rows); one in 7 has one of 1,000 narrow tags and the text value of the same number.`,
  '',
]
writeFileSync(join(REPO, 'tools', 'bench', 'results', 'fields.md'), lines.join('\n'))
console.log(lines.join('\n'))
