import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { BROWSER_ACCEPT, personWithPassword, webClient } from '../fixtures/web.ts'
import { wantsPage } from '../../routes/web/queue.ts'

// Engines: one: the queue's and a discussion's pages (states, counts, filters, the conversation, the forms); every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03; the counts by owner in test/team/store.test.ts).
// The supporter's queue (docs/decisions.md, "The queue on the web"): the queue with its states,
// counts, category filter and pages; a discussion's page with its conversation, replies, notes
// and actions through the API's own stores; one address for the page and the API, by Accept; and
// the people and sites it keeps apart.

type App = Awaited<ReturnType<typeof buildTestApp>>['app']

/** A discussion on the site, opened by a customer through the API's store. */
async function opened(app: App, siteId: number, supporterId: number, title: string, categoryId: number) {
  const { discussion } = await app.discussions.create({ siteId, categoryId, title, body: `About ${title}`, public: true, supporterId, onBehalfOf: { email: 'customer@example.test' }, via: 'api' })
  return discussion
}

/** A site with a supporter signing in on the pages (Ann), one using the API, and two public categories. */
async function queueSite(t: Parameters<typeof buildTestApp>[0]) {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const api = await supporterWithToken(app, { email: 'api@example.test' })
  const general = await app.categories.add(ann.site.id, 'General', true)
  const billing = await app.categories.add(ann.site.id, 'Billing', true)
  return { app, ann, api, general, billing }
}

t.test('which requests the router sends to a page: text/html named, and no API credential', async (t) => {
  const asked = (accept: string | undefined, headers: Record<string, string> = {}, url = '/demo/discussions') => wantsPage({ headers: { ...headers, ...(accept === undefined ? {} : { accept }) }, url })
  t.ok(asked(BROWSER_ACCEPT), "Chromium's")
  t.ok(asked('TEXT/HTML'), 'any case')
  t.ok(asked('application/json, text/html;q=0.5'), 'anywhere in the list')
  for (const accept of [undefined, V1, '*/*', 'application/json', 'text/htmlx', 'text/plain, application/text/html']) t.notOk(asked(accept), `not ${accept}`)
  t.notOk(asked(BROWSER_ACCEPT, { authorization: 'Bearer x' }), 'with a token: the API')
  t.notOk(asked(BROWSER_ACCEPT, { 'x-service-auth': 'k' }), 'with the legacy token')
  t.notOk(asked(BROWSER_ACCEPT, { 'x-multipass': 'm' }), 'with multipass')
  t.notOk(asked(BROWSER_ACCEPT, {}, '/demo/discussions?auth=k'), 'with auth= in the query')
  t.notOk(asked(BROWSER_ACCEPT, {}, '/demo/discussions?page=2&sso=m'), 'with sso= in the query')
})

