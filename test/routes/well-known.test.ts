import t from 'tap'
import { BASE_URL, buildTestApp, supporterWithToken } from '../fixtures/app.ts'

// Engines: one: what the service says of itself (documents, versions, a generated client) is the same on either engine.

t.test('RFC 9728 protected-resource metadata for a site', async (t) => {
  const { app } = await buildTestApp(t)
  await supporterWithToken(app)
  const res = await app.inject({ url: '/.well-known/oauth-protected-resource/demo' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'RFC 9728 section 3.2: application/json')
  const doc = res.json()
  t.equal(doc.resource, `${BASE_URL}/demo`, 'resource equals the API address the challenge belongs to')
  t.same(doc.authorization_servers, [BASE_URL], "the service's OAuth issuer (plugins/oauth)")
  t.same(doc.scopes_supported, ['read', 'write'])
  t.same(doc.bearer_methods_supported, ['header'], 'tokens only in the header, never in a URL')
  t.equal(doc.resource_name, 'Site demo (Service Desk API)')
  t.equal(doc.resource_documentation, 'https://help.example.test/demo/profile/api_tokens')

  // The challenge of a refusal names this very document, and its resource is the address refused.
  const refused = await app.inject({ url: '/demo' })
  const named = /resource_metadata="([^"]+)"/.exec(refused.headers['www-authenticate'] as string)![1]
  t.equal(named, `${BASE_URL}/.well-known/oauth-protected-resource/demo`)
})

t.test('no credential is needed, and an unknown site is 404', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/.well-known/oauth-protected-resource/nosuchsite', headers: { accept: 'application/json' } })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 'not_found', message: 'There is no such protected resource.' })
  for (const url of ['/.well-known/oauth-protected-resource', '/.well-known/security.txt']) {
    const other = await app.inject({ url })
    t.equal(other.statusCode, 404, url)
    t.notOk(other.headers['www-authenticate'], `${url} is not an API path`)
  }
})
