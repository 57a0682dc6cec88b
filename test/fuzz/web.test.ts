import fc from 'fast-check'
import t from 'tap'
import { webClient } from '../fixtures/web.ts'
import { webRequest } from './arbitraries.ts'
import { fuzzApp, keepsContract, runs } from './harness.ts'
import { FUZZ_PASSWORD } from './seed.ts'

// Engines: both: odd form fields and cookies reach the session and token stores as text PostgreSQL refuses where SQLite takes it.
// Issue 6, item 1, the supporter pages: the sign-in form, sign-out, the profile and token pages,
// with odd fields, `next` and `sso` values, cookies and CSRF tokens that are genuine, damaged or
// random. Pages and redirects (within the site) only, never a 5xx; a refusal changes nothing.

t.test('hostile forms, cookies and CSRF tokens on the pages: 2xx, 3xx or 4xx only', async (t) => {
  const { app, known } = await fuzzApp(t)
  const browser = webClient(app)
  t.equal((await browser.signIn(known.webEmail, FUZZ_PASSWORD)).statusCode, 303, 'signed in')
  await browser.get('/demo/profile/api_tokens')
  const csrfToken = /name="_csrf" value="([^"]+)"/.exec((await browser.get('/demo/profile/api_tokens')).body)![1]
  const cookie = (name: string) => `${name}=${browser.jar.get(name)}`
  const web = { site: 'demo', session: cookie('service_session'), csrfCookie: cookie('service_csrf'), csrfToken }
  await fc.assert(
    fc.asyncProperty(webRequest(web), (request) => keepsContract(app, request, false)),
    runs(250),
  )
})
