import t, { type Test } from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { SEARCHES_PER_MINUTE } from '../../routes/web/customers.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: one: the pages' words and forms; the stores behind them run on both in the API and store tests.
// Search on the pages (routes/web/search.ts, docs/decisions.md "Search"): the staff's page finds
// every discussion and the team's notes, marks the matches and escapes everything else; the
// customers' page keeps each customer to their own discussions and the public ones, never a note,
// a deleted one or another customer's private one, from the attacker's side: Carol searches for
// what Dave wrote.

const main = (body: string) => /<main>([\s\S]*)<\/main>/.exec(body)![1]!
const found = (body: string) => [...main(body).matchAll(/<li data-discussion="(\d+)">/g)].map((m) => Number(m[1])).sort((a, b) => a - b)

async function desk(t: Test) {
  const { app, clock } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@example.test' })
  await app.users.setAdministrator(ann.site.id, ann.user.id, true)
  const carol = await personWithPassword(app, { role: 'customer', email: 'carol@customer.example' })
  const dave = await personWithPassword(app, { role: 'customer', email: 'dave@customer.example' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const open = async (who: { email: string }, title: string, body: string, isPublic: boolean) =>
    (await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title, body, public: isPublic, supporterId: ann.user.id, onBehalfOf: { email: who.email }, via: 'api' })).discussion.number
  const carols = await open(carol, 'Printer on fire', 'My printer smokes <script>alert(1)</script> & stinks.', false)
  await app.discussions.reply({ siteId: ann.site.id, number: carols, body: 'Warranty printer expired, between us.', internal: true, supporterId: ann.user.id, via: 'api' })
  const daves = await open(dave, "Dave's private printer invoice", 'Invoice 4711 for the printer lease.', false)
  const shared = await open(dave, 'Public printer tips', 'Turn the printer off and on.', true)
  const gone = await open(carol, 'Deleted printer question', 'Nobody sees this printer.', false)
  await app.discussions.act(ann.site.id, gone, 'delete')
  const signedIn = async (person: { email: string; password: string }) => {
    const web = webClient(app)
    await web.signIn(person.email, person.password)
    return web
  }
  return { app, clock, ann, carol, dave, general, carols, daves, shared, gone, signedIn }
}

t.test("the staff's page: every discussion and the notes, the matches marked, everything escaped", async (t) => {
  const { app, ann, general, carols, daves, shared, gone, signedIn } = await desk(t)
  const web = await signedIn(ann)
  const empty = await web.get('/demo/search')
  t.equal(empty.statusCode, 200)
  t.match(empty.body, /<form method="get" action="https:\/\/help\.example\.test\/demo\/search" role="search"/)
  const page = await web.get('/demo/search?q=PRINTER')
  t.equal(page.statusCode, 200)
  t.same(found(page.body), [carols, daves, shared], 'not the deleted one')
  t.match(page.body, '3 discussions match "PRINTER"')
  t.match(page.body, 'My <mark>printer</mark> smokes &lt;script&gt;alert(1)&lt;/script&gt; &amp; stinks.', 'the match marked as written, the rest escaped')
  t.notMatch(page.body, '<script>alert', 'nothing of the text runs')
  const noted = await web.get('/demo/search?q=warranty')
  t.same(found(noted.body), [carols], 'an internal note, for the staff')
  t.match(noted.body, /<span class="visually-hidden">Comment 2: <\/span><mark>Warranty<\/mark> printer expired/, 'where the words are: a comment after the opening post')
  t.match((await web.get('/demo/search?q=tips')).body, /<span class="visually-hidden">Title: <\/span>Public printer <mark>tips<\/mark>/, 'or the title')
  const filtered = await web.get('/demo/search?q=state%3Adeleted')
  t.same(found(filtered.body), [gone], 'filters alone')
  t.notMatch(main(filtered.body), 'class="snippet"', 'no snippet without words')
  t.same(found((await web.get('/demo/search?q=printer+state%3Adeleted')).body), [gone])
  const refused = await web.get('/demo/search?q=%22printer')
  t.equal(refused.statusCode, 400)
  t.match(refused.body, /<p class="alert" role="alert" data-search-problem>The search has a quote that is not closed\.<\/p>/)
  t.match(refused.body, 'value="&quot;printer"', 'the query kept in the box')
  // Pages of 20, the search kept from one to the next.
  for (let i = 0; i < 21; i++) await app.discussions.create({ siteId: ann.site.id, categoryId: general.id, title: `Toner ${i}`, body: 'More toner.', supporterId: ann.user.id, via: 'api' })
  const first = await web.get('/demo/search?q=toner')
  t.equal(found(first.body).length, 20)
  t.match(first.body, 'href="https://help.example.test/demo/search?q=toner&amp;page=2" rel="next"')
  const second = await web.get('/demo/search?q=toner&page=2')
  t.equal(found(second.body).length, 1)
  t.match(second.body, 'href="https://help.example.test/demo/search?q=toner" rel="prev"')
  const odd = await web.get(`/demo/search?q=${encodeURIComponent('<img src=x onerror=alert(1)>')}`)
  t.equal(odd.statusCode, 200)
  t.match(odd.body, 'match "&lt;img src=x onerror=alert(1)&gt;"', 'the query shown escaped')
})

