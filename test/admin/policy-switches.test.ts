import t from 'tap'
import { V1 } from '../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../fixtures/credentials.ts'
import { twoApps } from '../multiprocess/two-apps.ts'

// Engines: both: a policy changed through one app is seen by another on the same database at its next request, which each engine tells its own way.
// Issue 34, item 3: a site's token policy switches the older credentials off and on, and every
// process sees the change from its next request on (two apps on one database, as two service
// processes). Runs on the suite's engine: both passes of `npm test`.

const CHALLENGE = /^Bearer realm="Service", resource_metadata="[^"]+", scope="read write", error="invalid_token", error_description="(.+) is switched off for this site"$/

t.test('the legacy token, multipass and Basic: refused with the policy description while off, accepted again when on, in every process', async (t) => {
  const { one, two } = await twoApps(t)
  const ann = await supporterWithPassword(one, { email: 'ann@example.test' })
  const legacy = (await legacyTokenOf(one, ann.user.id)).value
  const site = await one.sites.get('demo')
  const credentials = {
    legacy_token: { 'x-service-auth': legacy, accept: V1 },
    multipass: { 'x-multipass': makeMultipass({ email: ann.user.email, expires: inDays(one, 1) }, site.multipassKey, 'demo'), accept: V1 },
    password: basic(ann.user.email, ann.password),
  }
  const names = { legacy_token: 'The legacy API token', multipass: 'Multipass', password: 'Basic authentication with email and password' }
  const fields = { legacy_token: 'legacyTokenOn', multipass: 'multipassOn', password: 'passwordOn' } as const

  for (const [kind, headers] of Object.entries(credentials) as Array<[keyof typeof credentials, Record<string, string>]>) {
    for (const app of [one, two]) t.equal((await app.inject({ url: '/demo', headers })).statusCode, 200, `${kind} accepted before`)
    await one.sites.setPolicy(site.id, { [fields[kind]]: false })
    for (const app of [one, two]) {
      const res = await app.inject({ url: '/demo', headers })
      t.equal(res.statusCode, 401, `${kind} refused by ${app === one ? 'the process that changed it' : 'the other process'}`)
      t.equal(CHALLENGE.exec(String(res.headers['www-authenticate']))?.[1], names[kind])
      t.match(res.body, 'switched off for this site by its administrators')
      t.match(res.body, '/demo/profile/api_tokens')
    }
    // The other kinds still pass while this one is off.
    for (const [other, otherHeaders] of Object.entries(credentials)) {
      if (other !== kind) t.equal((await two.inject({ url: '/demo', headers: otherHeaders })).statusCode, 200, `${other} still accepted`)
    }
    await two.sites.setPolicy(site.id, { [fields[kind]]: true })
    for (const app of [one, two]) t.equal((await app.inject({ url: '/demo', headers })).statusCode, 200, `${kind} accepted again`)
  }
})

t.test('a wrong credential of a switched-off kind is answered as wrong, so nothing tells a site exists', async (t) => {
  const { one } = await twoApps(t)
  const ann = await supporterWithPassword(one, { email: 'ann@example.test' })
  const site = await one.sites.get('demo')
  await one.sites.setPolicy(site.id, { legacyTokenOn: false, passwordOn: false })
  for (const url of ['/demo', '/no-such-site']) {
    const wrongPassword = await one.inject({ url, headers: basic(ann.user.email, 'not the password') })
    t.equal(wrongPassword.statusCode, 401)
    t.notMatch(String(wrongPassword.headers['www-authenticate']), 'switched off', `${url}: a wrong password`)
    const wrongLegacy = await one.inject({ url, headers: { 'x-service-auth': 'x'.repeat(40), accept: V1 } })
    t.notMatch(String(wrongLegacy.headers['www-authenticate']), 'switched off', `${url}: a wrong legacy token`)
  }
  // The right password on a site that never heard of the account (another site) is no switch either.
  const other = await one.inject({ url: '/no-such-site', headers: basic(ann.user.email, ann.password) })
  t.notMatch(String(other.headers['www-authenticate']), 'switched off')
})
