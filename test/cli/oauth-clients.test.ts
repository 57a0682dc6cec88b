import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.ts'
import { EXIT_DISK_FULL } from '../../cli/main.ts'
import { siteClientMetadata } from '../../cli/oauth-clients.ts'
import { accessTokenReader, recordAdapter } from '../../plugins/oauth/adapter.ts'
import { fingerprint } from '../../lib/token-format.ts'
import { BASE_URL, SITE_URL, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { authorizationQuery, authorize, codeOf, pkce, REDIRECT_URI, registerClient, tokenRequest } from '../fixtures/oauth.ts'
import { SQLITE_ONLY } from '../fixtures/postgres.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: the oauth-client commands' words and checks; their records' store runs on both in test/db/stores/oauth.test.ts. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// service-desk oauth-client add, list and remove (cli/oauth-clients.ts), on the engine the suite
// runs on (test/fixtures/cli.ts); the records they write are read by the real authorization server.

/** The base URL the server of these tests has: the commands name the resources under it. */
const withBase = { env: { SERVICE_BASE_URL: BASE_URL } }

/** The app on the runner's database and clock, ready (in an object: the app itself is thenable). */
async function appOn(t: Test, runner: Awaited<ReturnType<typeof cliRunner>>) {
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, ...runner.appDatabase }, clock: runner.clock })
  t.teardown(() => app.close())
  await app.ready()
  return { app }
}

/** The client id of what `add` printed. */
const idOf = (stdout: string) => /^client id: (app_[\w-]{22})\n/.exec(stdout)?.[1] ?? 'none printed'

t.test('add, list and remove an application from the command line', async (t) => {
  const runner = await cliRunner(t)
  const { run, query, engine } = runner
  await run(['site', 'add', 'demo'])
  await run(['site', 'add', 'other'])

  const added = await run(
    ['oauth-client', 'add', 'demo', '--name', '  Acme integration ', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'http://127.0.0.1:8765/callback'],
    withBase,
  )
  const id = idOf(added.stdout)
  t.match(id, /^app_[A-Za-z0-9_-]{22}$/, 'app_ and 22 characters of base64url')
  t.same(added, {
    code: 0,
    stdout:
      `client id: ${id}\n` +
      'name: Acme integration\n' +
      'site: demo\n' +
      'redirect URI: https://app.example/cb\n' +
      'redirect URI: http://127.0.0.1:8765/callback\n' +
      'A public client (no secret): it must use PKCE (S256), and its access is bound to https://api.example.test/demo.\n',
    stderr: '',
  })

  // The library's Client record, under the fingerprint of the id, without an expiry.
  const rows = await query<{ model: string; id: string; client_id: string; payload: string; expires_at: unknown }>(
    'SELECT model, id, client_id, payload, expires_at FROM oauth_records',
  )
  t.same(rows.map(({ payload, ...row }) => row), [{ model: 'Client', id: fingerprint(id), client_id: id, expires_at: null }])
  const metadata = {
    client_id: id,
    client_name: 'Acme integration',
    redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:8765/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    service_site: 'demo',
    client_id_issued_at: Date.parse('2026-03-01T12:00:00Z') / 1000,
  }
  t.same(JSON.parse(rows[0].payload), metadata)
  t.same(
    siteClientMetadata({ clientId: id, name: 'Acme integration', permalink: 'demo', redirectUris: metadata.redirect_uris, issuedAt: Date.parse('2026-03-01T12:00:00.999Z') }),
    metadata,
    'the exported metadata, in whole seconds',
  )

  runner.clock.advance(90_000)
  // Without SERVICE_BASE_URL, the server's default base URL; a URI given twice is kept once.
  const json = await run(['oauth-client', 'add', 'other', '--name', 'Zap', '--redirect-uri', 'http://localhost/cb', '--redirect-uri', 'http://localhost/cb', '--json'])
  t.equal(json.code, 0)
  t.match(json.stdout, /^\{.*\}\n$/, 'one JSON object on one line')
  const printed = JSON.parse(json.stdout) as { client_id: string }
  t.match(printed.client_id, /^app_[A-Za-z0-9_-]{22}$/)
  t.not(printed.client_id, id)
  t.same(printed, {
    client_id: printed.client_id,
    client_name: 'Zap',
    site: 'other',
    resource: 'http://localhost:3000/other',
    redirect_uris: ['http://localhost/cb'],
    token_endpoint_auth_method: 'none',
    code_challenge_method: 'S256',
    registered_at: '2026-03-01T12:01:30.000Z',
  })

  const line = (clientId: string, rest: string) => `${clientId}\t${rest}\n`
  const demoLine = line(id, 'Acme integration\tdemo\thttps://app.example/cb http://127.0.0.1:8765/callback\t2026-03-01 12:00 UTC')
  const otherLine = line(printed.client_id, 'Zap\tother\thttp://localhost/cb\t2026-03-01 12:01 UTC')
  t.same(await run(['oauth-client', 'list']), { code: 0, stdout: otherLine + demoLine, stderr: '' }, 'newest first')
  t.same(await run(['oauth-client', 'list', 'demo']), { code: 0, stdout: demoLine, stderr: '' }, "one site's")
  const listed = await run(['oauth-client', 'list', '--json'])
  t.equal(listed.code, 0)
  t.same(JSON.parse(listed.stdout), [
    { client_id: printed.client_id, client_name: 'Zap', site: 'other', redirect_uris: ['http://localhost/cb'], registered_at: '2026-03-01T12:01:30.000Z' },
    { client_id: id, client_name: 'Acme integration', site: 'demo', redirect_uris: metadata.redirect_uris, registered_at: '2026-03-01T12:00:00.000Z' },
  ])
  t.same(JSON.parse((await run(['oauth-client', 'list', 'other', '--json'])).stdout), [JSON.parse(listed.stdout)[0]])

  t.same(await run(['oauth-client', 'remove', id]), { code: 0, stdout: `OAuth application ${id} (Acme integration) removed; 0 authorizations ended\n`, stderr: '' })
  t.same(await run(['oauth-client', 'list']), { code: 0, stdout: otherLine, stderr: '' })
  t.same(await run(['oauth-client', 'list', 'demo', '--json']), { code: 0, stdout: '[]\n', stderr: '' })
  t.same(await query('SELECT client_id FROM oauth_records'), [{ client_id: printed.client_id }], `gone from the table (${engine})`)
})

