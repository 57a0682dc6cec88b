import t from 'tap'
import { buildTestApp } from '../fixtures/app.ts'
import { BROWSER_ACCEPT } from '../fixtures/web.ts'

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
  const empty = await app.inject({ url: '/login' })
  t.equal(empty.statusCode, 400)
  t.match(empty.body, 'Type the name of your site')
  for (const site of ['', '../admin', 'oauth', '<script>']) {
    const refused = await app.inject({ url: `/login?site=${encodeURIComponent(site)}` })
    t.equal(refused.statusCode, 400, JSON.stringify(site))
    t.notMatch(refused.body, '<script>', 'what was typed is escaped')
  }
})
