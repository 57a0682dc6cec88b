import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { buildTestApp, sqliteOf, V1 } from '../fixtures/app.ts'
import { postgresTestAddress, TEST_ENGINE } from '../fixtures/postgres.ts'
import { bannerToken, freePort, startServer, type RunningServer } from '../fixtures/server.ts'
import { BROWSER_ACCEPT, personWithPassword, webClient } from '../fixtures/web.ts'
import { twoApps } from '../multiprocess/two-apps.ts'
import { PRESENCE_BEAT_MS, PRESENCE_TTL_MS, REPLYING_TTL_MS } from '../../plugins/presence.ts'
import { LIVE_COALESCE_MS } from '../../routes/web/live.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// The live pages' stream (routes/web/live.ts) over a real socket: a change to the site's
// discussions is told to its signed-in staff, whichever app or process on the database made it
// (db/engine.ts, SiteChanges: the WAL index's counter on SQLite, NOTIFY from a trigger on
// PostgreSQL); another site's changes are not; nobody else may listen; closing the server ends it.

/** The stream at `url` with the cookie, and the events it told so far. */
async function listen(t: Test, url: string, cookie: string) {
  const controller = new AbortController()
  const res = await fetch(url, { headers: { cookie, accept: 'text/event-stream' }, signal: controller.signal, redirect: 'manual' })
  const events: string[] = []
  // Each event with its data, parsed (the presence events'), in the order told.
  const told: Array<{ event: string; data: unknown }> = []
  let ended = false
  if (res.status === 200) {
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          text += decoder.decode(value, { stream: true })
          for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
            const block = text.slice(0, end)
            text = text.slice(end + 2)
            const event = /^event: (.+)$/m.exec(block)
            if (event) events.push(event[1]!)
            const data = /^data: (.+)$/m.exec(block)
            if (event && data) told.push({ event: event[1]!, data: JSON.parse(data[1]!) })
          }
        }
      } catch {
        // Aborted by the test.
      }
      ended = true
    })()
  }
  t.teardown(() => controller.abort())
  return { res, events, told, ended: () => ended, abort: () => controller.abort() }
}

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

const cookieOf = (web: ReturnType<typeof webClient>) => [...web.jar].map(([k, v]) => `${k}=${v}`).join('; ')
// How long a test waits for what a push tells. Not a speed rule (speed is the benchmark's, never a
// timed test's; a loaded CI machine once took 2,025 ms to tell a change): a change is told only
// by a push, so waiting long proves as much as waiting short; who is here is also said again every
// PRESENCE_BEAT_MS, so its words are awaited for less than that, or a lost word would pass for one
// told.
const TOLD_MS = 15_000
const PRESENCE_TOLD_MS = PRESENCE_BEAT_MS - 500
const until = async (answer: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (answer()) return true
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return answer()
}

