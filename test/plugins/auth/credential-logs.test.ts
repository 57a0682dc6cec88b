import t from 'tap'
import { buildTestApp, newTestApp, supporterWithToken } from '../../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../../fixtures/credentials.ts'
import { logCapture } from '../../fixtures/log.ts'
import { webClient } from '../../fixtures/web.ts'

// Engines: one: what the log lines hold of a credential, accepted or refused. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

t.test('no credential of any kind reaches a log line, accepted or refused', async (t) => {
  const log = logCapture()
  const { app, clock } = await buildTestApp(t, { logStream: log.stream })
  const pat = await supporterWithPassword(app, { password: 'password-secret-7f3a' })
  const ann = await supporterWithToken(app)
  const legacy = (await legacyTokenOf(app, pat.user.id)).value
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
  const lines = log.entries().filter((entry) => entry.msg === 'request completed')
  t.equal(lines.length, requests.length + 2, 'one line per request')
  t.match(lines[0], { req: { method: 'GET', url: '/demo' }, res: { statusCode: 200 }, responseTime: Number })
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

t.test('the pages: no password, session cookie or form token in the log', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  const pat = await supporterWithPassword(app, { password: 'page-password-5c1d' })
  const page = webClient(app)
  t.equal((await page.signIn(pat.user.email, 'page-password-5c1d')).statusCode, 303)
  const created = await page.createToken({ name: 'logged?', access: 'read', expires: '30' })
  const token = /service_pat_[A-Za-z0-9_]+/.exec(created.body)?.[0]
  t.ok(token, 'a token was shown on the page')
  const text = log.text()
  t.ok(page.jar.size > 0, 'the browser holds cookies')
  for (const [name, value] of page.jar) t.notMatch(text, value, `no value of the ${name} cookie`)
  t.notMatch(text, 'page-password-5c1d', 'no password')
  t.notMatch(text, token!, 'no token shown on the page')
  t.notMatch(text, /_csrf=|csrf-token/i, 'no form token')
})

t.test('headers logged by any code have their credentials redacted', async (t) => {
  const log = logCapture()
  const { app } = await buildTestApp(t, { logStream: log.stream })
  const headers = {
    authorization: 'Bearer service_pat_secret-one',
    'x-service-auth': 'legacy-secret-two',
    'x-multipass': 'multipass-secret-three',
    cookie: 'session=cookie-secret-four',
    'set-cookie': 'session=cookie-secret-five',
    'user-agent': 'curl/8.0',
  }
  app.log.info({ headers, req: { headers }, res: { headers }, err: { headers } }, 'headers')
  app.log.info({ req: { method: 'GET', url: '/demo?auth=legacy-secret-six' } }, 'a request-like object')
  app.log.info({ req: 'a note', res: { note: 1, headers: null } }, 'other values')
  const [entry, requestLike, other] = log.entries()
  t.notMatch(log.text(), /secret-(one|two|three|four|five|six)/, 'no credential value')
  const kept = { authorization: '[redacted]', 'x-service-auth': '[redacted]', 'x-multipass': '[redacted]', cookie: '[redacted]', 'set-cookie': '[redacted]', 'user-agent': 'curl/8.0' }
  for (const holder of ['headers', 'req', 'res', 'err'] as const) {
    const logged = holder === 'headers' ? entry.headers : (entry[holder] as { headers: unknown }).headers
    t.same(logged, kept, `under ${holder}: the credentials redacted, the rest kept`)
  }
  t.match(requestLike, { req: { method: 'GET', url: '/demo?auth=[redacted]' } })
  t.same([other.req, other.res], ['a note', { note: 1, headers: null }], 'what holds no headers is logged as it is')
})

t.test('a failure after the answer was sent is one error line, with the request it belongs to', async (t) => {
  const log = logCapture()
  const { app } = await newTestApp(t, { logStream: log.stream })
  app.addHook('onResponse', async () => {
    throw new Error('a hook that fails')
  })
  await app.inject({ url: '/healthz?auth=legacy-secret' })
  const [line] = log.entries().filter((entry) => entry.msg === 'request errored')
  t.match(line, { level: 50, req: { url: '/healthz?auth=[redacted]' }, res: { statusCode: 200 }, err: { message: 'a hook that fails' } })
  t.notMatch(log.text(), 'legacy-secret')
})
