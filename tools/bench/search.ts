import { execFileSync } from 'node:child_process'
import http from 'node:http'
import { existsSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { CACHE, copyDataset, postgresDataset, seededDataset, type Dataset } from './datasets.ts'
import { datasetRun } from './dataset-run.ts'
import { measure, percentile, timedGet } from './load.ts'
import { serviceDesk, REPO } from './service-cli.ts'
import { startServer, type Server } from './servers.ts'

// npm run bench:search [-- options]: full-text search at a million discussions (issue 52), on
// `service-desk serve` as an operator runs it, on both engines:
// - how long `service-desk search index` takes to index every discussion of the dataset (what an
//   upgrade or a copy leaves to the backfill);
// - one-word queries of GET /<site>/search, one after the other on one kept-alive connection: the
//   median and the 99th percentile of their time, per word and over all (targets: 50 ms, 200 ms);
// - writes with the index against writes without it: the same service built from the commit
//   before search (BEFORE), on a copy of the same 10,000-discussion dataset, POSTing discussions
//   and replies in alternating rounds (target: within 15%).
// The table goes to tools/bench/results/search.md.

const { size: SIZE, queries: QUERIES, rounds: ROUNDS, postgresUrl: POSTGRES_URL, engines, dir: RUN, log } = await datasetRun('search', { queries: 400, rounds: 3 })
/** The last commit without search: its service writes no index. */
const BEFORE = '4323950'
const V1 = 'application/vnd.service-v1+json'
// One-word queries: words of the seed's discussions (all of them common: each in 5% to 60% of the
// discussions, so every one meets the window), and one found nowhere.
const WORDS = ['invoice', 'password', 'webhook', 'dashboard', 'receipt', 'calendar', 'duplicates', 'phone', 'slow', 'error', 'screenshot', 'documentation', 'zeppelin']

const ms = (n: number) => `${n.toFixed(1)} ms`
const lines: string[] = [`# Search at ${SIZE.toLocaleString('en')} discussions (npm run bench:search, ${new Date().toISOString().slice(0, 10)})`, '']

/** Indexes what is missing of the dataset with the command line; how long it took. */
async function indexAgain(dataset: Dataset): Promise<number> {
  const started = performance.now()
  const out = await serviceDesk(['search', 'index'], dataset.db)
  log(`  ${out.stdout.trim()}`)
  return (performance.now() - started) / 1000
}

/** One GET on the kept-alive agent; its time in ms. */
const timed = (agent: http.Agent, server: Server, path: string, token: string) => timedGet(agent, `${server.url}${path}`, { authorization: `Bearer ${token}`, accept: V1 })

async function queryLatency(engine: string, dataset: Dataset) {
  const server = await startServer({ name: `search-${engine}`, kind: 'service', db: dataset.db, first: { path: `/${dataset.site}/discussions`, headers: { authorization: `Bearer ${dataset.token}`, accept: V1 } }, logDir: join(RUN, 'logs') })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const ask = async (word: string) => {
      const answer = await timed(agent, server, `/${dataset.site}/search?q=${encodeURIComponent(word)}`, dataset.token)
      if (answer.status !== 200) throw new Error(`${word}: ${answer.status} ${answer.body.slice(0, 200)}`)
      return { ms: answer.ms, total: (JSON.parse(answer.body) as { total: number; capped: boolean }).total, capped: JSON.parse(answer.body).capped as boolean }
    }
    for (let i = 0; i < 50; i++) await ask(WORDS[i % WORDS.length])
    const all: number[] = []
    const byWord = new Map<string, { times: number[]; total: number; capped: boolean }>()
    for (let i = 0; i < QUERIES; i++) {
      const word = WORDS[i % WORDS.length]
      const answer = await ask(word)
      all.push(answer.ms)
      const seen = byWord.get(word) ?? { times: [], total: answer.total, capped: answer.capped }
      seen.times.push(answer.ms)
      byWord.set(word, seen)
    }
    const sorted = (values: number[]) => Float64Array.from(values).sort()
    const overall = sorted(all)
    return {
      median: percentile(overall, 50),
      p99: percentile(overall, 99),
      words: [...byWord].map(([word, seen]) => ({ word, total: seen.total, capped: seen.capped, median: percentile(sorted(seen.times), 50), p99: percentile(sorted(seen.times), 99) })),
      rssMb: server.rssMb(),
    }
  } finally {
    agent.destroy()
    await server.stop()
  }
}

