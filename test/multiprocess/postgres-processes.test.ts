import { createHash, randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { MAX_ACTIVE_TOKENS } from '../../db/stores/token-rules.ts'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { buildApp } from '../../app.ts'
import { BASE_URL, SITE_URL } from '../fixtures/app.ts'
import { bannerToken, startServer, type RunningServer } from '../fixtures/server.ts'
import { personWithPassword } from '../fixtures/web.ts'
import { browser, command } from './processes.ts'

type App = ReturnType<typeof buildApp>

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// Several service processes on one PostgreSQL database, behind a proxy that sends each request to
// any of them (docs/decisions.md, "PostgreSQL" and "Shared between the processes"): real
// processes, started as an operator starts them. The first four tests share two processes on one
// database (a process costs some 2 s of CPU to start: docs/development.md, "A seventh look"); each
// is a supporter of its own, with a token of their own, so what one test spends (a lockout, the 20
// tokens) is not another's. The last starts two of its own, each in a folder of its own.

const POSTGRES_ONLY = { skip: TEST_ENGINE !== 'postgres' && 'real service processes on one PostgreSQL database: runs in the PostgreSQL run of the suite' }
const TOKENS = '/demo/profile/api_tokens'
const V1 = 'application/vnd.service-v1+json'

/**
 * The shared processes, started on the first test that asks: the second once the first has made
 * the demo site; and an app of this process on the same database, which makes each test's supporter.
 */
let shared: Promise<{ one: RunningServer; two: RunningServer; env: Record<string, string>; app: App }> | undefined
async function startShared() {
  const env = {
    SERVICE_DB: await postgresTestAddress(t),
    SERVICE_SECRET: randomBytes(32).toString('hex'),
    // The proxy is this machine: X-Forwarded-For names the client.
    SERVICE_TRUST_PROXY: 'loopback',
  }
  const one = await startServer(t, env)
  await bannerToken(one)
  const two = await startServer(t, env)
  const app = buildApp({ config: { baseUrl: BASE_URL, siteUrl: SITE_URL, databaseAddress: env.SERVICE_DB, secret: env.SERVICE_SECRET, outboxSend: false } })
  t.teardown(() => app.close())
  await app.ready()
  return { one, two, env, app }
}

let people = 0
/** The two shared processes, and a new supporter of the demo site with a password and a token. */
async function twoProcesses() {
  const { one, two, env, app } = await (shared ??= startShared())
  const supporter = await personWithPassword(app, { email: `supporter${++people}@example.test` })
  const made = await app.tokens.create({ siteId: supporter.site.id, userId: supporter.user.id, name: 'test token', access: 'write', expiresInDays: 90 })
  return { one, two, env, token: made.value, tokenId: made.token.id, supporter: { email: supporter.email, password: supporter.password } }
}

const api = (server: RunningServer, headers: Record<string, string>, from = '192.0.2.1') =>
  fetch(`http://127.0.0.1:${server.port}/demo`, { headers: { accept: V1, 'x-forwarded-for': from, ...headers } }).then((res) => res.status)
const bearer = (value: string) => ({ authorization: `Bearer ${value}` })
const basic = (email: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}` })
const valueIn = (html: string) => /value="(service_pat_\w+)"/.exec(html)![1]!

t.test('a token revoked through one process is refused by the other on its next request', POSTGRES_ONLY, async (t) => {
  const { one, two, env, supporter } = await twoProcesses()
  const web = browser()
  t.equal((await web.signIn(one, supporter.email, supporter.password)).status, 303)

  // Revoked on the token page of the first process.
  const created = await web.request(one, 'POST', TOKENS, await web.tokenForm(one, 'page'))
  t.equal(created.status, 201)
  const value = valueIn(created.body)
  t.equal(await api(two, bearer(value)), 200, 'made by the first, taken by the second')
  const id = new RegExp(`/profile/api_tokens/(\\d+)/revoke`).exec((await web.get(one, TOKENS)).body.split('page')[1]!)![1]!
  await web.get(one, `${TOKENS}/${id}/revoke`)
  t.equal((await web.request(one, 'POST', `${TOKENS}/${id}/revoke`, { _csrf: web.field('_csrf') })).status, 303)
  t.equal(await api(two, bearer(value)), 401, 'refused by the second at once')
  t.equal(await api(one, bearer(value)), 401)

  // Revoked by the command line, a third process.
  const other = valueIn((await web.request(two, 'POST', TOKENS, await web.tokenForm(two, 'command'))).body)
  t.same([await api(one, bearer(other)), await api(two, bearer(other))], [200, 200])
  const listed = await command(['token', 'list', 'demo'], env)
  const line = listed.stdout.split('\n').find((text) => text.includes('\tcommand\t'))!
  const revoked = await command(['token', 'revoke', 'demo', line.split('\t')[0]!], env)
  t.equal(revoked.code, 0, revoked.stderr)
  t.same([await api(one, bearer(other)), await api(two, bearer(other))], [401, 401], 'refused by both at once')
})

t.test('30 token creations at once, spread over two processes, make exactly 20 tokens; a form posted to both makes one', POSTGRES_ONLY, async (t) => {
  const { one, two, env, token, tokenId, supporter } = await twoProcesses()
  const web = browser()
  await web.signIn(two, supporter.email, supporter.password)
  // The supporter's token is one of their 20: revoked first, so all 20 places are free.
  t.equal((await command(['token', 'revoke', 'demo', String(tokenId)], env)).code, 0)
  t.equal(await api(one, bearer(token)), 401)

  const forms = []
  for (let i = 0; i < 30; i++) forms.push(await web.tokenForm(i % 2 ? one : two, `burst ${i}`))
  const answers = await Promise.all(forms.map((form, i) => web.request(i % 2 ? two : one, 'POST', TOKENS, form)))
  const statuses = answers.map((res) => res.status)
  t.equal(statuses.filter((status) => status === 201).length, MAX_ACTIVE_TOKENS, 'exactly 20 made')
  t.equal(statuses.filter((status) => status === 409).length, 30 - MAX_ACTIVE_TOKENS, 'the rest refused with the limit')
  const listed = await command(['token', 'list', 'demo', supporter.email], env)
  const active = listed.stdout.split('\n').filter((line) => line.endsWith('\tactive'))
  t.equal(active.length, MAX_ACTIVE_TOKENS, 'and 20 stored')

  // A form posted to both processes at once (a double click behind the proxy) makes one token.
  t.equal((await command(['token', 'revoke', 'demo', active[0]!.split('\t')[0]!], env)).code, 0)
  const twice = await web.tokenForm(one, 'twice')
  const both = await Promise.all([web.request(one, 'POST', TOKENS, twice), web.request(two, 'POST', TOKENS, twice)])
  t.same(both.map((res) => res.status).sort(), [201, 303], 'one made it, the other was sent to the list')
  t.equal((await web.request(two, 'POST', TOKENS, twice)).status, 303, 'a reload, through either, makes none')
})

t.test('a lockout reached through one process holds in the other', POSTGRES_ONLY, async (t) => {
  const { one, two, env, token, supporter } = await twoProcesses()
  const wrong = bearer(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'))

  // The supporter's account: 5 wrong passwords from 5 addresses, through the first process.
  for (let i = 0; i < 5; i++) t.equal(await api(one, basic(supporter.email, 'not the password'), `198.51.100.${i + 1}`), 401)
  t.equal(await api(one, basic(supporter.email, supporter.password), '198.51.100.50'), 429, 'the account is locked where it was spent')
  // One address: 20 failed tokens, through the first process.
  // Probed with another person's right password, which counts nothing (403: not on the staff)
  // unless the address is spent; a valid token is served from a spent address (issue 28).
  const added = await command(['user', 'add', 'probe@example.test'], env)
  const probe = basic('probe@example.test', /password: (\S+)/.exec(added.stdout)![1]!)
  t.equal(await api(two, probe, '203.0.113.7'), 403, 'the probe counts nothing while the address is not spent')
  for (let i = 0; i < 20; i++) t.equal(await api(one, wrong, '203.0.113.7'), 401)
  t.equal(await api(one, probe, '203.0.113.7'), 429, 'the address is locked where it was spent')
  t.equal(await api(one, bearer(token), '203.0.113.7'), 200, 'but a valid token from it is served')

  // The second process hears of it within milliseconds.
  const start = Date.now()
  let answer = 403
  while (answer !== 429 && Date.now() - start < 2_000) answer = await api(two, probe, '203.0.113.7')
  t.equal(answer, 429, `the address is locked in the second process too (after ${Date.now() - start} ms)`)
  // The account's failures were told before the address's, and arrive in that order.
  t.equal(await api(two, basic(supporter.email, supporter.password), '198.51.100.60'), 429, 'and so is the account, the right password from a new address')
  const web = browser()
  const signIn = await web.signIn(two, supporter.email, supporter.password, { 'x-forwarded-for': '198.51.100.61' })
  t.equal(signIn.status, 429, 'on the sign-in page too')
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same([await api(two, probe, '203.0.113.7'), await api(two, wrong, '203.0.113.7')], [429, 429], 'it keeps refusing')
  }
  t.equal(await api(two, bearer(token), '203.0.113.8'), 200, 'another address is not touched')
})

t.test('a supporter signed in through one process uses the session and its forms through the other', POSTGRES_ONLY, async (t) => {
  const { one, two, supporter } = await twoProcesses()
  const web = browser()
  t.equal((await web.signIn(one, supporter.email, supporter.password)).status, 303, 'signed in through the first')
  const page = await web.get(two, TOKENS)
  t.equal(page.status, 200, 'the second knows the session')
  t.match(page.body, 'Personal API tokens')

  // A form shown by one process, sent to the other, with its CSRF token; and the other way round.
  t.equal((await web.request(two, 'POST', TOKENS, await web.tokenForm(one, 'from one'))).status, 201)
  t.equal((await web.request(one, 'POST', TOKENS, await web.tokenForm(two, 'from two'))).status, 201)
  const forged = { ...(await web.tokenForm(one, 'forged')), _csrf: 'not-a-token' }
  t.equal((await web.request(two, 'POST', TOKENS, forged)).status, 403, 'a wrong CSRF token is still refused')

  // Signed out through the second: the first no longer knows the session.
  await web.get(two, TOKENS)
  t.equal((await web.request(two, 'POST', '/demo/logout', { _csrf: web.field('_csrf') })).status, 303)
  const after = await web.get(one, TOKENS)
  t.equal(after.status, 303, 'sent to sign in')
  t.match(after.headers.get('location'), /\/demo\/login/)
})

t.test('a file uploaded through one process downloads through the other, each in a working folder of its own', POSTGRES_ONLY, async (t) => {
  const env = { SERVICE_DB: await postgresTestAddress(t), SERVICE_SECRET: randomBytes(32).toString('hex') }
  const [here, there] = [t.testdir({ one: {} }), t.testdir({ one: {} })].map((dir) => join(dir, 'one'))
  const one = await startServer(t, env, [], { cwd: here })
  const token = await bannerToken(one)
  const two = await startServer(t, env, [], { cwd: there })
  const bytes = randomBytes(3 * 1024 * 1024 + 17)
  const form = new FormData()
  form.append('file', new Blob([bytes]), 'capture.bin')
  const uploaded = await fetch(`${one.base}/demo/uploads`, { method: 'POST', headers: { ...bearer(token), accept: V1 }, body: form })
  t.equal(uploaded.status, 201)
  const [upload] = ((await uploaded.json()) as { uploads: Array<{ id: number }> }).uploads
  // Carried by a comment made through the second process, then read back through it.
  const discussions = (await fetch(`${two.base}/demo/discussions`, { headers: { ...bearer(token), accept: V1 } }).then((res) => res.json())) as { discussions: Array<{ number: number }> }
  const number = discussions.discussions[0]!.number
  const reply = await fetch(`${two.base}/demo/discussions/${number}/comments`, {
    method: 'POST',
    headers: { ...bearer(token), accept: V1, 'content-type': 'application/json' },
    body: JSON.stringify({ body: 'The capture.', uploads: [upload!.id] }),
  })
  t.equal(reply.status, 201)
  const download = await fetch(`${two.base}/demo/attachments/${upload!.id}`, { headers: bearer(token) })
  t.equal(download.status, 200)
  t.ok(Buffer.from(await download.arrayBuffer()).equals(bytes), 'byte for byte, through the other process')
  t.equal(download.headers.get('etag'), `"${createHash('sha256').update(bytes).digest('hex')}"`)
  t.same([readdirSync(here), readdirSync(there)], [[], []], 'neither process kept anything in its folder: the database holds the file')
})
