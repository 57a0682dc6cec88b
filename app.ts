import Fastify, { type FastifyError, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.ts'
import { systemClock, type Clock } from './lib/clock.ts'
import { redactUrl } from './lib/redact.ts'
import { clientErrorBody } from './lib/validation.ts'
import authentication from './plugins/authentication.ts'
import challenge from './plugins/challenge.ts'
import configPlugin from './plugins/config.ts'
import passwordChecks from './plugins/auth/password-checks.ts'
import database from './plugins/database.ts'
import tokenStore from './plugins/token-store.ts'
import versioning from './plugins/versioning.ts'
import discussionRoutes from './routes/api/discussions.ts'
import apiNotFound from './routes/api/not-found.ts'
import siteRoutes from './routes/api/site.ts'
import openapiRoutes from './routes/openapi.ts'
import readmeRoute from './routes/readme.ts'
import rootRoutes from './routes/root.ts'
import wellKnownRoutes from './routes/well-known.ts'
import webPages from './routes/web/index.ts'

export interface AppOptions {
  config: Pick<Config, 'baseUrl' | 'siteUrl' | 'dbFile' | 'secret'>
  clock?: Clock
  /** Where JSON log lines go (standard output for the server); no logging when absent. */
  logStream?: { write(line: string): void }
}

// Request bodies larger than this are refused with 413 before they are read.
export const BODY_LIMIT = 1024 * 1024

/** The whole service as one Fastify instance; the server and the tests build it the same way. */
export function buildApp(options: AppOptions) {
  const app = Fastify({
    bodyLimit: BODY_LIMIT,
    logger: options.logStream ? loggerOptions(options.logStream) : false,
  })

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send({ error: 'internal_error', message: 'Something went wrong on our side.' })
    }
    return reply.code(status).send(clientErrorBody(error, request.routeOptions.bodyLimit))
  })
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: 'not_found', message: `There is nothing at ${request.method} ${redactUrl(request.url)}.` }),
  )

  // Shared concerns, in the order they depend on each other.
  app.register(configPlugin, { config: options.config, clock: options.clock ?? systemClock })
  app.register(database, { dbFile: options.config.dbFile, secret: options.config.secret })
  app.register(tokenStore)
  app.register(challenge)
  app.register(passwordChecks)

  // Public, unauthenticated documents. The OpenAPI plugin goes first: it describes the routes
  // registered after it.
  app.register(openapiRoutes)
  app.register(rootRoutes)
  app.register(wellKnownRoutes)
  app.register(readmeRoute)

  // The v1 API: every route negotiates its media type, then authenticates, before any body is read.
  app.register(async function api(api) {
    api.register(versioning)
    api.register(authentication)
    api.register(async function authenticated(routes) {
      routes.addHook('onRequest', routes.authenticate)
      routes.register(siteRoutes)
      routes.register(discussionRoutes)
      routes.register(apiNotFound)
    })
  })

  // The supporter web pages, under the site URL. They never accept an API credential.
  app.register(webPages, { siteUrl: options.config.siteUrl })

  return app
}

function loggerOptions(stream: { write(line: string): void }): FastifyServerOptions['logger'] {
  return {
    level: 'info',
    stream,
    // Headers are never logged, and credential values in a query string are replaced.
    serializers: {
      req: (request) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }),
    },
  }
}
