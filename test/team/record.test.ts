import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { cliRunner } from '../fixtures/cli.ts'
import { signedInPerson } from '../fixtures/web.ts'
import { OPERATOR } from '../../db/stores/audit.ts'

// Engines: both: each line is written in the transaction of its change, which each engine must keep alike.
// Issue 67, item 5: the site's record of changes (docs/decisions.md, "The record of changes"):
// every change its administrators make through the API and the pages, and its operator at the
// command line, with who, when, from where and what changed (never a secret); read by its
// administrators only, through GET /<site>/audit_log (cursor-paged), Administration -> Record and
// `service-desk audit`; pruned with the security log.

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })

t.test('each change of an administrator is a line: who, how, from where, before and after, never a secret', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await supporterWithToken(app, { email: 'ann@example.test' })
  const bob = await supporterWithToken(app, { email: 'bob@example.test' })
  const dee = await supporterWithToken(app, { email: 'dee@example.test' })
  const site = ann.site
  await app.users.setAdministrator(site.id, ann.user.id, true)
  const call = async (method: string, url: string, payload?: unknown, who = ann) => {
    const answer = await app.inject({ method: method as 'GET', url, headers: payload === undefined ? { ...who.bearer, accept: V1 } : json(who.bearer), remoteAddress: '203.0.113.7', ...(payload !== undefined && { payload: payload as object }) })
    t.ok(answer.statusCode < 300, `${method} ${url}: ${answer.statusCode} ${answer.body.slice(0, 200)}`)
    return answer.body === '' ? null : answer.json()
  }

  const general = await call('POST', '/demo/categories', { name: 'General', public: true })
  const billing = await call('POST', '/demo/categories', { name: 'Billing' })
  await call('PATCH', `/demo/categories/${billing.id}`, { name: 'Invoices', round_robin: true })
  await call('POST', `/demo/categories/${billing.id}/discussions`, { title: 'Wrong invoice', body: 'Words.' })
  await call('DELETE', `/demo/categories/${billing.id}?into=${general.id}`)
  await call('PATCH', '/demo/policy', { max_token_days: 30, existing_tokens: 'leave' })
  const hook = await call('POST', '/demo/webhooks', { url: 'https://hooks.example.test/desk', events: ['discussion.created'] })
  await call('PATCH', `/demo/webhooks/${hook.id}`, { enabled: false })
  const rotated = await call('POST', `/demo/webhooks/${hook.id}/rotate`)
  await call('DELETE', `/demo/webhooks/${hook.id}`)
  const saved = await call('POST', '/demo/saved_replies', { title: 'Hello', body: 'Hi there.' })
  await call('PATCH', `/demo/saved_replies/${saved.id}`, { body: 'Hello there.' })
  await call('DELETE', `/demo/saved_replies/${saved.id}`)
  await call('POST', '/demo/mailboxes', { address: 'help@demo.example', imap: 'imaps://help:imap-secret-123@imap.demo.example/INBOX' })
  await call('DELETE', '/demo/mailboxes/help@demo.example')
  await call('DELETE', '/demo/discussions/1')
  await call('POST', '/demo/discussions/1/restore')
  const invited = await call('POST', '/demo/invitations', { email: 'cleo@engineering.example', role: 'collaborator' })
  await call('DELETE', `/demo/invitations/${invited.id}`)
  t.equal((await call('POST', '/demo/invitations', { email: 'eve@example.test' })).role, 'supporter', 'a supporter unless said')
  await call('PATCH', `/demo/staff/${bob.user.id}`, { role: 'collaborator' })
  await call('PATCH', `/demo/staff/${bob.user.id}`, { role: 'administrator' })
  await call('DELETE', `/demo/staff/${bob.user.id}`)

  const answer = await app.inject({ url: '/demo/audit_log', headers: { ...ann.bearer, accept: V1 } })
  t.equal(answer.statusCode, 200)
  const { entries, next_cursor: next } = answer.json() as { entries: Array<{ action: string; target: string; actor: Record<string, unknown>; detail: Record<string, unknown> }>; next_cursor: string | null }
  t.equal(next, null, 'one page')
  t.same(entries.map((e) => [e.action, e.target]).reverse(), [
    ['category.created', 'General'],
    ['category.created', 'Billing'],
    ['category.changed', 'Billing'],
    ['category.removed', 'Invoices'],
    ['policy.changed', 'the token policy'],
    ['webhook.created', 'https://hooks.example.test/desk'],
    ['webhook.changed', 'https://hooks.example.test/desk'],
    ['webhook.secret_rotated', 'https://hooks.example.test/desk'],
    ['webhook.removed', 'https://hooks.example.test/desk'],
    ['saved_reply.created', 'Hello'],
    ['saved_reply.changed', 'Hello'],
    ['saved_reply.removed', 'Hello'],
    ['mailbox.added', 'help@demo.example'],
    ['mailbox.removed', 'help@demo.example'],
    ['discussion.deleted', '#1 Wrong invoice'],
    ['discussion.restored', '#1 Wrong invoice'],
    ['team.invited', 'cleo@engineering.example'],
    ['team.invitation_withdrawn', 'cleo@engineering.example'],
    ['team.invited', 'eve@example.test'],
    ['team.role_changed', 'bob@example.test'],
    ['team.role_changed', 'bob@example.test'],
    ['team.removed', 'bob@example.test'],
  ])
  const line = (action: string) => entries.find((e) => e.action === action)!
  t.same(line('team.removed').actor, { id: ann.user.id, name: 'ann@example.test', via: 'api', address: '203.0.113.7' }, 'who, how and from where')
  t.same(line('category.changed').detail, { before: { name: 'Billing', round_robin: false }, after: { name: 'Invoices', round_robin: true } })
  t.same(line('category.removed').detail, { into: 'General', discussions_moved: 1 })
  t.same(line('policy.changed').detail, { before: { max_token_days: 365 }, after: { max_token_days: 30 } })
  t.same(line('webhook.changed').detail, { before: { enabled: true }, after: { enabled: false } })
  t.same(line('saved_reply.changed').detail, { before: { text_changed: false }, after: { text_changed: true } })
  t.same(line('team.role_changed').detail, { before: { role: 'collaborator' }, after: { role: 'administrator' } })
  t.same(entries.find((e) => e.action === 'team.invited' && e.target === 'cleo@engineering.example')!.detail, { role: 'collaborator' })
  t.same(line('mailbox.added').detail, { fetched_from: 'imap.demo.example:993', own_smtp: false, acknowledge: false })
  t.notMatch(answer.body, rotated.secret, 'no webhook secret')
  t.notMatch(answer.body, hook.secret, 'no webhook secret')
  t.notMatch(answer.body, 'imap-secret-123', 'no mailbox password')

  // The filter by kind of thing, by person; a page at a time.
  const teamOnly = (await app.inject({ url: '/demo/audit_log?action=team', headers: { ...ann.bearer, accept: V1 } })).json().entries as Array<{ action: string }>
  t.same(teamOnly.map((e) => e.action).reverse(), ['team.invited', 'team.invitation_withdrawn', 'team.invited', 'team.role_changed', 'team.role_changed', 'team.removed'])
  t.same((await app.inject({ url: '/demo/audit_log?action=team.invited', headers: { ...ann.bearer, accept: V1 } })).json().entries.length, 2)
  t.same((await app.inject({ url: `/demo/audit_log?actor=${bob.user.id}`, headers: { ...ann.bearer, accept: V1 } })).json().entries, [], 'Bob changed nothing')
  for (const bad of ['action=team%25', 'action=nothing', 'actor=x', `cursor=${Buffer.from('v1.f.3').toString('base64url')}`, 'cursor=%00']) {
    t.equal((await app.inject({ url: `/demo/audit_log?${bad}`, headers: { ...ann.bearer, accept: V1 } })).statusCode, 400, bad)
  }
  for (let i = 0; i < 50; i++) await app.categories.change(site.id, general.id, { name: `General ${i}` }, { id: ann.user.id, name: 'ann@example.test', via: 'api' })
  const first = await app.inject({ url: `/demo/audit_log?action=category&actor=${ann.user.id}`, headers: { ...ann.bearer, accept: V1 } })
  const page = first.json() as { entries: Array<{ id: number; actor: { name: string; via: string } }>; next_cursor: string }
  t.equal(page.entries.length, 50)
  t.equal(first.headers.link, `<https://api.example.test/demo/audit_log?action=category&actor=${ann.user.id}&cursor=${page.next_cursor}>; rel="next"`, 'the next page keeps the filters')
  const second = (await app.inject({ url: `/demo/audit_log?action=category&actor=${ann.user.id}&cursor=${page.next_cursor}`, headers: { ...ann.bearer, accept: V1 } })).json() as typeof page
  t.equal(second.entries.length, 4)
  t.equal(second.next_cursor, null)
  t.ok(second.entries[0]!.id < page.entries.at(-1)!.id, 'older, with nothing twice')
  const far = Buffer.from('v1.a.999999999999999').toString('base64url')
  t.equal((await app.inject({ url: `/demo/audit_log?cursor=${far}`, headers: { ...ann.bearer, accept: V1 } })).json().entries.length, 50, 'a cursor past every id starts from the newest')
  t.equal((await app.inject({ url: '/demo/audit_log?action=policy', headers: { ...ann.bearer, accept: V1 } })).headers.link, undefined, 'one page: no next')

  // From the other side: a supporter, a collaborator, another site's administrator.
  t.equal((await app.inject({ url: '/demo/audit_log', headers: { ...dee.bearer, accept: V1 } })).statusCode, 403, 'a supporter reads none')
  await app.users.setStaffRole(site.id, dee.user.id, 'collaborator')
  t.equal((await app.inject({ url: '/demo/audit_log', headers: { ...dee.bearer, accept: V1 } })).statusCode, 403, 'nor a collaborator')
  const otto = await supporterWithToken(app, { site: 'other', email: 'otto@example.test' })
  await app.users.setAdministrator(otto.site.id, otto.user.id, true)
  t.same((await app.inject({ url: '/other/audit_log', headers: { ...otto.bearer, accept: V1 } })).json().entries, [], "another site's administrator sees none of ours")
  t.equal((await app.inject({ url: '/demo/audit_log', headers: { ...otto.bearer, accept: V1 } })).statusCode, 401)

  // Kept as long as the security log.
  await app.securityLog.prune(new Date(app.clock() + 1000))
  t.same((await app.inject({ url: '/demo/audit_log', headers: { ...ann.bearer, accept: V1 } })).json().entries, [], 'pruned with it')
})

