import fp from 'fastify-plugin'
import { createPasswordChecks, type PasswordChecks } from '../../lib/password-checks.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The bounded queue every password verification of the process goes through. */
    passwordChecks: PasswordChecks
  }
}

// Two verifications at once use two cores for about 90 ms each and leave half of libuv's default
// pool free; 32 waiting is under two seconds of work. Beyond that a request gets 503 at once.
export const PASSWORD_CHECK_CONCURRENCY = 2
export const PASSWORD_CHECK_QUEUE = 32

/** One gate for the whole process, registered at the root so the API and the web pages can share it. */
export default fp(
  async (fastify) => {
    fastify.decorate('passwordChecks', createPasswordChecks({ concurrency: PASSWORD_CHECK_CONCURRENCY, queue: PASSWORD_CHECK_QUEUE }))
  },
  { name: 'password-checks', fastify: '5.x' },
)
