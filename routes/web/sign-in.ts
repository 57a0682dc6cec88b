import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { createAttemptLimiter } from '../../lib/attempt-limiter.ts'
import { hashPassword, verifyPassword } from '../../lib/password.ts'
import { emailKey } from '../../store/users.ts'
import { pageData, safeNext } from './pages.ts'

export const SIGN_IN_FAILED = 'Wrong email or password.'
// A handful of failures within a few minutes slows an account, or an address, down.
export const ACCOUNT_LIMIT = { max: 5, windowMs: 5 * 60_000 }
export const ADDRESS_LIMIT = { max: 20, windowMs: 5 * 60_000 }

// An unknown email is checked against this hash too, so both failures take the same time.
let decoyHash: Promise<string> | undefined
const decoy = () => (decoyHash ??= hashPassword('decoy password that matches nothing'))

interface SignInBody {
  email?: unknown
  password?: unknown
  next?: unknown
}

/** {site_url}/login, POST {site_url}/logout, and {site_url}/ which sends people where they belong. */
const signInRoutes: FastifyPluginAsync = async (fastify) => {
  const { users, urls, clock } = fastify
  const accounts = createAttemptLimiter({ ...ACCOUNT_LIMIT, clock })
  const addresses = createAttemptLimiter({ ...ADDRESS_LIMIT, clock })

  const sitePath = (request: FastifyRequest) => new URL(urls.siteWeb(request.web.site.permalink)).pathname
  const home = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/profile/api_tokens`

  function form(request: FastifyRequest, reply: FastifyReply, status: number, extra: Record<string, unknown>) {
    return reply.page('sign_in', pageData(request, reply, { title: 'Sign in', email: '', error: null, next: '', ...extra }), status)
  }

  fastify.get('/', { prefixTrailingSlash: 'slash' }, async (request, reply) =>
    reply.redirect(request.web.user ? home(request) : `${urls.siteWeb(request.web.site.permalink)}/login`, 303),
  )

  fastify.get('/login', async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown }).next, sitePath(request)) ?? ''
    if (request.web.user) return reply.redirect(next || home(request), 303)
    return form(request, reply, 200, { next })
  })

  fastify.post('/login', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const body = (request.body ?? {}) as SignInBody
    const email = typeof body.email === 'string' ? body.email.trim() : ''
    const password = typeof body.password === 'string' ? body.password : ''
    const next = safeNext(body.next, sitePath(request)) ?? ''
    const account = [emailKey(email)]
    const address = [request.ip]

    const retryAfter = Math.max(accounts.check(account).retryAfter, addresses.check(address).retryAfter)
    if (retryAfter > 0) {
      reply.header('retry-after', String(retryAfter))
      const minutes = Math.ceil(retryAfter / 60)
      return form(request, reply, 429, { email, next, error: `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` })
    }

    const user = email ? users.find(email) : undefined
    const role = user ? users.role(request.web.site.id, user.id) : undefined
    // Argon2 runs on libuv's thread pool, never on the event loop.
    const matches = await verifyPassword(user?.passwordHash ?? (await decoy()), password)
    if (!user || !matches || user.disabled || !role) {
      accounts.fail(account)
      addresses.fail(address)
      return form(request, reply, 401, { email, next, error: SIGN_IN_FAILED })
    }
    accounts.succeed(account)
    reply.signIn(request, user.id)
    return reply.redirect(next || home(request), 303)
  })

  fastify.post('/logout', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    reply.signOut(request)
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/login`, 303)
  })
}

export default signInRoutes
