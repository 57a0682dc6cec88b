import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { apiDoors } from '../fixtures/doors.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// Who writes a site's saved replies (macros too) and rules, and sets its categories' turns: its administrators, through
// every door of the API, and no one else through any (routes/api/saved-replies.ts,
// routes/api/discussions/categories.ts). The pages' door is test/team/pages.test.ts
// (Administration → Queue refuses a supporter, 403); MCP offers only the reading of saved replies
// (list_saved_replies, test/team/api.test.ts), and an assistant's OAuth token is the OAuth door
// below; the command line has no command for either.

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

t.test('every door of the API asks the administrator rule of the queue: a supporter refused through each, an administrator let through', async (t) => {
  const { app } = await buildTestApp(t)
  const { person: oauthPerson, tokens } = await oauthTokens(app)
  const site = oauthPerson.site
  const general = await app.categories.add(site.id, 'General', true)
  const sam = await personWithPassword(app)
  const ada = await personWithPassword(app)
  await app.users.setAdministrator(site.id, ada.user.id, true)
  const doors = (person: { email: string; password: string; user: { id: number } }) => apiDoors(app, site, person)
  let n = 0
  const ask = (headers: Record<string, string>) => ({
    read: () => app.inject({ url: '/demo/saved_replies', headers: { ...headers, accept: V1 } }),
    add: () => app.inject({ method: 'POST', url: '/demo/saved_replies', headers: json(headers), payload: { title: `Reply ${++n}`, body: 'Hello {{customer.name}}.' } }),
    turns: () => app.inject({ method: 'PATCH', url: `/demo/categories/${general.id}`, headers: json(headers), payload: { round_robin: true } }),
    // Issue 70: a macro is a saved reply with actions; a rule is written as they are.
    macro: () => app.inject({ method: 'POST', url: '/demo/macros', headers: json(headers), payload: { title: `Macro ${++n}`, body: 'Done.', actions: [{ type: 'set_state', state: 'resolved' }] } }),
    rule: () => app.inject({ method: 'POST', url: '/demo/rules', headers: json(headers), payload: { name: `Rule ${++n}`, events: ['created'], actions: [{ type: 'add_tags', tags: ['seen'] }] } }),
  })

  // The supporter, through each door: reads (they choose from them), writes nothing.
  const samDoors: Record<string, Record<string, string>> = { ...(await doors(sam)), 'OAuth (an application)': bearer(tokens.access_token) }
  for (const [door, headers] of Object.entries(samDoors)) {
    t.equal((await ask(headers).read()).statusCode, 200, `a supporter, ${door}: reads them`)
    t.equal((await ask(headers).add()).statusCode, 403, `a supporter, ${door}: adds none`)
    t.equal((await ask(headers).turns()).statusCode, 403, `a supporter, ${door}: sets no turns`)
    t.equal((await ask(headers).macro()).statusCode, 403, `a supporter, ${door}: adds no macro`)
    t.equal((await ask(headers).rule()).statusCode, 403, `a supporter, ${door}: adds no rule`)
  }
  t.same(await app.savedReplies.list(site.id), [])
  t.same(await app.rules.list(site.id), [])
  t.equal((await app.categories.find(site.id, general.id))!.roundRobin, false)

  // The administrator, through each door: writes.
  const adaDoors = await doors(ada)
  for (const [door, headers] of Object.entries(adaDoors)) {
    t.equal((await ask(headers).add()).statusCode, 201, `an administrator, ${door}: adds one`)
    t.equal((await ask(headers).turns()).statusCode, 200, `an administrator, ${door}: sets the turns`)
    t.equal((await ask(headers).macro()).statusCode, 201, `an administrator, ${door}: adds a macro`)
    t.equal((await ask(headers).rule()).statusCode, 201, `an administrator, ${door}: adds a rule`)
  }
  await app.users.setAdministrator(site.id, oauthPerson.user.id, true)
  t.equal((await ask(bearer(tokens.access_token)).add()).statusCode, 201, "an administrator's application adds one")
  const readOnly = await supporterWithToken(app, { email: ada.email, access: 'read' })
  t.equal((await ask(bearer(readOnly.value)).add()).statusCode, 403, 'nor a Read only token of an administrator')
  t.equal((await app.savedReplies.list(site.id)).length, 5 + Object.keys(adaDoors).length, 'the saved replies and the macros')
  t.equal((await app.rules.list(site.id)).length, Object.keys(adaDoors).length)
})
