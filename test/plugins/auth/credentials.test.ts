import t from 'tap'
import { findCredential, type CredentialSource } from '../../../plugins/auth/credentials.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

const TOKEN = 'service_pat_abc'
const source = (over: Partial<CredentialSource>): CredentialSource => ({ method: 'GET', rawHeaders: [], query: {}, ...over })

t.test('no credential', async (t) => {
  t.same(findCredential(source({ rawHeaders: ['Accept', 'application/json'] })), { kind: 'none' })
})

t.test('Authorization: Bearer, any case of the scheme', async (t) => {
  t.same(findCredential(source({ rawHeaders: ['Authorization', `Bearer ${TOKEN}`] })), { kind: 'bearer', token: TOKEN })
  t.same(findCredential(source({ rawHeaders: ['authorization', `bearer ${TOKEN}`] })), { kind: 'bearer', token: TOKEN })
})

t.test('a malformed Authorization header', async (t) => {
  for (const value of ['Bearer', 'Bearer ', `Bearer ${TOKEN} extra`, TOKEN, 'Token abc', 'Basic !!!', 'Basic ' + Buffer.from('nocolon').toString('base64'), '']) {
    t.same(findCredential(source({ rawHeaders: ['Authorization', value] })), { kind: 'malformed' }, JSON.stringify(value))
  }
})

t.test('Basic carries email and password', async (t) => {
  const encoded = Buffer.from('ann@example.test:pa:ss').toString('base64')
  t.same(findCredential(source({ rawHeaders: ['Authorization', `Basic ${encoded}`] })), {
    kind: 'basic',
    email: 'ann@example.test',
    password: 'pa:ss',
  })
})

t.test('legacy and multipass, as header or GET query, saying which', async (t) => {
  t.same(findCredential(source({ rawHeaders: ['X-Service-Auth', 'k'] })), { kind: 'legacy', key: 'k', inQuery: false })
  t.same(findCredential(source({ query: { auth: 'k' } })), { kind: 'legacy', key: 'k', inQuery: true })
  t.same(findCredential(source({ rawHeaders: ['X-Multipass', 'm'] })), { kind: 'multipass', token: 'm', inQuery: false })
  t.same(findCredential(source({ method: 'HEAD', query: { sso: 'm' } })), { kind: 'multipass', token: 'm', inQuery: true })
})

t.test('query credentials on a write are refused', async (t) => {
  const auth = findCredential(source({ method: 'POST', query: { auth: 'k' } }))
  t.equal(auth.kind, 'invalid_request')
  t.match(auth, { reason: /auth query parameter is accepted on GET and HEAD only/ })
  t.match(findCredential(source({ method: 'DELETE', query: { sso: 'm' } })), { kind: 'invalid_request', reason: /sso/ })
})

t.test('more than one credential is a bad request, whatever the mix', async (t) => {
  const pairs: Partial<CredentialSource>[] = [
    { rawHeaders: ['Authorization', `Bearer ${TOKEN}`, 'Authorization', `Bearer ${TOKEN}`] },
    { rawHeaders: ['Authorization', `Bearer ${TOKEN}`, 'X-Service-Auth', 'k'] },
    { rawHeaders: ['X-Service-Auth', 'k'], query: { auth: 'k' } },
    { rawHeaders: ['X-Multipass', 'm'], query: { sso: 'm' } },
    { query: { auth: ['a', 'b'] } },
    { query: { auth: 'a', sso: 'b' } },
    { rawHeaders: ['X-Multipass', 'm', 'X-Service-Auth', 'k'] },
  ]
  for (const pair of pairs) {
    t.match(findCredential(source(pair)), { kind: 'invalid_request', reason: /exactly one credential/ }, JSON.stringify(pair))
  }
})

t.test('a personal token anywhere in the query string is refused', async (t) => {
  t.match(findCredential(source({ query: { access_token: 'x' } })), { kind: 'invalid_request', reason: /must not be sent in a URL/ })
  t.match(findCredential(source({ query: { token: TOKEN } })), { kind: 'invalid_request' })
  t.match(findCredential(source({ query: { auth: TOKEN } })), { kind: 'invalid_request', reason: /URL/ })
  t.match(findCredential(source({ query: { q: ['x', `a${TOKEN}`] } })), { kind: 'invalid_request' })
  t.match(findCredential(source({ query: { [TOKEN]: '' } })), { kind: 'invalid_request', reason: /URL/ }, 'a token as a parameter name')
  t.match(findCredential(source({ query: { Access_Token: 'x' } })), { kind: 'invalid_request' }, 'access_token in any case')
})
