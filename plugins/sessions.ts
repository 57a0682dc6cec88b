import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import formbody from '@fastify/formbody'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Role } from '../db/schema.ts'
import type { Site } from '../db/stores/sites.ts'
import { SESSION_LIFETIME_MS } from '../db/stores/sessions.ts'

export interface WebContext {
  site: Site
  /** The signed-in user on this site, or null. */
  user: { id: number; email: string; name: string; role: Role | null } | null
  sessionId: string | null
}

declare module 'fastify' {
  interface FastifyRequest {
    web: WebContext
  }
  interface FastifyReply {
    /** Starts a new session (a new id, so a planted one is never kept) and sets its cookie. */
    signIn(request: FastifyRequest, userId: number): FastifyReply
    signOut(request: FastifyRequest): FastifyReply
  }
}

export const SESSION_COOKIE = 'service_session'

export interface SessionsOptions {
  /** Signs the session and CSRF cookies. */
  secret: Buffer
  /** Cookies are Secure when the site URL is https. */
  secure: boolean
  /** The path of a site's pages, for the cookie: `/{site}` gives `/demo`. */
  cookiePath(permalink: string): string
}

/**
 * Supporter web sessions for the pages of the scope it is registered in: form bodies, signed
 * cookies, CSRF protection, and request.web with the site and the signed-in user.
 */
export default fp<SessionsOptions>(
  async (fastify, { secret, secure, cookiePath }) => {
    const { sites, sessions } = fastify

    await fastify.register(formbody, { bodyLimit: 64 * 1024 })
    await fastify.register(cookie, { secret: secret.toString('base64') })
    await fastify.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: 'service_csrf',
      cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure, signed: true },
    })

    fastify.decorateRequest('web', null as unknown as WebContext)

    const cookieOptions = (permalink: string) =>
      ({ path: cookiePath(permalink), httpOnly: true, sameSite: 'lax', secure, signed: true }) as const

    fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      const site = sites.find((request.params as { site: string }).site)
      if (!site) {
        return reply.code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send('There is no such site.\n')
      }
      const raw = request.cookies[SESSION_COOKIE]
      const unsigned = raw === undefined ? null : request.unsignCookie(raw)
      const sessionId = unsigned?.valid ? unsigned.value : null
      const found = sessionId === null ? undefined : sessions.find(sessionId, site.id)
      request.web = {
        site,
        sessionId: found ? sessionId : null,
        user: found ? { id: found.userId, email: found.email, name: found.name, role: found.role } : null,
      }
    })

    fastify.decorateReply('signIn', function (this: FastifyReply, request: FastifyRequest, userId: number) {
      if (request.web.sessionId) sessions.destroy(request.web.sessionId)
      const id = sessions.create(request.web.site.id, userId)
      return this.setCookie(SESSION_COOKIE, id, { ...cookieOptions(request.web.site.permalink), maxAge: SESSION_LIFETIME_MS / 1000 })
    })

    fastify.decorateReply('signOut', function (this: FastifyReply, request: FastifyRequest) {
      if (request.web.sessionId) sessions.destroy(request.web.sessionId)
      return this.clearCookie(SESSION_COOKIE, cookieOptions(request.web.site.permalink))
    })
  },
  { name: 'sessions', fastify: '5.x', dependencies: ['site-store', 'session-store', 'config'] },
)
