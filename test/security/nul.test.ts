import pg from 'pg'
import t, { type Test } from 'tap'
import { StoreError } from '../../db/stores/errors.ts'
import { validateCategoryName } from '../../db/stores/categories.ts'
import { validateNewSite } from '../../db/stores/sites.ts'
import { validateNewToken } from '../../db/stores/token-rules.ts'
import { emailProblem, singleSignOnName, validateNewUser } from '../../db/stores/users.ts'
import { parsePostgresAddress } from '../../lib/database-address.ts'
import { holdsNul, NUL_PROBLEM, unstorableTextCode, withoutNul } from '../../lib/nul.ts'
import { SESSION_COOKIE } from '../../plugins/sessions.ts'
import { SIGN_IN_FAILED, SSO_FAILED } from '../../routes/web/sign-in.ts'
import { buildTestApp, databaseAddressOf, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, inDays, makeMultipass, supporterWithPassword } from '../fixtures/credentials.ts'
import { discussionApp } from '../fixtures/discussions.ts'
import { logCapture } from '../fixtures/log.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { postgresSnapshot, snapshot } from '../fuzz/answers.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// PostgreSQL text cannot hold U+0000 and SQLite's can; the service keeps none on either engine
// (docs/decisions.md, "Decided while building"). Every test runs on both engines
// (SERVICE_TEST_ENGINE=postgres) and must answer the same.

const NUL = '\u0000'

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

/** Every table's rows, to show that a refusal wrote nothing (the fuzzers' snapshot). */
async function tablesOf(t: Test, app: App): Promise<() => Promise<string>> {
  if (app.database.sqlite) return async () => snapshot(app.database.sqlite!.$client)
  const { connectionString, schema } = parsePostgresAddress(databaseAddressOf(app))
  const client = new pg.Client({ connectionString })
  await client.connect()
  t.teardown(() => client.end())
  return postgresSnapshot(client, schema)
}

/** An error as drizzle throws it when PostgreSQL refuses a parameter: the driver's error as its cause. */
function postgresRefusal(code: string, value: string) {
  const cause = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code })
  return Object.assign(new Error(`Failed query: select "id" from "users" where "email_key" = $1\nparams: ${value}`), { cause })
}

/** The challenge of an answer for an unknown site, as it names the site of `url`. */
const challengeOf = (unknown: { headers: Record<string, unknown> }, url: string) =>
  String(unknown.headers['www-authenticate']).replace('/nosuchsite', `/${url.split('/')[1]}`)

let addresses = 0
const nextAddress = () => `198.51.100.${++addresses}`

t.test('the rule itself: what holds U+0000, and which database errors are about it', async (t) => {
  t.equal(holdsNul(`a${NUL}b`), true)
  t.equal(holdsNul('a b'), false)
  t.equal(withoutNul(`${NUL}An${NUL}n${NUL}`), 'Ann')
  t.equal(unstorableTextCode(postgresRefusal('22021', 'x')), '22021', 'wrapped by drizzle')
  t.equal(unstorableTextCode(Object.assign(new Error('x'), { code: '22P05' })), '22P05', 'the driver alone')
  for (const other of [null, undefined, 'text', new Error('x'), Object.assign(new Error('x'), { code: 22021 }), postgresRefusal('23505', 'x')]) {
    t.equal(unstorableTextCode(other), null, String(other))
  }
})

t.test("the stores' validators refuse U+0000 as invalid input, naming the field", async (t) => {
  const refused = (fn: () => unknown, field: string, message: RegExp) => {
    const error = t.throws(fn)
    t.ok(error instanceof StoreError, `a StoreError: ${String(error)}`)
    t.match(error, { code: 'invalid', field, message })
  }
  t.equal(emailProblem(`pat${NUL}@example.test`), 'an email address must not contain the character U+0000')
  t.equal(emailProblem(`pat@example.test${NUL}`), 'an email address must not contain the character U+0000', 'even where trim() would keep it')
  refused(() => validateNewUser({ email: `pat${NUL}@example.test` }), 'email', /U\+0000/)
  refused(() => validateNewUser({ email: 'pat@example.test', name: `Pat${NUL}` }), 'name', /a name must not contain the character U\+0000/)
  refused(() => validateNewSite('demo', `Demo${NUL}`), 'name', /a site name must not contain/)
  refused(() => validateNewSite(`demo${NUL}`), 'site', /lowercase letters/)
  refused(() => validateNewToken({ siteId: 1, userId: 1, name: `ci${NUL}`, access: 'read', expiresInDays: 90 }), 'name', /a token name must not contain/)
  refused(() => validateCategoryName(`Questions${NUL}`), 'name', /a category name must not contain/)
  t.equal(validateCategoryName('  Questions '), 'Questions')
  refused(() => validateCategoryName(' '), 'name', /1 to 100 characters/)
})

