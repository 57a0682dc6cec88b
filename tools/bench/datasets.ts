import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import pg from 'pg'
import { REPO, serviceDesk } from './service-cli.ts'

// The databases a run measures, made with the service's own command line, as an operator would:
// `site add`, `user add`, `staff add`, `seed`, `token create`, `legacy-token show`; on PostgreSQL,
// `copy` of the SQLite one into a schema of its own, so both engines serve the same rows and
// tokens. A SQLite dataset is kept under tools/bench/.cache/, named by what it depends on (the
// migrations and the seed); a run writes only to copies of it.

export const CACHE = join(REPO, 'tools', 'bench', '.cache')
const SITE = 'bench'
const SUPPORTER = { email: 'supporter@bench.example', password: 'bench-password-42' }

export interface Dataset {
  /** A SQLite file, or a postgres:// address with its schema. */
  db: string
  discussions: number
  site: string
  email: string
  password: string
  token: string
  /** More tokens of the same supporter (read access), for the requests that each carry another. */
  tokens: string[]
  legacyToken: string
  categoryId: number
  /** The numbers of discussions a reply may go to (none deleted), each reply of a run to the next: a private copy's, for the writes. */
  replies?: number[]
}

/** The tokens besides the first, each request of a `tokens` scenario carrying the next (scenarios.ts). */
const MORE_TOKENS = 16

/** What a seeded database depends on: the migrations, the seed (its draws and its SQLite bulk path) and what is built here. */
function dependencyHash(): string {
  const hash = createHash('sha256')
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)]))
  const inputs = [...files(join(REPO, 'db', 'sqlite', 'migrations')), join(REPO, 'db', 'stores', 'seed.ts'), join(REPO, 'db', 'sqlite', 'seed.ts'), join(REPO, 'tools', 'bench', 'datasets.ts')].filter((file) => existsSync(file)).sort()
  for (const file of inputs) hash.update(relative(REPO, file)).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex').slice(0, 12)
}

function removeSqlite(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true })
}

/** The seeded SQLite database of `discussions` discussions, from the cache or built now. */
export async function seededDataset(discussions: number, log: (line: string) => void): Promise<Dataset> {
  mkdirSync(CACHE, { recursive: true })
  const name = join(CACHE, `discussions-${discussions}-${dependencyHash()}`)
  if (existsSync(`${name}.db`) && existsSync(`${name}.json`)) return { ...(JSON.parse(readFileSync(`${name}.json`, 'utf8')) as Dataset), db: `${name}.db` }
  for (const entry of readdirSync(CACHE)) if (entry.startsWith(`discussions-${discussions}-`)) rmSync(join(CACHE, entry), { force: true })
  const building = `${name}.building.db`
  removeSqlite(building)
  const started = performance.now()
  log(`building the ${discussions.toLocaleString('en')}-discussion database with the service-desk command (cached afterwards)`)
  const run = async (args: string[], stdin?: string) => (await serviceDesk(args, building, stdin)).stdout.trim()
  await run(['site', 'add', SITE, '--name', 'Bench'])
  // The seed uses a site's own categories: the usual four besides the General that site add makes,
  // so the data keeps the shape of the runs before site add made one.
  for (const [name, ...flags] of [['Questions', '--public'], ['Problems'], ['Billing'], ['Feature requests', '--public']]) await run(['category', 'add', SITE, name, ...flags])
  await run(['user', 'add', SUPPORTER.email, '--name', 'Bench Supporter', '--password-stdin'], `${SUPPORTER.password}\n`)
  await run(['staff', 'add', SITE, SUPPORTER.email])
  log(`  ${await run(['seed', SITE, '--discussions', String(discussions), '--seed', '1'])}`)
  const dataset: Dataset = {
    db: `${name}.db`,
    discussions,
    site: SITE,
    ...SUPPORTER,
    token: await run(['token', 'create', SITE, SUPPORTER.email, '--name', 'bench', '--access', 'write', '--expires', '365']),
    tokens: [],
    legacyToken: await run(['legacy-token', 'show', SUPPORTER.email]),
    categoryId: Number((await run(['category', 'list', SITE])).split('\t')[0]),
  }
  for (let i = 1; i <= MORE_TOKENS; i++) dataset.tokens.push(await run(['token', 'create', SITE, SUPPORTER.email, '--name', `bench ${i}`, '--access', 'read', '--expires', '365']))
  renameSync(building, dataset.db)
  writeFileSync(`${name}.json`, `${JSON.stringify(dataset, null, 2)}\n`, { mode: 0o600 })
  log(`  built in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return dataset
}

/** A private copy of a SQLite dataset, for a run that writes to it. */
export function copyDataset(dataset: Dataset, file: string): Dataset {
  removeSqlite(file)
  // The cached file was closed by the command line, so it holds everything (no -wal beside it).
  copyFileSync(dataset.db, file)
  return { ...dataset, db: file }
}

/** Undefined when the PostgreSQL server answers within 3 s; otherwise why not. */
export async function postgresUnavailable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return undefined
  } catch (error) {
    return (error as Error).message || String(error)
  } finally {
    await client.end().catch(() => {})
  }
}

/** The dataset copied into the schema bench_<size> of the server at `url` (made again each run: `copy` wants it empty). */
export async function postgresDataset(dataset: Dataset, url: string, log: (line: string) => void, schema = `bench_${dataset.discussions}`): Promise<Dataset & { indexSeconds: number }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
  const address = new URL(url)
  address.searchParams.set('schema', schema)
  const started = performance.now()
  await serviceDesk(['copy', '--from', dataset.db, '--to', address.toString()], undefined)
  log(`${dataset.discussions.toLocaleString('en')} discussions copied to PostgreSQL (${schema}) in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  // A copy leaves the search index to be made (db/copy.ts): made now, so no server measured makes it meanwhile.
  const indexing = performance.now()
  await serviceDesk(['search', 'index'], address.toString())
  const indexSeconds = (performance.now() - indexing) / 1000
  log(`  and indexed for search in ${indexSeconds.toFixed(1)} s`)
  return { ...dataset, db: address.toString(), indexSeconds }
}