/** The service of BEFORE, built once into the cache: a worktree of that commit sharing this one's packages. */
function beforeSearch(): string {
  const dir = join(CACHE, `service-${BEFORE}`)
  if (!existsSync(join(dir, 'cli', 'service-desk.js'))) {
    rmSync(dir, { recursive: true, force: true })
    execFileSync('git', ['worktree', 'add', '--force', '--detach', dir, BEFORE], { cwd: REPO, stdio: 'ignore' })
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'))
  }
  execFileSync(process.execPath, [join(dir, 'cli', 'build.js')], { cwd: dir, stdio: 'ignore' })
  return join(dir, 'cli', 'service-desk.js')
}

/** POSTs of discussions and of replies, with the index and without, alternating; req/s of each. */
async function writes(engine: string, main: Dataset) {
  const copies = engine === 'sqlite'
    ? { with: copyDataset(main, join(RUN, 'with.db')), without: copyDataset(main, join(RUN, 'without.db')) }
    : { with: await postgresDataset(main, POSTGRES_URL, log, 'bench_search_with'), without: await postgresDataset(main, POSTGRES_URL, log, 'bench_search_without') }
  const first = (data: Dataset) => ({ path: `/${data.site}/discussions`, headers: { authorization: `Bearer ${data.token}`, accept: V1 } })
  const servers = {
    with: await startServer({ name: `with-${engine}`, kind: 'service', db: copies.with.db, first: first(copies.with), logDir: join(RUN, 'logs') }),
    without: await startServer({ name: `without-${engine}`, kind: 'service', db: copies.without.db, first: first(copies.without), logDir: join(RUN, 'logs'), bin: beforeSearch() }),
  }
  // Read from a copy: the cached file stays as the command line closed it.
  const reader = new Database(copyDataset(main, join(RUN, 'numbers.db')).db, { readonly: true })
  const open = (reader.prepare("SELECT number FROM discussions WHERE state not in ('deleted', 'spam', 'merged') ORDER BY number").all() as Array<{ number: number }>).map((row) => row.number)
  reader.close()
  const results = { create: { with: [] as number[], without: [] as number[] }, reply: { with: [] as number[], without: [] as number[] } }
  const body = JSON.stringify({ title: 'Printer on the third floor is out of toner', body: 'Created by npm run bench:search; the toner cartridge is empty again.' })
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        const data = copies[side]
        const headers = { authorization: `Bearer ${data.token}`, accept: V1 }
        const create = await measure({ url: servers[side].url, method: 'POST', path: `/${data.site}/categories/${data.categoryId}/discussions`, headers, body, expect: 201 }, { duration: 5, connections: 16 })
        let n = 0
        const reply = await measure(
          {
            url: servers[side].url,
            method: 'POST',
            path: `/${data.site}/discussions/1/comments`,
            headers,
            body: JSON.stringify({ body: 'A reply from npm run bench:search: we sent a technician with a new cartridge.' }),
            // Spread over the dataset's discussions, as replies are (a deleted one refuses a reply).
            setupRequest: (request) => ({ ...request, path: `/${data.site}/discussions/${open[(n++ * 7919) % open.length]}/comments` }),
            expect: 201,
          },
          { duration: 5, connections: 16 },
        )
        if (create.unexpected + reply.unexpected > 0) throw new Error(`${side}: unexpected answers ${JSON.stringify(create.statuses)} ${JSON.stringify(reply.statuses)}`)
        results.create[side].push(create.rps)
        results.reply[side].push(reply.rps)
        log(`  ${engine} round ${round + 1} ${side} index: create ${create.rps.toFixed(0)}/s, reply ${reply.rps.toFixed(0)}/s`)
      }
    }
  } finally {
    await servers.with.stop()
    await servers.without.stop()
  }
  const median = (values: number[]) => percentile(Float64Array.from(values).sort(), 50)
  return Object.fromEntries(Object.entries(results).map(([kind, sides]) => [kind, { with: median(sides.with), without: median(sides.without) }])) as Record<'create' | 'reply', { with: number; without: number }>
}

