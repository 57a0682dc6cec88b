import fp from 'fastify-plugin'
import type { Engine } from '../db/engine.ts'
import { openEngine } from '../db/open.ts'
import type { PostgresOptions } from '../lib/database-address.ts'

declare module 'fastify' {
  interface FastifyInstance {
    database: Engine
  }
}

// The server's wait for another process's write lock: short, since better-sqlite3 blocks while it
// waits; past it the request is answered 503 with Retry-After (lib/database-errors.ts).
export const SERVER_BUSY_TIMEOUT_MS = 1000

/** Opens the database (migrating it) and closes it with the app; the stores are plugins/stores.ts. */
export default fp<{ databaseAddress: string; busyTimeoutMs?: number; postgres?: PostgresOptions }>(
  async (fastify, { databaseAddress, busyTimeoutMs = SERVER_BUSY_TIMEOUT_MS, postgres }) => {
    // A broken connection is said in the log, by its words only (they hold no address or password).
    const onConnectionError = (error: Error) => fastify.log.warn({ err: { message: error.message } }, 'database connection error')
    const database = await openEngine(databaseAddress, { busyTimeoutMs, postgres: { ...postgres, onConnectionError } })
    fastify.decorate('database', database)
    // Before any hook reads the database: the read cache sees what committed before the request.
    fastify.addHook('onRequest', (_request, _reply, done) => database.requestArrived(() => done()))
    fastify.addHook('onClose', async () => {
      await database.close()
    })
  },
  { name: 'database', fastify: '5.x' },
)
