import t from 'tap'
import { supporterWithToken } from '../fixtures/app.ts'
import { discussionApp } from '../fixtures/discussions.ts'

// Engines: one: the mailboxes' API: who may, and the answers' shapes. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).
// The site's mailboxes through the API (routes/api/mailboxes.ts): its administrators only, on the
// engine the suite runs on.

t.test("an administrator lists, adds and removes the site's mailboxes; anyone else is refused", async (t) => {
  const { app, ann, api, questions, problems } = await discussionApp(t)
  const boss = await supporterWithToken(app, { email: 'boss@example.test' })
  await app.users.setAdministrator(ann.site.id, boss.user.id, true)
  const as = (headers: Record<string, string>) => (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => api(method, url, payload, headers)
  const admin = as(boss.bearer)

  t.same((await admin('GET', '/demo/mailboxes')).json(), { mailboxes: [] })
  const added = await admin('POST', '/demo/mailboxes', { address: ' Support@Acme.Example ', category_id: problems.id })
  t.equal(added.statusCode, 201)
  t.match(added.json(), { address: 'support@acme.example', category_id: problems.id, created_at: '2026-03-01T12:00:00Z', href: 'https://api.example.test/demo/mailboxes/support%40acme.example' })
  t.equal(added.headers.location, added.json().href)
  t.equal((await admin('POST', '/demo/mailboxes', { address: 'help@acme.example' })).json().category_id, questions.id, 'none named: the site\'s first category by creation, Questions, though Problems sorts first')
  t.same((await admin('GET', '/demo/mailboxes')).json().mailboxes.map((m: { address: string }) => m.address), ['support@acme.example', 'help@acme.example'])

  const again = await admin('POST', '/demo/mailboxes', { address: 'SUPPORT@acme.example' })
  t.equal(again.statusCode, 409)
  t.match(again.json(), { error: 'conflict', message: 'Support@acme.example is already the address of a mailbox.' })
  for (const [body, field] of [[{ address: 'not an address' }, 'address'], [{ address: 'x@acme.example', category_id: 'two' }, 'category_id'], [{}, 'address']] as const) {
    const bad = await admin('POST', '/demo/mailboxes', body)
    t.equal(bad.statusCode, 400, JSON.stringify(body))
    t.match(bad.json().fields, [{ field }])
  }
  t.equal((await admin('POST', '/demo/mailboxes', { address: 'x@acme.example', category_id: 99999 })).statusCode, 404)

  // Ann is a supporter, not an administrator; another site's administrator has no business here.
  const supporter = await as(ann.bearer)('GET', '/demo/mailboxes')
  t.equal(supporter.statusCode, 403)
  t.match(supporter.json().message, 'Only administrators of this site')
  t.equal((await as(ann.bearer)('POST', '/demo/mailboxes', { address: 'mine@acme.example' })).statusCode, 403)
  const other = await supporterWithToken(app, { site: 'other', email: 'olga@example.test' })
  await app.users.setAdministrator(other.site.id, other.user.id, true)
  t.equal((await as(other.bearer)('GET', '/demo/mailboxes')).statusCode, 401, "another site's token on this site")
  t.equal((await as(other.bearer)('DELETE', '/other/mailboxes/support%40acme.example')).statusCode, 404, "another site's administrator cannot remove this site's address")

  t.equal((await admin('DELETE', '/demo/mailboxes/support%40acme.example')).statusCode, 204)
  t.equal((await admin('DELETE', '/demo/mailboxes/support%40acme.example')).statusCode, 404)
  t.same((await admin('GET', '/demo/mailboxes')).json().mailboxes.map((m: { address: string }) => m.address), ['help@acme.example'])
})
