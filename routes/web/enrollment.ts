import type { FastifyReply, FastifyRequest } from 'fastify'
import { isStaffRole } from '../../db/stores/staff.ts'
import { heldForSecondFactor } from '../../plugins/auth/site-rules.ts'

// A site whose policy requires a second factor of its support staff (docs/decisions.md, "Second
// factors"): until a supporter has one, signing in leads only to adding one. Every page of the
// site is closed to them except the routes marked `beforeSecondFactor` (signing in and out, the
// profile, adding a factor and confirming it is them before that, the assets): one rule at the
// door, so a page added later is closed too.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Open to a supporter who has yet to add the second factor the site requires. */
    beforeSecondFactor?: boolean
  }
}

/** Whether the signed-in person is support staff of a site that requires a second factor they do not have. */
export async function enrollmentDue(request: FastifyRequest): Promise<boolean> {
  const { site, user } = request.web
  // The API asks the same rule of the password and the legacy token (plugins/auth/site-rules.ts).
  // A session the company's identity provider made with its second factor, which the site trusts, has one (routes/web/company-sign-in.ts).
  return !!user && site.staffSecondFactor && !user.provider?.mfa && heldForSecondFactor(site, isStaffRole(user.role), await request.server.secondFactors.has(user.id))
}

/** preHandler of every page: a supporter who must add a second factor first is sent to the profile to add one. */
export async function secondFactorFirst(request: FastifyRequest, reply: FastifyReply) {
  if (request.routeOptions.config.beforeSecondFactor || !(await enrollmentDue(request))) return
  return reply.redirect(`${request.server.urls.siteWeb(request.web.site.permalink)}/profile`, 303)
}
