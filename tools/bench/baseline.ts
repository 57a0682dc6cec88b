import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import { systemClock } from '../../lib/clock.ts'
import { loggerOptions, OneLinePerRequest } from '../../lib/request-log.ts'
import configPlugin from '../../plugins/config.ts'
import database from '../../plugins/database.ts'
import serverKey from '../../plugins/server-key.ts'
import { discussionStores, siteStore, userStore } from '../../plugins/stores.ts'
import discussionRoutes from '../../routes/api/discussions/index.ts'
import siteRoutes from '../../routes/api/site.ts'

// The baseline: the limit of this stack for the same pages. A bare Fastify instance with the
// service's own database plugin and its own route plugins (routes/api/site.ts and
// routes/api/discussions/, hence the same listing module, prepared statements, views and
// response schemas: the same bytes from the same SQLite file), and nothing else. No
// authentication, no media-type negotiation, no logging, no web pages: the request's site is
// found by its permalink and the request acts as the supporter named on the command line.
// With --log it logs every request as the service does (one line per request, written when the
// answer is sent), which separates the cost of logging from that of authentication.
//
// node --import tsx tools/bench/baseline.ts --db FILE --port N --base-url URL --site-url URL --as EMAIL [--log]

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    port: { type: 'string' },
    'base-url': { type: 'string' },
    'site-url': { type: 'string' },
    as: { type: 'string' },
    log: { type: 'boolean' },
  },
})
const dbFile = values.db!
const config = { baseUrl: values['base-url']!, siteUrl: values['site-url']! }

// The service's own logging (lib/request-log.ts): one line per request, the same fields and redaction.
const app = Fastify({ bodyLimit: 1024 * 1024, logger: values.log ? loggerOptions(process.stdout) : false, logController: new OneLinePerRequest() })
app.register(configPlugin, { config, clock: systemClock })
app.register(serverKey, { dbFile, secret: process.env.SERVICE_SECRET })
app.register(database, { dbFile })
app.register(siteStore)
app.register(userStore)
app.register(discussionStores)
app.register(async function pages(api) {
  const supporter = api.users.get(values.as!)
  const user = { id: supporter.id, email: supporter.email, name: supporter.name }
  api.decorateRequest('auth', null)
  api.addHook('onRequest', async (request, reply) => {
    const site = api.sites.find((request.params as { site: string }).site)
    if (!site) return reply.code(404).send({ error: 'not_found' })
    request.auth = { method: 'personal_token', site, user, access: 'write' }
  })
  api.register(siteRoutes)
  api.register(discussionRoutes)
})

await app.listen({ port: Number(values.port), host: '127.0.0.1' })

// A clean exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  app.close().then(() => process.exit(0))
})
