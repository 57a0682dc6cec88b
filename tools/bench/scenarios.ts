import type { Dataset } from './datasets.ts'
import type { Target } from './load.ts'

// What is measured: each scenario names the server it runs against, the request, the status every
// answer must have, the scenario its throughput is compared with (a ratio per round), and the
// baseline scenario whose answer must be the same bytes.

export type Section = 'site' | 'list' | 'deep' | 'binary' | 'create' | 'scale' | 'tokens' | 'pg' | 'pg-scale'

export interface Scenario {
  id: string
  section: Section
  label: string
  /** The label within its section, for the chart. */
  short: string
  server: string
  target: Omit<Target, 'url'>
  /** Throughput is reported as a ratio to this scenario's, measured in the same round (min / median / max of the rounds). */
  baseline?: string
  /** Before any measurement, this scenario's body must be byte for byte that scenario's (the baseline's answer to the same page). */
  sameAs?: string
  /** Discussions (scale) or stored personal tokens (tokens) on the server's database. */
  size?: number
}

/** The deep page of the issue: the middle of the listing at 10,000 discussions. */
export const DEEP_PAGE = 166

// Every request asks for v1 the way the documented clients do; the baseline ignores it.
const ACCEPT = { accept: 'application/vnd.service-v1+json' }
const basic = (email: string, password: string) => `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`

/** Personal tokens stored in the main database (the two the benchmark uses). */
export const MAIN_TOKENS = 2

export interface ScenarioInput {
  main: Dataset
  firstCall: string[]
  /** The seeded databases of the scale servers (10k, 100k, 1M). */
  scale: Dataset[]
  /** Personal tokens stored on each token server's database (the first is the main database's few). */
  tokenSizes: number[]
  /** Servers of the single executable (tools/bench/binary.ts), when it could be built. */
  binaries: Array<{ server: string; label: string; short: string }>
}