t.test('the stores refuse it on both engines, and find nothing under it without asking the database', async (t) => {
  const { app } = await buildTestApp(t)
  const tables = await tablesOf(t, app)
  const pat = await supporterWithPassword(app)
  const before = await tables()
  const invalid = { name: 'StoreError', code: 'invalid' }
  await t.rejects(app.users.add({ email: `new${NUL}@example.test`, password: 'long enough' }), invalid)
  await t.rejects(app.users.insert({ email: 'new@example.test', name: `New${NUL}` }, null), invalid)
  await t.rejects(app.sites.add('other', `Other${NUL}`), invalid)
  await t.rejects(app.sites.add(`other${NUL}`), invalid)
  await t.rejects(app.tokens.create({ siteId: pat.site.id, userId: pat.user.id, name: `ci${NUL}`, access: 'read', expiresInDays: 90 }), invalid)
  t.equal(await app.users.find(`${pat.user.email}${NUL}`), undefined, 'an address with U+0000 is nobody')
  await t.rejects(app.users.get(`${NUL}`), { code: 'not_found' })
  t.equal(await app.sites.find(`demo${NUL}`), undefined, 'a permalink with U+0000 is no site')
  await t.rejects(app.sites.get(NUL), { code: 'not_found' })
  t.equal(await app.users.fromSingleSignOn(pat.site.id, `new${NUL}@example.test`, 'New'), undefined, 'no single sign-on account')
  t.equal(await tables(), before, 'nothing written')
})

t.test(
  'a category name with U+0000 is refused by the store',
  async (t) => {
    const { app } = await buildTestApp(t)
    const site = await app.sites.add('demo', 'Demo')
    await t.rejects(app.categories.add(site.id, `Questions${NUL}`, true), { name: 'StoreError', code: 'invalid', field: 'name' })
  },
)

t.test('a multipass name holding U+0000 is cleaned, and the sign-in goes on', async (t) => {
  t.equal(singleSignOnName(`${NUL} Ann${NUL} Lee `), 'Ann Lee')
  t.equal(singleSignOnName(`${NUL}${NUL} `), undefined, 'nothing left: the default name')
  t.equal(singleSignOnName(undefined), undefined)
  const { app } = await buildTestApp(t)
  const site = await app.sites.add('demo', 'Demo')
  const token = (claims: object) => encodeURIComponent(makeMultipass(claims, site.multipassKey, 'demo'))
  const browser = webClient(app)
  const res = await browser.get(`/demo/?sso=${token({ email: 'new@example.test', name: `New${NUL} Person`, expires: inDays(app, 1) })}`)
  t.equal(res.statusCode, 303)
  t.ok(browser.jar.get(SESSION_COOKIE), 'signed in')
  t.equal((await app.users.get('new@example.test')).name, 'New Person')
  const again = await webClient(app).get(`/demo/?sso=${token({ email: 'new@example.test', name: NUL, expires: inDays(app, 1) })}`)
  t.equal(again.statusCode, 303, 'a name of nothing but U+0000 is no name')
  t.equal((await app.users.get('new@example.test')).name, 'New Person', 'and changes nothing')
})

