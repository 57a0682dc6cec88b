import t from 'tap'
import { BASE_URL, buildTestApp, supporterWithToken } from '../fixtures/app.ts'

// Engines: one: the site resource's media types, bytes and staff. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// The site resource (routes/api/site.ts): each site's own, in the media type it asks for, the same
// bytes every time, and to its own staff only.

t.test("each site's resource, the same bytes asked again, never another site's", async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { site: 'acme' })
  const bob = await supporterWithToken(app, { site: 'beta' })
  const get = (site: string, headers: Record<string, string>, accept = 'application/vnd.service-v1+json') =>
    app.inject({ url: `/${site}`, headers: { ...headers, accept } })

  const acme = await get('acme', ann.bearer)
  t.equal(acme.statusCode, 200)
  t.equal(acme.body, JSON.stringify(JSON.parse(acme.body)), 'compact JSON in the order of the schema')
  t.match(acme.json(), { name: 'Site acme', permalink: 'acme', href: `${BASE_URL}/acme`, discussions_href: `${BASE_URL}/acme/discussions` })
  t.equal((await get('acme', ann.bearer)).body, acme.body, 'asked again: the same bytes')

  const beta = await get('beta', bob.bearer)
  t.match(beta.json(), { name: 'Site beta', permalink: 'beta', href: `${BASE_URL}/beta` })
  t.notMatch(beta.body, 'acme', "nothing of the other site's")
  t.equal((await get('beta', ann.bearer)).statusCode, 401, "acme's supporter is not let into beta")

  const plain = await get('acme', ann.bearer, 'application/json')
  t.equal(plain.headers['content-type'], 'application/json; charset=utf-8', 'the media type asked for')
  t.equal(plain.body, acme.body)
  t.equal(acme.headers['content-type'], 'application/vnd.service-v1+json; charset=utf-8')
  const head = await app.inject({ method: 'HEAD', url: '/acme', headers: ann.bearer })
  t.equal(head.headers['content-length'], String(Buffer.byteLength(acme.body)))
})
