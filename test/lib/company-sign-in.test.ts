import t from 'tap'
import { domainOf, freshAuthentication, mfaAtProvider, newcomerName, ofDomains, tenantProblem, verifiedAddress } from '../../lib/company-sign-in.ts'

// Engines: one: pure functions of lib/company-sign-in.ts, no store.
// Who an ID token may be (issue 73): a verified address only, the provider's second factor read
// from amr and acr, the domains and tenants an administrator gives.

t.test('an address signs in only when the provider verified it', async (t) => {
  t.same(verifiedAddress({ sub: 's', email: ' Ann@Acme.Example ', email_verified: true }, 'oidc'), { address: 'ann@acme.example' })
  t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', email_verified: 'true' }, 'oidc'), { address: 'ann@acme.example' }, 'as some providers send it: a string')
  t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', xms_edov: true }, 'oidc'), { address: 'ann@acme.example' }, "Microsoft's verified domain owner")
  for (const verified of [false, 'false', undefined, null, 0, 'yes', {}]) t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', email_verified: verified }, 'oidc'), { refused: 'unverified' }, String(verified))
  t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', email_verified: true, hd: 'acme.example' }, 'google'), { address: 'ann@acme.example' }, "Google: an account of the company's Workspace")
  t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', email_verified: true }, 'google'), { refused: 'not_workspace' }, 'Google: a personal account with a verified company address')
  t.same(verifiedAddress({ sub: 's', email: 'ann@acme.example', email_verified: true, hd: 'other.example' }, 'google'), { refused: 'not_workspace' }, "Google: another Workspace's account")
  for (const email of [undefined, '', 'ann', 'ann@', 42, ['ann@acme.example'], 'ann @acme.example']) t.same(verifiedAddress({ sub: 's', email, email_verified: true }, 'oidc'), { refused: 'no_email' }, JSON.stringify(email))
})

t.test("the provider's second factor: amr naming mfa or another factor beside the password, or a multi-factor acr", async (t) => {
  t.ok(mfaAtProvider({ sub: 's', amr: ['pwd', 'mfa'] }), 'Microsoft')
  t.ok(mfaAtProvider({ sub: 's', amr: ['pwd', 'otp'] }), 'Keycloak with an OTP')
  t.ok(mfaAtProvider({ sub: 's', amr: ['hwk', 'pin'] }), 'a security key with a PIN')
  t.ok(mfaAtProvider({ sub: 's', acr: 'http://schemas.openid.net/pape/policies/2007/06/multi-factor' }))
  t.notOk(mfaAtProvider({ sub: 's', amr: ['pwd'] }), 'a password alone')
  t.notOk(mfaAtProvider({ sub: 's', amr: ['otp'] }), 'one factor alone, even not a password')
  t.notOk(mfaAtProvider({ sub: 's' }), 'Google says nothing')
  t.notOk(mfaAtProvider({ sub: 's', amr: 'mfa' }), 'amr is an array')
  t.notOk(mfaAtProvider({ sub: 's', amr: [{ mfa: true }, 'pwd'] as unknown[] }))
  t.notOk(mfaAtProvider({ sub: 's', acr: '1' }), 'a level of its own naming')
})

t.test('domains and tenants as an administrator types them', async (t) => {
  t.equal(domainOf(' @Acme.Example '), 'acme.example')
  t.equal(domainOf('xn--bcher-kva.example'), 'xn--bcher-kva.example')
  for (const bad of ['', 'acme', 'acme..example', '-acme.example', 'acme.example/', 'ann@acme.example', 'acme .example', 'bücher.example', 'a'.repeat(64) + '.example']) t.equal(domainOf(bad), null, bad)
  t.ok(ofDomains('ann@acme.example', ['acme.example']))
  t.ok(ofDomains('ann@ACME.example', ['acme.example']), 'the address as typed')
  t.notOk(ofDomains('ann@sub.acme.example', ['acme.example']), 'a subdomain is another domain')
  t.notOk(ofDomains('ann@acme.example.evil.example', ['acme.example']))
  t.notOk(ofDomains('acme.example@evil.example', ['acme.example']), 'the domain is after the last @')
  t.equal(tenantProblem('72f988bf-86f1-41af-91ab-2d7cd011db47'), null)
  t.equal(tenantProblem('acme.onmicrosoft.com'), null)
  for (const any of ['common', 'organizations', 'Consumers']) t.match(tenantProblem(any), /lets any company's accounts in/, any)
  for (const bad of ['acme', '../common', 'acme.example/v2.0', '']) t.match(tenantProblem(bad), /tenant id/, bad)
})

t.test("a newcomer's name, and a re-authentication's freshness", async (t) => {
  t.equal(newcomerName({ sub: 's', name: '  Ann\u0000  Lee\u202e ' }, 'ann@acme.example'), 'Ann Lee', 'controls and format characters out, spaces folded')
  t.equal(newcomerName({ sub: 's', name: 'x'.repeat(300) }, 'ann@acme.example').length, 100)
  t.equal(newcomerName({ sub: 's' }, 'ann@acme.example'), 'ann')
  t.equal(newcomerName({ sub: 's', name: '\u200b' }, 'ann@acme.example'), 'ann')
  const asked = Date.UTC(2026, 11, 5, 12)
  t.ok(freshAuthentication({ sub: 's', auth_time: asked / 1000 + 5 }, asked))
  t.ok(freshAuthentication({ sub: 's', auth_time: asked / 1000 - 30 }, asked), "a minute's drift of the clocks")
  t.notOk(freshAuthentication({ sub: 's', auth_time: asked / 1000 - 3600 }, asked), 'a sign-in of an hour ago is not anew')
  t.notOk(freshAuthentication({ sub: 's' }, asked), 'a provider that does not say confirms nothing (Entra without its optional claim)')
  t.notOk(freshAuthentication({ sub: 's', auth_time: String(asked / 1000) }, asked), 'a number, not a text')
})
