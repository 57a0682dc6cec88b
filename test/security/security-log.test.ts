import t from 'tap'
import securityLogPruning from '../../plugins/security-log-pruning.ts'
import { describeEvent, EVENTS_PER_PAGE, KIND_LABELS } from '../../routes/web/security-log.ts'
import { securityKinds } from '../../db/stores/security-log.ts'
import { buildTestApp, newTestApp } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { onSqlite } from '../fixtures/postgres.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'

// Engines: both: the store's tests (its filters, a lockout logged once per window, the pruning) go
// through the stores, which each engine must answer alike; the page's and the command's words, and
// the labels, run once (onSqlite).
// The security log (issue 18): the store on the engine the suite runs on, the events the pages
// and the command line append, the page, the command, and the pruning.

t.test('the store: append, list newest first with filters and paging, prune', async (t) => {
  const { app, clock } = await buildTestApp(t)
  const site = await app.sites.add('demo', 'Demo')
  const ann = await app.users.insert({ email: 'ann@example.test' }, null)
  const bob = await app.users.insert({ email: 'bob@example.test' }, null)
  await app.securityLog.append({ userId: ann.id, siteId: site.id, kind: 'token_created', actor: 'page', address: '192.0.2.1', detail: { name: 'CI\u0000', n: 1, ok: true, none: null } })
  clock.advance(1000)
  await app.securityLog.append({ userId: ann.id, kind: 'account_disabled', actor: 'cli\u0000' })
  await app.securityLog.append({ userId: bob.id, siteId: site.id, kind: 'sign_in_failed' })
  const all = await app.securityLog.list({ userId: ann.id, offset: 0, limit: 10 })
  t.equal(all.total, 2)
  t.same(all.events.map((e) => e.kind), ['account_disabled', 'token_created'], 'newest first')
  t.match(all.events[1], { siteId: site.id, actor: 'page', address: '192.0.2.1', detail: { name: 'CI', n: 1, ok: true, none: null } }, 'U+0000 dropped, types kept')
  t.match(all.events[0], { siteId: null, actor: 'cli', address: null, detail: {} })
  t.same((await app.securityLog.list({ userId: ann.id, kinds: ['token_created'], offset: 0, limit: 10 })).events.length, 1)
  t.same((await app.securityLog.list({ siteId: site.id, offset: 0, limit: 10 })).events.map((e) => e.userId), [bob.id, ann.id])
  // As a site's page shows a person's log: that site's events and those of no site, not another site's.
  const other = await app.sites.add('other', 'Other')
  t.same((await app.securityLog.list({ userId: ann.id, seenFrom: site.id, offset: 0, limit: 10 })).events.map((e) => e.kind), ['account_disabled', 'token_created'])
  t.same((await app.securityLog.list({ userId: ann.id, seenFrom: other.id, offset: 0, limit: 10 })).events.map((e) => e.kind), ['account_disabled'])
  const page = await app.securityLog.list({ offset: 1, limit: 1 })
  t.equal(page.total, 3)
  t.equal(page.events.length, 1)
  t.equal(await app.securityLog.prune(new Date(clock() - 500)), 1, 'the older one')
  t.equal((await app.securityLog.list({ offset: 0, limit: 10 })).total, 2)
})

t.test('the page: sign-ins, tokens and applications of the person, newest first, by kind, paged', onSqlite("the page's words"), async (t) => {
  const { app } = await buildTestApp(t)
  await app.sites.add('demo', 'Demo help')
  const person = await personWithPassword(app)
  const stranger = webClient(app)
  t.equal((await stranger.get('/demo/profile/security_log')).statusCode, 303, 'signed out: sent to sign in')

  const browser = webClient(app)
  await browser.signIn(person.email, 'a wrong password')
  await browser.signIn(person.email, person.password)
  await browser.createToken({ name: 'Nightly export', access: 'read', expires: '30' })
  const list = await browser.get('/demo/profile/api_tokens')
  const id = /api_tokens\/(\d+)\/revoke/.exec(list.body)![1]
  await browser.get(`/demo/profile/api_tokens/${id}/revoke`)
  await browser.post(`/demo/profile/api_tokens/${id}/revoke`)

  t.match((await browser.get('/demo/profile')).body, 'href="https://help.example.test/demo/profile/security_log"', 'linked from the profile')
  const page = await browser.get('/demo/profile/security_log')
  t.equal(page.statusCode, 200)
  const kinds = [...page.body.matchAll(/data-event="(\w+)"/g)].map((m) => m[1])
  t.same(kinds, ['token_revoked', 'token_created', 'sign_in_succeeded', 'sign_in_failed'])
  t.match(page.body, 'name: Nightly export · access: read')
  t.match(page.body, 'on the pages')
  const filtered = await browser.get('/demo/profile/security_log?kind=token_created&page=1')
  t.same([...filtered.body.matchAll(/data-event="(\w+)"/g)].map((m) => m[1]), ['token_created'])
  t.match(filtered.body, '<option value="token_created" selected>')
  t.equal((await browser.get('/demo/profile/security_log?kind=nonsense&page=-1')).statusCode, 200, 'a bad filter shows everything')

  for (let i = 0; i < EVENTS_PER_PAGE; i++) await app.securityLog.append({ userId: person.user.id, kind: 'sign_in_failed' })
  const first = await browser.get('/demo/profile/security_log')
  t.match(first.body, 'Page 1 of 2')
  t.match(first.body, 'rel="next"')
  const second = await browser.get(/href="([^"]+)" rel="next"/.exec(first.body)![1].replace(/&amp;/g, '&'))
  t.match(second.body, 'Page 2 of 2')
  t.match(second.body, 'rel="prev"')
  const failures = await browser.get('/demo/profile/security_log?kind=sign_in_failed')
  t.match(failures.body, 'Page 1 of 2', 'the filter pages too')
  t.match(failures.body, /href="[^"]+\?kind=sign_in_failed&amp;page=2" rel="next"/, 'its pages keep the filter')
})

