import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { freshAuthentication, mfaAtProvider, newcomerName, verifiedAddress, type ProviderKind, type SignInClaims } from '../../lib/company-sign-in.ts'
import type { PendingSignIn } from '../../lib/openid.ts'
import { createBoundedSet } from '../../lib/bounded-set.ts'
import type { AdmissionRefusal, SignInProvider } from '../../db/stores/sign-in-providers.ts'
import type { SessionVia } from '../../db/stores/sessions.ts'
import { PURPOSES, type Purpose } from './confirm.ts'
import { logPageEvent, pageData, requireSupporter, safeNext, sealedOnceCookie } from './pages.ts'
import { homeOf, OPEN, signInPage } from './sign-in.ts'
import { confirmingProvider } from './providers.ts'

// Staff sign in with the company's account (issue 73; docs/decisions.md, "Staff sign-in with the
// company's account"; lib/company-sign-in.ts). A button of the sign-in page posts here; the browser
// goes to the provider with the authorization code flow (PKCE, state and nonce, kept in a sealed
// cookie of this browser for ten minutes, bound to the site) and comes back to
// /login/provider/callback, where openid-client checks the answer and the ID token, and the
// provider's verified address or linked subject says who signs in (db/stores/sign-in-providers.ts).
// Sudo mode sends a person whose session came so back to the provider to sign in anew; the
// provider's back-channel logout ends the sessions it made.

/** The cookie that keeps a sign-in at a provider under way, and how long it lasts. */
const COOKIE = 'company_sign_in'
const PENDING_MS = 10 * 60_000

/** A sign-in at a provider under way, as its sealed cookie holds it. */
interface Pending extends PendingSignIn {
  site: number
  provider: number
  next: string
  /** A confirmation of sudo mode: for whom, and what for; null: a sign-in. */
  confirm: { user: number; reason: Purpose } | null
  /** When it began, by the service's clock (the ten minutes) and by the wall's (the provider's `auth_time` is of the world, as openid-client reads the ID token's times). */
  at: number
  wallAt: number
}

/** What the sign-in page says of each refusal. */
const REFUSALS: Record<AdmissionRefusal | 'unverified' | 'no_email' | 'not_workspace', string> = {
  not_workspace: "signed you in with an account outside your company's Google Workspace (a personal Google account, perhaps). Sign in with your work account.",
  no_email: "did not say your email address. Ask your administrator to let the application read it (the email scope).",
  unverified: 'says your email address is not verified. Verify it there, or ask your administrator.',
  disabled: 'signed you in, but your account here is switched off. Ask an administrator of this site.',
  not_staff: "signed you in, but you are not on this site's staff. Ask an administrator of this site to invite you.",
  customer: 'signed you in as a customer of this site: customers sign in on the support site.',
  linked_elsewhere: 'signed you in as another account than the one linked to your address here. Sign in there with your own account, or ask an administrator.',
}

const companySignInRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, signInProviders, companySignIn, secondFactors, sessions, clock } = fastify
  // A logout token is taken once (OpenID Connect Back-Channel Logout 1.0, 2.6: its jti).
  const logoutsSeen = createBoundedSet<string>(10_000)

  const siteBase = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)
  const sitePath = (request: FastifyRequest) => new URL(siteBase(request)).pathname
  /** Where every provider sends the browser back: the redirect address registered with the application. */
  const callback = (request: FastifyRequest) => `${siteBase(request)}/login/provider/callback`
  const pendingCookie = sealedOnceCookie<Pending>(COOKIE, siteBase)

  const refused = (request: FastifyRequest, reply: FastifyReply, status: number, error: string, next = '') => signInPage(request, reply, status, { error, next })

  /** Sends the browser to the provider's sign-in, with what it needs kept in a sealed cookie of this browser. */
  async function toProvider(request: FastifyRequest, reply: FastifyReply, provider: SignInProvider, next: string, confirm: Pending['confirm']) {
    const settings = signInProviders.settingsOf(provider)
    if (!settings) return refused(request, reply, 400, `${provider.name} is sealed under another server key: an administrator gives its client secret again.`, next)
    let started: Awaited<ReturnType<typeof companySignIn.start>>
    try {
      started = await companySignIn.start(settings, callback(request), { again: confirm !== null, ...(confirm && { loginHint: request.web.user!.email }) })
    } catch (error) {
      request.log.warn({ err: { message: (error as Error).message }, provider: provider.id }, 'could not reach an identity provider to sign in')
      return refused(request, reply, 502, `${provider.name} could not be reached. Try again in a while; if it lasts, tell an administrator of this site.`, next)
    }
    const pending: Pending = { ...started.pending, site: request.web.site.id, provider: provider.id, next, confirm, at: clock(), wallAt: Date.now() }
    pendingCookie.put(request, reply, pending, PENDING_MS)
    return reply.redirect(started.url, 303)
  }

  /** A provider of this site by the id a form or an address gives, or undefined. */
  async function providerOf(request: FastifyRequest, value: unknown): Promise<SignInProvider | undefined> {
    // An id column holds at most 2^31 - 1 (PostgreSQL's integer).
    const id = typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : NaN
    return id >= 1 && id <= 2_147_483_647 ? signInProviders.find(request.web.site.id, id) : undefined
  }

  fastify.post('/login/provider', { preHandler: fastify.csrfProtection, config: OPEN }, async (request, reply) => {
    const body = (request.body ?? {}) as { provider?: unknown; next?: unknown }
    const next = safeNext(body.next, sitePath(request)) ?? ''
    // Another site's provider is not this site's: the same answer as one that never was.
    const provider = await providerOf(request, body.provider)
    if (!provider) return refused(request, reply, 404, 'This site has no such sign-in provider. Choose one of the buttons below.', next)
    return toProvider(request, reply, provider, next, null)
  })

  // Sudo mode for a session the provider made: the person signs in there anew (routes/web/confirm.ts).
  fastify.post('/confirm/provider', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ...OPEN, ownAccount: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as { for?: unknown; next?: unknown }
    const user = request.web.user!
    const provider = await confirmingProvider(request)
    if (!provider) return reply.redirect(`${siteBase(request)}/confirm`, 303)
    const reason = typeof body.for === 'string' && Object.hasOwn(PURPOSES, body.for) ? (body.for as Purpose) : 'token'
    return toProvider(request, reply, provider, safeNext(body.next, sitePath(request)) ?? '', { user: user.id, reason })
  })

  fastify.get('/login/provider/callback', { config: OPEN }, async (request, reply) => {
    // Opened and cleared: an answer is never taken twice.
    const pending = pendingCookie.take(request, reply)
    const query = request.query as { state?: unknown; error?: unknown; error_description?: unknown }
    const again = 'Start again with its button.'
    // Nothing asked for in this browser, or an answer to another sign-in (its state): never taken,
    // so a link made by someone else cannot sign this browser in as them.
    if (!pending || pending.site !== request.web.site.id || query.state !== pending.state) {
      return refused(request, reply, 400, `This answer of a sign-in provider was not asked for in this browser. ${again}`)
    }
    const { next } = pending
    if (pending.at + PENDING_MS < clock()) return refused(request, reply, 400, `The sign-in at the provider took longer than ${PENDING_MS / 60_000} minutes. ${again}`, next)
    const provider = await signInProviders.find(request.web.site.id, pending.provider)
    const settings = provider && signInProviders.settingsOf(provider)
    if (!provider || !settings) return refused(request, reply, 400, 'That sign-in provider is no longer one of this site. Choose one of the buttons below.', next)
    if (typeof query.error === 'string') {
      const words = typeof query.error_description === 'string' ? `: ${query.error_description.replace(/\s+/g, ' ').slice(0, 300)}` : ''
      return refused(request, reply, 401, `${provider.name} did not sign you in (${query.error.slice(0, 100)}${words}). ${again}`, next)
    }
    let claims: SignInClaims
    try {
      claims = await companySignIn.finish(settings, new URL(`${callback(request)}${request.url.slice(request.url.indexOf('?'))}`), pending)
    } catch (error) {
      // A wrong nonce, an ID token for another application, a code taken already: openid-client's words, for the log.
      const message = (error as Error).message
      request.log.warn({ err: { message, code: (error as { code?: unknown }).code }, provider: provider.id }, "an identity provider's answer was refused")
      await logPageEvent(request, 'sign_in_failed', { with: provider.name, refused: message.slice(0, 200) }, pending.confirm?.user ?? null)
      return refused(request, reply, 401, `${provider.name}'s answer could not be accepted. ${again}`, next)
    }
    if (pending.confirm) return confirmed(request, reply, provider, claims, pending)

    const address = verifiedAddress(claims, provider.kind as ProviderKind)
    if ('refused' in address) {
      await logPageEvent(request, 'sign_in_failed', { with: provider.name, refused: address.refused }, null)
      return refused(request, reply, 403, `${provider.name} ${REFUSALS[address.refused]}`, next)
    }
    const admission = await signInProviders.admit(provider, claims.sub, address.address, newcomerName(claims, address.address), { address: request.ip })
    if (admission.kind === 'refused') {
      await logPageEvent(request, 'sign_in_failed', { with: provider.name, refused: admission.reason }, admission.userId)
      return refused(request, reply, 403, `${provider.name} ${REFUSALS[admission.reason]}`, next)
    }
    const { userId } = admission
    if (admission.joined) await logPageEvent(request, 'staff_added', { by: provider.name, role: admission.joined }, userId)
    if (admission.linked) await logPageEvent(request, 'provider_linked', { with: provider.name }, userId)
    const via: SessionVia = { providerId: provider.id, sid: typeof claims.sid === 'string' ? claims.sid : null, mfa: provider.trustMfa && mfaAtProvider(claims) }
    // Our own second factor, unless the site trusts the provider's and it says it asked one.
    if (!via.mfa && (await secondFactors.has(userId))) {
      reply.holdSignIn(request, userId, via)
      return reply.redirect(`${siteBase(request)}/login/second_step${next ? `?next=${encodeURIComponent(next)}` : ''}`, 303)
    }
    await reply.signIn(request, userId, via)
    await logPageEvent(request, 'sign_in_succeeded', { with: provider.name, ...(via.mfa && { second_factor: provider.name }) }, userId)
    return reply.redirect(next ? `${new URL(siteBase(request)).origin}${next}` : await homeOf(request, userId), 303)
  })

  /** The end of sudo mode at the provider: the same person, signed in anew there just now. */
  async function confirmed(request: FastifyRequest, reply: FastifyReply, provider: SignInProvider, claims: SignInClaims, pending: Pending) {
    const user = request.web.user
    const back = pending.next || `${sitePath(request)}/profile/api_tokens`
    const subject = user && (await signInProviders.subjectOf(provider.id, user.id))
    if (!user || user.id !== pending.confirm!.user || subject !== claims.sub || !freshAuthentication(claims, pending.wallAt)) {
      if (user) await logPageEvent(request, 'sign_in_failed', { with: provider.name, step: 'confirm it is you', refused: subject !== claims.sub ? 'another account' : 'not signed in anew' })
      const data = pageData(request, reply, { title: 'That did not work', message: `${provider.name} did not sign you in again as yourself, so nothing was confirmed. Go back and try again.` })
      return reply.page('error', data, 403)
    }
    await sessions.confirm(request.web.sessionId!)
    await logPageEvent(request, 'confirmed', { for: PURPOSES[pending.confirm!.reason], with: provider.name })
    return reply.redirect(`${new URL(siteBase(request)).origin}${back}`, 303)
  }

  // Back-channel logout (OpenID Connect Back-Channel Logout 1.0): the provider posts a signed
  // logout token; the sessions it names end. No cookie, no CSRF token: the token's signature is the proof.
  fastify.post('/login/provider/:provider/logout', { config: OPEN }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    const provider = await providerOf(request, (request.params as { provider: string }).provider)
    const settings = provider && signInProviders.settingsOf(provider)
    const token = (request.body as { logout_token?: unknown } | undefined)?.logout_token
    if (!provider || !settings) return reply.code(404).send({ error: 'invalid_request', error_description: 'no such provider on this site' })
    if (typeof token !== 'string' || token.length > 16_384) return reply.code(400).send({ error: 'invalid_request', error_description: 'logout_token is required' })
    let order: Awaited<ReturnType<typeof companySignIn.logout>>
    try {
      order = await companySignIn.logout(settings, token)
    } catch (error) {
      request.log.warn({ err: { message: (error as Error).message }, provider: provider.id }, 'a back-channel logout token was refused')
      return reply.code(400).send({ error: 'invalid_request', error_description: 'the logout token is not valid' })
    }
    const seen = `${provider.id} ${order.jti}`
    if (logoutsSeen.has(seen)) return reply.code(400).send({ error: 'invalid_request', error_description: 'this logout token was used already' })
    logoutsSeen.add(seen)
    const ended = await signInProviders.endSessions(provider, order)
    request.log.info({ provider: provider.id, ended: ended.length }, 'a back-channel logout ended sessions')
    for (const userId of new Set(ended)) await logPageEvent(request, 'signed_out_by_provider', { with: provider.name, sessions: ended.filter((u) => u === userId).length }, userId)
    return reply.code(200).send()
  })
}

export default companySignInRoutes