/** Ann, signed in on the pages of the listening `app` at `base`, listening to her site's stream. */
async function annListening(t: Test, app: App, base: string) {
  const ann = await personWithPassword(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const web = webClient(app, 'demo', base)
  await web.signIn(ann.email, ann.password)
  const stream = await listen(t, `${base}/demo/live`, cookieOf(web))
  t.equal(stream.res.status, 200)
  return { ann, general, web, stream }
}

t.test('the stream tells the site staff of each change, and no one else of anything', async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // Short timeouts: a stream outlives the request's timeout, which is for receiving the request only.
  // Not so short that a loaded machine cannot receive a sign-in's request within them (400 ms was).
  const REQUEST_TIMEOUT_MS = 1_500
  const { app } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}`, connections: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: 1_000 } } })
  await app.listen({ port, host: '127.0.0.1' })
  const { ann, general, web, stream } = await annListening(t, app, base)
  const opened = Date.now()
  t.match(stream.res.headers.get('content-type'), 'text/event-stream')
  t.equal(stream.res.headers.get('cache-control'), 'no-store')

  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Live', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.ok(await until(() => stream.events.length === 1, TOLD_MS), 'told')
  t.same(stream.events, ['change'])

  // Another site's change is not this site's.
  const other = await app.sites.add('other', 'Other')
  const elsewhere = await app.categories.add(other.id, 'General', true)
  await app.discussions.create({ siteId: other.id, categoryId: elsewhere.id, title: 'Theirs', body: 'x', supporterId: ann.user.id, via: 'api' })
  await new Promise((resolve) => setTimeout(resolve, 600))
  t.same(stream.events, ['change'], "nothing of the other site's")

  // Changes close together are told as one; a later one again. Made side by side, so that they
  // commit within the window even on a loaded machine; three that took longer than the window to
  // commit (seen on PostgreSQL in a loaded run) may each be told, but never more than once.
  const replying = Date.now()
  await Promise.all([0, 1, 2].map((i) => app.discussions.reply({ siteId: ann.site.id, number: 1, body: `r${i}`, internal: false, supporterId: ann.user.id, via: 'api' })))
  const took = Date.now() - replying
  t.ok(await until(() => stream.events.length >= 2, TOLD_MS))
  await new Promise((resolve) => setTimeout(resolve, 400))
  t.ok(stream.events.length - 1 <= (took < LIVE_COALESCE_MS ? 2 : 3), `three changes at once told as few (${stream.events.length - 1}; made in ${took} ms)`)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, opened + REQUEST_TIMEOUT_MS + 100 - Date.now())))
  t.notOk(stream.ended(), 'open past the request timeout')
  const told = stream.events.length
  await app.discussions.act(ann.site.id, 1, 'resolve')
  t.ok(await until(() => stream.events.length === told + 1, TOLD_MS), 'and still telling')

  // Nobody else may listen: signed out, a customer, another site's pages.
  t.equal((await listen(t, `${base}/demo/live`, '')).res.status, 303, 'signed out: sent to sign in')
  const customer = await personWithPassword(app, { role: 'customer' })
  const shopper = webClient(app, 'demo', base)
  await shopper.signIn(customer.email, customer.password)
  t.equal((await listen(t, `${base}/demo/live`, cookieOf(shopper))).res.status, 403, 'a customer')
  t.equal((await listen(t, `${base}/other/live`, cookieOf(web))).res.status, 303, "Ann's session is not Other's")

  // Closing the server ends the stream instead of waiting for it.
  await app.close()
  t.ok(await until(stream.ended, TOLD_MS), 'ended by the close')
  // Watching a closed database is quiet: nothing to tell, nothing thrown, nothing left running.
  const stop = app.database.siteChanges.watch(ann.site.id, () => t.fail('a closed database tells nothing'))
  await new Promise((resolve) => setTimeout(resolve, 300))
  stop()
})

t.test('a change made by another app on the same database is told (the file or the database, not the process, tells)', async (t) => {
  const { one, two } = await twoApps(t)
  await two.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(two.server.address() as { port: number }).port}`
  const { ann, general, stream } = await annListening(t, two, base)
  const started = Date.now()
  await one.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'From the other app', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.ok(await until(() => stream.events.length === 1, TOLD_MS), `told (in ${Date.now() - started} ms)`)
})