t.test('refusals: one clear line, exit 1 or 2, and nothing changed', async (t) => {
  const { run, query } = await cliRunner(t)
  await run(['site', 'add', 'demo'])
  t.equal((await run(['oauth-client', 'add', 'demo', '--name', 'Kept', '--redirect-uri', 'https://app.example/cb'])).code, 0)
  const snapshot = async () => JSON.stringify(await query('SELECT * FROM oauth_records ORDER BY 1, 2'))
  const before = await snapshot()

  const add = (...rest: string[]) => ['oauth-client', 'add', 'demo', ...rest]
  const uri = (value: string) => add('--name', 'x', '--redirect-uri', value)
  const notRedirect = (quoted: string) =>
    `${quoted} is not a redirect URI an application can have: it must be https, or http on 127.0.0.1, [::1] or localhost, without a #fragment`
  const refusals: [string[], number, string | RegExp][] = [
    [['oauth-client', 'add', 'nosite', '--name', 'x', '--redirect-uri', 'https://app.example/cb'], 1, 'there is no site "nosite"'],
    [add('--redirect-uri', 'https://app.example/cb'), 2, '--name is required: the name the consent page shows'],
    [add('--name', 'x'), 2, '--redirect-uri is required: where the application receives its answer (repeat it for several)'],
    [add('--name', 'x', '--redirect-uri'), 2, /^service-desk: --redirect-uri needs a value \(service-desk oauth-client add --help\)\n$/],
    [uri('http://app.example/cb'), 1, notRedirect('"http://app.example/cb"')],
    [uri('https://app.example/cb#done'), 1, notRedirect('"https://app.example/cb#done"')],
    [uri('not a uri'), 1, notRedirect('"not a uri"')],
    [uri('com.example.app:/cb'), 1, notRedirect('"com.example.app:/cb"')],
    [uri('http://127.0.0.2/cb'), 1, notRedirect('"http://127.0.0.2/cb"')],
    [uri('https://app.example/c\nb'), 1, notRedirect('"https://app.example/c\\nb"')],
    [uri('https://app.example/\u0000'), 1, notRedirect('"https://app.example/\\u0000"')],
    [uri('https://app.example/\u009b31m'), 1, notRedirect('"https://app.example/\\u009b31m"')],
    [add('--name', 'x', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'ftp://app.example/cb'), 1, notRedirect('"ftp://app.example/cb"')],
    [add('--name', 'x', ...Array.from({ length: 11 }, (_, i) => ['--redirect-uri', `https://app.example/${i}`]).flat()), 1, 'an application has at most 10 redirect URIs, not 11'],
    [add('--name', '', '--redirect-uri', 'https://app.example/cb'), 1, 'an application name must be 1 to 100 characters'],
    [add('--name', '   ', '--redirect-uri', 'https://app.example/cb'), 1, 'an application name must be 1 to 100 characters'],
    [add('--name', 'x'.repeat(101), '--redirect-uri', 'https://app.example/cb'), 1, 'an application name must be 1 to 100 characters'],
    [add('--name', 'a\u0000b', '--redirect-uri', 'https://app.example/cb'), 1, 'an application name must not contain the character U+0000'],
    [['oauth-client', 'add', 'demo', '--name', 'x', '--redirect-uri', 'https://app.example/cb', '--secret', 'y'], 2, /^service-desk: unknown option --secret \(service-desk oauth-client add --help lists them; a value that begins with - goes after --\)\n$/],
    [['oauth-client', 'remove', 'app_AAAAAAAAAAAAAAAAAAAAAA'], 1, 'there is no OAuth application "app_AAAAAAAAAAAAAAAAAAAAAA"'],
    [['oauth-client', 'remove', 'app_\u001b[2J'], 1, 'there is no OAuth application "app_\\u001b[2J"'],
    [['oauth-client', 'remove', '--', '-starts-with-a-dash'], 1, 'there is no OAuth application "-starts-with-a-dash"'],
    [['oauth-client', 'remove', '-starts-with-a-dash'], 2, /^service-desk: unknown option -s \(service-desk oauth-client remove --help lists them; a value that begins with - goes after --\)\n$/],
    [['oauth-client', 'remove'], 2, 'usage: service-desk oauth-client remove <client_id>'],
    [['oauth-client', 'list', 'nosite'], 1, 'there is no site "nosite"'],
    [['oauth-client', 'list', 'demo', 'more'], 2, 'usage: service-desk oauth-client list [<site>] [--json]'],
  ]
  for (const [argv, code, message] of refusals) {
    const result = await run(argv)
    const label = JSON.stringify(argv).slice(0, 120)
    t.equal(result.code, code, label)
    if (typeof message === 'string') t.equal(result.stderr, `service-desk: ${message}\n`, label)
    else t.match(result.stderr, message, label)
    t.match(result.stderr, /^service-desk: [^\n]+\n$/, `${label}: one line`)
    t.equal(result.stdout, '', label)
  }
  t.equal(await snapshot(), before, 'the records are exactly as before')

  const longest = await run(add('--name', ` ${'x'.repeat(100)} `, ...Array.from({ length: 10 }, (_, i) => ['--redirect-uri', `https://app.example/${i}`]).flat()))
  t.equal(longest.code, 0, '100 characters and 10 redirect URIs are taken')
  t.match(longest.stdout, `name: ${'x'.repeat(100)}\n`)
})

