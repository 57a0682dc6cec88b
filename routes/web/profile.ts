import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { logPageEvent, pageData, signInRedirect } from './pages.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { enrollmentDue } from './enrollment.ts'
import { factorsOf } from './second-factors.ts'

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

  async function render(request: FastifyRequest, reply: FastifyReply, notice: string | null) {
    const user = request.web.user!
    const staff = isStaffRole(user.role)
    // Until a second factor the site requires is added, the page offers only that (routes/web/enrollment.ts).
    const due = await enrollmentDue(request)
    const legacyToken = staff && !due ? await legacy(user.id) : null
    const twoFactor = staff ? await factorsOf(request) : null
    return reply.page('profile', pageData(request, reply, { title: 'Your profile', legacy: legacyToken, twoFactor, notice, due }))
  }

  fastify.get('/profile', { config: { beforeSecondFactor: true } }, async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    const query = request.query as { reset?: unknown; factor?: unknown }
    return render(request, reply, NOTICES[`reset=${String(query.reset)}`] ?? NOTICES[`factor=${String(query.factor)}`] ?? null)
  })

  fastify.get('/profile/reset_api_token', async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    if (!isStaffRole(request.web.user.role)) return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile`, 303)
    return reply.page('reset_api_token', pageData(request, reply, { title: 'Reset API Token' }))
  })

  fastify.post('/profile/reset_api_token', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    if (!isStaffRole(request.web.user.role)) return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile`, 303)
    await users.legacyTokens.reset(request.web.user.id)
    await logPageEvent(request, 'legacy_token_reset')
    // Redirected, so that a reload shows the page again instead of resetting once more.
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?reset=1`, 303)
  })
}

export default profileRoutes
