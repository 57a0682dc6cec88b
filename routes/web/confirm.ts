import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import { failureHeaders } from '../../plugins/auth/limits.ts'
import { codesLockedMessage, logPageEvent, pageData, requireSupporter, safeNext, secondStepAttempt, tooMany } from './pages.ts'
import { authenticationOptions, passkeyAnswer } from './passkeys.ts'
import { confirmingProvider, providersCsp } from './providers.ts'

// Sudo mode (docs/decisions.md, "Confirming it is you"): creating a personal token and what
// administrators change ask the person to have signed in, or confirmed their password, within the
// last SERVICE_SUDO_MINUTES. Otherwise the action is not done: the person is sent to
// {site_url}/confirm, which says why, checks the password within the same failure budgets as the
// sign-in (a wrong one counts towards the account's lockout), and brings them back to the page
// the action is on. With a second factor, the person confirms with it instead: a code of their app
// or one of their passkeys (the password alone is what a thief would have).

/** What each confirmation is for, as the page says it. */
export const PURPOSES = {
  token: 'create a personal API token',
  factor: 'add or remove a second factor, or make new recovery codes',
  administration: "revoke credentials or change this site's token policy",
  oauth: 'let an application read and write on your behalf',
  legacy: 'see or reset your legacy API token',
  password: 'change your password',
} as const
export type Purpose = keyof typeof PURPOSES

/** The purpose a form names, or the token's. */
const purposeOf = (value: unknown): Purpose => (typeof value === 'string' && Object.hasOwn(PURPOSES, value) ? (value as Purpose) : 'token')

declare module 'fastify' {
  interface FastifyInstance {
    /** How long a confirmation lasts, in milliseconds. */
    sudoMs: number
  }
}

/**
 * preHandler of a sensitive action, after the one that checks who may do it: goes ahead while the
 * signed-in person confirmed recently; otherwise sends them to confirm, then back to `page` (a path
 * under the site's pages).
 */
export function requireConfirmed(purpose: Purpose, page: string): preHandlerAsyncHookHandler {
  return async function confirmed(request: FastifyRequest, reply: FastifyReply) {
    if (!confirmedRecently(request)) return confirmFirst(request, reply, purpose, page)
  }
}

/** Whether the signed-in person signed in or confirmed it is them within the last SERVICE_SUDO_MINUTES. */
export function confirmedRecently(request: FastifyRequest): boolean {
  return request.server.clock() - request.web.user!.confirmedAt.getTime() <= request.server.sudoMs
}

/** Sends the person to confirm it is them, then back to `page` (a path under the site's pages). */
export function confirmFirst(request: FastifyRequest, reply: FastifyReply, purpose: Purpose, page: string) {
  const base = request.server.urls.siteWeb(request.web.site.permalink)
  const next = `${new URL(base).pathname}${page}`
  return reply.redirect(`${base}/confirm?for=${purpose}&next=${encodeURIComponent(next)}`, 303)
}

