import fp from 'fastify-plugin'
import { openDatabase, type Db } from '../db/client.ts'
import { createSiteStore, type SiteStore } from '../store/sites.ts'
import { createUserStore, type UserStore } from '../store/users.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    sites: SiteStore
    users: UserStore
  }
}

/** Opens the SQLite file (migrating it) and exposes the site and user stores; closes it with the app. */
export default fp<{ dbFile: string }>(
  async (fastify, { dbFile }) => {
    const db = openDatabase(dbFile)
    fastify.decorate('db', db)
    fastify.decorate('sites', createSiteStore(db, fastify.clock))
    fastify.decorate('users', createUserStore(db, fastify.clock))
    fastify.addHook('onClose', async () => {
      db.$client.close()
    })
  },
  { name: 'database', fastify: '5.x', dependencies: ['config'] },
)