/** The rounds' measurements; `firstCallUsed` counts accounts the first-call scenario has spent. */
export function scenarios({ main, firstCall, scale, tokenSizes, binaries }: ScenarioInput) {
  const site = `/${main.site}`
  const list = `/${main.site}/discussions`
  let next = 0
  const state = { firstCallUsed: 0, firstCallWrapped: false }
  // A refusal builds no page: its pair is the bare JSON route, whatever the path.
  const credentials: Array<{ id: string; label: string; headers?: Record<string, string>; expect: number; firstCall?: boolean; refusal?: boolean }> = [
    { id: 'pat-write', label: 'personal token, read and write', headers: { authorization: `Bearer ${main.writeToken}` }, expect: 200 },
    { id: 'pat-read', label: 'personal token, read only', headers: { authorization: `Bearer ${main.readToken}` }, expect: 200 },
    { id: 'legacy', label: 'legacy token (X-Service-Auth)', headers: { 'x-service-auth': main.legacyToken }, expect: 200 },
    { id: 'basic-remembered', label: 'Basic, remembered', headers: { authorization: basic(main.email, main.password) }, expect: 200 },
    { id: 'basic-first', label: 'Basic, first call (argon2)', expect: 200, firstCall: true },
    { id: 'none', label: 'no credential (401)', expect: 401, refusal: true },
  ]
  // Each first call signs in as an account that has not signed in before in this process.
  const firstCallRequest = (request: { headers?: Record<string, string> }) => {
    if (next === firstCall.length) {
      next = 0
      state.firstCallWrapped = true
    }
    const email = firstCall[next++]
    state.firstCallUsed++
    return { ...request, headers: { ...request.headers, authorization: basic(email, main.password) } }
  }

  const all: Scenario[] = []
  // The limit of the stack itself: what the pairs that build no page (authentication alone, the 401) are measured against.
  all.push({ id: 'site.bare', section: 'site', label: 'bare JSON route (baseline): GET /bare', short: 'bare JSON route (baseline)', server: 'baseline', target: { path: '/bare', headers: ACCEPT, expect: 200 } })
  for (const [section, path, what] of [['site', site, 'GET /<site>'], ['list', list, 'GET /<site>/discussions']] as const) {
    // The baseline's own answer to the same page: the reference of every 200 below.
    const reference = `${section}.baseline`
    // GET /<site> is authentication and a small resource: its pairs are with the bare JSON route.
    const limit = section === 'site' ? 'site.bare' : reference
    all.push({
      id: reference,
      section,
      label: `baseline (no auth): ${what}`,
      short: 'baseline (no auth)',
      server: 'baseline',
      target: { path, headers: ACCEPT, expect: 200 },
      ...(section === 'site' ? { baseline: 'site.bare' } : {}),
    })
    for (const c of credentials) {
      all.push({
        id: `${section}.${c.id}`,
        section,
        label: `${what}, ${c.label}`,
        short: c.label,
        server: 'service',
        target: { path, headers: { ...ACCEPT, ...c.headers }, expect: c.expect, ...(c.firstCall ? { setupRequest: firstCallRequest } : {}) },
        // A refusal builds no page: it is measured against the bare JSON route.
        ...(c.refusal ? { baseline: 'site.bare' } : { baseline: limit, sameAs: reference }),
      })
    }
  }

  // Right after the listing block, so they are compared with its baseline minutes apart at most.
  for (const binary of binaries) {
    all.push({
      id: `binary.${binary.server}`,
      section: 'binary',
      label: `GET /<site>/discussions, personal token, ${binary.label}`,
      short: binary.short,
      server: binary.server,
      target: { path: list, headers: { ...ACCEPT, authorization: `Bearer ${main.writeToken}` }, expect: 200 },
      baseline: 'list.baseline',
      sameAs: 'list.baseline',
    })
  }

  // A page deep in the listing: the offset skips index entries.
  const deep = `${list}?page=${DEEP_PAGE}`
  all.push({ id: 'deep.baseline', section: 'deep', label: `baseline (no auth): GET /<site>/discussions?page=${DEEP_PAGE}`, short: 'baseline (no auth)', server: 'baseline', target: { path: deep, headers: ACCEPT, expect: 200 } })
  all.push({
    id: 'deep.pat-write',
    section: 'deep',
    label: `GET /<site>/discussions?page=${DEEP_PAGE}, personal token, read and write`,
    short: 'personal token, read and write',
    server: 'service',
    target: { path: deep, headers: { ...ACCEPT, authorization: `Bearer ${main.writeToken}` }, expect: 200 },
    baseline: 'deep.baseline',
    sameAs: 'deep.baseline',
  })

  const create = `/${main.site}/categories/${main.categoryId}/discussions`
  const body = JSON.stringify({ title: 'Printer on the third floor is out of toner', body: 'Created by npm run bench.' })
  const post = (headers: Record<string, string>) => ({ method: 'POST' as const, path: create, headers: { ...ACCEPT, ...headers }, body, expect: 201 })
  // The baseline answers no writes: creation is reported alone, as context.
  all.push({
    id: 'create.pat-write',
    section: 'create',
    label: 'POST create discussion, personal token, read and write',
    short: 'personal token, read and write',
    server: 'service-write',
    target: post({ authorization: `Bearer ${main.writeToken}` }),
  })

  // Scale and token look-ups are blocks of their own, so every ratio they report is between
  // measurements taken one after the other, and every point has a server of its own that has
  // seen the same traffic as the others (a process warmed by the whole scenario mix answers
  // faster than one that has only been warmed up).
  const pat = (dataset: Dataset) => ({ ...ACCEPT, authorization: `Bearer ${dataset.writeToken}` })
  for (const dataset of scale) {
    const size = dataset.discussions
    const suffix = `-scale-${size}`
    all.push({
      id: `scale.baseline.${size}`,
      section: 'scale',
      label: `baseline listing, ${size.toLocaleString('en')} discussions`,
      short: `baseline, ${size.toLocaleString('en')}`,
      server: `baseline${suffix}`,
      target: { path: list, headers: ACCEPT, expect: 200 },
      size,
    })
    all.push({
      id: `scale.service.${size}`,
      section: 'scale',
      label: `listing, personal token, ${size.toLocaleString('en')} discussions`,
      short: `service, ${size.toLocaleString('en')}`,
      server: `service${suffix}`,
      target: { path: list, headers: pat(dataset), expect: 200 },
      baseline: `scale.baseline.${size}`,
      sameAs: `scale.baseline.${size}`,
      size,
    })
  }
  for (const size of tokenSizes) {
    all.push({
      id: `tokens.${size}`,
      section: 'tokens',
      label: `GET /<site>, personal token, ${size.toLocaleString('en')} tokens stored`,
      short: `${size.toLocaleString('en')} tokens`,
      server: `service-tokens-${size}`,
      target: { path: site, headers: pat(main), expect: 200 },
      size,
    })
  }
  return { all, state }
}

export interface PostgresScenarioInput {
  /** The PostgreSQL copy of the main dataset (10,000 discussions), served by `pg-service` and `pg-baseline`. */
  main: Dataset
  /** The PostgreSQL copies of the scale datasets, each served by `pg-service-scale-N` and `pg-baseline-scale-N`. */
  scale: Dataset[]
  /** Whether the SQLite servers run too: then each PostgreSQL baseline page must be the SQLite baseline's, byte for byte. */
  withSqlite: boolean
}

