import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { buildApp, type AppOptions } from '../../app.ts'
import { BASE_URL, SITE_URL, testClock } from '../fixtures/app.ts'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'

// Two apps in this process on one database, as two service processes behind a proxy would be: a
// SQLite file of a temporary folder (both read its key file), or one PostgreSQL schema with one
// SERVICE_SECRET. Their only ways to each other are the database and its events (db/engine.ts).

/** The address of a database of the suite's engine that outlives the test's apps, with its secret. */
export async function sharedDatabase(t: Test): Promise<{ databaseAddress: string; secret?: string }> {
  if (TEST_ENGINE === 'postgres') return await privateDatabase(t)
  const dir = mkdtempSync(join(tmpdir(), 'service-desk-shared-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return { databaseAddress: join(dir, 'service.db') }
}

/** A private database of the suite's engine, as newTestApp makes: in memory, or a schema of its own. */
export async function privateDatabase(t: Test): Promise<{ databaseAddress: string; secret?: string }> {
  return TEST_ENGINE === 'postgres' ? { databaseAddress: await postgresTestAddress(t), secret: randomBytes(32).toString('hex') } : { databaseAddress: ':memory:' }
}

/** Two apps on one database, with one clock (the same wall time), ready. */
export async function twoApps(t: Test, config: Partial<AppOptions['config']> = {}, logStream?: AppOptions['logStream']) {
  const database = await sharedDatabase(t)
  const clock = testClock()
  const [one, two] = [0, 1].map(() => buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...database, ...config }, clock, logStream }))
  for (const app of [one!, two!]) t.teardown(() => app.close())
  // One after the other: the first migrates the database.
  await one!.ready()
  await two!.ready()
  return { one: one!, two: two!, clock }
}

/** Asks `answer` every 20 ms until it says yes, for at most `ms`; says whether it did. */
export async function eventually(answer: () => boolean | Promise<boolean>, ms = 2_000): Promise<boolean> {
  for (const end = Date.now() + ms; ; ) {
    if (await answer()) return true
    if (Date.now() > end) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