t.test("taken off the staff through another app, a supporter's stream ends at the next change instead of telling it; a colleague's goes on", async (t) => {
  const { one, two } = await twoApps(t)
  await two.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(two.server.address() as { port: number }).port}`
  const { ann, general, stream } = await annListening(t, two, base)
  const bea = await personWithPassword(two, { email: 'bea@example.test' })
  const beas = webClient(two, 'demo', base)
  await beas.signIn(bea.email, bea.password)
  const colleague = await listen(t, `${base}/demo/live`, cookieOf(beas))
  await one.users.removeStaff(bea.site.id, bea.user.id)
  await one.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Bea must not hear of this', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.ok(await until(() => stream.events.length >= 1, TOLD_MS), 'Ann, still on the staff, is told')
  t.ok(await until(() => colleague.ended(), TOLD_MS), "Bea's stream ended instead of telling")
  t.same(colleague.events, [], 'Bea is told nothing')
  t.notOk(stream.ended(), "Ann's stream goes on")
  // Signed out: the next word ends the stream as well.
  await one.users.setDisabled(ann.email, true)
  await one.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'After', body: 'x', supporterId: bea.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  t.ok(await until(() => stream.ended(), TOLD_MS), 'a disabled account: ended too')
})

t.test('a stream that cannot check its session (the database failing) ends rather than tell', async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const { ann, general, stream } = await annListening(t, app, base)
  const find = app.sessions.find
  app.sessions.find = async () => {
    throw new Error('the database is gone')
  }
  t.teardown(() => void (app.sessions.find = find))
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Unheard', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.ok(await until(() => stream.ended(), TOLD_MS), 'ended')
  t.same(stream.events, [], 'told nothing')
})

t.test('SQLite: a read of the versions refused for a moment is tried again, never thrown', { skip: TEST_ENGINE !== 'sqlite' && 'the SQLite poller' }, async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app } = await buildTestApp(t, { config: { baseUrl: base, siteUrl: `${base}/{site}` } })
  await app.listen({ port, host: '127.0.0.1' })
  const { ann, general, stream } = await annListening(t, app, base)
  // The sites' table gone for a while: every read of a version fails meanwhile.
  const client = sqliteOf(app).$client
  client.exec('ALTER TABLE sites RENAME TO sites_away')
  await new Promise((resolve) => setTimeout(resolve, 500))
  client.exec('ALTER TABLE sites_away RENAME TO sites')
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'After', body: 'x', supporterId: ann.user.id, via: 'api' })
  t.ok(await until(() => stream.events.length === 1, TOLD_MS), 'the next change is told')
})

// The issue's own test: two service processes on one PostgreSQL database; a change through one is
// on a page the other serves within two seconds, told by the other's stream. The test shows it is told
// by a push, and says how long it took; the seconds are not asserted (TOLD_MS above).
t.test("two processes on PostgreSQL: a change through one reaches a page of the other, told by the other's stream", { skip: TEST_ENGINE !== 'postgres' && 'two processes on one PostgreSQL database: runs in the PostgreSQL run of the suite' }, async (t) => {
  const env = { SERVICE_DB: await postgresTestAddress(t), SERVICE_SECRET: randomBytes(32).toString('hex') }
  const one = await startServer(t, env)
  const token = await bannerToken(one)
  const two = await startServer(t, env)
  const [, email, password] = /Sign in\s+(\S+)\s+Password\s+(\S+)/.exec(one.output())!
  const cookie = await signInOver(two, email!, password!)
  const stream = await listen(t, `http://127.0.0.1:${two.port}/demo/live`, cookie)
  t.equal(stream.res.status, 200)
  const api = (path: string, body?: object) =>
    fetch(`http://127.0.0.1:${one.port}${path}`, { method: body ? 'POST' : 'GET', headers: { accept: V1, authorization: `Bearer ${token}`, ...(body && { 'content-type': 'application/json' }) }, ...(body && { body: JSON.stringify(body) }) })
  const { discussions } = (await (await api('/demo/discussions')).json()) as { discussions: Array<{ number: number }> }
  const number = discussions[0]!.number
  const started = Date.now()
  t.equal((await api(`/demo/discussions/${number}/comments`, { body: 'Written through process one.' })).status, 201)
  t.ok(await until(() => stream.events.length >= 1, TOLD_MS), 'process two told its page')
  const page = await (await fetch(`http://127.0.0.1:${two.port}/demo/discussions/${number}`, { headers: { cookie, accept: BROWSER_ACCEPT } })).text()
  t.match(page, 'Written through process one.', `the page process two serves has it (${Date.now() - started} ms after the write)`)

  // Who is here (issue 71), across the two processes: Bob on process one's page of the discussion
  // sees the banner's supporter, on process two's, there and then replying.
  const { app: helper } = await buildTestApp(t, { config: { databaseAddress: env.SERVICE_DB, secret: env.SERVICE_SECRET } })
  const bob = await personWithPassword(helper, { email: 'bob@example.test' })
  const bobs = await listen(t, `http://127.0.0.1:${one.port}/demo/live?discussion=${number}`, await signInOver(one, bob.email, bob.password))
  const others = () => JSON.stringify(bobs.told.filter((e) => e.event === 'presence').at(-1)?.data)
  const there = await listen(t, `http://127.0.0.1:${two.port}/demo/live?discussion=${number}`, cookie)
  t.equal(there.res.status, 200)
  t.ok(await until(() => /"replying":false/.test(others()), PRESENCE_TOLD_MS), `Bob, on process one, sees the supporter of process two there: ${others()}`)
  const form = await (await fetch(`http://127.0.0.1:${two.port}/demo/discussions/${number}`, { headers: { cookie, accept: BROWSER_ACCEPT } })).text()
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form)![1]!
  const typed = Date.now()
  const said = await fetch(`http://127.0.0.1:${two.port}/demo/discussions/${number}/presence`, { method: 'POST', headers: { cookie, accept: BROWSER_ACCEPT, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) })
  t.equal(said.status, 204)
  t.ok(await until(() => /"replying":true/.test(others()), PRESENCE_TOLD_MS), `and replying (told in ${Date.now() - typed} ms)`)
  there.abort()
  t.ok(await until(() => others() === '{"others":[]}', PRESENCE_TOLD_MS), 'gone once the page closed')
})

