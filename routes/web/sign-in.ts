import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { failureHeaders } from '../../plugins/auth/limits.ts'
import { decodeMultipass } from '../../plugins/auth/multipass-token.ts'
import { shownMoment } from '../../lib/clock.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { codesLockedMessage, logPageEvent, pageData, safeNext, safeTo, secondStepAttempt, tellPerson, tooMany } from './pages.ts'
import { authenticationOptions, passkeyAnswer } from './passkeys.ts'
import { providersCsp } from './providers.ts'


export const SIGN_IN_FAILED = 'Wrong email or password.'
export const SSO_FAILED = 'This single sign-on link is invalid or has expired. Sign in with your email and password, or ask for a new link.'
export const SSO_STAFF = 'Support staff sign in here with their email and password, not with a single sign-on link.'
export const SSO_OFF = 'Single sign-on links are switched off for this site. Sign in with your email and password.'


export const COMPANY_ONLY = "The support staff of this site sign in with the company's account: use its button above."

/** Signing in and out is open before a second factor the site requires (routes/web/enrollment.ts). */
export const OPEN = { beforeSecondFactor: true }

/** Where a signed-in person goes by default: support staff to the queue, a customer to their discussions (routes/web/customers.ts). */
export async function homeOf(request: FastifyRequest, userId: number): Promise<string> {
  const { users, urls } = request.server
  return `${urls.siteWeb(request.web.site.permalink)}${isStaffRole(await users.role(request.web.site.id, userId)) ? '/discussions' : '/help'}`
}

/**
 * The sign-in page: the site's identity providers' buttons first (the company's account), then the
 * email and password, and a passkey (one that holds the account signs in by itself: routes/web/passkeys.ts).
 */
export async function signInPage(request: FastifyRequest, reply: FastifyReply, status: number, extra: Record<string, unknown>) {
  const providers = await request.server.signInProviders.list(request.web.site.id)
  const data = pageData(request, reply, { title: 'Sign in', email: '', error: null, next: '', ...extra })
  const buttons = providers.map((p) => ({ id: p.id, name: p.name }))
  return reply.page('sign_in', { ...data, providers: buttons, companyOnly: request.web.site.companySignInOnly, passkey: JSON.stringify(await authenticationOptions(request, 'sign_in')) }, status, await providersCsp(request, providers))
}

interface SignInBody {
  email?: unknown
  password?: unknown
  next?: unknown
}


