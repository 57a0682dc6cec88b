import fp from 'fastify-plugin'
import { createTokenStore, type TokenStore } from '../db/stores/tokens.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenStore
  }
}

/** Personal API tokens: create, list, revoke, look up, and the batched last-used writes. */
export default fp(
  async (fastify) => {
    const tokens = createTokenStore(fastify.db, fastify.clock, (error) => {
      fastify.log.warn({ err: error }, 'could not record when personal tokens were last used')
    })
    fastify.decorate('tokens', tokens)
    // Registered after the database plugin, so this runs before the file is closed.
    fastify.addHook('onClose', async () => {
      tokens.flush()
    })
  },
  { name: 'token-store', fastify: '5.x', dependencies: ['database'] },
)
