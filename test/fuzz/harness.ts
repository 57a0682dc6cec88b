import fc from 'fast-check'
import type { Test } from 'tap'
import { BASE_URL, buildTestApp, databaseAddressOf, SITE_URL } from '../fixtures/app.ts'
import pg from 'pg'
import { parsePostgresAddress } from '../../lib/database-address.ts'
import { answerProblem, asksForPage, changedTables, postgresSnapshot, snapshot, withoutAttempts, type Answer } from './answers.ts'
import type { FuzzRequest } from './arbitraries.ts'
import { seedFuzzData } from './seed.ts'

// The in-process side of the fuzzers: a seeded test app, requests through app.inject, and the
// property every answer must keep. FUZZ_RUNS and FUZZ_SEED replay or extend a run.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

export const SITE_ORIGIN = new URL(SITE_URL.replace('{site}', 'x')).origin

/** fast-check parameters: a modest count in `npm test`, more (or a replayed seed) on demand. */
export function runs(numRuns: number): fc.Parameters<unknown> {
  const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
  return { numRuns: Number(process.env.FUZZ_RUNS ?? numRuns), ...(seed === undefined ? {} : { seed }), endOnFailure: false }
}

export async function fuzzApp(t: Test) {
  const { app } = await buildTestApp(t)
  const known = await seedFuzzData(app)
  // The seed used the token once; its last-used write is flushed now, not in the middle of a run.
  await app.tokens.flush()
  if (app.database.kind === 'postgres') {
    // The tables are read over a connection of the test's own, beside the app's pool.
    const { connectionString, schema } = parsePostgresAddress(databaseAddressOf(app))
    const client = new pg.Client({ connectionString })
    await client.connect()
    t.teardown(() => client.end())
    snapshots.set(app, await postgresSnapshot(client, schema))
  }
  return { app, known }
}

// How each app's tables are read: SQLite's in place, PostgreSQL's over the test's connection.
const snapshots = new WeakMap<App, () => Promise<string>>()
const tablesOf = async (app: App) => snapshots.get(app)?.() ?? snapshot(app.database.sqlite!.$client)

let clients = 0

/**
 * Sends one request. Each comes from a new client address (failed authentication is limited per
 * address, which would soon answer everything with 429); one in eight shares an address, so the
 * limited answers are exercised as well.
 */
export async function send(app: App, request: FuzzRequest): Promise<Answer> {
  clients++
  const remoteAddress = clients % 8 === 0 ? '10.255.255.1' : `10.${(clients >> 16) & 255}.${(clients >> 8) & 255}.${clients & 255}`
  const res = await app.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, payload: request.payload, remoteAddress })
  return { status: res.statusCode, headers: res.headers, body: res.body }
}

/**
 * The property: the answer keeps the contract (answers.ts) and, when it refuses, the database is
 * exactly as it was. `refused`: the request carried no usable credential; `oneCredential`: it
 * carried exactly one genuine credential.
 */
export async function keepsContract(app: App, request: FuzzRequest, refused: boolean, oneCredential = false): Promise<void> {
  const before = await tablesOf(app)
  const answer = await send(app, request)
  // light-my-request resolves the URL as a client would (dot segments removed), and so does the
  // server's view of it: classify what was actually asked for.
  const url = new URL(request.url.startsWith('//') ? `http://localhost${request.url}` : request.url, 'http://localhost')
  const problem = answerProblem(request.method, url.pathname + url.search, answer, { baseUrl: BASE_URL, siteOrigin: SITE_ORIGIN, refused, oneCredential, page: asksForPage(request) })
  if (problem) throw new Error(`${problem} (answer ${answer.status} ${JSON.stringify(answer.headers)} ${answer.body.slice(0, 300)})`)
  if (answer.status >= 400) {
    // A refused sign-in writes its own record to the security log, and nothing else.
    const after = withoutAttempts(await tablesOf(app))
    if (after !== withoutAttempts(before)) throw new Error(`a refused request (${answer.status}) changed the tables ${changedTables(before, after).join(', ')}`)
  }
}
