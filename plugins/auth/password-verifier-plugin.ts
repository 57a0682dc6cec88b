import fp from 'fastify-plugin'
import { createPasswordChecks, type PasswordChecks } from './password-checks.ts'
import { createPasswordVerifier, type PasswordVerifier } from './password-verifier.ts'
import { emailKey, type User } from '../../db/stores/users.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The bounded queue every password verification of the process goes through. */
    passwordChecks: PasswordChecks
    /** Email-and-password checks with their slow-down, shared by the API and the sign-in page. */
    passwords: PasswordVerifier<User>
  }
}

// Two verifications at once use two cores for about 90 ms each and leave half of libuv's default
// pool free; 32 waiting is under two seconds of work. Beyond that a request gets 503 at once.
export const PASSWORD_CHECK_CONCURRENCY = 2
export const PASSWORD_CHECK_QUEUE = 32

/** One gate for the whole process, registered at the root so the API and the web pages share it. */
export default fp(
  async (fastify) => {
    const checks = createPasswordChecks({ concurrency: PASSWORD_CHECK_CONCURRENCY, queue: PASSWORD_CHECK_QUEUE })
    fastify.decorate('passwordChecks', checks)
    const { users, clock, authLimits: limits } = fastify
    fastify.decorate('passwords', createPasswordVerifier({ findUser: users.find, emailKey, checks, clock, limits }))
  },
  { name: 'password-checks', fastify: '5.x', dependencies: ['database', 'config', 'auth-limits'] },
)