const huge = await seededDataset(SIZE, log)
const main = await seededDataset(10_000, log)
const figures: string[] = ['| engine | one-word query, median | p99 | target (50 ms, 200 ms) | index a million again | create with / without index | reply with / without index | target (0.85) |', '|---|---|---|---|---|---|---|---|']
const perWord: string[] = []
for (const engine of engines) {
  log(`${engine}: the ${SIZE.toLocaleString('en')}-discussion dataset`)
  let dataset: Dataset
  let indexSeconds: number
  if (engine === 'sqlite') {
    dataset = copyDataset(huge, join(RUN, 'huge.db'))
    // The seed indexed it: taken out, as an upgrade finds a database, then made again.
    const db = new Database(dataset.db)
    db.exec("INSERT INTO discussion_search(discussion_search) VALUES ('delete-all'); UPDATE search_backfill SET below = (SELECT max(id) + 1 FROM discussions)")
    db.close()
    indexSeconds = await indexAgain(dataset)
  } else {
    // A copy leaves the index to be made: made by the command after it (tools/bench/datasets.ts).
    const copied = await postgresDataset(huge, POSTGRES_URL, log, `bench_search_${SIZE}`)
    ;[dataset, indexSeconds] = [copied, copied.indexSeconds]
  }
  log(`${engine}: indexed in ${indexSeconds.toFixed(0)} s`)
  const latency = await queryLatency(engine, dataset)
  log(`${engine}: median ${ms(latency.median)}, p99 ${ms(latency.p99)}`)
  const written = await writes(engine, main)
  const ratio = (kind: 'create' | 'reply') => written[kind].with / written[kind].without
  const met = (ok: boolean) => (ok ? 'met' : '**MISSED**')
  figures.push(
    `| ${engine} | ${ms(latency.median)} | ${ms(latency.p99)} | ${met(latency.median < 50 && latency.p99 < 200)} | ${indexSeconds.toFixed(0)} s | ${written.create.with.toFixed(0)} / ${written.create.without.toFixed(0)} req/s (${ratio('create').toFixed(2)}) | ${written.reply.with.toFixed(0)} / ${written.reply.without.toFixed(0)} req/s (${ratio('reply').toFixed(2)}) | ${met(ratio('create') >= 0.85 && ratio('reply') >= 0.85)} |`,
  )
  perWord.push(...latency.words.map((w) => `| ${engine} | ${w.word} | ${w.total.toLocaleString('en')}${w.capped ? '+' : ''} | ${ms(w.median)} | ${ms(w.p99)} |`))
}
lines.push(...figures, '', `Queries: ${QUERIES} one after the other on one kept-alive connection, after 50 to warm up, cycling through the words below; a page of 30 results with snippets each. Writes: 16 connections, ${ROUNDS} alternating rounds of 5 s, the medians; "without" is the service of ${BEFORE} (before search) on a copy of the same 10,000-discussion dataset.`, '', '| engine | word | matches | median | p99 |', '|---|---|---|---|---|', ...perWord, '')
writeFileSync(join(REPO, 'tools', 'bench', 'results', 'search.md'), `${lines.join('\n')}\n`)
console.log(lines.join('\n'))
