import { AsyncLocalStorage } from 'node:async_hooks'
import pg from 'pg'
import t from 'tap'
import { buildTestApp, rawStatement, supporterWithToken, V1 } from '../../fixtures/app.ts'
import { checkPlannedOnce, plansOf, POSTGRES_URL, postgresAnswers } from '../../fixtures/postgres.ts'

// Engines: both: it reads the statements the service sends to PostgreSQL, so it runs in the PostgreSQL pass alone.
// The authentication's read on PostgreSQL (docs/decisions.md, "One round trip to authenticate"):
// one statement for each site of the requests that arrive together, and planned once on a
// connection ("Plans that are made once"). What each request is answered is asked of both engines
// in test/plugins/auth/authenticate.test.ts.

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

t.test('a personal token and its site: one statement a request, one a site for the requests that arrive together', options, async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const other = await supporterWithToken(app, { site: 'other' })
  // The requests' own statements: the app's loops (the mail fetcher's, the search backfill's, a
  // second after it is ready) run on the same pool, and on a loaded machine their turn fell between
  // the requests (seen in CI: a BEGIN among the reads).
  const requests = new AsyncLocalStorage<true>()
  const get = (site: string, headers: Record<string, string>) => requests.run(true, async () => (await app.inject({ url: `/${site}`, headers: { accept: V1, ...headers } })).statusCode)
  const statements: string[] = []
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function (this: pg.Client & { connectionParameters: { application_name?: string } }, ...args: Parameters<typeof query>) {
    const [config] = args as unknown as [string | { name?: string; text: string }]
    // The events connection is not a request's: it tells the other processes of the 401s
    // (the failure budgets), whenever its turn comes.
    if (requests.getStore() && this.connectionParameters.application_name !== 'service-desk events') {
      statements.push(typeof config === 'string' ? config : (config.name ?? config.text))
    }
    return query.apply(this, args)
  } as typeof query
  t.teardown(() => void (pg.Client.prototype.query = query))
  // A request after the first, whose rate-limit lease is taken.
  await get('demo', ann.bearer)
  statements.length = 0
  t.equal(await get('demo', ann.bearer), 200)
  t.same(statements, ['tokens_on_site_by_fingerprints'], 'the statements of one request')
  // Requests that arrive together are read together, a statement a site; a token of one site is
  // refused on the other, though both are read in the same turn.
  // (The first time, the sites' rows are read and each token's rate-limit lease taken.)
  const bob = await supporterWithToken(app)
  const together = () => Promise.all([get('demo', ann.bearer), get('demo', bob.bearer), get('other', other.bearer), get('other', ann.bearer)])
  t.same(await together(), [200, 200, 200, 401])
  statements.length = 0
  t.same(await together(), [200, 200, 200, 401])
  t.same(statements, ['tokens_on_site_by_fingerprints', 'tokens_on_site_by_fingerprints'], 'one statement a site for four requests')
})

// A list of one permalink, and of one fingerprint once a site has many tokens, made PostgreSQL plan
// the read at every call (db/postgres/engine.ts, plannedOnce).
t.test("the authentication's read is planned once on a connection, with few tokens or many", options, async (t) => {
  for (const tokens of [0, 20_000]) {
    const { app } = await buildTestApp(t)
    const ann = await supporterWithToken(app)
    if (tokens > 0) {
      await rawStatement(app, `INSERT INTO personal_tokens (site_id, user_id, name, access, fingerprint, last_four, created_at, expires_at)
        SELECT site_id, user_id, 'many ' || n, 'read', md5(n::text), 'abcd', now(), now() + interval '1 day' FROM personal_tokens, generate_series(1, $1::int) AS n LIMIT $1`, [tokens])
      await rawStatement(app, 'ANALYZE personal_tokens', [])
    }
    const plans = await plansOf('tokens_on_site_by_fingerprints', async () => {
      for (let i = 0; i < 12; i++) t.equal((await app.inject({ url: '/demo', headers: ann.bearer })).statusCode, 200)
    })
    checkPlannedOnce(t, plans, `${tokens} more tokens`)
  }
})