t.test('on the pages: a change there is a line; Administration -> Record lists them, for administrators only', async (t) => {
  const { app } = await buildTestApp(t)
  const ann = await signedInPerson(app, { administrator: true, email: 'ann@example.test' })
  const bob = await signedInPerson(app, { email: 'bob@example.test' })
  await app.categories.add(ann.site.id, 'General', true)
  await ann.web.get('/demo/admin/categories')
  const added = await ann.web.post('/demo/admin/categories', { name: 'Billing <b>', public: 'yes' })
  t.equal(added.statusCode, 303)
  const billing = (await app.categories.list(ann.site.id, 0, -1)).categories.find((c) => c.name === 'Billing <b>')!
  await ann.web.get('/demo/admin/categories')
  t.equal((await ann.web.post(`/demo/admin/categories/${billing.id}`, { name: 'Invoices', public: 'yes' })).statusCode, 303)
  const record = await ann.web.get('/demo/admin/record')
  t.equal(record.statusCode, 200)
  t.match(record.body, /data-record="category.changed"/)
  t.match(record.body, /ann@example\.test <span class="muted">\(pages, /)
  t.match(record.body, /name: Billing &lt;b&gt; → Invoices/, 'escaped, before and after')
  t.match((await ann.web.get('/demo/admin/record?action=team')).body, /Nothing yet\./, 'filtered by kind')
  t.match((await ann.web.get('/demo/admin/record?action=bogus')).body, /data-record="category.changed"/, 'an unknown kind shows every change')
  t.equal((await ann.web.post(`/demo/admin/categories/${billing.id}`, { remove: 'yes' })).statusCode, 303)
  t.match((await ann.web.get('/demo/admin/record')).body, /into: none/, 'an empty category removed into nothing')
  t.match((await ann.web.get('/demo/admin/record')).body, /public: yes/, 'a yes/no said in words')
  // The operator's lines, a page at a time.
  for (let i = 0; i < 50; i++) await app.categories.add(ann.site.id, `Made ${i}`, false, OPERATOR)
  const newest = await ann.web.get('/demo/admin/record')
  t.match(newest.body, /the operator <span class="muted">\(command line\)/)
  const older = /href="([^"]+)" rel="next">Older changes/.exec(newest.body)![1]!.replaceAll('&amp;', '&')
  const next = await ann.web.get(older)
  t.match(next.body, /data-record="category.changed"/, 'the older page has the earlier lines')
  t.notMatch(next.body, /Older changes/)
  t.match((await ann.web.get('/demo/admin/record?cursor=junk')).body, /Made 49/, 'a cursor of nothing starts from the newest')
  const api = await supporterWithToken(app, { email: 'ann@example.test' })
  await app.inject({ method: 'PATCH', url: `/demo/categories/${billing.id}`, headers: json(api.bearer), payload: { name: 'Again' } })
  t.equal((await bob.web.get('/demo/admin/record')).statusCode, 403, 'a supporter sees no record')
  t.equal((await bob.web.post(`/demo/admin/categories/${billing.id}`, { name: 'Mine' })).statusCode, 403, 'nor changes a category')
})