t.test('API bodies and queries holding U+0000: 400 naming the field, nothing written', async (t) => {
  const { app, api, ann, create, questions } = await discussionApp(t)
  const tables = await tablesOf(t, app)
  const discussion = await create()
  const before = await tables()
  const cases: Array<[string, 'POST' | 'PUT', string, Record<string, unknown>]> = [
    ['title', 'POST', `/demo/categories/${questions.id}/discussions`, { title: `A${NUL}`, body: 'Words.' }],
    ['body', 'POST', `/demo/categories/${questions.id}/discussions`, { title: 'A question', body: `${NUL}` }],
    ['author_email', 'POST', `/demo/categories/${questions.id}/discussions`, { title: 'Q', body: 'W', author_email: `cy${NUL}@example.test` }],
    ['author_name', 'POST', `/demo/categories/${questions.id}/discussions`, { title: 'Q', body: 'W', author_email: 'cy@example.test', author_name: `Cy${NUL}` }],
    ['body', 'POST', `/demo/discussions/${discussion.number}/comments`, { body: `Thanks${NUL}` }],
    ['author_email', 'POST', `/demo/discussions/${discussion.number}/comments`, { body: 'Thanks', author_email: `${NUL}cy@example.test` }],
    ['author_name', 'POST', `/demo/discussions/${discussion.number}/comments`, { body: 'Thanks', author_email: 'cy@example.test', author_name: `C${NUL}y` }],
    ['title', 'PUT', `/demo/discussions/${discussion.number}`, { title: `Renamed${NUL}` }],
  ]
  for (const [field, method, url, payload] of cases) {
    const res = await api(method, url, payload)
    t.equal(res.statusCode, 400, `${method} ${url} ${field}`)
    t.same(res.json(), { error: 'invalid_request', message: `Invalid request: ${field} ${NUL_PROBLEM}.`, fields: [{ field, problem: NUL_PROBLEM }] })
  }
  // The same escape as JSON text, and a long body: refused at once (a search, no backtracking).
  const json = `{"title":"Q","body":"${' '.repeat(60_000)}\\u0000"}`
  const long = await api('POST', `/demo/categories/${questions.id}/discussions`, json, { ...ann.bearer, 'content-type': 'application/json' })
  t.same(long.json().fields, [{ field: 'body', problem: NUL_PROBLEM }])
  const query = await api('GET', `/demo/discussions?user_email=${encodeURIComponent(`cy${NUL}@example.test`)}`)
  t.equal(query.statusCode, 400)
  t.same(query.json().fields, [{ field: 'user_email', problem: NUL_PROBLEM }])
  const blank = await api('POST', `/demo/discussions/${discussion.number}/comments`, { body: ' ' })
  t.same(blank.json().fields, [{ field: 'body', problem: 'must not be blank' }], 'the other problems keep their words')
  const email = await api('POST', `/demo/discussions/${discussion.number}/comments`, { body: 'x', author_email: `${'a'.repeat(250)}@example.test` })
  t.same(email.json().fields, [{ field: 'author_email', problem: 'is not an email address' }])
  t.equal(await tables(), before, 'nothing written')
})

t.test('a path holding U+0000 names no site: answered like an unknown site, on the API and the pages', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const tables = await tablesOf(t, app)
  const before = await tables()
  const unknown = await app.inject({ url: '/nosuchsite/discussions', headers: ann.bearer, remoteAddress: nextAddress() })
  t.equal(unknown.statusCode, 401)
  for (const url of ['/%00/discussions', '/demo%00/discussions', '/%00', '/demo%00']) {
    const res = await app.inject({ url, headers: ann.bearer, remoteAddress: nextAddress() })
    t.equal(res.statusCode, unknown.statusCode, url)
    t.equal(res.body, unknown.body, `${url}: the same body`)
    t.equal(res.headers['www-authenticate'], challengeOf(unknown, url), `${url}: the same challenge`)
  }
  const page = await app.inject({ url: '/nosuchsite/login' })
  for (const url of ['/%00/login', '/demo%00/login', '/demo%00/profile/api_tokens']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, url)
    t.equal(res.body, page.body, `${url}: no such site`)
  }
  t.equal(await tables(), before, 'nothing written')
})

t.test('Basic and the sign-in form with an address holding U+0000: refused like a wrong password', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const tables = await tablesOf(t, app)
  const before = await tables()
  const wrong = await app.inject({ url: '/demo/discussions', headers: basic('nobody@example.test', pat.password), remoteAddress: nextAddress() })
  t.equal(wrong.statusCode, 401)
  for (const email of [`${pat.user.email}${NUL}`, `pat${NUL}@example.test`, NUL]) {
    const res = await app.inject({ url: '/demo/discussions', headers: basic(email, pat.password), remoteAddress: nextAddress() })
    t.equal(res.statusCode, 401, JSON.stringify(email))
    t.equal(res.body, wrong.body)
    t.equal(res.headers['www-authenticate'], wrong.headers['www-authenticate'])
  }
  for (const email of [`${pat.user.email}${NUL}`, `${NUL}`]) {
    const browser = webClient(app)
    const res = await browser.signIn(email, pat.password)
    t.equal(res.statusCode, 401, JSON.stringify(email))
    t.match(res.body, SIGN_IN_FAILED)
    t.notOk(browser.jar.get(SESSION_COOKIE), 'no session')
  }
  // The page logs a failed sign-in for an unknown address as for a known one (the same time either
  // way), without the address: nothing else is written, and nothing of the U+0000 addresses.
  const after = JSON.parse(await tables()) as Record<string, string[]>
  const events = after.security_events.map((row) => JSON.parse(row) as { user_id: number | null; kind: string; detail: string })
  t.same(
    events.map(({ user_id, kind, detail }) => ({ user_id, kind, detail })),
    [1, 2].map(() => ({ user_id: null, kind: 'sign_in_failed', detail: '{"account":"none with that address"}' })),
  )
  t.equal(JSON.stringify({ ...after, security_events: [] }), before, 'nothing else written')
})

