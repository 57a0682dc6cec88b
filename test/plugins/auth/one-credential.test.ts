import t from 'tap'
import { BASE_URL, buildTestApp, supporterWithToken } from '../../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../../fixtures/credentials.ts'

// Engines: one: one credential per request, decided before the stores. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// docs/decisions.md, "Credentials": exactly one credential per request. Two or more, of two kinds or of
// one kind twice, get 400 invalid_request whatever their validity; every credential below is valid.

t.test('every pair of credentials is a 400 invalid_request, and nothing is checked', async (t) => {
  const { app } = await buildTestApp(t)
  const pat = await supporterWithPassword(app)
  const ann = await supporterWithToken(app)
  const legacy = (await legacyTokenOf(app, pat.user.id)).value
  const multipass = encodeURIComponent(makeMultipass({ email: pat.user.email, expires: inDays(app, 1) }, pat.site.multipassKey, 'demo'))
  let verifications = 0
  app.passwordChecks.verify = async () => (verifications++, true)

  type Form = { headers?: [string, string][]; query?: string }
  const forms: Record<string, Form> = {
    'Authorization: Bearer': { headers: [['authorization', `Bearer ${ann.value}`]] },
    'Authorization: Basic': { headers: [['authorization', basic(pat.user.email, pat.password).authorization]] },
    'X-Service-Auth': { headers: [['x-service-auth', legacy]] },
    'auth=': { query: `auth=${legacy}` },
    'X-Multipass': { headers: [['x-multipass', decodeURIComponent(multipass)]] },
    'sso=': { query: `sso=${multipass}` },
  }
  // Each alone is accepted, so what refuses the pairs is their number alone.
  for (const [name, form] of Object.entries(forms)) {
    const res = await app.inject({ url: `/demo${form.query ? `?${form.query}` : ''}`, headers: Object.fromEntries(form.headers ?? []) })
    t.equal(res.statusCode, 200, `${name} alone`)
  }
  const names = Object.keys(forms)
  verifications = 0
  let pairs = 0
  for (let i = 0; i < names.length; i++) {
    for (let j = i; j < names.length; j++) {
      const a = forms[names[i]]
      const b = forms[names[j]]
      const headers: Record<string, string[]> = {}
      for (const [name, value] of [...(a.headers ?? []), ...(b.headers ?? [])]) (headers[name] ??= []).push(value)
      const query = [a.query, b.query].filter(Boolean).join('&')
      const res = await app.inject({ url: `/demo${query ? `?${query}` : ''}`, headers: headers as unknown as Record<string, string> })
      const what = i === j ? `${names[i]} twice` : `${names[i]} with ${names[j]}`
      t.equal(res.statusCode, 400, what)
      t.equal(
        res.headers['www-authenticate'],
        `Bearer realm="Service", resource_metadata="${BASE_URL}/.well-known/oauth-protected-resource/demo", scope="read write", error="invalid_request"`,
        what,
      )
      t.equal(res.body, 'Send exactly one credential: this request carries more than one.\n', what)
      pairs++
    }
  }
  t.equal(pairs, 21, 'fifteen pairs of two forms, six of one form twice')
  t.equal(verifications, 0, 'no password was checked for a refused request')
})

t.test('three at once, and a write with a query credential besides a header', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app)
  const three = await app.inject({ url: '/demo?auth=a&sso=b', headers: ann.bearer })
  t.equal(three.statusCode, 400)
  const write = await app.inject({ method: 'POST', url: '/demo?auth=a', headers: ann.bearer })
  t.equal(write.statusCode, 400)
  t.match(write.body, 'exactly one credential')
})