t.test('remove ends every authorization of the application, with its tokens, and no other', async (t) => {
  const runner = await cliRunner(t)
  const { run } = runner
  await run(['site', 'add', 'demo'])
  const mine = idOf((await run(['oauth-client', 'add', 'demo', '--name', 'Mine', '--redirect-uri', REDIRECT_URI])).stdout)
  const theirs = idOf((await run(['oauth-client', 'add', 'demo', '--name', 'Theirs', '--redirect-uri', REDIRECT_URI])).stdout)
  const { app } = await appOn(t, runner)
  const Adapter = recordAdapter(app.oauthRecords, runner.clock)
  const resource = `${BASE_URL}/demo`
  const exp = Math.floor(runner.clock() / 1000) + 3600
  const tokens: Record<string, string> = {}
  for (const [grantId, clientId] of [['grant-1', mine], ['grant-2', mine], ['grant-3', theirs]]) {
    await new Adapter('Grant').upsert(grantId, { accountId: '1', clientId, resources: { [resource]: 'read' }, kind: 'Grant' }, 86_400)
    tokens[grantId] = `service_oat_${grantId.replace('-', '')}${'A'.repeat(40)}`
    await new Adapter('AccessToken').upsert(tokens[grantId], { grantId, clientId, accountId: '1', aud: resource, scope: 'read', exp, kind: 'AccessToken' }, 3600)
    await new Adapter('RefreshToken').upsert(`service_ort_${grantId}`, { grantId, clientId, accountId: '1', kind: 'RefreshToken' }, 86_400)
  }
  const reader = accessTokenReader(app.oauthRecords)
  for (const value of Object.values(tokens)) t.ok(await reader(value), 'a token that works')

  const removed = await run(['oauth-client', 'remove', mine])
  t.same(removed, { code: 0, stdout: `OAuth application ${mine} (Mine) removed; 2 authorizations ended\n`, stderr: '' })
  t.notMatch(removed.stdout, /service_o|grant-/, 'no token value, no grant id')
  t.equal(await reader(tokens['grant-1']), undefined, 'its tokens stop at once')
  t.equal(await reader(tokens['grant-2']), undefined)
  t.ok(await reader(tokens['grant-3']), "another application's tokens still work")
  const left = await runner.query<{ model: string; client_id: string }>('SELECT model, client_id FROM oauth_records ORDER BY model')
  t.same(
    left,
    ['AccessToken', 'Client', 'Grant', 'RefreshToken'].map((model) => ({ model, client_id: theirs })),
    'nothing of it is left; all of the other one is',
  )
  t.equal(await new Adapter('Client').find(mine), undefined)
  t.same((await run(['oauth-client', 'remove', mine])).stderr, `service-desk: there is no OAuth application "${mine}"\n`, 'removed once')
})

