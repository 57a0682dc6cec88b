import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { supporterWithPassword } from '../fixtures/credentials.ts'
import { POSTGRES_URL, postgresAnswers } from '../fixtures/postgres.ts'
import { webClient } from '../fixtures/web.ts'
import { form } from '../fixtures/files.ts'
import { COPIED_TABLES } from '../../db/copy.ts'
import { getPgTableConfig } from '../../db/drizzle-postgres.ts'
import * as sqliteSchema from '../../db/schema/sqlite.ts'
import { getTableConfig, is, SQLiteTable } from '../../db/drizzle.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// `service-desk copy`: a SQLite database built through the service, moved to a fresh PostgreSQL
// schema, checked table by table, then served from there with the same server key: every token,
// password and session of the SQLite side gets the same answers. Runs wherever the test server
// answers (on either run of the suite: the source is a SQLite file, the target a schema of its own).

const down = (await postgresAnswers()) ? false : `PostgreSQL at ${POSTGRES_URL} does not answer`
// On CI the database is part of the machine: its absence is a failure, not a reason to skip.
if (down && process.env.CI === 'true') t.fail(down)
const options = { skip: down }

type App = ReturnType<typeof buildApp>

t.test("every table of the schema is copied but the search backfill's mark and the sites' file usage (the target makes its index again, and its trigger the usage)", async (t) => {
  // The SQLite schema's tables: the PostgreSQL one has the same (test/db/postgres/schema.test.ts).
  const tables = Object.values(sqliteSchema).filter((value) => is(value, SQLiteTable)).map((table) => getTableConfig(table as Parameters<typeof getTableConfig>[0]).name)
  const copied = COPIED_TABLES.map((table) => getPgTableConfig(table).name)
  t.same([...copied, 'search_backfill', 'site_file_usage'].sort(), tables.sort(), 'a new table is copied, or named here as not')
})

/** A SQLite database made through the service: the app on the file, its stores and its pages. */
async function buildSource(t: Test, secret: string | undefined) {
  const source = await cliRunner(t, { engine: 'sqlite' })
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, databaseAddress: source.db, ...(secret ? { secret } : {}) }, clock: source.clock })
  await app.ready()
  const ann = await supporterWithPassword(app, { email: 'ann@example.test' })
  const { value: bearer } = await app.tokens.create({ siteId: ann.site.id, userId: ann.user.id, name: 'export', access: 'write', expiresInDays: 90 })
  const legacy = (await app.users.legacyTokens.current(ann.user.id)).value
  const browser = webClient(app)
  t.equal((await browser.signIn('ann@example.test', ann.password)).statusCode, 303, 'signed in: a web session')
  return { source, app, ann, bearer, legacy, browser }
}