/**
 * The pairs on PostgreSQL: the service (`service-desk serve --db postgres://...`) against the
 * PostgreSQL baseline (tools/bench/baseline-postgres.ts, bare Fastify and pg with the same pool
 * size), on the same rows as the SQLite datasets. A block of their own, after the SQLite ones.
 */
export function postgresScenarios({ main, scale, withSqlite }: PostgresScenarioInput): Scenario[] {
  const site = `/${main.site}`
  const list = `/${main.site}/discussions`
  const deep = `${list}?page=${DEEP_PAGE}`
  const pat = (dataset: Dataset) => ({ ...ACCEPT, authorization: `Bearer ${dataset.writeToken}` })
  // The same page from the SQLite baseline, when it runs: the two engines hold the same rows.
  const sqliteTwin = (id: string) => (withSqlite ? { sameAs: id } : {})
  const all: Scenario[] = [
    { id: 'pg.bare', section: 'pg', label: 'PostgreSQL: bare JSON route (baseline): GET /bare', short: 'bare JSON route (baseline)', server: 'pg-baseline', target: { path: '/bare', headers: ACCEPT, expect: 200 } },
    {
      id: 'pg.site.baseline',
      section: 'pg',
      label: 'PostgreSQL: baseline (no auth): GET /<site>',
      short: 'GET /<site>, baseline (no auth)',
      server: 'pg-baseline',
      target: { path: site, headers: ACCEPT, expect: 200 },
      baseline: 'pg.bare',
      ...sqliteTwin('site.baseline'),
    },
    {
      id: 'pg.site.pat-write',
      section: 'pg',
      label: 'PostgreSQL: GET /<site>, personal token, read and write',
      short: 'GET /<site>, personal token',
      server: 'pg-service',
      target: { path: site, headers: pat(main), expect: 200 },
      baseline: 'pg.bare',
      sameAs: 'pg.site.baseline',
    },
    {
      id: 'pg.site.none',
      section: 'pg',
      label: 'PostgreSQL: GET /<site>, no credential (401)',
      short: 'GET /<site>, no credential (401)',
      server: 'pg-service',
      target: { path: site, headers: ACCEPT, expect: 401 },
      baseline: 'pg.bare',
    },
    {
      id: 'pg.list.baseline',
      section: 'pg',
      label: 'PostgreSQL: baseline (no auth): GET /<site>/discussions',
      short: 'listing, baseline (no auth)',
      server: 'pg-baseline',
      target: { path: list, headers: ACCEPT, expect: 200 },
      ...sqliteTwin('list.baseline'),
    },
    {
      id: 'pg.list.pat-write',
      section: 'pg',
      label: 'PostgreSQL: GET /<site>/discussions, personal token, read and write',
      short: 'listing, personal token',
      server: 'pg-service',
      target: { path: list, headers: pat(main), expect: 200 },
      baseline: 'pg.list.baseline',
      sameAs: 'pg.list.baseline',
    },
    {
      id: 'pg.deep.baseline',
      section: 'pg',
      label: `PostgreSQL: baseline (no auth): GET /<site>/discussions?page=${DEEP_PAGE}`,
      short: 'deep page, baseline (no auth)',
      server: 'pg-baseline',
      target: { path: deep, headers: ACCEPT, expect: 200 },
      ...sqliteTwin('deep.baseline'),
    },
    {
      id: 'pg.deep.pat-write',
      section: 'pg',
      label: `PostgreSQL: GET /<site>/discussions?page=${DEEP_PAGE}, personal token, read and write`,
      short: 'deep page, personal token',
      server: 'pg-service',
      target: { path: deep, headers: pat(main), expect: 200 },
      baseline: 'pg.deep.baseline',
      sameAs: 'pg.deep.baseline',
    },
  ]
  for (const dataset of scale) {
    const size = dataset.discussions
    all.push({
      id: `pg-scale.baseline.${size}`,
      section: 'pg-scale',
      label: `PostgreSQL: baseline listing, ${size.toLocaleString('en')} discussions`,
      short: `baseline, ${size.toLocaleString('en')}`,
      server: `pg-baseline-scale-${size}`,
      target: { path: list, headers: ACCEPT, expect: 200 },
      size,
      ...sqliteTwin(`scale.baseline.${size}`),
    })
    all.push({
      id: `pg-scale.service.${size}`,
      section: 'pg-scale',
      label: `PostgreSQL: listing, personal token, ${size.toLocaleString('en')} discussions`,
      short: `service, ${size.toLocaleString('en')}`,
      server: `pg-service-scale-${size}`,
      target: { path: list, headers: pat(dataset), expect: 200 },
      baseline: `pg-scale.baseline.${size}`,
      sameAs: `pg-scale.baseline.${size}`,
      size,
    })
  }
  return all
}