t.test('the operator: each command that changes a site is a line by the operator; `service-desk audit` lists them', async (t) => {
  const cli = await cliRunner(t)
  t.equal((await cli.run(['site', 'add', 'acme'])).code, 0)
  t.equal((await cli.run(['category', 'add', 'acme', 'Billing'])).code, 0)
  t.equal((await cli.run(['user', 'add', 'ivy@example.test', '--name', 'Ivy'], { stdin: 'a long password 123\n' })).code, 0)
  t.equal((await cli.run(['staff', 'add', 'acme', 'ivy@example.test'])).code, 0)
  t.equal((await cli.run(['staff', 'add', 'acme', 'ivy@example.test', '--admin'])).code, 0)
  t.equal((await cli.run(['invitation', 'add', 'acme', 'jo@example.test', '--collaborator'])).code, 0)
  t.equal((await cli.run(['invitation', 'add', 'acme', 'kim@example.test', '--collaborator', '--administrator'])).code, 2, 'one role')
  t.equal((await cli.run(['staff', 'remove', 'acme', 'ivy@example.test'])).code, 0)
  const listed = await cli.run(['audit', 'acme'])
  t.equal(listed.code, 0, listed.stderr)
  const lines = listed.stdout.trim().split('\n').map((l) => l.split('\t'))
  t.same(lines.map((l) => [l[1], l[2], l[4], l[5], l[6]]), [
    ['the operator', 'cli', 'team.removed', 'ivy@example.test', '-'],
    ['the operator', 'cli', 'team.invited', 'jo@example.test', 'role: collaborator'],
    ['the operator', 'cli', 'team.role_changed', 'ivy@example.test', 'role: supporter → administrator'],
    ['the operator', 'cli', 'team.added', 'ivy@example.test', 'role: supporter'],
    ['the operator', 'cli', 'category.created', 'Billing', 'public: no'],
  ])
  const asJson = JSON.parse((await cli.run(['audit', 'acme', '--action', 'category', '--json'])).stdout) as Array<{ action: string }>
  t.same(asJson.map((e) => e.action), ['category.created'])
  t.equal((await cli.run(['audit', 'acme', '--action', 'nothing'])).code, 2, 'an unknown kind is a usage error')
})
