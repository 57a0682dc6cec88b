import fp from 'fastify-plugin'
import { createAuthLimits, type AuthLimits, type AuthLimitSettings } from './limits.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The failed-authentication budgets of the process, per client address and per account. */
    authLimits: AuthLimits
  }
}

/** One set of budgets for the whole process: the API's credentials and the sign-in page share it. */
export default fp<{ settings: AuthLimitSettings }>(
  async (fastify, { settings }) => {
    fastify.decorate('authLimits', createAuthLimits(settings, fastify.clock))
  },
  { name: 'auth-limits', fastify: '5.x', dependencies: ['config'] },
)