t.test("a customer's search: their own discussions and the public ones, never another's, a note or a deleted one", async (t) => {
  const { app, ann, carol, dave, carols, daves, shared, signedIn } = await desk(t)
  const carolWeb = await signedIn(carol)
  const help = await carolWeb.get('/demo/help')
  t.match(help.body, /<form method="get" action="https:\/\/help\.example\.test\/demo\/help\/search" role="search"/, 'the support site has the box')
  const mine = await carolWeb.get('/demo/help/search?q=printer')
  t.equal(mine.statusCode, 200)
  t.same(found(mine.body), [carols, shared], "her own and the public one, not Dave's private one nor her deleted one")
  t.match(mine.body, `href="https://help.example.test/demo/help/${carols}"`, 'each to its page on the support site')

  // Carol tries to reach what is not hers: Dave's invoice, the team's note, by words, phrases and filters.
  for (const q of ['invoice', '4711', '"printer lease"', 'dave', 'warranty', '"between us"', 'printer state:deleted']) {
    t.same(found((await carolWeb.get(`/demo/help/search?q=${encodeURIComponent(q)}`)).body), [], `${q}: nothing`)
  }
  for (const q of ['printer from:dave@customer.example', 'printer assignee:none', 'printer tag:vip']) {
    const refused = await carolWeb.get(`/demo/help/search?q=${encodeURIComponent(q)}`)
    t.equal(refused.statusCode, 400, q)
    t.match(refused.body, 'which only the team may search by')
  }
  const daveWeb = await signedIn(dave)
  t.same(found((await daveWeb.get('/demo/help/search?q=printer')).body), [daves, shared], 'Dave: his own and the public one')

  const visitor = webClient(app)
  t.same(found((await visitor.get('/demo/help/search?q=printer')).body), [shared], 'a visitor: the public one')
  t.equal((await visitor.get('/demo/search?q=printer')).statusCode, 303, "the staff's page sends a visitor to sign in")
  const refusedToCarol = await carolWeb.get('/demo/search?q=printer')
  t.equal(refusedToCarol.statusCode, 403, "nor is it a customer's")
  t.same(found(refusedToCarol.body), [])

  // A site that shows no public discussions: each customer's own only.
  const admin = await supporterWithToken(app, { email: ann.email })
  t.equal((await app.inject({ method: 'PATCH', url: '/demo/policy', headers: { ...admin.bearer, accept: V1 }, payload: { public_discussions: false } })).statusCode, 200)
  t.same(found((await carolWeb.get('/demo/help/search?q=printer')).body), [carols])
  t.same(found((await visitor.get('/demo/help/search?q=printer')).body), [], 'a visitor: nothing')
})

t.test("the support site's search: paced per client address, bounded in cost, and a private category is as unknown as one that does not exist", async (t) => {
  const { app, clock, ann, shared, signedIn } = await desk(t)
  await app.categories.add(ann.site.id, 'Team only', false)
  const from = (remoteAddress: string, q: string) => app.inject({ url: `/demo/help/search?q=${encodeURIComponent(q)}`, remoteAddress })
  const unknown = await from('198.51.100.9', 'printer category:Nowhere')
  const hidden = await from('198.51.100.9', 'printer category:"Team only"')
  t.equal(unknown.statusCode, 400)
  t.equal(hidden.statusCode, 400, 'a private category is refused as an unknown one')
  const problem = (body: string) => /<p class="alert"[^>]*>([^<]*)</.exec(main(body))?.[1]?.replace(/Nowhere|Team only/, 'X')
  t.equal(problem(hidden.body), problem(unknown.body), 'in the same words')
  const byNumber = await from('198.51.100.9', `printer category:${(await app.categories.list(ann.site.id, 0, -1)).categories.find((c) => c.name === 'Team only')!.id}`)
  t.equal(byNumber.statusCode, 400, 'by its number too')
  const staff = await (await signedIn(ann)).get(`/demo/search?q=${encodeURIComponent('printer category:"Team only"')}`)
  t.equal(staff.statusCode, 200, "the staff's search knows it")

  const long = await from('198.51.100.9', `"${'the '.repeat(249)}"`)
  t.equal(long.statusCode, 400, 'a 1,000-character phrase is refused before the index')
  t.match(main(long.body), 'a phrase of more than 8 words')

  // 30 searches a minute from one address (4 above): the 31st waits; another address does not.
  for (let i = 4; i < SEARCHES_PER_MINUTE; i++) t.equal((await from('198.51.100.9', 'printer')).statusCode, 200)
  const paced = await from('198.51.100.9', 'printer')
  t.equal(paced.statusCode, 429)
  t.equal(paced.headers['retry-after'], '60')
  t.match(main(paced.body), 'Too many searches from this address. Try again in 1 minute.')
  t.equal((await from('198.51.100.9', '')).statusCode, 200, 'the empty form is not a search')
  const other = await from('203.0.113.4', 'printer')
  t.equal(other.statusCode, 200, 'another address searches')
  t.same(found(other.body), [shared])
  clock.advance(60_000)
  t.equal((await from('198.51.100.9', 'printer')).statusCode, 200, 'a minute later')
})