t.test('remove changes all or nothing, also when SQLite rolled its transaction back itself', { skip: SQLITE_ONLY && "SQLite's own fault, better-sqlite3 stubbed" }, async (t) => {
  const runner = await cliRunner(t)
  const { run } = runner
  await run(['site', 'add', 'demo'])
  const clientId = idOf((await run(['oauth-client', 'add', 'demo', '--name', 'Acme', '--redirect-uri', REDIRECT_URI])).stdout)
  const { app } = await appOn(t, runner)
  const Adapter = recordAdapter(app.oauthRecords, runner.clock)
  const resource = `${BASE_URL}/demo`
  await new Adapter('Grant').upsert('grant-1', { accountId: '1', clientId, resources: { [resource]: 'read' }, kind: 'Grant' }, 86_400)
  const token = `service_oat_${'B'.repeat(49)}`
  await new Adapter('AccessToken').upsert(token, { grantId: 'grant-1', clientId, accountId: '1', aud: resource, exp: Math.floor(runner.clock() / 1000) + 3600 }, 3600)

  // The Client's own delete, after the grant's: SQLite fails it, rolling the whole transaction back (as a full disk may).
  // A delete runs as run(), or as all() when it returns its rows.
  type Run = (...args: unknown[]) => unknown
  type Statement = { source: string; database: Database.Database; run: Run; all: Run }
  const probe = new Database(':memory:')
  const prototype = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Statement
  probe.close()
  const original = { run: prototype.run, all: prototype.all }
  const restore = () => Object.assign(prototype, original)
  const deletes: string[] = []
  for (const method of ['run', 'all'] as const) {
    prototype[method] = function (this: Statement, ...args: unknown[]) {
      // (The app's background sweep of expired records may run meanwhile: its delete is not remove's.)
      if (/^delete from "oauth_records"/i.test(this.source) && !this.source.includes('"expires_at" <=')) deletes.push(this.source)
      if (/^delete from "oauth_records" where \("oauth_records"\."model" = \?/i.test(this.source)) {
        this.database.exec('ROLLBACK')
        throw new Database.SqliteError('database or disk is full', 'SQLITE_FULL')
      }
      return original[method].apply(this, args)
    }
  }
  t.teardown(restore)
  const failed = await run(['oauth-client', 'remove', clientId])
  restore()
  t.equal(deletes.length, 2, "the grant's delete, then the client's")
  t.same([failed.code, failed.stdout], [EXIT_DISK_FULL, ''], 'the fault, and nothing printed')
  t.match(failed.stderr, /^service-desk: the disk is full \(database or disk is full\)\.\nNothing was changed\./)
  t.ok(await accessTokenReader(app.oauthRecords)(token), 'the grant was not ended without the client going')
  t.ok(await new Adapter('Client').find(clientId))
  t.equal((await run(['oauth-client', 'remove', clientId])).stdout, `OAuth application ${clientId} (Acme) removed; 1 authorization ended\n`, 'once the fault is gone')
  t.equal(await accessTokenReader(app.oauthRecords)(token), undefined)
})

t.test('applications that registered themselves are listed and removed too', async (t) => {
  const runner = await cliRunner(t)
  const { run } = runner
  await run(['site', 'add', 'demo'])
  const { app } = await appOn(t, runner)
  const { res, client } = await registerClient(app, { client_name: 'Self\tmade\u202e' })
  t.equal(res.statusCode, 201)
  runner.clock.advance(60_000)
  const { client: nameless } = await registerClient(app, { client_name: undefined, redirect_uris: ['https://app.example/cb'] })
  const records = () => app.oauthRecords.list('RegistrationAccessToken', { clientId: client.client_id })
  t.equal((await records()).length, 1, 'the library keeps a registration access token')

  t.same(await run(['oauth-client', 'list']), {
    code: 0,
    stdout:
      `${nameless.client_id}\t(no name)\tany site (registered itself)\thttps://app.example/cb\t2026-03-01 12:01 UTC\n` +
      `${client.client_id}\tSelf\\u0009made\\u202e\tany site (registered itself)\t${REDIRECT_URI}\t2026-03-01 12:00 UTC\n`,
    stderr: '',
  })
  const json = await run(['oauth-client', 'list', '--json'])
  t.match(json.stdout, '"client_name":"Self\\tmade\\u202e"', 'the same name as JSON, the mark escaped')
  t.same(JSON.parse(json.stdout)[1], { client_id: client.client_id, client_name: 'Self\tmade\u202e', site: null, redirect_uris: [REDIRECT_URI], registered_at: '2026-03-01T12:00:00.000Z' })
  t.equal(JSON.parse(json.stdout)[0].client_name, null)
  t.equal((await run(['oauth-client', 'list', 'demo'])).stdout, '', 'bound to no site')

  // The library's ids are base64url: one in 64 starts with -, which would be read as an option but after --.
  t.same(await run(['oauth-client', 'remove', '--', client.client_id]), {
    code: 0,
    stdout: `OAuth application ${client.client_id} (Self\\u0009made\\u202e) removed; 0 authorizations ended\n`,
    stderr: '',
  })
  t.same(await records(), [], 'its registration access token is gone')
  t.equal((await run(['oauth-client', 'remove', '--', nameless.client_id])).stdout, `OAuth application ${nameless.client_id} removed; 0 authorizations ended\n`)
  t.same(await runner.query('SELECT model FROM oauth_records'), [])
})

t.test('the authorization server takes an application added here, for its site only, until it is removed', async (t) => {
  const runner = await cliRunner(t)
  const { run } = runner
  await run(['site', 'add', 'demo'])
  await run(['site', 'add', 'other'])
  const clientId = idOf((await run(['oauth-client', 'add', 'demo', '--name', 'Acme', '--redirect-uri', REDIRECT_URI], withBase)).stdout)
  const { app } = await appOn(t, runner)
  const { challenge } = pkce()
  const query = (extra: Record<string, string> = {}) => {
    const params = authorizationQuery(clientId, { scope: 'read', challenge })
    params.delete('state')
    for (const [name, value] of Object.entries(extra)) params.set(name, value)
    return `/oauth/authorize?${params}`
  }

  const start = await app.inject({ url: query() })
  t.equal(start.statusCode, 303)
  t.match(start.headers.location, /^https:\/\/help\.example\.test\/demo\/oauth\/authorize\/[\w-]+$/, "to the site's consent page")
  const elsewhere = await app.inject({ url: query({ resource: `${BASE_URL}/other` }) })
  t.equal(elsewhere.statusCode, 303)
  const refused = codeOf(elsewhere.headers.location)
  t.equal(`${refused.url.origin}${refused.url.pathname}`, REDIRECT_URI, 'answered at the redirect URI')
  t.equal(refused.error, 'invalid_target', 'another site: refused')
  t.match(refused.url.searchParams.get('error_description'), 'registered for the site demo only')
  const unnamed = await app.inject({ url: query().replace(/&resource=[^&]*/, '') })
  t.match(unnamed.headers.location, /^https:\/\/help\.example\.test\/demo\/oauth\/authorize\//, 'without resource: its own site')

  // The whole flow: a supporter allows it, the token works on the site's API, until the removal.
  const person = await personWithPassword(app, { site: 'demo' })
  const done = await authorize(app, { clientId, scope: 'read', person })
  const { code } = codeOf(done.res.headers.location)
  const issued = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: code!,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: done.verifier,
    resource: `${BASE_URL}/demo`,
  })
  t.equal(issued.statusCode, 200)
  const { access_token: accessToken, refresh_token: refreshToken } = issued.json() as { access_token: string; refresh_token: string }
  const api = () => app.inject({ url: '/demo/discussions', headers: { authorization: `Bearer ${accessToken}`, accept: V1 } })
  t.equal((await api()).statusCode, 200)

  const removed = await run(['oauth-client', 'remove', clientId])
  t.equal(removed.stdout, `OAuth application ${clientId} (Acme) removed; 1 authorization ended\n`)
  t.notMatch(removed.stdout + removed.stderr, /service_o[ar]t_/)
  t.equal((await api()).statusCode, 401, 'its access token stops at once')
  const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId })
  t.equal(refresh.statusCode, 401, 'and its refresh token: the client is unknown')
  t.equal(refresh.json().error, 'invalid_client')
  const gone = await app.inject({ url: query() })
  t.equal(gone.statusCode, 400, 'an unknown client gets the error page')
  t.match(gone.body, 'invalid_client')
})

