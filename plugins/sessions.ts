import { createHmac, randomBytes } from 'node:crypto'
import cookie from '@fastify/cookie'
import csrf from '@fastify/csrf-protection'
import formbody from '@fastify/formbody'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Role } from '../db/values.ts'
import type { Site } from '../db/stores/sites.ts'
import { SESSION_LIFETIME_MS, type SessionVia } from '../db/stores/sessions.ts'

export interface WebContext {
  site: Site
  /** The signed-in user on this site, or null. */
  user: { id: number; email: string; name: string; role: Role | null; administrator: boolean; collaborator: boolean; confirmedAt: Date; provider: { id: number; mfa: boolean } | null } | null
  sessionId: string | null
  /** A signed-out visitor's pre-session: what their forms' CSRF tokens are bound to until sign-in. */
  preSession: string | null
  /** The account whose password was right a moment ago on this site, waiting for its second factor. */
  pending: number | null
  /** When that first step was a sign-in at one of the site's identity providers: the session it makes keeps it. */
  pendingVia: SessionVia | null
}

declare module 'fastify' {
  interface FastifyRequest {
    web: WebContext
  }
  interface FastifyReply {
    /** Starts a new session (a new id, so a planted one is never kept) and sets its cookie; `via`: signed in at an identity provider. */
    signIn(request: FastifyRequest, userId: number, via?: SessionVia | null): Promise<void>
    /**
     * Notes, in a signed cookie of a few minutes, that this account's password was right on this
     * site: the second step of its sign-in (routes/web/sign-in.ts) reads it. Nobody is signed in yet.
     */
    holdSignIn(request: FastifyRequest, userId: number, via?: SessionVia): void
    /** Ends the session, if any, and clears its cookie. */
    signOut(request: FastifyRequest): Promise<void>
    /** The CSRF token of the forms on this page, bound to the session (or pre-session) and site. */
    csrfToken(request: FastifyRequest): string
  }
}

export const SESSION_COOKIE = 'service_session'
export const PRE_SESSION_COOKIE = 'service_presession'
export const SECOND_STEP_COOKIE = 'service_second_step'
/** How long the second step of a sign-in waits for its code. */
export const SECOND_STEP_MS = 5 * 60_000
export const CSRF_COOKIE = 'service_csrf'