t.test('a lockout is logged once per failure window, and applications are logged', async (t) => {
  const { app } = await buildTestApp(t, { config: { limits: { perAddress: 100, perAccount: 2, windowSeconds: 300 } } })
  await app.sites.add('demo', 'Demo help')
  const person = await personWithPassword(app)
  const browser = webClient(app)
  for (let i = 0; i < 5; i++) await browser.signIn(person.email, 'wrong password')
  const { events } = await app.securityLog.list({ userId: person.user.id, offset: 0, limit: 20 })
  t.equal(events.filter((e) => e.kind === 'lockout').length, 1)
  t.equal(events.filter((e) => e.kind === 'sign_in_failed').length, 2)

  const other = await buildTestApp(t)
  await other.app.sites.add('demo', 'Demo help')
  const { person: supporter, browser: page } = await oauthTokens(other.app, { scope: 'read' })
  const grant = /profile\/applications\/([\w-]+)\/revoke/.exec((await page.get('/demo/profile/api_tokens')).body)![1]
  await page.post(`/demo/profile/applications/${grant}/revoke`)
  const logged = (await other.app.securityLog.list({ userId: supporter.user.id, offset: 0, limit: 20 })).events
  t.match(logged.slice(0, 2), [
    { kind: 'oauth_revoked', detail: { application: 'Test integration' } },
    { kind: 'oauth_authorized', detail: { application: 'Test integration', access: 'Read only' } },
  ])
})

t.test('the command line: what it does is logged, and security-log lists it', onSqlite("the command's output"), async (t) => {
  const cli = await cliRunner(t)
  await cli.run(['site', 'add', 'demo'])
  await cli.run(['user', 'add', 'ann@example.test'])
  await cli.run(['staff', 'add', 'demo', 'ann@example.test'])
  await cli.run(['token', 'create', 'demo', 'ann@example.test', '--name', 'Deploy'])
  await cli.run(['token', 'revoke', 'demo', '1'])
  await cli.run(['legacy-token', 'reset', 'ann@example.test'])
  await cli.run(['user', 'set-password', 'ann@example.test'])
  await cli.run(['staff', 'remove', 'demo', 'ann@example.test'])
  await cli.run(['user', 'disable', 'ann@example.test'])
  const text = await cli.run(['security-log', 'demo'])
  t.equal(text.code, 0)
  const lines = text.stdout.trim().split('\n').map((line) => line.split('\t'))
  t.same(
    lines.map((fields) => fields[2]),
    ['Account disabled', 'Removed from the staff', 'Password set', 'Legacy token reset', 'Token revoked', 'Token created', 'Added to the staff'],
    "the site's events and its people's account-wide ones, in the page's words",
  )
  t.ok(lines.every((fields) => fields[1] === 'ann@example.test' && /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/.test(fields[0]!)), 'each with its person by email, at a time as the page shows it')
  t.match(text.stdout, /\tby the command line\ttoken id: 1 · name: Deploy · access: read/)
  const json = await cli.run(['security-log', 'demo', '--user', 'ann@example.test', '--json'])
  const rows = JSON.parse(json.stdout) as Array<{ kind: string; actor: string }>
  t.same(rows.map((r) => r.kind), ['account_disabled', 'staff_removed', 'password_set', 'legacy_token_reset', 'token_revoked', 'token_created', 'staff_added'])
  t.ok(rows.every((r) => r.actor === 'cli'))
  t.equal((await cli.run(['security-log', 'nope'])).code, 1, 'an unknown site')
  t.equal((await cli.run(['security-log', 'demo', '--user', 'nobody@example.test'])).code, 1, 'an unknown user')
})