/** {site_url}/login, POST {site_url}/logout, and {site_url}/ which sends people where they belong: staff to the queue, anyone else to the support site. */
const signInRoutes: FastifyPluginAsync = async (fastify) => {
  const { users, urls, clock, passwords, authLimits, securityLog, secondFactors } = fastify

  const sitePath = (request: FastifyRequest) => new URL(urls.siteWeb(request.web.site.permalink)).pathname
  const home = homeOf
  const form = signInPage
  /** Whether the site's staff sign in with the company's account only and this account is of its staff: no password or passkey of ours signs them in. */
  const companyOnly = async (request: FastifyRequest, userId: number) => request.web.site.companySignInOnly && isStaffRole(await users.role(request.web.site.id, userId))

  /**
   * Multipass single sign-on (deprecated): a valid token signs its user in, creating a customer
   * account for an unknown email, then goes to `to` when it stays on this site. Only while the
   * site takes multipass, as on the API.
   */
  async function singleSignOn(request: FastifyRequest, reply: FastifyReply, raw: string) {
    const { site } = request.web
    if (!site.multipassOn) return form(request, reply, 403, { error: SSO_OFF })
    // A valid token cannot be guessed, so it is checked first and signs in whatever other requests
    // from the address did; a failed one counts against the address's budget, as on the API.
    const decoded = decodeMultipass(raw, site.multipassKey, site.permalink, { fromQuery: true })
    const claims = decoded && decoded.expiresAt > clock() ? decoded : null
    if (!claims) {
      const counted = await authLimits.attempt({ address: request.ip }, () => null, () => 'failed')
      reply.headers(failureHeaders(authLimits, request.ip))
      if (counted !== null) {
        reply.header('retry-after', String(counted.retryAfter))
        return form(request, reply, 429, { error: tooMany(counted.retryAfter) })
      }
      return form(request, reply, 401, { error: SSO_FAILED })
    }
    // Single sign-on is for the site's customers (spec 5.3). Support staff, of this site or any
    // other, sign in with their password: a session of theirs shows the account-wide legacy token
    // and makes API tokens, which whoever holds one site's multipass key must not be able to reach.
    const known = await users.find(claims.email)
    if (known && (known.disabled || (await users.staffSites(known.id)).length > 0)) {
      return form(request, reply, 401, { error: known.disabled ? SSO_FAILED : SSO_STAFF, email: known.email })
    }
    const user = await users.fromSingleSignOn(site.id, claims.email, claims.name)
    if (!user) return form(request, reply, 401, { error: SSO_FAILED })
    await reply.signIn(request, user.id)
    return reply.redirect(safeTo(claims.to, urls.siteWeb(site.permalink)) ?? (await home(request, user.id)), 303)
  }

  /**
   * The security log of a sign-in on the page that failed: a wrong password, and a lockout once per
   * failure window of the account (not at every refused attempt after it). A wrong password for an
   * address no account has is written too, without the address (it may be a password typed in the
   * wrong field), for the site alone: the same reads and the same write either way, so the time of
   * the answer does not tell which accounts exist (CWE-208).
   */
  async function recordFailedSignIn(request: FastifyRequest, email: string, verdict: string) {
    const kind = verdict === 'invalid_password' ? 'sign_in_failed' : verdict === 'too_many_attempts' ? 'lockout' : undefined
    if (!kind) return
    const user = await users.find(email)
    if (kind === 'lockout') {
      if (!user) return
      const [last] = (await securityLog.list({ userId: user.id, kinds: ['lockout'], offset: 0, limit: 1 })).events
      if (last && last.createdAt.getTime() > clock() - authLimits.settings.windowSeconds * 1000) return
    }
    await logPageEvent(request, kind, user ? undefined : { account: 'none with that address' }, user?.id ?? null)
  }

  fastify.get('/', { prefixTrailingSlash: 'slash', config: OPEN }, async (request, reply) => {
    const sso = (request.query as { sso?: unknown }).sso
    if (typeof sso === 'string') return singleSignOn(request, reply, sso)
    // A visitor who is not signed in comes to the support site, which links the staff's sign-in.
    return reply.redirect(request.web.user ? await home(request, request.web.user.id) : `${urls.siteWeb(request.web.site.permalink)}/help`, 303)
  })

  fastify.get('/login', { config: OPEN }, async (request, reply) => {
    const sso = (request.query as { sso?: unknown }).sso
    if (typeof sso === 'string') return singleSignOn(request, reply, sso)
    const next = safeNext((request.query as { next?: unknown }).next, sitePath(request)) ?? ''
    if (request.web.user) return reply.redirect(next || (await home(request, request.web.user.id)), 303)
    return form(request, reply, 200, { next })
  })

  fastify.post('/login', { preHandler: fastify.csrfProtection, config: OPEN }, async (request, reply) => {
    const body = (request.body ?? {}) as SignInBody
    const email = typeof body.email === 'string' ? body.email.trim() : ''
    const password = typeof body.password === 'string' ? body.password : ''
    const next = safeNext(body.next, sitePath(request)) ?? ''
    // The staff of a site that signs them in with the company's account: refused before their
    // password is checked, so this page never says whether it was right (docs/decisions.md).
    const named = request.web.site.companySignInOnly ? await users.find(email) : undefined
    if (named && (await companyOnly(request, named.id))) {
      await logPageEvent(request, 'sign_in_failed', { with: 'password', refused: "the company's account only" }, named.id)
      return form(request, reply, 403, { email, next, error: COMPANY_ONLY })
    }

    // The same checks, slow-down and bound as Basic on the API (fastify.passwords).
    const verdict = await passwords.verify(email, password, request.ip)
    await recordFailedSignIn(request, email, verdict.kind)
    if (verdict.kind === 'too_many_attempts' || verdict.kind === 'invalid_password') reply.headers(failureHeaders(authLimits, request.ip))
    if (verdict.kind === 'too_many_attempts' || verdict.kind === 'busy') {
      reply.header('retry-after', String(verdict.retryAfter))
      const error =
        verdict.kind === 'busy'
          ? 'We are checking too many sign-ins right now. Try again in a moment.'
          : tooMany(verdict.retryAfter)
      return form(request, reply, verdict.kind === 'busy' ? 503 : 429, { email, next, error })
    }
    // A right password for an account that is not on this site is refused the same way.
    const user = verdict.kind === 'verified' ? verdict.user : undefined
    if (!user || !(await users.role(request.web.site.id, user.id))) return form(request, reply, 401, { email, next, error: SIGN_IN_FAILED })
    // With a second factor, the password is the first of two steps (docs/decisions.md, "Second factors").
    if (await secondFactors.has(user.id)) {
      reply.holdSignIn(request, user.id)
      return secondStepPage(request, reply, user.id, 200, { next })
    }
    await reply.signIn(request, user.id)
    await logPageEvent(request, 'sign_in_succeeded', undefined, user.id)
    return reply.redirect(next || (await home(request, user.id)), 303)
  })

  /** The second step's page: a code of an app, a passkey, or a recovery code, as the account has them. */
  async function secondStepPage(request: FastifyRequest, reply: FastifyReply, userId: number, status: number, extra: { next: string; error?: string }) {
    const data = pageData(request, reply, { title: 'Sign in: second step', error: null, ...extra })
    const kinds = await secondFactors.kinds(userId)
    const passkeys = kinds.has('passkey') ? await secondFactors.passkeysOf(userId) : []
    const passkey = passkeys.length > 0 ? JSON.stringify(await authenticationOptions(request, 'second_step', passkeys)) : null
    return reply.page('sign_in_second_step', { ...data, withCode: kinds.has('totp'), passkey }, status)
  }

  fastify.get('/login/second_step', { config: OPEN }, async (request, reply) => {
    if (request.web.pending === null) return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/login`, 303)
    const next = safeNext((request.query as { next?: unknown }).next, sitePath(request)) ?? ''
    return secondStepPage(request, reply, request.web.pending, 200, { next })
  })

  fastify.post('/login/second_step', { preHandler: fastify.csrfProtection, config: OPEN }, async (request, reply) => {
    const body = (request.body ?? {}) as { code?: unknown; recovery_code?: unknown; passkey?: unknown; next?: unknown }
    const next = safeNext(body.next, sitePath(request)) ?? ''
    const user = request.web.pending === null ? undefined : await users.byId(request.web.pending)
    if (!user || user.disabled) return form(request, reply, 401, { next, error: 'Your sign-in waited too long for its second step. Enter your password again.' })
    const code = typeof body.code === 'string' ? body.code.trim() : ''
    const recovery = typeof body.recovery_code === 'string' ? body.recovery_code.trim() : ''
    const checked = await secondStepAttempt(request, user, body.passkey === undefined, async () => {
      if (body.passkey !== undefined) return (await passkeyAnswer(request, 'second_step', body.passkey, user.id)) ? 'passkey' : null
      if (code !== '' && (await secondFactors.checkTotp(user.id, code))) return 'code'
      return recovery !== '' && (await secondFactors.useRecoveryCode(user.id, recovery)) ? 'recovery code' : null
    })
    if (checked !== null && typeof checked === 'object' && checked.kind === 'codes_locked') return secondStepPage(request, reply, user.id, 403, { next, error: codesLockedMessage() })
    if (checked !== null && typeof checked === 'object') {
      reply.headers({ ...failureHeaders(authLimits, request.ip), 'retry-after': String(checked.retryAfter) })
      return secondStepPage(request, reply, user.id, 429, { next, error: tooMany(checked.retryAfter) })
    }
    if (checked === null) {
      await logPageEvent(request, 'second_factor_failed', undefined, user.id)
      const error = body.passkey !== undefined ? 'That passkey did not work. Try again, or use another way.' : 'That code is not right, or was used already. Enter the code your app shows now, or a recovery code.'
      return secondStepPage(request, reply, user.id, 401, { next, error })
    }
    const via = request.web.pendingVia
    await reply.signIn(request, user.id, via)
    await logPageEvent(request, 'sign_in_succeeded', { second_factor: checked, ...(via && { with: 'company account' }) }, user.id)
    if (checked === 'recovery code') {
      const left = await secondFactors.recoveryCodesLeft(user.id)
      await logPageEvent(request, 'recovery_code_used', { left }, user.id)
      await tellPerson(request, user.email, `A recovery code was used to sign in to ${request.web.site.name}`, [
        `Someone signed in to your account ${user.email} with one of its recovery codes on ${shownMoment(new Date(clock()))}. ${left} ${left === 1 ? 'code is' : 'codes are'} left.`,
      ])
      // The profile says how many are left, and offers new ones (the app may be what was lost).
      return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?recovery_left=${left}`, 303)
    }
    return reply.redirect(next || (await home(request, user.id)), 303)
  })

  // A passkey alone: the authenticator verified the person, and the passkey says whose account it is.
  fastify.post('/login/passkey', { preHandler: fastify.csrfProtection, config: OPEN }, async (request, reply) => {
    const body = (request.body ?? {}) as { passkey?: unknown; next?: unknown }
    const next = safeNext(body.next, sitePath(request)) ?? ''
    // A wrong answer counts against the address's budget, as a wrong password does.
    const checked = await authLimits.attempt({ address: request.ip }, () => passkeyAnswer(request, 'sign_in', body.passkey), (passkey) => (passkey ? 'neutral' : 'failed'))
    if (checked && 'kind' in checked) {
      reply.headers({ ...failureHeaders(authLimits, request.ip), 'retry-after': String(checked.retryAfter) })
      return form(request, reply, 429, { next, error: tooMany(checked.retryAfter) })
    }
    const user = checked && (await users.byId(checked.factor.userId))
    if (!user || user.disabled || !(await users.role(request.web.site.id, user.id))) {
      reply.headers(failureHeaders(authLimits, request.ip))
      return form(request, reply, 401, { next, error: 'That passkey does not sign in to an account of this site. Sign in with your email and password.' })
    }
    if (await companyOnly(request, user.id)) {
      await logPageEvent(request, 'sign_in_failed', { with: 'passkey', refused: "the company's account only" }, user.id)
      return form(request, reply, 403, { next, error: COMPANY_ONLY })
    }
    await reply.signIn(request, user.id)
    await logPageEvent(request, 'sign_in_succeeded', { with: 'passkey' }, user.id)
    return reply.redirect(next || (await home(request, user.id)), 303)
  })

  fastify.post('/logout', { preHandler: fastify.csrfProtection, config: OPEN }, async (request, reply) => {
    await reply.signOut(request)
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/login`, 303)
  })
}

export default signInRoutes
