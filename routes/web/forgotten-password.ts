import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { LINK_MINUTES } from '../../db/stores/customer-links.ts'
import { isMailAddress } from '../../lib/mail.ts'
import { logPageEvent, pageData } from './pages.ts'
import { COMPANY_ONLY, signInPage } from './sign-in.ts'
import { isStaffRole } from '../../db/stores/staff.ts'

// A forgotten password (docs/decisions.md, "A forgotten password"): "Forgot your password?" on the
// sign-in page mails a supporter of the site a link (valid LINK_MINUTES, once, for this site only,
// kept as a keyed digest: db/stores/customer-links.ts). The page says the same whatever the address
// (known, unknown, a customer's), and the limits are the customer links' (per address and per
// client). The link opens a page whose button follows it (a mail scanner opening every link uses
// nothing up); following it signs the supporter in, through the second step of sign-in when they
// have a second factor, and lands on their profile's password form, which a fresh sign-in may use:
// setting the password there ends their other sessions, is logged and mailed (routes/web/profile.ts).

/** Open before a second factor the site requires, as signing in is (routes/web/enrollment.ts). */
const OPEN = { beforeSecondFactor: true }

const forgottenPasswordRoutes: FastifyPluginAsync = async (fastify) => {
  const { customerLinks, secondFactors, urls } = fastify
  const base = (request: FastifyRequest) => urls.siteWeb(request.web.site.permalink)
  const form = { preHandler: fastify.csrfProtection, config: OPEN }

  function page(request: FastifyRequest, reply: FastifyReply, status: number, extra: { email?: string; sent?: string | null; error?: string | null }) {
    return reply.page('forgot_password', pageData(request, reply, { title: 'Forgot your password?', email: '', sent: null, error: null, minutes: LINK_MINUTES, ...extra }), status)
  }

  fastify.get('/login/forgot', { config: OPEN }, async (request, reply) => page(request, reply, 200, {}))

  fastify.post('/login/forgot', form, async (request, reply) => {
    const given = (request.body as { email?: unknown } | undefined)?.email
    const email = typeof given === 'string' ? given.trim().toLowerCase() : ''
    if (!isMailAddress(email)) return page(request, reply, 400, { email: typeof given === 'string' ? given.slice(0, 254) : '', error: 'Enter the email address you sign in with.' })
    const site = request.web.site
    const asked = await customerLinks.ask({
      siteId: site.id,
      purpose: 'password_reset',
      email,
      address: request.ip,
      mail: (value, siteName) => ({
        subject: `Set a new password for ${siteName}`,
        text: [
          `Someone (we hope you) asked to set a new password for your account ${email} on ${siteName}. Open this link within ${LINK_MINUTES} minutes:`,
          `${base(request)}/login/reset/${value}`,
          'It works once, and asks for your second factor when you have one. If you did not ask for it, ignore this mail: your password stays as it is.',
        ].join('\n\n'),
      }),
    })
    if (asked.kind === 'limited') {
      reply.header('retry-after', String(asked.retryAfter))
      return page(request, reply, 429, { email, error: `Too many links were asked for from here or for this address. Try again in ${Math.ceil(asked.retryAfter / 60)} minutes.` })
    }
    // The same answer whether the address is known or not.
    return page(request, reply, 200, { sent: email })
  })

  // The mailed link opens a page with a button; only its POST follows the link.
  fastify.get('/login/reset/:value', { config: OPEN }, async (request, reply) => {
    return reply.page('reset_link', pageData(request, reply, { title: 'Set a new password', action: request.url.split('?')[0] }))
  })

  fastify.post('/login/reset/:value', form, async (request, reply) => {
    const { value } = request.params as { value: string }
    const followed = await customerLinks.follow(request.web.site.id, 'password_reset', value)
    if (followed.kind !== 'signed_in') {
      const why = followed.kind === 'expired' ? `It was valid for ${LINK_MINUTES} minutes.` : followed.kind === 'used' ? 'It was used already: each link works once.' : 'It is not a link of this site, or it was changed.'
      return page(request, reply, 410, { error: `This link no longer works. ${why} Ask for a new one below.` })
    }
    // The staff of a site that signs them in with the company's account only: a mailed link is no way around it.
    if (request.web.site.companySignInOnly && isStaffRole(await fastify.users.role(request.web.site.id, followed.userId))) {
      await logPageEvent(request, 'sign_in_failed', { with: 'password reset link', refused: "the company's account only" }, followed.userId)
      return signInPage(request, reply, 403, { error: COMPANY_ONLY })
    }
    const next = `${new URL(base(request)).pathname}/profile?forgotten=1`
    // With a second factor, the link is the first of two steps, as a password is.
    if (await secondFactors.has(followed.userId)) {
      reply.holdSignIn(request, followed.userId)
      return reply.redirect(`${base(request)}/login/second_step?next=${encodeURIComponent(next)}`, 303)
    }
    await reply.signIn(request, followed.userId)
    await logPageEvent(request, 'sign_in_succeeded', { with: 'password reset link' }, followed.userId)
    return reply.redirect(`${base(request)}/profile?forgotten=1#password`, 303)
  })
}

export default forgottenPasswordRoutes