const confirmRoutes: FastifyPluginAsync<{ sudoMinutes: number }> = async (fastify, { sudoMinutes }) => {
  const { passwords, authLimits, sessions, urls, secondFactors } = fastify
  fastify.decorate('sudoMs', sudoMinutes * 60_000)
  const sitePath = (request: FastifyRequest) => new URL(urls.siteWeb(request.web.site.permalink)).pathname

  async function form(request: FastifyRequest, reply: FastifyReply, status: number, fields: { reason: unknown; next: unknown; error?: string }) {
    const reason = purposeOf(fields.reason)
    const next = safeNext(fields.next, sitePath(request)) ?? ''
    const userId = request.web.user!.id
    const data = pageData(request, reply, { title: 'Confirm it is you', purpose: PURPOSES[reason], reason, next, minutes: sudoMinutes, error: fields.error ?? null })
    // A session the company's identity provider made confirms there, signing in anew (routes/web/company-sign-in.ts).
    const provider = await confirmingProvider(request)
    if (provider) return reply.page('confirm', { ...data, provider: { name: provider.name }, withCode: false, withPassword: false, passkey: null }, status, await providersCsp(request, [provider]))
    const kinds = await secondFactors.kinds(userId)
    const passkey = kinds.has('passkey') ? JSON.stringify(await authenticationOptions(request, 'confirm', await secondFactors.passkeysOf(userId))) : null
    return reply.page('confirm', { ...data, provider: null, withCode: kinds.has('totp'), withPassword: kinds.size === 0, passkey }, status)
  }

  /** The proof the form sent: with a second factor, a passkey or a code of the person's app; else their password. */
  async function proven(request: FastifyRequest, body: { password?: unknown; code?: unknown; passkey?: unknown }) {
    const user = request.web.user!
    if (await secondFactors.has(user.id)) {
      const code = typeof body.code === 'string' ? body.code.trim() : ''
      const checked = await secondStepAttempt(request, user, body.passkey === undefined, async () =>
        body.passkey !== undefined ? !!(await passkeyAnswer(request, 'confirm', body.passkey, user.id)) : code !== '' && (await secondFactors.checkTotp(user.id, code)),
      )
      if (typeof checked === 'object') return checked
      if (checked) return { kind: 'verified' } as const
      return { kind: 'wrong', event: 'second_factor_failed', error: body.passkey !== undefined ? 'That passkey did not work. Try again.' : 'That code is not right, or was used already.' } as const
    }
    const verdict = await passwords.verify(user.email, typeof body.password === 'string' ? body.password : '', request.ip)
    if (verdict.kind === 'verified' && verdict.user.id === user.id) return { kind: 'verified' } as const
    if (verdict.kind === 'busy' || verdict.kind === 'too_many_attempts') return verdict
    return { kind: 'wrong', event: 'sign_in_failed', error: 'That is not your password.' } as const
  }

  fastify.get('/confirm', { preHandler: requireSupporter, config: { beforeSecondFactor: true } }, async (request, reply) => {
    const query = request.query as { for?: unknown; next?: unknown }
    return form(request, reply, 200, { reason: query.for, next: query.next })
  })

  fastify.post('/confirm', { preHandler: [fastify.csrfProtection, requireSupporter], config: { beforeSecondFactor: true, ownAccount: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as { password?: unknown; code?: unknown; passkey?: unknown; next?: unknown; for?: unknown }
    const fields = { reason: body.for, next: body.next }
    // A session the company's identity provider made is confirmed there, not here. (On a site whose
    // staff sign in with it only, every session of its staff is one: the others ended at the switch.)
    if (await confirmingProvider(request)) return form(request, reply, 403, fields)
    // The sign-in's checks, slow-down and budgets, for this account only.
    const outcome = await proven(request, body)
    if (outcome.kind === 'verified') {
      await sessions.confirm(request.web.sessionId!)
      await logPageEvent(request, 'confirmed', { for: PURPOSES[purposeOf(fields.reason)] })
      const back = safeNext(body.next, sitePath(request)) ?? `${sitePath(request)}/profile/api_tokens`
      return reply.redirect(`${new URL(urls.siteWeb(request.web.site.permalink)).origin}${back}`, 303)
    }
    if (outcome.kind === 'codes_locked') return form(request, reply, 403, { ...fields, error: codesLockedMessage() })
    if (outcome.kind === 'wrong') {
      await logPageEvent(request, outcome.event, { step: 'confirm it is you' })
      reply.headers(failureHeaders(authLimits, request.ip))
      return form(request, reply, 401, { ...fields, error: outcome.error })
    }
    reply.header('retry-after', String(outcome.retryAfter))
    if (outcome.kind === 'too_many_attempts') reply.headers(failureHeaders(authLimits, request.ip))
    const error = outcome.kind === 'busy' ? 'We are checking too many passwords right now. Try again in a moment.' : tooMany(outcome.retryAfter)
    return form(request, reply, outcome.kind === 'busy' ? 503 : 429, { ...fields, error })
  })
}

export default confirmRoutes
