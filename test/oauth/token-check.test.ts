import t from 'tap'
import { oauthTokenCheck, type IssuedAccessToken } from '../../plugins/auth/checks/oauth-token.ts'
import { generateToken, OAUTH_ACCESS_TOKEN_PREFIX, OAUTH_REFRESH_TOKEN_PREFIX } from '../../lib/token-format.ts'
import type { Site } from '../../db/stores/sites.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The check of an OAuth access token on the API, with its store functions given: every answer,
// in its order. test/oauth/authorization.test.ts reaches the same answers through real grants.

const site = { id: 1, permalink: 'demo', name: 'Demo' } as Site
const value = generateToken(OAUTH_ACCESS_TOKEN_PREFIX)
const NOW = 1_800_000_000_000

function checkWith(token: Partial<IssuedAccessToken> | undefined, owner = { id: 7, email: 'a@x', name: 'A', disabled: false }, staff = true) {
  const used: string[] = []
  const check = oauthTokenCheck({
    lookup: async (v) => (v === value && token ? { accountId: 7, grantId: 'g', audience: 'https://api/demo', scopes: new Set(['read']), expiresAt: new Date(NOW + 1000), ...token } : undefined),
    account: async (id) => (id === owner.id ? owner : undefined),
    staffRole: async () => (staff ? 'supporter' : undefined),
    recordUse: async (grantId) => void used.push(grantId),
    resourceOf: (permalink) => `https://api/${permalink}`,
    clock: () => NOW,
  })
  return { used, run: (method = 'GET', v = value, s: Site | null = site) => check({ token: v }, s ?? undefined, { method, ip: '127.0.0.1' }) }
}

t.test('every answer of the check', async (t) => {
  t.match(await checkWith({}).run(), { accepted: { method: 'oauth_token', access: 'read', user: { id: 7 } } })
  t.match(await checkWith({ scopes: new Set(['read', 'write']) }).run('POST'), { accepted: { access: 'write' } })
  t.match(await checkWith({ scopes: new Set(['write']) }).run('GET'), { accepted: { access: 'write' } }, 'write includes read')
  t.match(await checkWith({}).run('POST'), { refused: { kind: 'insufficient_scope' } })
  t.match(await checkWith({ scopes: new Set() }).run('GET'), { refused: { kind: 'insufficient_scope' } }, 'no API scope reads nothing')
  t.match(await checkWith({}).run('GET', value, null), { refused: { kind: 'invalid_token' } }, 'an unknown site')
  t.match(await checkWith({}).run('GET', generateToken(OAUTH_REFRESH_TOKEN_PREFIX)), { refused: { kind: 'invalid_token' } }, 'another prefix')
  t.match(await checkWith({}).run('GET', value.slice(0, -1) + (value.endsWith('0') ? '1' : '0')), { refused: { kind: 'invalid_token' } })
  t.match(await checkWith(undefined).run(), { refused: { kind: 'invalid_token' } }, 'unknown or its grant gone')
  t.match(await checkWith({ audience: 'https://api/other' }).run(), { refused: { kind: 'invalid_token' } }, 'another site')
  t.match(await checkWith({ expiresAt: new Date(NOW) }).run(), { refused: { kind: 'token_expired' } })
  t.match(await checkWith({ accountId: 8 }).run(), { refused: { kind: 'invalid_token' } }, 'the account is gone')
  t.match(await checkWith({}, { id: 7, email: 'a@x', name: 'A', disabled: true }).run(), { refused: { kind: 'invalid_token' } }, 'disabled')
  const offStaff = checkWith({}, undefined, false)
  t.match(await offStaff.run(), { refused: { kind: 'staff_only' }, headers: { 'service-token-expiration': new Date(NOW + 1000).toUTCString() } })
  t.same(offStaff.used, ['g'], 'a genuine use is recorded on its grant')
})