t.test('old events are pruned after the configured days', async (t) => {
  const { app, clock } = await newTestApp(t)
  await app.register(async (scope) => {
    await scope.register(securityLogPruning, { days: 30, firstAfterMs: 1, everyMs: 5 })
  })
  await app.ready()
  const user = await app.users.insert({ email: 'old@example.test' }, null)
  await app.securityLog.append({ userId: user.id, kind: 'sign_in_failed' })
  clock.advanceDays(31)
  await app.securityLog.append({ userId: user.id, kind: 'sign_in_succeeded' })
  for (let i = 0; i < 100 && (await app.securityLog.list({ offset: 0, limit: 10 })).total > 1; i++) await new Promise((r) => setTimeout(r, 20))
  t.same((await app.securityLog.list({ offset: 0, limit: 10 })).events.map((e) => e.kind), ['sign_in_succeeded'])
})

t.test('a pruning that fails is logged, and a pruning that removes says how many', async (t) => {
  const lines: string[] = []
  const { app, clock } = await newTestApp(t, { logStream: { write: (line) => void lines.push(line) } })
  await app.register(async (scope) => {
    await scope.register(securityLogPruning, { days: 1, firstAfterMs: 1, everyMs: 5 })
  })
  await app.ready()
  const user = await app.users.insert({ email: 'old@example.test' }, null)
  await app.securityLog.append({ userId: user.id, kind: 'sign_in_failed' })
  clock.advanceDays(2)
  for (let i = 0; i < 100 && !lines.some((l) => l.includes('old security log events removed')); i++) await new Promise((r) => setTimeout(r, 20))
  t.match(lines.find((l) => l.includes('old security log events removed')), '"removed":1')
  app.securityLog.prune = async () => {
    throw new Error('disk on fire')
  }
  for (let i = 0; i < 100 && !lines.some((l) => l.includes('could not remove old security log events')); i++) await new Promise((r) => setTimeout(r, 20))
  t.match(lines.find((l) => l.includes('could not remove old security log events')), 'disk on fire')
})

t.test('every kind has a label, and an event reads as a line', onSqlite("the labels"), async (t) => {
  t.same(Object.keys(KIND_LABELS).sort(), [...securityKinds].sort())
  t.same(describeEvent({ id: 1, userId: 1, siteId: null, kind: 'token_revoked', createdAt: new Date(0), address: null, actor: 'leak_report', detail: { url: 'https://x', source: '', none: null, expires_at: '2026-12-25T18:29:39.808Z' } }), {
    what: 'Token revoked',
    kind: 'token_revoked',
    when: '1970-01-01 00:00 UTC',
    from: '',
    by: 'by a leak report',
    details: 'url: https://x · expires at: 2026-12-25 18:29 UTC',
  }, 'moments in the one format of every page, a detail\'s too')
  t.equal(describeEvent({ id: 1, userId: 1, siteId: null, kind: 'lockout', createdAt: new Date(0), address: null, actor: 'robot', detail: {} }).by, 'robot')
})

t.test('names from records cannot forge lines or drive the terminal in security-log and token list (issue 28)', onSqlite("what a terminal is shown"), async (t) => {
  const cli = await cliRunner(t)
  await cli.run(['site', 'add', 'demo'])
  await cli.run(['user', 'add', 'ann@example.test'])
  await cli.run(['staff', 'add', 'demo', 'ann@example.test'])
  const hostile = 'Deploy\n2026-01-01 00:00 UTC\tuser 2\tsign_in_succeeded\t\u001b]0;owned\u0007\u202e'
  const created = await cli.run(['token', 'create', 'demo', 'ann@example.test', '--name', hostile])
  t.equal(created.code, 0, created.stderr)
  for (const [argv, records] of [[['security-log', 'demo'], 2], [['token', 'list', 'demo'], 1]] as const) {
    const { stdout } = await cli.run([...argv])
    t.equal(stdout.trim().split('\n').length, records, `${argv[0]}: one line per record (staff added, token created; the token)`)
    t.notMatch(stdout, /[\u0000-\u0008\u000b-\u001f\u007f\u202e]/, `${argv[0]}: no control character but its own tabs and newline`)
    t.match(stdout, 'Deploy\\u000a2026-01-01 00:00 UTC\\u0009user 2', `${argv[0]}: the name shown with escapes`)
    t.match(stdout, '\\u001b]0;owned\\u0007\\u202e')
  }
  const revoked = await cli.run(['token', 'revoke', 'demo', '1'])
  t.equal(revoked.stdout, 'token 1 (Deploy\\u000a2026-01-01 00:00 UTC\\u0009user 2\\u0009sign_in_succeeded\\u0009\\u001b]0;owned\\u0007\\u202e) revoked\n')
})
