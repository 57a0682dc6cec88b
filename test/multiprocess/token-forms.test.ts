import t from 'tap'
import { MAX_ACTIVE_TOKENS } from '../../db/stores/token-rules.ts'
import { CLAIM_WAIT_MS, FORMS_CHANNEL, USED_FORMS_LIMIT } from '../../routes/web/api-tokens.ts'
import { logCapture } from '../fixtures/log.ts'
import { personWithPassword, webClient } from '../fixtures/web.ts'
import { privateDatabase, twoApps } from './two-apps.ts'

// Engines: both: what it asks goes through the stores, and each engine must answer it alike.
// A token form is used once, whichever process each of its posts reaches (routes/web/api-tokens.ts):
// two apps on one database stand for two processes. Real processes: postgres-processes.test.ts.

const TOKENS = '/demo/profile/api_tokens'
type App = Awaited<ReturnType<typeof twoApps>>['one']

/** One supporter signed in, with a browser on each app sharing its cookies. */
async function signedInOnBoth(one: App, two: App) {
  const ann = await personWithPassword(one)
  const first = webClient(one)
  const second = webClient(two)
  await first.signIn(ann.email, ann.password)
  for (const [name, value] of first.jar) second.jar.set(name, value)
  /** A fresh form of the token page, from the first app, filled in. */
  const form = async (name = 'ci') => {
    await first.get(TOKENS)
    return { _csrf: first.field('_csrf'), form_id: first.field('form_id'), name, access: 'read', expires: '7' }
  }
  return { ann, first, second, form }
}

t.test('a form sent to both apps at once makes one token; sent again to either, none', async (t) => {
  const { one, two } = await twoApps(t)
  const { ann, first, second, form } = await signedInOnBoth(one, two)
  for (let i = 0; i < 5; i++) {
    const filled = await form(`form ${i}`)
    const answers = await Promise.all([first.request('POST', TOKENS, filled), second.request('POST', TOKENS, filled)])
    t.same(answers.map((res) => res.statusCode).sort(), [201, 303], `form ${i}: one made it, the other was sent to the list`)
    t.equal((await second.request('POST', TOKENS, filled)).statusCode, 303, 'a reload, through the other app')
    t.equal((await first.request('POST', TOKENS, filled)).statusCode, 303, 'and through the first')
  }
  t.equal((await one.tokens.listForSite(ann.site.id, ann.user.id)).length, 5)
})

t.test('a form whose token could not be made may be sent again, to either app', async (t) => {
  const { one, two } = await twoApps(t)
  const { ann, first, second, form } = await signedInOnBoth(one, two)
  const made = []
  for (let i = 0; i < MAX_ACTIVE_TOKENS; i++) {
    made.push(await one.tokens.create({ siteId: ann.site.id, userId: ann.user.id, name: `t${i}`, access: 'read', expiresInDays: 7 }))
  }
  const filled = await form('one too many')
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 409)
  await one.tokens.revoke(ann.site.id, made[0]!.token.id, ann.user.id)
  t.equal((await second.request('POST', TOKENS, filled)).statusCode, 201, 'room again: the same form makes its token')
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 303, 'and only once')
})

t.test('without the channel each app decides alone: a claim that fails, or is not heard back in time', async (t) => {
  const log = logCapture()
  const { one, two } = await twoApps(t, {}, log.stream)
  const { first, form } = await signedInOnBoth(one, two)
  const { publish } = one.database.events
  one.database.events.publish = async () => {
    throw new Error('the channel is down')
  }
  const lonely = await form('alone')
  t.equal((await first.request('POST', TOKENS, lonely)).statusCode, 201)
  t.equal((await first.request('POST', TOKENS, lonely)).statusCode, 303, 'this app remembers it')
  t.match(log.text(), 'could not share a used token form with the other processes; this process decides alone')

  // Sent, but never heard back: the app waits a moment, then decides alone.
  one.database.events.publish = async () => {}
  const unheard = await form('unheard')
  const started = Date.now()
  t.equal((await first.request('POST', TOKENS, unheard)).statusCode, 201)
  t.ok(Date.now() - started >= CLAIM_WAIT_MS - 50, 'after the wait')
  t.equal((await first.request('POST', TOKENS, unheard)).statusCode, 303)
  one.database.events.publish = publish
})

t.test("what is heard on the channel: anything that is not a claim or a release is ignored; another's release frees the form", async (t) => {
  const { one, two } = await twoApps(t)
  const { first, form } = await signedInOnBoth(one, two)
  const filled = await form()
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 201)
  for (const payload of ['not json', 'null', '{"claim":1,"id":"x"}', `{"claim":"${filled.form_id}"}`, '{"release":5}']) {
    await two.database.events.publish(FORMS_CHANNEL, payload)
  }
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 303, 'still used')
  await two.database.events.publish(FORMS_CHANNEL, JSON.stringify({ release: filled.form_id }))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 201, 'given back by another process: used again')
})

t.test('the used forms are bounded: the oldest is forgotten first', async (t) => {
  const { one, two } = await twoApps(t)
  const { ann, first, form } = await signedInOnBoth(one, two)
  const oldest = await form('oldest')
  t.equal((await first.request('POST', TOKENS, oldest)).statusCode, 201)
  const newer = await form('newer')
  // Claims of other processes, as many as are remembered.
  await Promise.all(
    Array.from({ length: USED_FORMS_LIMIT - 1 }, (_, i) => two.database.events.publish(FORMS_CHANNEL, JSON.stringify({ claim: `claimed-elsewhere-${i}`, id: `c${i}` }))),
  )
  t.equal((await first.request('POST', TOKENS, newer)).statusCode, 201, 'a new form pushes the oldest out')
  t.equal((await first.request('POST', TOKENS, newer)).statusCode, 303, 'remembered')
  t.equal((await first.request('POST', TOKENS, oldest)).statusCode, 201, 'the oldest was forgotten: sent again, it makes a token')
  t.equal((await one.tokens.listForSite(ann.site.id, ann.user.id)).length, 3)
})

t.test('a form id that is not one of ours is no id: nothing is remembered of it', async (t) => {
  const { one, two } = await twoApps(t)
  const { ann, first, form } = await signedInOnBoth(one, two)
  const filled = { ...(await form()), form_id: 'x'.repeat(65) }
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 201)
  t.equal((await first.request('POST', TOKENS, filled)).statusCode, 201)
  t.equal((await one.tokens.listForSite(ann.site.id, ann.user.id)).length, 2)
})

t.test('an app that cannot hear the other processes at start says so, and serves', async (t) => {
  const { openEngine } = await import('../../db/open.ts')
  const { buildApp } = await t.mockImport<typeof import('../../app.ts')>('../../app.ts', {
    '../../db/open.ts': {
      openEngine: async (...args: Parameters<typeof openEngine>) => {
        const engine = await openEngine(...args)
        const subscribe = async () => {
          throw new Error('no channel')
        }
        return { ...engine, events: { ...engine.events, subscribe } }
      },
    },
  })
  const log = logCapture()
  const app = buildApp({ config: { baseUrl: 'https://api.example.test', siteUrl: 'https://help.example.test/{site}', ...(await privateDatabase(t)) }, logStream: log.stream })
  t.teardown(() => app.close())
  await app.ready()
  t.match(log.text(), "could not hear the other processes' authentication failures yet")
  t.match(log.text(), "could not hear the other processes' used token forms yet")
  t.match(log.text(), "could not hear the other processes' presence on discussions yet")
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
})
