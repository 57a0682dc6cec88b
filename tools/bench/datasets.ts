import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import Database from 'better-sqlite3'
import { fingerprint, generatePersonalToken, lastFour } from '../../lib/token-format.ts'
import { REPO, serviceDesk } from './service-cli.ts'

// The databases a run measures. A seeded database is built once with the service's own command
// line (site add, user add, staff add, seed, token create, legacy-token show) and kept under
// tools/bench/.cache/, named by what it depends on: a change to the migrations or to the seed makes a
// new one. Runs never write to a cached file except through a copy.

export const CACHE = join(REPO, 'tools', 'bench', '.cache')
export const SITE = 'bench'
export const SUPPORTER = { email: 'supporter@bench.example', name: 'Bench Supporter', password: 'bench-password-42' }
// Bump when the way a dataset is built changes.
const BUILD_VERSION = 1
// Tokens are made for a year; a cached dataset is rebuilt before they run out.
const TOKEN_DAYS = 365
const STALE_AFTER_MS = 300 * 24 * 60 * 60 * 1000

export interface Dataset {
  file: string
  discussions: number
  site: string
  email: string
  password: string
  writeToken: string
  readToken: string
  legacyToken: string
  categoryId: number
  /** Seconds the `seed` command took, as it reported, and the whole build's wall time. */
  seedSeconds: number
  buildSeconds: number
  builtAt: string
  bytes: number
  fromCache: boolean
}

type Stored = Omit<Dataset, 'file' | 'fromCache' | 'bytes'>

/** What a seeded database depends on: the migrations, the seed, and this builder. */
function dependencyHash(): string {
  const hash = createHash('sha256').update(`build ${BUILD_VERSION}\n`)
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
    )
  const inputs = [...files(join(REPO, 'db', 'sqlite', 'migrations')), join(REPO, 'db', 'stores', 'seed.ts')].sort()
  for (const file of inputs) hash.update(relative(REPO, file)).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex').slice(0, 12)
}

const base = (discussions: number) => `discussions-${discussions}`

function removeSqlite(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true })
}

/** Whether the seeded database of this size is in the cache and current. */
export function isCached(discussions: number): boolean {
  const name = join(CACHE, `${base(discussions)}-${dependencyHash()}`)
  if (!existsSync(`${name}.db`) || !existsSync(`${name}.json`)) return false
  const stored = JSON.parse(readFileSync(`${name}.json`, 'utf8')) as Stored
  return Date.now() - Date.parse(stored.builtAt) < STALE_AFTER_MS
}

/**
 * The seeded database of `discussions` discussions, from the cache or built now (which for a
 * million takes minutes; `log` hears about it).
 */
export async function seededDataset(discussions: number, log: (line: string) => void): Promise<Dataset> {
  mkdirSync(CACHE, { recursive: true })
  const name = `${base(discussions)}-${dependencyHash()}`
  const file = join(CACHE, `${name}.db`)
  const meta = join(CACHE, `${name}.json`)
  if (isCached(discussions)) {
    const stored = JSON.parse(readFileSync(meta, 'utf8')) as Stored
    return { ...stored, file, bytes: statSync(file).size, fromCache: true }
  }
  // Older builds of this size (another schema or seed) are replaced.
  for (const entry of readdirSync(CACHE)) if (entry.startsWith(`${base(discussions)}-`)) rmSync(join(CACHE, entry), { force: true })

  const building = join(CACHE, `${name}.building.db`)
  removeSqlite(building)
  const started = performance.now()
  log(`building the ${discussions.toLocaleString('en')}-discussion database with the service-desk command (cached afterwards)`)
  await serviceDesk(['site', 'add', SITE, '--name', 'Bench'], building)
  await serviceDesk(['user', 'add', SUPPORTER.email, '--name', SUPPORTER.name, '--password-stdin'], building, `${SUPPORTER.password}\n`)
  await serviceDesk(['staff', 'add', SITE, SUPPORTER.email], building)
  const seeded = await serviceDesk(['seed', SITE, '--discussions', String(discussions), '--seed', '1'], building)
  const reported = /in ([\d.]+) s/.exec(seeded.stdout)
  const seedSeconds = reported ? Number(reported[1]) : seeded.ms / 1000
  log(`  seed: ${seeded.stdout.trim()} (wall ${(seeded.ms / 1000).toFixed(1)} s)`)
  const token = async (access: 'read' | 'write') =>
    (await serviceDesk(['token', 'create', SITE, SUPPORTER.email, '--name', `bench ${access}`, '--access', access, '--expires', String(TOKEN_DAYS)], building)).stdout.trim()
  const writeToken = await token('write')
  const readToken = await token('read')
  const legacyToken = (await serviceDesk(['legacy-token', 'show', SUPPORTER.email], building)).stdout.trim()
  const categories = (await serviceDesk(['category', 'list', SITE], building)).stdout.trim().split('\n')
  const categoryId = Number(categories[0].split('\t')[0])

  const stored: Stored = {
    discussions,
    site: SITE,
    email: SUPPORTER.email,
    password: SUPPORTER.password,
    writeToken,
    readToken,
    legacyToken,
    categoryId,
    seedSeconds,
    buildSeconds: (performance.now() - started) / 1000,
    builtAt: new Date().toISOString(),
  }
  removeSqlite(file)
  renameSync(building, file)
  writeFileSync(meta, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 })
  log(`  built in ${stored.buildSeconds.toFixed(1)} s: ${file}`)
  return { ...stored, file, bytes: statSync(file).size, fromCache: false }
}

