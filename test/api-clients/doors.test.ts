import t from 'tap'
import { buildTestApp, rawRows, V1 } from '../fixtures/app.ts'
import { apiDoors, refusedOffTheStaff } from '../fixtures/doors.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// The rules of issue 53 at every door of the API (docs/decisions.md, "Safe retries, cursors and
// the change feed"): the change feed is the staff's, internal notes included, through the personal
// token, the legacy token, Basic, multipass and an OAuth application's token, and someone taken off
// the staff is refused through each; an Idempotency-Key is its credential's own through each. The
// other doors: MCP's list_changes is a request to the same API behind the same door
// (test/api-clients/changes.test.ts, through the SDK), the pages and the command line have no feed
// and take no key (a page's form is guarded by its CSRF token, not a key).

t.test("the change feed at every door: the staff reads the team's note through each, someone off the staff nothing through any", async (t) => {
  const { app } = await buildTestApp(t)
  const { person: oauthPerson, tokens } = await oauthTokens(app)
  const site = oauthPerson.site
  const general = await app.categories.add(site.id, 'General', true)
  const { discussion } = await app.discussions.create({ siteId: site.id, categoryId: general.id, title: 'Printer', body: 'It smokes.', supporterId: oauthPerson.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  await app.discussions.reply({ siteId: site.id, number: discussion.number, body: 'Warranty expired, between us.', internal: true, supporterId: oauthPerson.user.id, via: 'api' })
  const feed = (headers: Record<string, string>) => app.inject({ url: '/demo/changes', headers: { ...headers, accept: V1 } })

  const sam = await personWithPassword(app)
  const samDoors = { ...(await apiDoors(app, site, sam)), 'OAuth (an application)': { authorization: `Bearer ${tokens.access_token}` } }
  for (const [door, headers] of Object.entries(samDoors)) {
    const answer = await feed(headers)
    t.equal(answer.statusCode, 200, `a supporter, ${door}`)
    t.same(answer.json().changes.map((c: { type: string }) => c.type), ['discussion.created', 'comment.created'], `a supporter, ${door}: both changes`)
    t.match(answer.body, /Warranty expired/, `a supporter, ${door}: the note in it`)
  }

  await refusedOffTheStaff(t, app, site, { person: oauthPerson, token: tokens.access_token }, feed, /Warranty|changes/)
})

t.test('an Idempotency-Key at every door: each credential its own, the repeat through the same door the first answer', async (t) => {
  const { app } = await buildTestApp(t)
  const { person: oauthPerson, tokens } = await oauthTokens(app)
  const site = oauthPerson.site
  const general = await app.categories.add(site.id, 'General', true)
  const sam = await personWithPassword(app)
  const doors = { ...(await apiDoors(app, site, sam)), 'OAuth (an application)': { authorization: `Bearer ${tokens.access_token}` } }
  const post = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: `/demo/categories/${general.id}/discussions`, headers: { ...headers, accept: V1, 'idempotency-key': '"same-key"' }, payload: { title: 'Once per door', body: 'x' } })
  const numbers = new Set<number>()
  for (const [door, headers] of Object.entries(doors)) {
    const first = await post(headers)
    t.equal(first.statusCode, 201, `${door}: made`)
    t.equal(first.headers['idempotent-replayed'], undefined, `${door}: not another door's answer`)
    numbers.add(first.json().number)
    const again = await post(headers)
    t.equal(again.headers['idempotent-replayed'], 'true', `${door}: its repeat is its first answer`)
    t.equal(again.body, first.body)
  }
  t.equal(numbers.size, Object.keys(doors).length, 'one discussion per door, each made once')
  const [{ n }] = await rawRows(app, 'SELECT count(*) AS n FROM discussions WHERE site_id = ?', [site.id])
  t.equal(Number(n), Object.keys(doors).length)

  // Off the staff, each door is refused before any key is claimed: nothing kept, nothing made.
  const carol = await personWithPassword(app, { email: 'carol@staff.example' })
  const carolDoors = await apiDoors(app, site, carol)
  await app.users.removeStaff(site.id, carol.user.id)
  for (const [door, headers] of Object.entries(carolDoors)) t.equal((await post(headers)).statusCode, 403, `off the staff, ${door}`)
  t.same(await rawRows(app, "SELECT credential FROM idempotency_keys WHERE credential LIKE '%:' || ?", [String(carol.user.id)]), [], 'no key of hers kept')
  t.equal(Number((await rawRows(app, 'SELECT count(*) AS n FROM discussions WHERE site_id = ?', [site.id]))[0].n), Object.keys(doors).length)
})
