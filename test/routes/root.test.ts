import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { BROWSER_ACCEPT } from '../fixtures/web.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.
// Issue 46: the bare address in a browser is a page that leads to a site's sign-in, not raw JSON;
// tools still get the JSON. Neither lists a site.

t.test('the bare address: a page for a browser, the JSON for anyone else, and the way to a sign-in', async (t) => {
  const { app } = await buildTestApp(t)
  await app.sites.add('demo', 'Demo help')
  const page = await app.inject({ url: '/', headers: { accept: BROWSER_ACCEPT } })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], 'text/html')
  t.match(page.headers['content-security-policy'], "default-src 'none'")
  t.match(page.body, '<form method="get" action="/login">')
  t.notMatch(page.body, 'demo', 'no site is named')
  t.same((await app.inject({ url: '/' })).json().name, 'Service Desk', 'a tool gets the JSON')

  const go = await app.inject({ url: '/login?site=%20Demo%20' })
  t.equal(go.statusCode, 303)
  t.equal(go.headers.location, 'https://help.example.test/demo/login')
  const empty = await app.inject({ url: '/login', headers: { accept: BROWSER_ACCEPT } })
  t.equal(empty.statusCode, 400)
  t.match(empty.headers['content-type'], 'text/html')
  t.match(empty.body, 'Type the name of your site')
  for (const site of ['', '../admin', 'oauth', '<script>']) {
    const refused = await app.inject({ url: `/login?site=${encodeURIComponent(site)}`, headers: { accept: BROWSER_ACCEPT } })
    t.equal(refused.statusCode, 400, JSON.stringify(site))
    t.notMatch(refused.body, '<script>', 'what was typed is escaped')
  }
  // A tool (found by the fuzzer: GET /../login with no Accept) gets the JSON error, as everywhere outside the pages.
  const tool = await app.inject({ url: '/login' })
  t.equal(tool.statusCode, 400)
  t.same(tool.json(), { error: 'invalid_request', message: 'Type the name of your site: a site name must be 1 to 63 characters of lowercase letters, digits, "-" and "_".' })
})
