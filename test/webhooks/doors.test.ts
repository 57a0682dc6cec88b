import t from 'tap'
import { buildTestApp, supporterWithToken, V1 } from '../fixtures/app.ts'
import { apiDoors } from '../fixtures/doors.ts'
import { oauthTokens } from '../fixtures/oauth.ts'
import { personWithPassword } from '../fixtures/web.ts'

// Engines: one: which door lets whom in, a rule over the stores; the stores themselves run on both elsewhere.
// Who manages a site's webhooks (routes/api/administrators-only.ts): its administrators, through
// every door of the API, and no one else through any. The pages' door is
// test/admin/webhooks.test.ts; the command line is the operator's (test/cli/webhooks.test.ts); MCP
// offers no tool that reaches webhooks (test/mcp/mcp.test.ts lists its tools exactly), and an
// assistant's OAuth token is the OAuth door below.

const json = (headers: Record<string, string>) => ({ ...headers, accept: V1, 'content-type': 'application/json' })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const NEW = { url: 'https://hooks.example.com/desk', events: ['comment.created'] }

t.test('every door of the API asks the administrator rule: a supporter is refused through each, an administrator let through each', async (t) => {
  const { app } = await buildTestApp(t)
  // The person behind the OAuth grant, a supporter; then an administrator with a password of their own.
  const { person: oauthPerson, tokens } = await oauthTokens(app)
  const site = oauthPerson.site
  const sam = await personWithPassword(app)
  const ada = await personWithPassword(app)
  await app.users.setAdministrator(site.id, ada.user.id, true)
  const doors = (person: { email: string; password: string; user: { id: number } }) => apiDoors(app, site, person)
  const ask = (headers: Record<string, string>) => ({
    read: () => app.inject({ url: '/demo/webhooks', headers: { ...headers, accept: V1 } }),
    write: () => app.inject({ method: 'POST', url: '/demo/webhooks', headers: json(headers), payload: NEW }),
  })

  // The supporter, through each door: refused, reading and writing; nothing is written.
  const samDoors: Record<string, Record<string, string>> = { ...(await doors(sam)), 'OAuth (an application)': bearer(tokens.access_token) }
  for (const [door, headers] of Object.entries(samDoors)) {
    const read = await ask(headers).read()
    t.not(read.statusCode, 200, `a supporter, ${door}: not read`)
    t.ok([401, 403].includes(read.statusCode), `${door}: ${read.statusCode}`)
    t.not((await ask(headers).write()).statusCode, 201, `a supporter, ${door}: nothing added`)
  }
  t.same(await app.webhooks.list(site.id), [])

  // The administrator, through each door: read; and write with a write credential.
  const adaDoors = await doors(ada)
  for (const door of ['personal token', 'legacy token', 'Basic', 'multipass'] as const) {
    t.equal((await ask(adaDoors[door]).read()).statusCode, 200, `an administrator, ${door}: read`)
  }
  t.equal((await ask(adaDoors['personal token']).write()).statusCode, 201, 'an administrator adds one with a write token')
  t.equal((await ask(adaDoors.Basic).write()).statusCode, 201, 'and with the password')
  // An application of an administrator's: as its grant allows.
  await app.users.setAdministrator(site.id, oauthPerson.user.id, true)
  t.equal((await ask(bearer(tokens.access_token)).read()).statusCode, 200, "an administrator's application reads")
  const reader = await oauthTokens(app, { scope: 'read' })
  await app.users.setAdministrator(site.id, reader.person.user.id, true)
  t.equal((await ask(bearer(reader.tokens.access_token)).read()).statusCode, 200)
  t.equal((await ask(bearer(reader.tokens.access_token)).write()).statusCode, 403, 'a read-only grant adds nothing')
  const readOnly = await supporterWithToken(app, { email: ada.email, access: 'read' })
  t.equal((await ask(bearer(readOnly.value)).write()).statusCode, 403, 'nor a Read only token')
  t.equal((await app.webhooks.list(site.id)).length, 2)
})
