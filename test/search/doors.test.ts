import t from 'tap'
import { buildTestApp, V1 } from '../fixtures/app.ts'
import { apiDoors, refusedOffTheStaff } from '../fixtures/doors.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// Who searches what (docs/decisions.md, "Search"): the API's search is the staff's, internal notes
// included, through every door of the API; someone off the staff is refused through each, and
// learns nothing. The other doors: the pages (test/search/pages.test.ts: the staff's page refuses a
// customer, the support site's search keeps a customer to their own and the public ones), MCP
// (test/search/api.test.ts, through the SDK; its tools are the API behind the same door), and the
// command line, which has no search (only `search index`, an operator's command).

t.test("every door of the API asks the staff rule of search: a supporter finds the team's note through each, someone off the staff nothing through any", async (t) => {
  const { app } = await buildTestApp(t)
  const { person: oauthPerson, tokens } = await oauthTokens(app)
  const site = oauthPerson.site
  const general = await app.categories.add(site.id, 'General', true)
  const { discussion } = await app.discussions.create({ siteId: site.id, categoryId: general.id, title: 'Printer', body: 'It smokes.', public: true, supporterId: oauthPerson.user.id, onBehalfOf: { email: 'carol@customer.example' }, via: 'api' })
  await app.discussions.reply({ siteId: site.id, number: discussion.number, body: 'Warranty expired, between us.', internal: true, supporterId: oauthPerson.user.id, via: 'api' })
  const search = (headers: Record<string, string>) => app.inject({ url: '/demo/search?q=warranty', headers: { ...headers, accept: V1 } })

  const sam = await personWithPassword(app)
  const samDoors = { ...(await apiDoors(app, site, sam)), 'OAuth (an application)': { authorization: `Bearer ${tokens.access_token}` } }
  for (const [door, headers] of Object.entries(samDoors)) {
    const answer = await search(headers)
    t.equal(answer.statusCode, 200, `a supporter, ${door}`)
    t.same(answer.json().results.map((r: { discussion: { number: number } }) => r.discussion.number), [discussion.number], `a supporter, ${door}: the note found`)
  }

  // Carol was on the staff when her credentials were made; taken off it (a customer of the site now), each is refused.
  await refusedOffTheStaff(t, app, site, { person: oauthPerson, token: tokens.access_token }, search, /Warranty|results/)
})
