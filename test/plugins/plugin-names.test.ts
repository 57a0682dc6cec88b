import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import { DISPLAY_NAME, nameEveryPlugin } from '../../plugins/http/plugin-names.ts'
import siteRoutes from '../../routes/api/site.ts'
import webPages from '../../routes/web/index.ts'
import { buildTestApp } from '../fixtures/app.ts'

// Engines: one: how Fastify's plugins are named, decided before any store is reached.
// Every plugin gets its function's name as its display name as it is registered, so that Fastify
// does not look for it among every loaded module (plugins/http/plugin-names.ts); the names Fastify
// shows are the ones it showed before.

t.test('a plugin registered at the root or under it is named after its function', async (t) => {
  const app = Fastify()
  nameEveryPlugin(app)
  async function inner(scope: FastifyInstance) {
    scope.get('/inner', async () => 'inner')
  }
  async function outer(scope: FastifyInstance) {
    await scope.register(inner)
  }
  const shared = fp(async function sharedThing() {}, { name: 'the-shared-thing' })
  const arrow = [async (scope: FastifyInstance) => void scope.get('/arrow', async () => 'arrow')][0]!
  app.register(outer)
  app.register(shared)
  app.register(arrow)
  await app.ready()
  t.teardown(() => app.close())
  t.equal((outer as unknown as Record<symbol, string>)[DISPLAY_NAME], 'outer', 'a plugin of the root')
  t.equal((inner as unknown as Record<symbol, string>)[DISPLAY_NAME], 'inner', 'a plugin registered by a plugin')
  t.equal((shared as unknown as Record<symbol, string>)[DISPLAY_NAME], 'the-shared-thing', "fastify-plugin's own name is kept")
  t.notOk(Object.hasOwn(arrow, DISPLAY_NAME), 'a function without a name gets none')
  const tree = app.printPlugins()
  for (const name of ['outer', 'inner', 'the-shared-thing']) t.match(tree, name, `Fastify shows ${name}`)
  t.equal((await app.inject('/inner')).body, 'inner', 'the routes of a named plugin are served')
  t.equal((await app.inject('/arrow')).body, 'arrow', "and an unnamed one's")
})

t.test("the app's own plugins are named as they are registered", async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((siteRoutes as unknown as Record<symbol, string>)[DISPLAY_NAME], 'siteRoutes', 'a route plugin of the API, registered deep under the root')
  t.equal((webPages as unknown as Record<symbol, string>)[DISPLAY_NAME], webPages.name, 'the pages')
  t.match(app.printPlugins(), 'siteRoutes', 'Fastify shows it by that name')
})
