import fp from 'fastify-plugin'
import { openDatabase, type Db } from '../db/client.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
  }
}

// The server's wait for another process's write lock: short, since better-sqlite3 blocks while it
// waits; past it the request is answered 503 with Retry-After (lib/sqlite-errors.ts).
export const SERVER_BUSY_TIMEOUT_MS = 1000

/** Opens the SQLite file (migrating it) and closes it with the app; the stores are plugins/stores.ts. */
export default fp<{ dbFile: string; busyTimeoutMs?: number }>(
  async (fastify, { dbFile, busyTimeoutMs = SERVER_BUSY_TIMEOUT_MS }) => {
    const db = openDatabase(dbFile, { busyTimeoutMs })
    fastify.decorate('db', db)
    fastify.addHook('onClose', async () => {
      db.$client.close()
    })
  },
  { name: 'database', fastify: '5.x' },
)
