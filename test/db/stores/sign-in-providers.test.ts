import t from 'tap'
import { buildTestApp } from '../../fixtures/app.ts'
import { personWithPassword } from '../../fixtures/web.ts'

// Engines: both: who a provider's answer admits is decided in one transaction of the store, and each engine must answer it alike.
// The store of the staff's identity providers (db/stores/sign-in-providers.ts; issue 73): each
// field checked, nothing written by a refusal; `admit` for a linked person since switched off or
// taken off the staff, and a domain rule that names no role.

t.test('each field of a provider is checked; a refusal writes nothing', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app)
  const site = ann.site.id
  const good = { name: 'Acme', kind: 'oidc' as const, issuer: 'https://sso.acme.example/realms/staff/', clientId: 'desk', clientSecret: 's3cret' }
  // The company's account alone, with no provider to sign in at: refused, even to the operator (no actor), and nothing written.
  await t.rejects(app.sites.setPolicy(site, { companySignInOnly: true }), { code: 'conflict', field: 'company_sign_in_only' })
  t.equal((await app.sites.find(ann.site.permalink))!.companySignInOnly, false)
  const made = await app.signInProviders.add(site, good)
  t.equal(made.issuer, 'https://sso.acme.example/realms/staff', 'the trailing slash left out')
  for (const [change, field] of [
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(61) }, 'name'],
    [{ name: 'Acme\u202eevil' }, 'name'],
    [{ name: 'Many', domains: Array.from({ length: 21 }, (_, i) => `d${i}.example`) }, 'domains'],
    [{ name: 'Spaced', clientId: 'with space' }, 'client_id'],
    [{ name: 'Lines', clientSecret: 'one\ntwo' }, 'client_secret'],
    [{ name: 'Saml', kind: 'saml' }, 'kind'],
    [{ name: 'Entra', kind: 'microsoft' }, 'tenant'],
    [{ name: 'Nowhere', issuer: '' }, 'issuer'],
    [{ name: 'Odd', issuer: 'ftp://sso.acme.example' }, 'issuer'],
  ] as const) {
    await t.rejects(app.signInProviders.add(site, { ...good, ...change } as typeof good), { code: 'invalid', field }, JSON.stringify(change).slice(0, 60))
  }
  await t.rejects(app.signInProviders.update(site, made.id, { clientSecret: 'one\ntwo' }), { code: 'invalid', field: 'client_secret' })
  await t.rejects(app.signInProviders.update(site, 9999, { name: 'Gone' }), { code: 'not_found' })
  t.equal((await app.signInProviders.list(site)).length, 1, 'nothing written by a refusal')
  // The operator may name a provider on this machine; the store alone (the operator's) too.
  t.ok(await app.signInProviders.add(site, { ...good, name: 'Local', issuer: 'http://127.0.0.1:8080' }))
})

t.test('admit: a linked person switched off, or taken off the staff, is refused; a domain without a role admits nobody', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await personWithPassword(app, { email: 'ann@acme.example' })
  const bob = await personWithPassword(app, { email: 'bob@acme.example' })
  const acme = await app.signInProviders.add(ann.site.id, { name: 'Acme', kind: 'oidc', issuer: 'https://sso.acme.example', clientId: 'c', clientSecret: 's', domains: ['acme.example'] })
  const by = { address: '192.0.2.1' }
  t.match(await app.signInProviders.admit(acme, 'sub-ann', 'ann@acme.example', 'Ann', by), { kind: 'admitted', linked: true })
  t.match(await app.signInProviders.admit(acme, 'sub-ann', 'ann@acme.example', 'Ann', by), { kind: 'admitted', linked: false }, 'by her link')
  t.match(await app.signInProviders.admit(acme, 'sub-bob', 'bob@acme.example', 'Bob', by), { kind: 'admitted' })
  await app.users.setDisabled(ann.email, true)
  t.match(await app.signInProviders.admit(acme, 'sub-ann', 'ann@acme.example', 'Ann', by), { kind: 'refused', reason: 'disabled', userId: ann.user.id })
  await app.users.removeStaff(bob.site.id, bob.user.id)
  t.match(await app.signInProviders.admit(acme, 'sub-bob', 'bob@acme.example', 'Bob', by), { kind: 'refused', reason: 'not_staff', userId: bob.user.id }, 'linked, but no longer of the staff')
  t.match(await app.signInProviders.admit(acme, 'sub-new', 'new@acme.example', 'New', by), { kind: 'refused', reason: 'not_staff', userId: null }, 'a domain named without a role admits nobody')
  t.equal(await app.users.find('new@acme.example'), undefined)
})
