import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { logPageEvent, pageData, requireSupporter, signInRedirect, tellPerson } from './pages.ts'
import { RECOVERY_CODES } from '../../db/stores/second-factors.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { enrollmentDue } from './enrollment.ts'
import { factorsOf } from './second-factors.ts'
import { confirmedRecently, confirmFirst, requireConfirmed } from './confirm.ts'
import { hashPassword } from '../../lib/password.ts'
import { MIN_PASSWORD, nameProblem } from '../../db/stores/users.ts'
import { sentence } from '../api/discussions/http-errors.ts'

const day = (date: Date) => date.toISOString().slice(0, 10)

/** What the profile says after an action that comes back to it. */
const NOTICES: Record<string, string> = {
  'reset=1': 'Your legacy API token was reset. The old one no longer works; the new one expires in a year.',
  'factor=totp': 'The authenticator app is added. Signing in now asks for one of its codes after your password.',
  'factor=passkey': 'The passkey is added. Signing in now asks for a second factor after your password, and the passkey can sign you in by itself.',
  'factor=removed': 'The second factor is removed.',
  'name=1': 'Your name is changed. Customers and colleagues see it from now on.',
  'password=1': 'Your password is changed. Your other sessions were signed out; your tokens keep working.',
  'notifications=1': 'What you are mailed about is saved.',
  'forgotten=1': 'You are signed in with the link. Choose your new password below: your other sessions are signed out when you do.',
}

/** What the password form says of a new password that will not do; null when it will. */
export function newPasswordProblem(password: string, repeated: string): string | null {
  if (password.length < MIN_PASSWORD) return `A password has at least ${MIN_PASSWORD} characters.`
  if (password.length > MAX_PASSWORD) return `A password has at most ${MAX_PASSWORD} characters.`
  if (password !== repeated) return 'The two new passwords are not the same.'
  return null
}

/** Longer than anyone types, short enough that hashing it costs nothing more. */
const MAX_PASSWORD = 1024

