import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { logPageEvent, pageData, signInRedirect } from './pages.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { factorsOf } from './second-factors.ts'

const day = (date: Date) => date.toISOString().slice(0, 10)

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
    const legacyToken = staff ? await legacy(user.id) : null
    const twoFactor = staff ? await factorsOf(request) : null
    return reply.page('profile', pageData(request, reply, { title: 'Your profile', legacy: legacyToken, twoFactor, notice }))
  }

  fastify.get('/profile', async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    const query = request.query as { reset?: unknown; factor?: unknown }
    const notice =
      query.reset === '1'
        ? 'Your legacy API token was reset. The old one no longer works; the new one expires in a year.'
        : query.factor === 'added'
          ? 'The authenticator app is added. Signing in now asks for one of its codes after your password.'
          : query.factor === 'removed'
            ? 'The second factor is removed.'
            : null
    return render(request, reply, notice)
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