export interface SessionsOptions {
  /** Signs the session and CSRF cookies, and keys the CSRF tokens' binding to their session. */
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
    // A CSRF token is bound to the site and the session it was issued for (before sign-in, to a
    // pre-session that sign-in replaces): one made on an anonymous visit, in another session or
    // on another site is refused, even beside a planted CSRF cookie (docs/decisions.md).
    await fastify.register(csrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: CSRF_COOKIE,
      cookieOpts: { httpOnly: true, sameSite: 'lax', secure, signed: true },
      getUserInfo: (request: FastifyRequest) => binding(request.web),
      csrfOpts: { hmacKey: createHmac('sha256', secret).update('csrf session binding').digest() },
    })

    fastify.decorateRequest('web', null as unknown as WebContext)

    /** What a form's token is bound to; a request with neither session nor pre-session matches no token. */
    const binding = ({ site, sessionId, preSession }: WebContext) =>
      sessionId ? `${site.id}:session:${sessionId}` : `${site.id}:pre:${preSession ?? randomBytes(16).toString('hex')}`
    const signedCookie = (request: FastifyRequest, name: string) => {
      const raw = request.cookies[name]
      const unsigned = raw === undefined ? null : request.unsignCookie(raw)
      return unsigned?.valid ? unsigned.value : null
    }

    /** The account of a second-step cookie still valid for this site (and the provider it signed in at), or null. */
    const pendingOf = (value: string | null, siteId: number): { user: number; via: SessionVia | null } | null => {
      const parts = (value ?? '').split('.')
      const [site, user, until, providerId, mfa] = parts.map(Number)
      if (site !== siteId || !(until! > fastify.clock()) || !Number.isSafeInteger(user)) return null
      const via = parts.length === 6 && Number.isSafeInteger(providerId) ? { providerId: providerId!, mfa: mfa === 1, sid: parts[5] === '' ? null : Buffer.from(parts[5]!, 'base64url').toString() } : null
      return { user: user!, via }
    }

    const cookieOptions = (permalink: string) =>
      ({ path: cookiePath(permalink), httpOnly: true, sameSite: 'lax', secure, signed: true }) as const

    fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      const site = await sites.find((request.params as { site: string }).site)
      if (!site) {
        return reply.code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send('There is no such site.\n')
      }
      const sessionId = signedCookie(request, SESSION_COOKIE)
      const found = sessionId === null ? undefined : await sessions.find(sessionId, site.id)
      const pending = found ? null : pendingOf(signedCookie(request, SECOND_STEP_COOKIE), site.id)
      request.web = {
        site,
        sessionId: found ? sessionId : null,
        preSession: found ? null : signedCookie(request, PRE_SESSION_COOKIE),
        pending: pending?.user ?? null,
        pendingVia: pending?.via ?? null,
        user: found ? { id: found.userId, email: found.email, name: found.name, role: found.role, administrator: found.administrator, collaborator: found.collaborator, confirmedAt: found.confirmedAt, provider: found.provider } : null,
      }
    })

    // These two answer a promise of nothing, never the reply: a reply is a thenable that settles
    // when the answer has been sent, so a promise resolved with it would wait for itself.
    fastify.decorateReply('signIn', async function (this: FastifyReply, request: FastifyRequest, userId: number, via?: SessionVia | null) {
      if (request.web.sessionId) await sessions.destroy(request.web.sessionId)
      const id = await sessions.create(request.web.site.id, userId, via ?? undefined)
      // The pre-session ends here: the forms of the new session carry tokens bound to it.
      if (request.web.preSession) this.clearCookie(PRE_SESSION_COOKIE, cookieOptions(request.web.site.permalink))
      if (request.web.pending !== null) this.clearCookie(SECOND_STEP_COOKIE, cookieOptions(request.web.site.permalink))
      this.setCookie(SESSION_COOKIE, id, { ...cookieOptions(request.web.site.permalink), maxAge: SESSION_LIFETIME_MS / 1000 })
    })

    fastify.decorateReply('holdSignIn', function (this: FastifyReply, request: FastifyRequest, userId: number, via?: SessionVia) {
      const { site } = request.web
      const provider = via ? `.${via.providerId}.${via.mfa ? 1 : 0}.${Buffer.from(via.sid ?? '').toString('base64url')}` : ''
      this.setCookie(SECOND_STEP_COOKIE, `${site.id}.${userId}.${fastify.clock() + SECOND_STEP_MS}${provider}`, { ...cookieOptions(site.permalink), maxAge: SECOND_STEP_MS / 1000 })
    })

    fastify.decorateReply('csrfToken', function (this: FastifyReply, request: FastifyRequest) {
      const { web } = request
      const path = cookieOptions(web.site.permalink).path
      if (!web.sessionId && !web.preSession) {
        web.preSession = randomBytes(16).toString('base64url')
        this.setCookie(PRE_SESSION_COOKIE, web.preSession, cookieOptions(web.site.permalink))
      }
      // The CSRF secret's cookie, when it is made here, is scoped to the site's pages like the session's.
      return this.generateCsrf({ userInfo: binding(web), path })
    })

    fastify.decorateReply('signOut', async function (this: FastifyReply, request: FastifyRequest) {
      if (request.web.sessionId) await sessions.destroy(request.web.sessionId)
      this.clearCookie(SESSION_COOKIE, cookieOptions(request.web.site.permalink))
    })
  },
  { name: 'sessions', fastify: '5.x', dependencies: ['site-store', 'session-store', 'config'] },
)
