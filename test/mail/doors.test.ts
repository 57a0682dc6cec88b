import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { basic, inDays, legacyTokenOf, makeMultipass, supporterWithPassword } from '../fixtures/credentials.ts'
import { oauthTokens } from '../fixtures/oauth.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// Issue 48: "the site's mailboxes are its administrators'" asked at every door of the API that
// reaches /<site>/mailboxes: a personal token, Basic, the legacy token, multipass, an OAuth token.
// Each door is tried by a supporter who is no administrator (refused, nothing written) and, where
// the door serves staff, by an administrator (served). The pages ask it in test/admin/mail.test.ts;
// MCP has no mailbox tool; the command line is the operator's, who holds the database itself.

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })

t.test('every API door asks whether the caller administers the site before its mailboxes', async (t) => {
  const { app } = await buildTestApp(t)
  const sam = await supporterWithPassword(app, { email: 'sam@example.test', password: 'sam-password-1' })
  const boss = await supporterWithPassword(app, { email: 'boss@example.test', password: 'boss-password-1' })
  await app.users.setAdministrator(boss.site.id, boss.user.id, true)
  const site = (await app.sites.find('demo'))!
  const multipass = (email: string) => ({ 'x-multipass': makeMultipass({ email, expires: inDays(app, 1) }, site.multipassKey, 'demo'), accept: V1 })
  await app.users.fromSingleSignOn(site.id, 'carol@customer.example', 'Carol')
  const oauthSupporter = await oauthTokens(app, { scope: 'read write' })
  const doors: Array<[string, Record<string, string>]> = [
    ['a personal token', (await supporterWithToken(app, { email: 'sam@example.test' })).bearer],
    ['Basic', basic('sam@example.test', 'sam-password-1')],
    ['the legacy token', { 'x-service-auth': (await legacyTokenOf(app, sam.user.id)).value, accept: V1 }],
    ['multipass', multipass('sam@example.test')],
    ['multipass (a customer)', multipass('carol@customer.example')],
    ['an OAuth token', { authorization: `Bearer ${oauthSupporter.tokens.access_token}`, accept: V1 }],
  ]
  for (const [door, headers] of doors) {
    t.equal((await app.inject({ url: '/demo/mailboxes', headers })).statusCode, 403, `${door}: no list`)
    const add = await app.inject({ method: 'POST', url: '/demo/mailboxes', headers: json(headers), payload: { address: 'sneaky@acme.example', imap: 'imaps://u:p@imap.example' } })
    t.equal(add.statusCode, 403, `${door}: no new mailbox`)
  }
  t.same(await app.mailboxes.listMailboxes(site.id), [], 'nothing written by any door')

  // The administrator is served at the doors for staff; a read-only credential of theirs reads only.
  await app.mailboxes.addMailbox(site.id, 'support@acme.example')
  for (const [door, headers] of [
    ['Basic', basic('boss@example.test', 'boss-password-1')],
    ['the legacy token', { 'x-service-auth': (await legacyTokenOf(app, boss.user.id)).value, accept: V1 }],
  ] as const) {
    t.equal((await app.inject({ url: '/demo/mailboxes', headers })).json().mailboxes.length, 1, `${door}: the administrator reads`)
  }
  const readOnly = await supporterWithToken(app, { email: 'boss@example.test', access: 'read' })
  t.equal((await app.inject({ url: '/demo/mailboxes', headers: readOnly.bearer })).statusCode, 200)
  const write = await app.inject({ method: 'DELETE', url: '/demo/mailboxes/support%40acme.example', headers: readOnly.bearer })
  t.equal(write.statusCode, 403, 'a read-only token of the administrator removes nothing')
  t.match(String(write.headers['www-authenticate']), 'insufficient_scope')
  t.equal((await app.mailboxes.listMailboxes(site.id)).length, 1)
})