/** A private copy of a dataset's database, for a run that writes to it. */
export function copyDataset(dataset: Dataset, file: string): Dataset {
  removeSqlite(file)
  // The cached file was closed by the command line, so it holds everything (no -wal beside it).
  copyFileSync(dataset.file, file)
  return { ...dataset, file, fromCache: false }
}

/**
 * Supporters who sign in with Basic for the first time: `count` accounts with the supporter's own
 * password hash (so argon2 verifies the same work per request), staff of the site. Their
 * addresses are first-call-<i>@bench.example.
 */
export function addFirstCallSupporters(dataset: Dataset, count: number): string[] {
  const db = new Database(dataset.file)
  try {
    const supporter = db.prepare('select password_hash as hash from users where email_key = ?').get(SUPPORTER.email) as { hash: string }
    const site = db.prepare('select id from sites where permalink = ?').get(dataset.site) as { id: number }
    const now = Date.now()
    const user = db.prepare('insert into users (email, email_key, name, password_hash, disabled, created_at) values (?, ?, ?, ?, 0, ?)')
    const member = db.prepare("insert into memberships (site_id, user_id, role, created_at) values (?, ?, 'supporter', ?)")
    const emails: string[] = []
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        const email = `first-call-${i}@bench.example`
        const { lastInsertRowid } = user.run(email, email, `First Call ${i}`, supporter.hash, now)
        member.run(site.id, lastInsertRowid, now)
        emails.push(email)
      }
    })()
    return emails
  } finally {
    db.close()
  }
}

/**
 * `count` more personal tokens in the database, stored as the service stores them (SHA-256
 * fingerprint of a real token value, last four characters), 20 per owner as the limit allows,
 * written in transactions of 5,000.
 */
export function addTokens(dataset: Dataset, count: number): { seconds: number } {
  const started = performance.now()
  const db = new Database(dataset.file)
  try {
    db.pragma('journal_mode = WAL')
    const site = db.prepare('select id from sites where permalink = ?').get(dataset.site) as { id: number }
    const now = Date.now()
    const owner = db.prepare('insert into users (email, email_key, name, disabled, created_at) values (?, ?, ?, 0, ?)')
    const member = db.prepare("insert into memberships (site_id, user_id, role, created_at) values (?, ?, 'supporter', ?)")
    const token = db.prepare(
      `insert into personal_tokens (site_id, user_id, name, access, fingerprint, last_four, created_at, expires_at)
       values (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    const batch = db.transaction((from: number, to: number) => {
      let ownerId = 0
      for (let i = from; i < to; i++) {
        if (i % 20 === 0) {
          const email = `token-owner-${i / 20}@bench.example`
          ownerId = Number(owner.run(email, email, `Token Owner ${i / 20}`, now).lastInsertRowid)
          member.run(site.id, ownerId, now)
        }
        const value = generatePersonalToken()
        token.run(site.id, ownerId, `script ${i % 20}`, i % 2 ? 'read' : 'write', fingerprint(value), lastFour(value), now, now + 90 * 86_400_000)
      }
    })
    // Owners start on a multiple of 20, so every batch of 5,000 starts with a new owner.
    for (let from = 0; from < count; from += 5_000) batch(from, Math.min(count, from + 5_000))
    db.pragma('wal_checkpoint(TRUNCATE)')
    return { seconds: (performance.now() - started) / 1000 }
  } finally {
    db.close()
  }
}

export function tokenCount(file: string): number {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare('select count(*) as n from personal_tokens').get() as { n: number }).n
  } finally {
    db.close()
  }
}
