import fp from 'fastify-plugin'
import { openDatabase, type Db } from '../db/client.ts'
import { createSecretBox } from '../lib/secret-box.ts'
import { serverSecret } from '../lib/server-key.ts'
import { createSessionStore, type SessionStore } from '../db/stores/sessions.ts'
import { createSiteStore, type SiteStore } from '../db/stores/sites.ts'
import { createUserStore, type UserStore } from '../db/stores/users.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    sites: SiteStore
    users: UserStore
    sessions: SessionStore
    /** The server key (SERVICE_SECRET or the data folder's key file), from which other secrets derive. */
    serverKey: string
  }
}

/** Opens the SQLite file (migrating it) and exposes the site, user and session stores; closes it with the app. */
// The server's wait for another process's write lock: short, since better-sqlite3 blocks while it
// waits; past it the request is answered 503 with Retry-After (lib/sqlite-errors.ts).
export const SERVER_BUSY_TIMEOUT_MS = 1000

export default fp<{ dbFile: string; secret?: string; busyTimeoutMs?: number }>(
  async (fastify, { dbFile, secret, busyTimeoutMs = SERVER_BUSY_TIMEOUT_MS }) => {
    // The server key (SERVICE_SECRET or the data folder's key file) seals the legacy tokens.
    const serverKey = serverSecret({ secret, dbFile })
    const box = createSecretBox(serverKey)
    const db = openDatabase(dbFile, { busyTimeoutMs })
    fastify.decorate('serverKey', serverKey)
    fastify.decorate('db', db)
    fastify.decorate('sites', createSiteStore(db, fastify.clock))
    fastify.decorate('users', createUserStore(db, fastify.clock, box))
    fastify.decorate('sessions', createSessionStore(db, fastify.clock))
    fastify.addHook('onClose', async () => {
      db.$client.close()
    })
  },
  { name: 'database', fastify: '5.x', dependencies: ['config'] },
)