t.test('a multipass token naming an address with U+0000: refused like an unknown account', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const tables = await tablesOf(t, app)
  const before = await tables()
  const multipass = (email: string) => makeMultipass({ email, expires: inDays(app, 1) }, pat.site.multipassKey, 'demo')
  const unknown = await app.inject({ url: '/demo/discussions', headers: { accept: V1, 'x-multipass': multipass('nobody@example.test') }, remoteAddress: nextAddress() })
  t.equal(unknown.statusCode, 401)
  for (const email of [`${pat.user.email}${NUL}`, `pat${NUL}@example.test`]) {
    const res = await app.inject({ url: '/demo/discussions', headers: { accept: V1, 'x-multipass': multipass(email) }, remoteAddress: nextAddress() })
    t.equal(res.statusCode, 401, JSON.stringify(email))
    t.equal(res.body, unknown.body)
    t.equal(res.headers['www-authenticate'], unknown.headers['www-authenticate'])
    const browser = webClient(app)
    const page = await browser.get(`/demo/?sso=${encodeURIComponent(multipass(email))}`)
    t.equal(page.statusCode, 401, `the page: ${JSON.stringify(email)}`)
    t.match(page.body, SSO_FAILED)
    t.notOk(browser.jar.get(SESSION_COOKIE), 'no session')
  }
  t.equal(await tables(), before, 'nothing written, no account made')
})

t.test("the token page's name field with U+0000: the form again with the field's error, no token", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const tables = await tablesOf(t, app)
  const browser = webClient(app)
  await browser.signIn(ann.email, ann.password)
  const before = await tables()
  const res = await browser.createToken({ name: `ci${NUL}`, access: 'read', expires: '30' })
  t.equal(res.statusCode, 400)
  t.match(res.body, 'The name cannot contain the character U+0000 (NUL).')
  t.notMatch(res.body, 'service_pat_', 'no token shown')
  t.equal(await tables(), before, 'nothing written')
})

t.test('the last safety net: a refusal of PostgreSQL about U+0000 is a 400, logged without the value', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  const ann = await supporterWithToken(app)
  const person = await personWithPassword(app)
  const secret = 'hidden-value'

  const find = app.users.find
  app.users.find = async () => {
    throw postgresRefusal('22021', `cy${NUL}${secret}`)
  }
  const res = await app.inject({ url: '/demo/discussions?user_email=cy@example.test', headers: ann.bearer })
  app.users.find = find
  t.equal(res.statusCode, 400)
  t.same(res.json(), {
    error: 'invalid_request',
    message: `Invalid request: (request) ${NUL_PROBLEM}.`,
    fields: [{ field: '(request)', problem: NUL_PROBLEM }],
  })

  const browser = webClient(app)
  await browser.signIn(person.email, person.password)
  const create = app.tokens.create
  app.tokens.create = async () => {
    throw Object.assign(new Error(`untranslatable: ${secret}`), { code: '22P05' })
  }
  const page = await browser.createToken({ name: 'ci', access: 'read', expires: '30' })
  app.tokens.create = create
  t.equal(page.statusCode, 400, 'the pages: 400')
  t.match(page.body, 'Text in the form holds the character U+0000 (NUL), which cannot be saved.')

  const warnings = log.entries().filter((entry) => entry.msg === 'refused text the database cannot store (U+0000)')
  t.match(warnings, [{ level: 40, code: '22021' }, { level: 40, code: '22P05' }])
  t.notMatch(log.text(), secret, 'the value is never logged')
  t.notOk(log.entries().some((entry) => (entry.level as number) >= 50), 'no error logged')
})