/** Signs in on a running server's pages as a browser does; the session's cookie. */
async function signInOver(server: RunningServer, email: string, password: string): Promise<string> {
  const base = `http://127.0.0.1:${server.port}`
  const form = await fetch(`${base}/demo/login`, { headers: { accept: BROWSER_ACCEPT } })
  const jar = new Map(form.headers.getSetCookie().map((c) => c.split(';')[0]!.split('=') as [string, string]))
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
  const signed = await fetch(`${base}/demo/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { accept: BROWSER_ACCEPT, cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  })
  for (const line of signed.headers.getSetCookie()) {
    const [name, value] = line.split(';')[0]!.split('=') as [string, string]
    jar.set(name, value)
  }
  return cookie()
}

t.test("a page's stream tells who is here in the order it changed, whichever look-up of the session comes back first", async (t) => {
  const { app } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const ann = await personWithPassword(app, { email: 'ann@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'x', supporterId: ann.user.id, via: 'api' })
  const anns = webClient(app, 'demo', base)
  await anns.signIn(ann.email, ann.password)
  const page = await listen(t, `${base}/demo/live?discussion=1`, cookieOf(anns))
  const last = () => JSON.stringify(page.told.filter((e) => e.event === 'presence').at(-1)?.data)
  t.ok(await until(() => last() === '{"others":[]}', PRESENCE_TOLD_MS), 'nobody else there yet')
  // Each word is told once the session is checked; the first check of the two comes back last.
  const find = app.sessions.find.bind(app.sessions)
  let slow = 1
  app.sessions.find = async (...args: Parameters<typeof find>) => {
    const delay = slow-- > 0
    const found = await find(...args)
    if (delay) await new Promise((resolve) => setTimeout(resolve, 300))
    return found
  }
  await app.presence.say({ site: ann.site.id, number: 1, user: 999, name: 'Bea', state: 'here' })
  await app.presence.say({ site: ann.site.id, number: 1, user: 998, name: 'Cy', state: 'here' })
  const both = JSON.stringify({ others: [{ name: 'Bea', replying: false }, { name: 'Cy', replying: false }] })
  t.ok(await until(() => last() === both, PRESENCE_TOLD_MS), 'both told')
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.same(page.told.filter((e) => e.event === 'presence').map((e) => (e.data as { others: Array<{ name: string }> }).others.map((o) => o.name)), [[], ['Bea'], ['Bea', 'Cy']], 'in the order it changed, the last one last')
})

t.test("who is here: a discussion page's stream tells who else is on it and who is replying, whichever app they came through; gone when they leave", async (t) => {
  const { one, two, clock } = await twoApps(t)
  const bases: string[] = []
  for (const app of [one, two]) {
    await app.listen({ port: 0, host: '127.0.0.1' })
    bases.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
  }
  const ann = await personWithPassword(one, { email: 'ann@example.test' })
  const general = await one.categories.add(ann.site.id, 'General', true)
  await one.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Printer', body: 'x', supporterId: ann.user.id, via: 'api' })
  await one.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: 'Other', body: 'y', supporterId: ann.user.id, via: 'api' })
  const bob = await personWithPassword(two, { email: 'bob@example.test' })
  const anns = webClient(one, 'demo', bases[0])
  await anns.signIn(ann.email, ann.password)
  const bobs = webClient(two, 'demo', bases[1])
  await bobs.signIn(bob.email, bob.password)
  const presence = (stream: Awaited<ReturnType<typeof listen>>) => stream.told.filter((e) => e.event === 'presence').map((e) => (e.data as { others: unknown[] }).others)
  const last = (stream: Awaited<ReturnType<typeof listen>>) => JSON.stringify(presence(stream).at(-1))

  const bobsPage = await listen(t, `${bases[1]}/demo/live?discussion=1`, cookieOf(bobs))
  const elsewhere = await listen(t, `${bases[1]}/demo/live?discussion=2`, cookieOf(bobs))
  t.ok(await until(() => last(bobsPage) === '[]', PRESENCE_TOLD_MS), 'nobody else there yet')
  const annsPage = await listen(t, `${bases[0]}/demo/live?discussion=1`, cookieOf(anns))
  const annHere = JSON.stringify([{ name: ann.user.name, replying: false }])
  t.ok(await until(() => last(bobsPage) === annHere, PRESENCE_TOLD_MS), `Bob's page, served by the other app, is told Ann is there: ${last(bobsPage)}`)
  t.ok(await until(() => last(annsPage) === JSON.stringify([{ name: bob.user.name, replying: false }]), PRESENCE_TOLD_MS), 'and Ann of Bob')

  await anns.get('/demo/discussions/1')
  const started = Date.now()
  t.equal((await anns.post('/demo/discussions/1/presence')).statusCode, 204)
  t.equal((await anns.post('/demo/discussions/first/presence')).statusCode, 404, 'a discussion number or nothing')
  t.ok(await until(() => last(bobsPage) === JSON.stringify([{ name: ann.user.name, replying: true }]), PRESENCE_TOLD_MS), `Ann is replying (told in ${Date.now() - started} ms)`)
  clock.advance(REPLYING_TTL_MS)
  t.ok(await until(() => last(bobsPage) === annHere, PRESENCE_TOLD_MS), 'she stopped typing: still there, no longer replying')

  const before = bobsPage.told.length
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(bobsPage.told.length, before, 'nothing told while nothing changes')
  t.same(presence(elsewhere), [[]], "another discussion's page is told nothing of this one")

  annsPage.abort()
  t.ok(await until(() => last(bobsPage) === '[]', PRESENCE_TOLD_MS), 'Ann closed her page: gone within seconds')

  // A process that stopped without a word: what it said lapses.
  const gone = { site: ann.site.id, number: 1, user: 999, name: 'Gone Process', state: 'here' } as const
  await one.presence.say(gone)
  await one.presence.say(gone)
  // A third word, seen: the events arrive in order (NOTIFY's commit order), so both before it were heard.
  await one.presence.say({ ...gone, user: 998, name: 'Marker' })
  t.ok(await until(() => last(bobsPage) === JSON.stringify([{ name: 'Gone Process', replying: false }, { name: 'Marker', replying: false }]), PRESENCE_TOLD_MS))
  clock.advance(PRESENCE_TTL_MS)
  t.ok(await until(() => last(bobsPage) === '[]', PRESENCE_TOLD_MS), 'unsaid for PRESENCE_TTL_MS: gone')
  // Whatever else is published on the channel (another version's words) is passed over.
  for (const payload of ['not json', '{}', JSON.stringify({ site: ann.site.id, number: 1, user: 5, name: 'X', state: 'dancing' }), JSON.stringify({ site: ann.site.id, number: 1, user: -1, name: 'X', state: 'here' })]) await one.database.events.publish('presence', payload)

  // Only the site's staff may say it, and only from its pages (the form's CSRF token).
  t.equal((await anns.request('POST', '/demo/discussions/1/presence', {})).statusCode, 403, 'without the token of a page')
  const customer = await personWithPassword(one, { role: 'customer' })
  const shopper = webClient(one, 'demo', bases[0])
  await shopper.signIn(customer.email, customer.password)
  await shopper.get('/demo/help')
  t.equal((await shopper.post('/demo/discussions/1/presence')).statusCode, 403, 'a customer')
  t.equal((await listen(t, `${bases[0]}/demo/live?discussion=1`, cookieOf(shopper))).res.status, 403, 'nor listen')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(last(bobsPage), '[]', 'and nobody appeared')
})
