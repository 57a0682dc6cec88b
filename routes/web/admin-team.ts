import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { INVITATION_DAYS, type InvitationLook } from '../../db/stores/invitations.ts'
import { shownMoment } from '../../lib/clock.ts'
import { hashPassword } from '../../lib/password.ts'
import { failureHeaders } from '../../plugins/auth/limits.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { requireConfirmed } from './confirm.ts'
import { logPageEvent, pageData, requireAdministrator, tooMany } from './pages.ts'
import { newPasswordProblem } from './profile.ts'
import { actorOf } from '../actor.ts'
import { changeStaff, invitationMail, ROLE_NAMES, ROLE_WORDS, type StaffChange } from '../team.ts'
import { staffRoles, type StaffRole } from '../../db/values.ts'

// The team on the web (issue 67; docs/decisions.md, "Invitations"): Administration -> Team lists
// the site's support staff (role, second factor, last sign-in) and its open invitations, and its
// administrators invite an address as a supporter or an administrator, send an invitation again or
// withdraw it. The invited person follows the mailed link to {site_url}/invitation/<link>: a
// newcomer chooses a name and a password; someone with an account proves it (their password, then
// their second factor when they have one, or being signed in as them), and joins; either lands on
// the queue. The link works once, for INVITATION_DAYS, on its own site, for the address it was sent to.

/** What the team page says after a change, by the query parameter that names who it was about. */
const NOTICES: Record<string, string> = {
  invited: '{who} is invited: the mail is on its way.',
  resent: 'The invitation to {who} is sent again, with a new link.',
  withdrawn: 'The invitation is withdrawn: its link no longer works.',
  administrator: '{who} is an administrator of this site now.',
  supporter: '{who} is a supporter now.',
  collaborator: '{who} is a collaborator now: they read the discussions and write internal notes only.',
  removed: '{who} is no longer on the staff: their pages and tokens for this site stop working now.',
}

/** Why a link no longer works, in words. */
const CLOSED: Record<Exclude<InvitationLook['kind'], 'open'>, string> = {
  invalid: 'It is not an invitation of this site, or it was changed.',
  used: 'It was used already: each invitation works once.',
  expired: `It was valid for ${INVITATION_DAYS} days. Ask an administrator to send it again.`,
  withdrawn: 'An administrator withdrew it, or sent a newer one.',
}

