import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { logPageEvent, pageData, signInRedirect } from './pages.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { enrollmentDue } from './enrollment.ts'
import { factorsOf } from './second-factors.ts'
import { confirmedRecently, confirmFirst } from './confirm.ts'

const day = (date: Date) => date.toISOString().slice(0, 10)

/** What the profile says after an action that comes back to it. */
const NOTICES: Record<string, string> = {
  'reset=1': 'Your legacy API token was reset. The old one no longer works; the new one expires in a year.',
  'factor=totp': 'The authenticator app is added. Signing in now asks for one of its codes after your password.',
  'factor=passkey': 'The passkey is added. Signing in now asks for a second factor after your password, and the passkey can sign you in by itself.',
  'factor=removed': 'The second factor is removed.',
}

/** {site_url}/profile: who you are, and the legacy account token with its Reset API Token action. */
const profileRoutes: FastifyPluginAsync = async (fastify) => {
  const { users, urls, clock } = fastify

  async function legacy(userId: number) {
    try {
      const token = await users.legacyTokens.current(userId)
      return { value: token.value, expires: day(token.expiresAt), expired: token.expiresAt.getTime() <= clock(), error: null }
    } catch (error) {
      // A copy sealed under another server key cannot be shown; the page says so and offers a reset.
      if (!(error instanceof StoreError)) throw error
      return { error: `Your legacy API token cannot be shown here: ${error.message}.` }
    }
  }

  /**
   * Whether the account-wide legacy token may be shown or reset here: not while any site where the
   * person is staff holds them for a second factor (it opens every such site: plugins/auth/site-rules.ts),
   * and only after a recent sign-in or confirmation (routes/web/confirm.ts), as a new personal token.
   */
  async function legacyTokenState(request: FastifyRequest): Promise<'held' | 'confirm' | 'shown'> {
    const user = request.web.user!
    const required = (await users.staffSites(user.id)).some((site) => site.secondFactorRequired)
    if (required && !(await fastify.secondFactors.has(user.id))) return 'held'
    return confirmedRecently(request) ? 'shown' : 'confirm'
  }

  async function render(request: FastifyRequest, reply: FastifyReply, notice: string | null) {
    const user = request.web.user!
    const staff = isStaffRole(user.role)
    // Until a second factor the site requires is added, the page offers only that (routes/web/enrollment.ts).
    const due = await enrollmentDue(request)
    const state = staff && !due ? await legacyTokenState(request) : null
    const legacyToken = state === 'shown' ? await legacy(user.id) : state === null ? null : { state }
    const twoFactor = staff ? await factorsOf(request) : null
    const confirm = `${urls.siteWeb(request.web.site.permalink)}/confirm?for=legacy&next=${encodeURIComponent(`${new URL(urls.siteWeb(request.web.site.permalink)).pathname}/profile`)}`
    return reply.page('profile', pageData(request, reply, { title: 'Your profile', legacy: legacyToken, twoFactor, notice, due, confirm }))
  }

  /** preHandler of the reset: a supporter only, not held, and confirmed recently. */
  async function mayReset(request: FastifyRequest, reply: FastifyReply) {
    if (!request.web.user) return signInRedirect(request, reply)
    const profile = `${urls.siteWeb(request.web.site.permalink)}/profile`
    if (!isStaffRole(request.web.user.role)) return reply.redirect(profile, 303)
    const state = await legacyTokenState(request)
    if (state === 'held') return reply.redirect(profile, 303)
    if (state === 'confirm') return confirmFirst(request, reply, 'legacy', '/profile/reset_api_token')
  }

  fastify.get('/profile', { config: { beforeSecondFactor: true } }, async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    const query = request.query as { reset?: unknown; factor?: unknown }
    return render(request, reply, NOTICES[`reset=${String(query.reset)}`] ?? NOTICES[`factor=${String(query.factor)}`] ?? null)
  })

  fastify.get('/profile/reset_api_token', { preHandler: mayReset }, async (request, reply) => {
    return reply.page('reset_api_token', pageData(request, reply, { title: 'Reset API Token' }))
  })

  fastify.post('/profile/reset_api_token', { preHandler: [fastify.csrfProtection, mayReset] }, async (request, reply) => {
    await users.legacyTokens.reset(request.web.user!.id)
    await logPageEvent(request, 'legacy_token_reset')
    // Redirected, so that a reload shows the page again instead of resetting once more.
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?reset=1`, 303)
  })
}

export default profileRoutes