t.test('the queue: states with their counts, a category, pages; a discussion by its html_href', async (t) => {
  const { app, ann, api, general, billing } = await queueSite(t)
  for (let i = 1; i <= 33; i++) await opened(app, ann.site.id, ann.user.id, `Question ${i}`, i % 3 === 0 ? billing.id : general.id)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)

  const queue = await web.get('/demo/discussions')
  t.equal(queue.statusCode, 200)
  t.match(queue.headers['content-type'], 'text/html')
  t.match(queue.body, '<table data-queue>')
  t.match(queue.body, /<th scope="col">Title<\/th>/, 'a real table with headers')
  t.match(queue.body, /aria-current="page">To do <span class="count">\(33\)/, 'the first tab: what needs an answer')
  t.match(queue.body, /All <span class="count">\(33\)/)
  t.match(queue.body, /New <span class="count">\(33\)/)
  t.match(queue.body, /Open <span class="count">\(0\)/)
  t.equal([...queue.body.matchAll(/data-discussion="/g)].length, 30, 'thirty a page')
  t.match(queue.body, /data-discussion="33"[\s\S]*data-discussion="32"/, 'by last activity, newest first')
  t.match(queue.body, 'Page 1 of 2')
  const second = await web.get('/demo/discussions?page=2')
  t.equal([...second.body.matchAll(/data-discussion="/g)].length, 3)
  t.match(second.body, 'rel="prev"')

  const billed = await web.get(`/demo/discussions?category=${billing.id}`)
  t.equal([...billed.body.matchAll(/data-discussion="/g)].length, 11, 'one category')
  t.match(billed.body, /To do <span class="count">\(11\)/, 'its counts')
  t.match(billed.body, `href="https://help.example.test/demo/discussions?state=open&amp;category=${billing.id}"`, 'the tabs keep the category')
  // The queue's search is the full search (routes/web/search.ts, test/search/pages.test.ts): the box
  // leads there, and so do the addresses of the title search it replaced.
  t.match(queue.body, /<form method="get" action="https:\/\/help\.example\.test\/demo\/search" role="search"/, 'the search box')
  const moved = await web.get('/demo/discussions?q=QUESTION+1')
  t.equal(moved.statusCode, 303)
  t.equal(moved.headers.location, 'https://help.example.test/demo/search?q=QUESTION+1')
  t.equal((await web.get('/demo/discussions?q=+')).statusCode, 200, 'a blank search is no search')

  for (const odd of ['?state=spam', '?page=0', '?page=abc', '?category=99999', '?page=99']) {
    t.equal((await web.get(`/demo/discussions${odd}`)).statusCode, 200, `${odd}: the queue, without the odd part`)
  }

  // The API's html_href is this page's address; the API keeps its own answer there.
  const listing = await app.inject({ url: '/demo/discussions/33', headers: { ...api.bearer, accept: V1 } })
  const htmlHref = listing.json().html_href as string
  t.equal(htmlHref, 'https://help.example.test/demo/discussions/33')
  const page = await web.get(new URL(htmlHref).pathname)
  t.equal(page.statusCode, 200)
  t.match(page.body, '<h1>Question 33</h1>')
  t.match(page.body, 'About Question 33')
  const asApi = await app.inject({ url: '/demo/discussions/33', headers: { ...api.bearer, accept: V1 } })
  t.match(asApi.headers['content-type'], 'application/vnd.service-v1+json', 'an API client at the same address gets the API')
  const anyAccept = await app.inject({ url: '/demo/discussions/33', headers: api.bearer })
  t.match(anyAccept.headers['content-type'], 'json', 'and so does one that names no media type')
  t.equal((await web.get('/demo/discussions/999')).statusCode, 404)
  t.equal((await web.get('/demo/discussions/abc')).statusCode, 404)
})

t.test('a discussion page: reply in public and as an internal note, resolve, move, delete and restore, each seen by the API', async (t) => {
  const { app, ann, api, general, billing } = await queueSite(t)
  const d = await opened(app, ann.site.id, ann.user.id, 'Refund, please', general.id)
  const path = `/demo/discussions/${d.number}`
  const seen = async () => (await app.inject({ url: path, headers: { ...api.bearer, accept: V1 } })).json()
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)

  await web.get(path)
  const replied = await web.post(`${path}/reply`, { body: 'We are on it.', internal: 'no' })
  t.equal(replied.statusCode, 303)
  t.equal(replied.headers.location, `https://help.example.test${path}?done=sent#comment-2`)
  t.match((await web.get(`${path}?done=sent`)).body, /role="status" data-done>Your reply was sent\./, 'and the page says so')
  await web.get(path)
  t.equal((await web.post(`${path}/reply`, { body: 'Check the invoice <first>.', internal: 'yes' })).statusCode, 303)
  const comments = (await app.inject({ url: `${path}/comments`, headers: { ...api.bearer, accept: V1 } })).json()
  t.match(comments.comments.slice(1, 3), [{ body: 'We are on it.', internal: false, via: 'web' }, { body: 'Check the invoice <first>.', internal: true, via: 'web' }])
  t.equal((await seen()).state, 'open', 'a public reply of the staff opens a new discussion')
  const shown = await web.get(path)
  t.match(shown.body, /class="comment internal"[\s\S]*Internal note: the customer does not see it[\s\S]*Check the invoice &lt;first&gt;\./, 'the note is told apart, and escaped')

  for (const [form, problem] of [
    [{ internal: 'no' }, 'Write a message first.'],
    [{ body: 'x'.repeat(65_537) }, 'A message holds at most 65,536 characters.'],
    [{ body: 'a\u0000b' }, 'The message holds the character U+0000 (NUL)'],
  ] as const) {
    await web.get(path)
    const refused = await web.post(`${path}/reply`, form)
    t.equal(refused.statusCode, 400, problem)
    t.match(refused.body, problem)
  }
  await web.get(path)
  const longest = await web.post(`${path}/reply`, { body: 'é'.repeat(65_536), internal: 'yes' })
  t.equal(longest.statusCode, 303, 'the longest reply the API takes, in letters of two bytes, goes through the form too')
  for (const action of ['reply', 'act', 'category']) {
    await web.get(path)
    t.equal((await web.post(`/demo/discussions/999/${action}`, { body: 'x', action: 'resolve', category: '1' })).statusCode, 404, `${action} of no discussion`)
  }
  await web.get(path)
  t.equal((await web.post(`${path}/category`, { category: 'billing' })).statusCode, 400, 'a category by name')
  await web.get(path)
  const empty = await web.post(`${path}/reply`, { body: '   ', internal: 'no' })
  t.equal(empty.statusCode, 400)
  t.match(empty.body, /role="alert">[^<]+/)
  t.match(empty.body, 'aria-invalid="true"')

  await web.get(path)
  t.equal((await web.post(`${path}/act`, { action: 'resolve' })).statusCode, 303)
  t.equal((await seen()).state, 'resolved')
  await web.get(path)
  const stale = await web.post(`${path}/act`, { action: 'resolve' })
  t.equal(stale.statusCode, 409, 'an action the page no longer offers')
  await web.get(path)
  await web.post(`${path}/act`, { action: 'unresolve' })
  t.equal((await seen()).state, 'open')
  await web.get(path)
  t.equal((await web.post(`${path}/category`, { category: String(billing.id) })).statusCode, 303)
  t.equal((await seen()).category_href, `https://api.example.test/demo/categories/${billing.id}`)
  await web.get(path)
  t.equal((await web.post(`${path}/category`, { category: '99999' })).statusCode, 400, 'a category of no site')
  await web.get(path)
  const asked = await web.post(`${path}/act`, { action: 'delete' })
  t.equal(asked.statusCode, 200, 'Delete asks first')
  t.match(asked.body, /<h1>Delete discussion #1\?<\/h1>[\s\S]*name="confirmed" value="yes"/)
  t.equal((await seen()).state, 'open', 'and deletes nothing yet')
  await web.post(`${path}/act`, { action: 'delete', confirmed: 'yes' })
  t.equal((await seen()).state, 'deleted')
  t.match((await web.get(path)).body, '>Restore</button>')
  await web.get(path)
  await web.post(`${path}/act`, { action: 'restore' })
  t.equal((await seen()).state, 'open', 'back to where it was')

  // And the API's change is on the page.
  await app.inject({ method: 'POST', url: `${path}/resolve`, headers: { ...api.bearer, accept: V1 } })
  t.match((await web.get(path)).body, 'data-state>resolved')
  // A form without its CSRF token changes nothing.
  const forged = await web.request('POST', `${path}/act`, { action: 'delete' })
  t.equal(forged.statusCode, 403)
  t.equal((await seen()).state, 'resolved')
})

t.test('the queue keeps sites and people apart', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const other = await app.sites.add('other', 'Other')
  const stranger = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  await opened(app, ann.site.id, ann.user.id, 'Ours', (await app.categories.add(ann.site.id, 'General', true)).id)
  const theirs = await opened(app, other.id, stranger.user.id, 'Private to Other', (await app.categories.add(other.id, 'Elsewhere', true)).id)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  t.notMatch((await web.get('/demo/discussions')).body, 'Private to Other')
  const crossed = await web.get(`/demo/discussions/${theirs.number}`)
  t.notMatch(crossed.body, 'Private to Other', "another site's discussion under this site's number is not shown")
  t.equal((await web.get(`/other/discussions/${theirs.number}`)).statusCode, 303, "Ann is not signed in on Other's pages")
  await web.get('/demo/discussions/1')
  const acrossSites = await web.post(`/other/discussions/${theirs.number}/act`, { action: 'delete' })
  t.equal(acrossSites.statusCode, 403, "Demo's form token is no use on Other")
  t.equal((await app.discussions.get(other.id, theirs.number)).state, theirs.state, 'unchanged')

  const customer = await personWithPassword(app, { role: 'customer' })
  const shopper = webClient(app)
  await shopper.signIn(customer.email, customer.password)
  t.equal((await shopper.get('/demo/discussions')).statusCode, 403, 'a customer cannot open the queue')
  t.equal((await shopper.get('/demo/discussions/1')).statusCode, 403)
  t.equal((await webClient(app).get('/demo/discussions')).statusCode, 303, 'signed out: sent to sign in')
  t.equal((await app.inject({ url: '/demo/discussions', headers: { accept: BROWSER_ACCEPT } })).headers.location, 'https://help.example.test/demo/login?next=%2Fdemo%2Fdiscussions')
})

t.test('a failure that is not a missing discussion is the error page, not a 404', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  app.discussions.get = async () => {
    throw new Error('the disk is on fire')
  }
  const res = await web.get('/demo/discussions/1')
  t.equal(res.statusCode, 500)
  t.match(res.body, 'Something went wrong')
  t.notMatch(res.body, 'on fire', 'nothing of it shown')
})

t.test('the queue marks the discussions waiting for the team: a customer spoke last; a note moves nothing; a resolved one is not marked', async (t) => {
  const { app, ann, api, general } = await queueSite(t)
  const web = webClient(app)
  await web.signIn(ann.email, ann.password)
  const waiting = async () => [...(await web.get('/demo/discussions?state=all')).body.matchAll(/data-discussion="(\d+)"[^]*?<\/tr>/g)].filter((m) => m[0].includes('data-waiting')).map((m) => Number(m[1])).sort()
  const reply = (number: number, body: object, headers: Record<string, string> = api.bearer) => app.inject({ method: 'POST', url: `/demo/discussions/${number}/comments`, headers, payload: body })

  await opened(app, ann.site.id, ann.user.id, 'From a customer', general.id)
  await app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: api.bearer, payload: { title: 'From the team', body: 'A note to ourselves.' } })
  t.same(await waiting(), [1], "the customer's, not the team's own")
  t.match((await web.get('/demo/discussions')).body, 'Waiting for the team</span>')

  await reply(1, { body: 'Between us.', internal: true })
  t.same(await waiting(), [1], 'an internal note is no answer')
  await reply(1, { body: 'We are on it.' })
  t.same(await waiting(), [], 'answered')
  // A script posts the customer's answer on their behalf (as the mail does).
  t.equal((await reply(1, { body: 'Still broken.', author_email: 'customer@example.test' })).statusCode, 201)
  t.same(await waiting(), [1], 'the customer spoke again')
  await app.inject({ method: 'POST', url: '/demo/discussions/1/resolve', headers: api.bearer })
  t.same(await waiting(), [], 'resolved: nothing is owed')
  await reply(2, { body: 'A customer joins in.', author_email: 'other@example.test' })
  t.same(await waiting(), [2], "a customer's comment on the team's own discussion is owed an answer too")
})