const adminTeamRoutes: FastifyPluginAsync = async (fastify) => {
  const { invitations, urls, passwords, authLimits, secondFactors } = fastify
  const base = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/team')] }

  async function teamPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const people = (await invitations.team(site.id)).map((p) => ({ ...p, lastSignIn: p.lastSignInAt ? shownMoment(p.lastSignInAt) : 'never', self: p.id === request.web.user!.id }))
    const open = (await invitations.open(site.id)).map((i) => ({ ...i, expires: shownMoment(i.expiresAt) }))
    return reply.page('admin_team', pageData(request, reply, { title: 'Team', people, open, roleNames: ROLE_NAMES, values: { email: '', role: 'supporter' }, notice: null, error: null, ...extra }), status)
  }

  fastify.get('/admin/team', { preHandler: requireAdministrator }, async (request, reply) => {
    const query = request.query as Record<string, unknown>
    const found = Object.keys(NOTICES).find((key) => typeof query[key] === 'string')
    const notice = found ? NOTICES[found]!.replace('{who}', query[found] as string) : null
    return teamPage(request, reply, 200, { notice })
  })

  fastify.post('/admin/team/invite', action, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const email = typeof body.email === 'string' ? body.email.trim() : ''
    const role: StaffRole = body.role === 'administrator' || body.role === 'collaborator' ? body.role : 'supporter'
    const inviter = request.web.user!
    try {
      await invitations.invite(request.web.site.id, { email, role, invitedBy: inviter.id }, invitationMail(fastify.urls, request.web.site.permalink, inviter.name, role), actorOf(request))
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return teamPage(request, reply, error.code === 'conflict' ? 409 : 400, { values: { email, role }, error: sentence(error.message) })
    }
    return reply.redirect(`${base(request)}/admin/team?invited=${encodeURIComponent(email.toLowerCase())}`, 303)
  })

  for (const [verb, done] of [['resend', 'resent'], ['withdraw', 'withdrawn']] as const) {
    fastify.post(`/admin/team/invitations/:id/${verb}`, action, async (request, reply) => {
      const raw = (request.params as { id: string }).id
      const id = /^[1-9]\d{0,9}$/.test(raw) ? Number(raw) : 0
      const site = request.web.site
      const open = (await invitations.open(site.id)).find((i) => i.id === id)
      const changed = open !== undefined && (verb === 'withdraw' ? await invitations.withdraw(site.id, id, actorOf(request)) : await invitations.resend(site.id, id, invitationMail(fastify.urls, site.permalink, request.web.user!.name, open.role), actorOf(request)))
      if (!changed) return teamPage(request, reply, 404, { error: 'This site has no open invitation of that number.' })
      return reply.redirect(`${base(request)}/admin/team?${done}=${verb === 'withdraw' ? '1' : encodeURIComponent(open.email)}`, 303)
    })
  }

  // Someone's role: administrator, supporter, collaborator, or off the staff (never one's own: another administrator does it).
  fastify.post('/admin/team/people/:id', action, async (request, reply) => {
    const raw = (request.params as { id: string }).id
    const given = (request.body as { change?: unknown } | undefined)?.change
    const change = [...staffRoles, 'remove'].find((c) => c === given) as StaffChange | undefined
    if (!/^[1-9]\d{0,9}$/.test(raw) || !change) return teamPage(request, reply, 400, { error: 'Choose someone of the team, and what to change.' })
    const person = (await invitations.team(request.web.site.id)).find((p) => p.id === Number(raw))
    try {
      await changeStaff(fastify, request.web.site, Number(raw), change, { ...actorOf(request), id: request.web.user!.id })
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return teamPage(request, reply, error.code === 'not_found' ? 404 : error.code === 'conflict' ? 409 : 403, { error: sentence(error.message) })
    }
    const done = change === 'remove' ? 'removed' : change
    return reply.redirect(`${base(request)}/admin/team?${done}=${encodeURIComponent(person!.email)}`, 303)
  })

  // The invited person's side: open before a second factor the site requires, as signing in is.
  const OPEN = { config: { beforeSecondFactor: true } }

  // An account with a password proves itself here even when signed in (a customer's mailed link
  // signs in without one): its password, then its second factor, after which this cookie (sealed,
  // ten minutes, for this invitation and this account) lets the signed-in person join.
  const PROVEN_COOKIE = 'invitation_proven'
  const provenCookie = (request: FastifyRequest) => ({ path: new URL(base(request)).pathname, httpOnly: true, sameSite: 'lax', secure: base(request).startsWith('https:'), signed: false }) as const
  const proven = (request: FastifyRequest, value: string, userId: number) => {
    const raw = request.cookies[PROVEN_COOKIE]
    const plain = raw === undefined ? null : fastify.secretBox.open(raw)
    const held = plain === null ? null : (JSON.parse(plain) as { digest: string; userId: number; until: number })
    return held !== null && held.digest === fastify.secretBox.digest(value) && held.userId === userId && held.until > fastify.clock()
  }

  /** How the person before the invitation takes it: joining as they are signed in, their account's password, a newcomer's, or not at all (signed in as someone else). */
  function modeOf(request: FastifyRequest, look: Extract<InvitationLook, { kind: 'open' }>, value: string) {
    const user = request.web.user
    if (user && user.email.toLowerCase() !== look.email) return 'other'
    if (!look.account?.hasPassword) return user ? 'join' : 'newcomer'
    return user && proven(request, value, user.id) ? 'join' : 'password'
  }

  async function invitationPage(request: FastifyRequest, reply: FastifyReply, look: InvitationLook, status = 200, error: string | null = null) {
    if (look.kind !== 'open') return reply.page('invitation', pageData(request, reply, { title: 'This invitation no longer works', closed: CLOSED[look.kind], error: null }), 410)
    const mode = modeOf(request, look, (request.params as { value: string }).value)
    return reply.page('invitation', pageData(request, reply, { title: `Join ${look.siteName}`, closed: null, look, roleWords: ROLE_WORDS[look.role], mode, action: request.url.split('?')[0], error }), mode === 'other' ? 403 : status)
  }

  fastify.get('/invitation/:value', OPEN, async (request, reply) => {
    return invitationPage(request, reply, await invitations.look(request.web.site.id, (request.params as { value: string }).value))
  })

  fastify.post('/invitation/:value', { preHandler: fastify.csrfProtection, ...OPEN }, async (request, reply) => {
    const { value } = request.params as { value: string }
    const site = request.web.site
    const look = await invitations.look(site.id, value)
    if (look.kind !== 'open') return invitationPage(request, reply, look)
    const body = (request.body ?? {}) as Record<string, unknown>
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : '')
    const mode = modeOf(request, look, value)

    /**
     * Signs in the person who took the invitation, and to the queue; on a site whose staff sign in
     * with the company's account only, to the sign-in page instead, where they do (their sessions on
     * the site ended with the invitation: their rights rose).
     */
    const welcome = async (userId: number, role: string) => {
      await logPageEvent(request, 'staff_added', { by: 'invitation', role }, userId)
      if (site.companySignInOnly) return reply.redirect(`${base(request)}/login`, 303)
      await reply.signIn(request, userId)
      return reply.redirect(`${base(request)}/discussions`, 303)
    }
    /** Takes the invitation for the account. */
    const join = async (userId: number) => {
      const taken = await invitations.accept(site.id, value, { userId }, { address: request.ip })
      if (taken.kind !== 'accepted') return invitationPage(request, reply, taken)
      return welcome(userId, taken.role)
    }

    if (mode === 'other') return invitationPage(request, reply, look)
    if (mode === 'join') {
      reply.clearCookie(PROVEN_COOKIE, provenCookie(request))
      return join(request.web.user!.id)
    }
    if (mode === 'password' && look.account) {
      // Proven by the account's password, within the sign-in's budgets; then its second factor.
      const verdict = await passwords.verify(look.email, text('password'), request.ip)
      if (verdict.kind === 'too_many_attempts' || verdict.kind === 'busy') {
        reply.headers({ ...failureHeaders(authLimits, request.ip), 'retry-after': String(verdict.retryAfter) })
        return invitationPage(request, reply, look, 429, tooMany(verdict.retryAfter))
      }
      if (verdict.kind !== 'verified' || verdict.user.id !== look.account.id) return invitationPage(request, reply, look, 401, 'That is not the password of this account.')
      if (await secondFactors.has(look.account.id)) {
        const held = { digest: fastify.secretBox.digest(value), userId: look.account.id, until: fastify.clock() + 10 * 60_000 }
        reply.setCookie(PROVEN_COOKIE, fastify.secretBox.seal(JSON.stringify(held)), { ...provenCookie(request), maxAge: 600 })
        reply.holdSignIn(request, look.account.id)
        return reply.redirect(`${base(request)}/login/second_step?next=${encodeURIComponent(new URL(`${base(request)}/invitation/${value}`).pathname)}`, 303)
      }
      return join(look.account.id)
    }
    // A newcomer (or an account made by mail without a password): a name and a password of their own.
    const name = text('name').trim()
    const problem = newPasswordProblem(text('password'), text('repeated'))
    if (problem) return invitationPage(request, reply, look, 400, problem)
    const passwordHash = await hashPassword(text('password'))
    try {
      // An account a mail sign-in made chooses its password with the invitation, in its transaction.
      const taken = await invitations.accept(site.id, value, look.account ? { userId: look.account.id, passwordHash } : { newcomer: { name, passwordHash } }, { address: request.ip })
      if (taken.kind !== 'accepted') return invitationPage(request, reply, taken)
      return welcome(taken.userId, taken.role)
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return invitationPage(request, reply, look, 400, sentence(error.message))
    }
  })
}

export default adminTeamRoutes