t.test('--help lists the commands', async (t) => {
  const { run } = await cliRunner(t)
  const overview = (await run(['--help'])).stdout
  for (const usage of [
    'oauth-client add <site> --name NAME --redirect-uri URI [--redirect-uri URI ...] [--json]',
    'oauth-client list [<site>] [--json]',
    'oauth-client remove <client_id>',
  ]) {
    t.match(overview, `\n  ${usage}\n`, usage)
    const help = await run([...usage.split(' ').slice(0, 2), '--help'])
    t.equal(help.code, 0)
    t.match(help.stdout, `Usage: service-desk ${usage}\n`)
    t.match(help.stdout, /\n {2}--db ADDRESS +the database/)
  }
  t.match((await run(['oauth-client', 'add', '--help'])).stdout, /\n {2}--redirect-uri URI +where the application takes people back to/)
})

t.test('leaving the staff or being disabled ends the OAuth grants: no refresh, and coming back needs new consent (issue 28)', async (t) => {
  const runner = await cliRunner(t)
  const { run } = runner
  await run(['site', 'add', 'demo'])
  await run(['site', 'add', 'other'])
  const { app } = await appOn(t, runner)
  const { client } = await registerClient(app)
  const person = await personWithPassword(app, { site: 'demo' })
  await run(['staff', 'add', 'other', person.email])
  /** An authorization on a site's API, allowed in a fresh browser; the token answer. */
  const tokensFor = async (site: string) => {
    const done = await authorize(app, { clientId: client.client_id, scope: 'read', site, person })
    const { code } = codeOf(done.res.headers.location)
    const res = await tokenRequest(app, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: done.verifier, resource: `${BASE_URL}/${site}` })
    return res.json() as { access_token: string; refresh_token: string }
  }
  const refresh = (token: string) => tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id })
  const read = (site: string, token: string) => app.inject({ url: `/${site}/discussions`, headers: { authorization: `Bearer ${token}`, accept: V1 } })
  const demo = await tokensFor('demo')
  const other = await tokensFor('other')

  const removed = await run(['staff', 'remove', 'demo', person.email])
  t.equal(removed.stdout, `${person.email} is no longer support staff of demo; 1 authorized application ended\n`)
  t.equal((await refresh(demo.refresh_token)).json().error, 'invalid_grant', 'its refresh token is refused')
  await run(['staff', 'add', 'demo', person.email])
  t.equal((await read('demo', demo.access_token)).statusCode, 401, 'back on the staff: the old access token does not come back')
  t.equal((await read('other', other.access_token)).statusCode, 200, "the other site's grant is untouched")
  const again = await authorize(app, { clientId: client.client_id, scope: 'read', site: 'demo', person })
  t.equal(again.consent?.statusCode, 200, 'a new authorization asks for consent again')

  const disabled = await run(['user', 'disable', person.email])
  t.match(disabled.stdout, /^user .+ disabled; 2 authorized applications ended\n$/)
  await run(['user', 'enable', person.email])
  t.equal((await refresh(other.refresh_token)).json().error, 'invalid_grant', 'enabled again: no refresh')
  t.equal((await read('other', other.access_token)).statusCode, 401)
})