/** The same requests to either app: their status, the token expiry they announce, and their bodies. */
async function answers(app: App, credentials: { bearer: string; legacy: string; basic: Record<string, string> }) {
  const asked: Array<[string, Record<string, string>]> = [
    ['/demo', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
    ['/demo', { 'x-service-auth': credentials.legacy, accept: V1 }],
    ['/demo', credentials.basic],
    ['/demo/discussions', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
    ['/demo/discussions/resolved', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
    ['/demo/discussions/deleted', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
    ['/demo/discussions/1/comments', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
    ['/demo/categories', { authorization: `Bearer ${credentials.bearer}`, accept: V1 }],
  ]
  const said = []
  for (const [url, headers] of asked) {
    const res = await app.inject({ url, headers })
    said.push({ url, status: res.statusCode, expiration: res.headers['service-token-expiration'], body: res.body })
  }
  return said
}

t.test('a database built through the service moves to PostgreSQL whole, and the same tokens get the same answers there', options, async (t) => {
  const secret = randomBytes(32).toString('hex')
  const { source, app, ann, bearer, legacy, browser } = await buildSource(t, secret)
  const api = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${bearer}`, accept: V1 }, payload })
  const questions = await app.categories.add(ann.site.id, 'Questions', true)
  const problems = await app.categories.add(ann.site.id, 'Problems', false)
  for (let i = 1; i <= 6; i++) {
    const onBehalf = i % 2 === 0 ? { author_email: `customer${i}@example.test`, author_name: `Customer ${i}` } : {}
    const category = i % 3 === 0 ? problems : questions
    t.equal((await api('POST', `/demo/categories/${category.id}/discussions`, { title: `Question ${i}: ünïcode & "quotes"`, body: `Body ${i}\nline two`, ...onBehalf })).statusCode, 201)
    source.clock.advance(60_000)
  }
  t.equal((await api('POST', '/demo/discussions/2/comments', { body: 'An answer.' })).statusCode, 201)
  t.equal((await api('POST', '/demo/discussions/2/comments', { body: 'A note among us.', internal: true })).statusCode, 201)
  // A file of three pieces on a comment: its bytes go across in the bytea of file_pieces.
  const file = randomBytes(600 * 1024)
  const upload = await form({ body: 'The export you asked for.', file: { name: 'export.bin', bytes: file } })
  const carried = await app.inject({ method: 'POST', url: '/demo/discussions/2/comments', headers: { authorization: `Bearer ${bearer}`, accept: V1, 'content-type': upload.type }, payload: upload.payload })
  t.equal(carried.statusCode, 201)
  const attachment = carried.json().attachments[0].href.slice(BASE_URL.length)
  t.equal((await api('POST', '/demo/discussions/2/resolve', {})).statusCode, 200)
  t.equal((await api('DELETE', '/demo/discussions/5')).statusCode, 200)
  // The team's queue: an owner (in the counts too), tags and their rows, a saved reply.
  t.equal((await api('PUT', '/demo/discussions/3', { assignee: ann.user.id, tags: ['VAT', 'billing'] })).statusCode, 200)
  await app.savedReplies.add(ann.site.id, { title: 'Thanks', body: 'Thanks, {{customer.name}}.' })
  // A rule (issue 70) that fires on the next new discussion: its firing is a row to copy too.
  await app.rules.add(ann.site.id, { name: 'Tag all', events: ['created'], actions: [{ type: 'add_tags', tags: ['seen'] }] }, { id: ann.user.id, name: ann.user.email, via: 'api' })
  t.equal((await api('POST', `/demo/categories/${questions.id}/discussions`, { title: 'Ruled', body: 'x' })).statusCode, 201)
  await app.senders.set(ann.site.id, 'spammer.example', 'block')
  // Custom fields (issue 72) and a merge (issue 71): the field, its values' rows, what undo needs.
  const by = { id: ann.user.id, name: ann.user.email, via: 'api' as const }
  await app.fields.add(ann.site.id, { key: 'plan', name: 'Plan', kind: 'choices', choices: ['Basic', 'Pro'] }, by)
  t.equal((await api('PUT', '/demo/discussions/4', { fields: { plan: ['Basic', 'Pro'] } })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/demo/discussions/6/merge', headers: { authorization: `Bearer ${bearer}`, accept: V1 }, payload: { into: 4 } })).statusCode, 200)
  // A provider of the staff's sign-in (issue 73) and Ann's subject linked to it.
  const acme = await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'google', clientId: 'acme-client', clientSecret: 'acme-secret' }, by)
  t.equal((await app.signInProviders.admit(acme, 'subject-of-ann', ann.user.email, 'Ann', { address: null })).kind, 'admitted')
  const credentials = { bearer, legacy, basic: ann.headers }
  const before = await answers(app, credentials)
  t.same(before.map((answer) => answer.status), [200, 200, 200, 200, 200, 200, 200, 200], 'every credential works on SQLite')
  const profileBefore = (await browser.get('/demo/profile')).body
  t.match(profileBefore, legacy, 'the profile page shows the legacy token')
  // oidc-provider's records go across too: moments set and null, ids in the order of their bytes.
  const oauth = app.database.oauth(source.clock)
  const grantId = 'f'.repeat(64)
  const none = { uid: null, userCode: null, clientId: null, resource: null }
  await oauth.upsert({ ...none, model: 'Grant', id: grantId, payload: '{"accountId":"ann","ünï":"\\n"}', grantId, accountId: String(ann.user.id), clientId: 'client-1', expiresAt: new Date(source.clock() + 86_400_000) })
  await oauth.upsert({ ...none, model: 'Session', id: '0'.repeat(64), payload: '{}', grantId: null, uid: 'session-uid', accountId: null, expiresAt: null })
  await oauth.consume('Grant', grantId)
  await oauth.recordUse('Grant', grantId, new Date(source.clock() + 1))
  const grantBefore = await oauth.find('Grant', grantId)
  t.ok(grantBefore?.consumedAt && grantBefore.lastUsedAt, 'a grant consumed and used, on SQLite')
  await app.securityLog.append({ userId: 1, siteId: 1, kind: 'token_created', actor: 'cli', detail: { token_id: 1, name: 'copied' } })
  await app.close()

  const target = await cliRunner(t, { engine: 'postgres' })
  const copied = await source.run(['copy', '--from', source.db, '--to', target.db], { env: { SERVICE_SECRET: secret } })
  t.equal(copied.code, 0, copied.stderr)
  const lines = copied.stdout.split('\n')
  t.match(lines[0], /^table\s+sqlite rows\s+postgres rows\s+sha256 \(sqlite\)\s+sha256 \(postgres\)$/)
  const tables = ['sites', 'users', 'memberships', 'personal_tokens', 'personal_token_addresses', 'sign_in_providers', 'sign_in_links', 'web_sessions', 'invitations', 'categories', 'discussions', 'comments', 'discussion_counts', 'discussion_tags', 'fields', 'field_values', 'discussion_merges', 'report_days', 'report_times', 'saved_replies', 'rules', 'rule_firings', 'oauth_records', 'security_events', 'audit_events', 'schedules', 'sla_policies', 'second_factors', 'recovery_codes', 'used_challenges', 'rate_limit_windows', 'files', 'file_pieces', 'attachments', 'mail_providers', 'mailboxes', 'mail_messages', 'participants', 'sender_rules', 'mail_home', 'webhooks', 'outbox', 'webhook_deliveries', 'customer_links', 'discussion_changes', 'idempotency_keys']
  for (const [i, table] of tables.entries()) {
    const [name, sqliteRows, postgresRows, sqliteSum, postgresSum, verdict] = lines[i + 1]!.split(/\s+/)
    t.same([name, postgresRows, postgresSum, verdict], [table, sqliteRows, sqliteSum, 'same'], table)
  }
  t.match(lines[tables.length + 1], new RegExp(`^Copied \\d+ rows in ${tables.length} tables from \\S+service\\.db to postgres://\\S+\\?schema=\\w+; every count and checksum is the same on both sides\\.$`))
  t.equal(lines[tables.length + 2], 'Server key: SERVICE_SECRET opens the copied legacy tokens; run the service on PostgreSQL with this same SERVICE_SECRET.')
  t.match(copied.stderr, /^copied sites: 1 row in \d+ ms\ncopied users: 4 rows in \d+ ms\n/)
  const counts = Object.fromEntries(lines.slice(1, tables.length + 1).map((line) => [line.split(/\s+/)[0], Number(line.split(/\s+/)[1])]))
  t.match(
    counts,
    { sites: 1, users: 4, memberships: 4, personal_tokens: 1, personal_token_addresses: 1, sign_in_providers: 1, sign_in_links: 1, web_sessions: 1, categories: 2, discussions: 7, comments: 10, fields: 1, field_values: 2, discussion_merges: 1, oauth_records: 2, security_events: 3, files: 1, file_pieces: 3, attachments: 1 },
    "the page's sign-in, the token's first use from its address, and the event added above",
  )

  // The service on PostgreSQL, with the same server key and clock.
  const moved = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, databaseAddress: target.db, secret }, clock: source.clock })
  t.teardown(() => moved.close())
  await moved.ready()
  t.same(await answers(moved, credentials), before, 'every answer byte for byte: personal token, legacy token, password, listings, comments, categories')
  // The session cookie of the SQLite side signs in there too, and its profile page shows the same legacy token.
  const profile = await moved.inject({ url: '/demo/profile', headers: { cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; ') } })
  t.equal(profile.statusCode, 200)
  t.match(profile.body, legacy)
  t.strictSame(await moved.database.oauth(source.clock).find('Grant', grantId), grantBefore, "an OAuth record reads the same from PostgreSQL")
  t.equal((await moved.database.oauth(source.clock).findBy('Session', 'uid', 'session-uid'))?.id, '0'.repeat(64))
  const downloaded = await moved.inject({ url: attachment, headers: { authorization: `Bearer ${bearer}` } })
  t.equal(downloaded.statusCode, 200)
  t.ok(downloaded.rawPayload.equals(file), 'the file downloads byte for byte from PostgreSQL')
  t.equal(await moved.files.usage(ann.site.id), file.length, "the site's files take the same space there (counted by the target's trigger as they went in)")
  const provider = (await moved.signInProviders.find(ann.site.id, acme.id))!
  t.same(moved.signInProviders.settingsOf(provider), { issuer: 'https://accounts.google.com', clientId: 'acme-client', clientSecret: 'acme-secret' }, "the provider's secret opens there")
  t.equal(await moved.signInProviders.subjectOf(acme.id, ann.user.id), 'subject-of-ann', "Ann's subject is linked there")

  // New rows take the ids after the copied ones.
  const created = await moved.inject({
    method: 'POST',
    url: `/demo/categories/${questions.id}/discussions`,
    headers: { authorization: `Bearer ${bearer}`, accept: V1 },
    payload: { title: 'After the move', body: 'Works.' },
  })
  t.equal(created.statusCode, 201, created.body)
  t.match(created.json(), { number: 8, tags: ['seen'] }, 'the rule moved too, and fires there')
  t.match(await target.query('SELECT max(id) AS id FROM comments'), [{ id: 11 }], 'the comment took id 11')
  const token = await target.run(['token', 'create', 'demo', 'ann@example.test', '--name', 'after'], { env: { SERVICE_SECRET: secret } })
  t.equal(token.code, 0, token.stderr)
  t.match((await target.run(['token', 'list', 'demo'], { env: { SERVICE_SECRET: secret } })).stdout, /^2\tann@example\.test\tafter\t/)
})

t.test('the key file of the SQLite side: the command says to set SERVICE_SECRET to its content, and that works', options, async (t) => {
  const { source, app, ann, legacy } = await buildSource(t, undefined)
  await app.close()
  const target = await cliRunner(t, { engine: 'postgres' })
  const copied = await source.run(['copy', '--from', source.db, '--to', target.db], { env: {} })
  t.equal(copied.code, 0, copied.stderr)
  const keyFile = join(source.dir, 'service.key')
  t.match(
    copied.stdout,
    `\nServer key: the legacy tokens were sealed under the key file ${keyFile}; run the service on PostgreSQL with SERVICE_SECRET set to its content, ` +
      `the same in every process, or legacy tokens cannot be shown and supporters must sign in again:\n  SERVICE_SECRET="$(cat '${keyFile}')"\n`,
  )
  const secret = readFileSync(keyFile, 'utf8').trim()
  const shown = await target.run(['legacy-token', 'show', ann.user.email], { env: { SERVICE_SECRET: secret } })
  t.equal(shown.stdout, `${legacy}\n`, 'the legacy token shows on PostgreSQL with the key file as SERVICE_SECRET')
  t.match((await target.run(['legacy-token', 'show', ann.user.email])).stderr, /stored under another server key/, "with another one it cannot")

  // A SERVICE_SECRET that is not the key it was sealed under, and no key file: said plainly.
  const other = await cliRunner(t, { engine: 'postgres' })
  const wrong = await source.run(['copy', '--from', source.db, '--to', other.db], { env: { SERVICE_SECRET: 'w'.repeat(40) } })
  t.equal(wrong.code, 0, 'the copy itself is whole')
  t.match(wrong.stdout, /Server key: the legacy tokens were sealed under the key file/, 'the key file is named even when another SERVICE_SECRET is set')
  writeFileSync(keyFile, 'x'.repeat(64))
  const third = await cliRunner(t, { engine: 'postgres' })
  const neither = await source.run(['copy', '--from', source.db, '--to', third.db], { env: { SERVICE_SECRET: 'w'.repeat(40) } })
  t.equal(neither.code, 0)
  t.match(neither.stderr, `Server key: neither SERVICE_SECRET nor ${keyFile} opens the copied legacy tokens; run the service on PostgreSQL with the server key the SQLite service used`)
})

t.test('a database without accounts: any SERVICE_SECRET will do', options, async (t) => {
  const source = await cliRunner(t, { engine: 'sqlite' })
  await source.run(['site', 'add', 'demo'])
  const target = await cliRunner(t, { engine: 'postgres' })
  const copied = await source.run(['copy', '--from', source.db, '--to', target.db])
  t.equal(copied.code, 0, copied.stderr)
  t.match(copied.stdout, /\nServer key: no account holds a legacy token yet; run the service on PostgreSQL with SERVICE_SECRET set, the same in every process\.\n$/)
  t.match(await target.query('SELECT permalink FROM sites'), [{ permalink: 'demo' }])
})

t.test('a target that holds anything is refused, and nothing is copied', options, async (t) => {
  const source = await cliRunner(t, { engine: 'sqlite' })
  await source.run(['site', 'add', 'demo'])
  await source.run(['user', 'add', 'ann@example.test'])
  const target = await cliRunner(t, { engine: 'postgres' })
  t.equal((await source.run(['copy', '--from', source.db, '--to', target.db])).code, 0)
  const again = await source.run(['copy', '--from', source.db, '--to', target.db])
  t.equal(again.code, 1)
  t.equal(
    again.stderr,
    `service-desk: the target ${target.db} already holds sites (demo); copy into an empty database or a new schema (?schema=name), nothing was copied\n`,
  )
  t.equal(again.stdout, '')
  for (const name of ['a', 'b', 'c', 'd']) await target.run(['site', 'add', name])
  t.match((await source.run(['copy', '--from', source.db, '--to', target.db])).stderr, 'already holds sites (demo, a, b, ...)')

  const accounts = await cliRunner(t, { engine: 'postgres' })
  await accounts.run(['user', 'add', 'someone@example.test'])
  const refused = await source.run(['copy', '--from', source.db, '--to', accounts.db])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /already holds rows in users; copy into an empty database/)
  t.same(await accounts.query('SELECT count(*)::integer AS n FROM sites'), [{ n: 0 }])
})

t.test('a copy that differs from its source is rolled back and says where', options, async (t) => {
  const source = await cliRunner(t, { engine: 'sqlite' })
  await source.run(['site', 'add', 'demo'])
  await source.run(['category', 'add', 'demo', 'General'])
  // Enough rows for several inserts and several reads of a batch each.
  await source.run(['seed', 'demo', '--discussions', '4000'])
  const target = await cliRunner(t, { engine: 'postgres' })
  t.equal((await target.run(['migrate'])).code, 0)
  // Something between the two sides changes what is written: a trigger on the target.
  await target.query(`CREATE FUNCTION twist() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.body := NEW.body || '!'; RETURN NEW; END $$`)
  await target.query('CREATE TRIGGER twist BEFORE INSERT ON comments FOR EACH ROW EXECUTE FUNCTION twist()')
  const copied = await source.run(['copy', '--from', source.db, '--to', target.db])
  t.equal(copied.code, 1)
  t.match(copied.stdout, /\ncomments\s+(\d+)\s+\1\s+(\w{16})\s+(?!\2)\w{16}\s+DIFFERENT\n/)
  t.match(copied.stdout, /\ndiscussions\s+4000\s+4000\s+(\w{16})\s+\1\s+same\n/)
  t.match(copied.stdout, /\nThe copy differs from \S+service\.db in comments: it was rolled back, nothing was copied to postgres:\S+\.\n$/)
  t.same(await target.query('SELECT count(*)::integer AS n FROM discussions'), [{ n: 0 }], 'nothing kept')
  t.same(await target.query('SELECT last_value::integer AS n, is_called FROM sites_id_seq'), [{ n: 1, is_called: false }], 'no sequence moved')
})

t.test('what copy refuses before it writes anything', options, async (t) => {
  const source = await cliRunner(t, { engine: 'sqlite' })
  await source.run(['site', 'add', 'demo'])
  const target = await cliRunner(t, { engine: 'postgres' })
  const text = join(source.dir, 'notes.txt')
  writeFileSync(text, 'not a database at all, but long enough to be read as one '.repeat(100))
  const stale = join(source.dir, 'stale.db')
  const older = new Database(stale)
  older.exec('CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY, hash TEXT, created_at NUMERIC)')
  older.close()
  const cases: Array<[string[], number, RegExp]> = [
    [['copy', '--to', target.db], 2, /^service-desk: --from is required: the SQLite file to copy\n$/],
    [['copy', '--from', source.db], 2, /^service-desk: --to is required: the postgres:\/\/ address to copy into\n$/],
    [['copy', '--from', target.db, '--to', target.db], 2, /--from must be a SQLite file, not a postgres:\/\/ address/],
    [['copy', '--from', source.db, '--to', join(source.dir, 'other.db')], 2, /--to must be a postgres:\/\/ address, not ".*other\.db"/],
    [['copy', '--from', join(source.dir, 'missing.db'), '--to', target.db], 1, /there is no database at .*missing\.db/],
    [['copy', '--from', text, '--to', target.db], 1, /notes\.txt is not a Service Desk database/],
    [['copy', '--from', source.db, '--to', 'postgres://postgres:hunter2@127.0.0.1:1/nowhere'], 1, /^service-desk: cannot open the PostgreSQL database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nowhere: connect ECONNREFUSED/],
    [['copy', '--from', stale, '--to', target.db], 1, /stale\.db is an older Service Desk database: bring it up to date first \(service-desk migrate --db \S+stale\.db\)/],
  ]
  for (const [argv, code, message] of cases) {
    const result = await source.run(argv)
    t.equal(result.code, code, argv.join(' '))
    t.match(result.stderr, message)
    t.equal(result.stdout, '')
  }
  t.match((await source.run(['--help'])).stdout, /\n {2}copy --from FILE --to ADDRESS\n/)

  // PostgreSQL text cannot hold U+0000; a source from before that rule says where it is, and nothing is kept.
  const writer = new Database(source.db)
  writer.prepare('UPDATE sites SET name = ?').run('nul\u0000here')
  writer.close()
  const nul = await source.run(['copy', '--from', source.db, '--to', target.db])
  t.equal(nul.code, 1)
  t.match(nul.stderr, /^service-desk: copying sites: .*; nothing was copied\n$/)
  t.same(await target.query('SELECT count(*)::integer AS n FROM sites'), [{ n: 0 }])
})