/** {site_url}/profile: who you are, and the legacy account token with its Reset API Token action. */
const profileRoutes: FastifyPluginAsync = async (fastify) => {
  const { users, urls, clock, sessions } = fastify

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
  async function legacyTokenState(request: FastifyRequest): Promise<'held' | 'company' | 'confirm' | 'shown'> {
    const user = request.web.user!
    // A session of a site's identity provider does not reach what opens every site (routes/web/providers.ts).
    if (user.provider) return 'company'
    const required = (await users.staffSites(user.id)).some((site) => site.secondFactorRequired)
    if (required && !(await fastify.secondFactors.has(user.id))) return 'held'
    return confirmedRecently(request) ? 'shown' : 'confirm'
  }

  async function render(request: FastifyRequest, reply: FastifyReply, notice: string | null, status = 200, problems: { name?: string; password?: string } = {}) {
    const user = request.web.user!
    const staff = isStaffRole(user.role)
    // Until a second factor the site requires is added, the page offers only that (routes/web/enrollment.ts).
    const due = await enrollmentDue(request)
    const state = staff && !due ? await legacyTokenState(request) : null
    const legacyToken = state === 'shown' ? await legacy(user.id) : state === null ? null : { state }
    const twoFactor = staff ? await factorsOf(request) : null
    const notifications = staff ? await users.notifications(request.web.site.id, user.id) : undefined
    const confirm = `${urls.siteWeb(request.web.site.permalink)}/confirm?for=legacy&next=${encodeURIComponent(`${new URL(urls.siteWeb(request.web.site.permalink)).pathname}/profile`)}`
    return reply.page('profile', pageData(request, reply, { title: 'Your profile', legacy: legacyToken, twoFactor, notice, due, confirm, problems, staff, notifications }), status)
  }

  /** preHandler of the reset: a supporter only, not held, and confirmed recently. */
  async function mayReset(request: FastifyRequest, reply: FastifyReply) {
    if (!request.web.user) return signInRedirect(request, reply)
    const profile = `${urls.siteWeb(request.web.site.permalink)}/profile`
    if (!isStaffRole(request.web.user.role)) return reply.redirect(profile, 303)
    const state = await legacyTokenState(request)
    if (state === 'held' || state === 'company') return reply.redirect(profile, 303)
    if (state === 'confirm') return confirmFirst(request, reply, 'legacy', '/profile/reset_api_token')
  }

  fastify.get('/profile', { config: { beforeSecondFactor: true } }, async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    const query = request.query as { reset?: unknown; factor?: unknown; name?: unknown; password?: unknown; notifications?: unknown; forgotten?: unknown }
    const notice = ['reset', 'factor', 'name', 'password', 'notifications', 'forgotten'].map((key) => NOTICES[`${key}=${String(query[key as keyof typeof query])}`]).find(Boolean)
    const raw = (request.query as { recovery_left?: unknown }).recovery_left
    const left = typeof raw === 'string' && /^\d{1,2}$/.test(raw) ? Number(raw) : undefined
    const recovery = left === undefined ? null : `You signed in with a recovery code: ${left} of ${RECOVERY_CODES} ${left === 1 ? 'is' : 'are'} left. If you lost your authenticator app, add a new one below and make new recovery codes.`
    return render(request, reply, notice ?? recovery)
  })

  // A supporter's own name and password (issue 46): the name at once, the password after a recent
  // sign-in or confirmation with the password or a second factor (routes/web/confirm.ts), which
  // signs out every other session of theirs and is logged.
  fastify.post('/profile/name', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ownAccount: true, accountWide: true } }, async (request, reply) => {
    const given = (request.body as { name?: unknown }).name
    const name = typeof given === 'string' ? given : ''
    const problem = nameProblem(name)
    if (problem) return render(request, reply, null, 400, { name: sentence(problem) })
    await users.setName(request.web.user!.id, name)
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?name=1`, 303)
  })

  // What the supporter is mailed about on this site (db/stores/notifications.ts): checkboxes, so an unticked one is absent.
  fastify.post('/profile/notifications', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ownAccount: true } }, async (request, reply) => {
    const body = request.body as { new_discussions?: unknown; owned?: unknown; digest?: unknown }
    // The weekly digest goes to administrators only (db/stores/reports.ts): anyone else's choice of it is not kept.
    const digest = body.digest === 'yes' && request.web.user!.administrator
    await users.setNotifications(request.web.site.id, request.web.user!.id, { newDiscussions: body.new_discussions === 'yes', owned: body.owned === 'yes', digest })
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?notifications=1#notifications-title`, 303)
  })

  fastify.post('/profile/password', { preHandler: [fastify.csrfProtection, requireSupporter, requireConfirmed('password', '/profile')], config: { ownAccount: true, accountWide: true } }, async (request, reply) => {
    const body = request.body as { password?: unknown; repeated?: unknown }
    const password = typeof body.password === 'string' ? body.password : ''
    const problem = newPasswordProblem(password, typeof body.repeated === 'string' ? body.repeated : '')
    if (problem) return render(request, reply, null, 400, { password: problem })
    const user = request.web.user!
    await users.setPassword(user.email, await hashPassword(password))
    const ended = await sessions.destroyOthers(user.id, request.web.sessionId!)
    await logPageEvent(request, 'password_set', { other_sessions_ended: ended })
    await tellPerson(request, user.email, `Your password for ${request.web.site.name} was changed`, [`The password of your account ${user.email} was changed on the profile page; ${ended} other session${ended === 1 ? ' was' : 's were'} signed out.`])
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?password=1`, 303)
  })

  fastify.get('/profile/reset_api_token', { preHandler: mayReset, config: { accountWide: true } }, async (request, reply) => {
    return reply.page('reset_api_token', pageData(request, reply, { title: 'Reset API Token' }))
  })

  fastify.post('/profile/reset_api_token', { preHandler: [fastify.csrfProtection, mayReset], config: { accountWide: true } }, async (request, reply) => {
    await users.legacyTokens.reset(request.web.user!.id)
    await logPageEvent(request, 'legacy_token_reset')
    // Redirected, so that a reload shows the page again instead of resetting once more.
    return reply.redirect(`${urls.siteWeb(request.web.site.permalink)}/profile?reset=1`, 303)
  })
}

export default profileRoutes
