import t from 'tap'
import { buildTestApp, supporterWithToken } from '../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../fixtures/credentials.ts'
import { logCapture } from '../fixtures/log.ts'

t.test('no credential of any kind reaches a log line, accepted or refused', async (t) => {
  const log = logCapture()
  const { app, clock } = await buildTestApp(t, { logStream: log.stream })
  const pat = await supporterWithPassword(app, { password: 'password-secret-7f3a' })
  const ann = await supporterWithToken(app)
  const legacy = legacyTokenOf(app, pat.user.id).value
  const multipass = makeMultipass({ email: pat.user.email, expires: inDays(app, 1), name: 'x'.repeat(40) }, pat.site.multipassKey, 'demo')
  const escaped = encodeURIComponent(multipass)

  const requests = [
    { url: '/demo', headers: ann.bearer },
    { url: '/demo', headers: pat.headers },
    { url: '/demo', headers: basic(pat.user.email, 'wrong-password-secret-91') },
    { url: '/demo', headers: { 'x-service-auth': legacy } },
    { url: `/demo?auth=${legacy}` },
    { url: `/demo/discussions?page=1&auth=${legacy}` },
    { url: `/demo?auth=${legacy}`, method: 'POST' as const },
    { url: '/demo', headers: { 'x-multipass': multipass } },
    { url: `/demo?sso=${escaped}` },
    { url: `/demo?sso=${multipass}` },
    { url: `/demo?sso=${escaped}&auth=${legacy}` },
    { url: `/nosuchsite?auth=${legacy}` },
    { url: `/demo/nothing?sso=${escaped}` },
  ]
  for (const request of requests) await app.inject(request)
  clock.advanceDays(400)
  await app.inject({ url: `/demo?auth=${legacy}` })
  await app.inject({ url: `/demo?sso=${escaped}` })

  const text = log.text()
  t.ok(log.entries().length >= requests.length * 2, 'every request was logged')
  t.match(text, '"url":"/demo?auth=[redacted]"')
  t.match(text, '"url":"/demo?sso=[redacted]"')
  t.match(text, '"url":"/demo/discussions?page=1&auth=[redacted]"')
  const secrets = {
    'personal token': ann.value,
    'legacy token': legacy,
    'multipass token': multipass.slice(0, 40),
    'escaped multipass token': escaped.slice(0, 40),
    password: 'password-secret-7f3a',
    'wrong password': 'wrong-password-secret-91',
    'Basic credentials': pat.headers.authorization.slice(6),
  }
  for (const [name, secret] of Object.entries(secrets)) t.notMatch(text, secret, `no ${name} in the log`)
})
