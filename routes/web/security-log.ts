import type { FastifyPluginAsync } from 'fastify'
import { securityKinds, type SecurityEvent, type SecurityKind } from '../../db/stores/security-log.ts'
import { pageData, signInRedirect, wholeNumber } from './pages.ts'
import { shownMoment } from '../../lib/clock.ts'

// {site_url}/profile/security_log: the signed-in person's own security log (issue 18;
// docs/decisions.md, "Token lifecycle"), newest first, 50 a page, filtered by kind. Every event of
// the account is shown, whichever site it happened on: the account is one across sites.

export const EVENTS_PER_PAGE = 50

/** What each kind is called on the page. */
export const KIND_LABELS: Record<SecurityKind, string> = {
  token_created: 'Token created',
  token_revoked: 'Token revoked',
  token_new_address: 'Token used from a new address',
  legacy_token_reset: 'Legacy token reset',
  sign_in_succeeded: 'Signed in',
  sign_in_failed: 'Sign-in failed',
  lockout: 'Locked out',
  staff_added: 'Added to the staff',
  staff_removed: 'Removed from the staff',
  account_disabled: 'Account disabled',
  password_set: 'Password set',
  oauth_authorized: 'Application authorized',
  oauth_revoked: 'Application revoked',
  administrator_added: 'Made an administrator',
  administrator_removed: 'No longer an administrator',
  policy_changed: 'Token policy changed',
  token_shortened: 'Token lifetime shortened',
  confirmed: 'Confirmed it was them (sudo mode)',
  factor_added: 'Second factor added',
  factor_removed: 'Second factor removed',
  recovery_code_used: 'Recovery code used',
  codes_unlocked: 'Codes unlocked by an operator',
  second_factor_failed: 'Second factor failed',
  role_changed: 'Role on the staff changed',
  provider_linked: "Linked to the company's account",
  signed_out_by_provider: "Signed out by the company's identity provider",
}

const ACTORS: Record<string, string> = {
  page: 'on the pages',
  cli: 'by the command line',
  api: 'through the API',
  leak_report: 'by a leak report',
  administrator: 'by an administrator',
  first_run: 'at the first start',
}

/** A moment of a detail (a token's expiry, say), as every page shows moments; any other value as it is. */
const ISO_MOMENT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?Z$/
const shownValue = (value: unknown) => (typeof value === 'string' && ISO_MOMENT.test(value) ? shownMoment(new Date(value)) : String(value))

/** One event as a line of the page: what, when, from where, by whom, and its details as text. */
export function describeEvent(event: SecurityEvent) {
  const details = Object.entries(event.detail)
    .filter(([, value]) => value !== null && value !== '')
    .map(([name, value]) => `${name.replace(/_/g, ' ')}: ${shownValue(value)}`)
  return {
    what: KIND_LABELS[event.kind],
    kind: event.kind,
    when: shownMoment(event.createdAt),
    from: event.address ?? '',
    by: event.actor ? (ACTORS[event.actor] ?? event.actor) : '',
    details: details.join(' · '),
  }
}

const securityLogRoutes: FastifyPluginAsync = async (fastify) => {
  fastify.get('/profile/security_log', async (request, reply) => {
    if (!request.web.user) return signInRedirect(request, reply)
    const query = request.query as { kind?: unknown; page?: unknown }
    const kind = typeof query.kind === 'string' && (securityKinds as readonly string[]).includes(query.kind) ? (query.kind as SecurityKind) : undefined
    const page = wholeNumber(query.page, 6) ?? 1
    const { total, events } = await fastify.securityLog.list({
      userId: request.web.user.id,
      // Never another site's events: a site's pages are seen by whoever that site lets in.
      seenFrom: request.web.site.id,
      kinds: kind ? [kind] : undefined,
      offset: (page - 1) * EVENTS_PER_PAGE,
      limit: EVENTS_PER_PAGE,
    })
    const pages = Math.max(1, Math.ceil(total / EVENTS_PER_PAGE))
    const link = (n: number) => `${fastify.urls.siteWeb(request.web.site.permalink)}/profile/security_log?${new URLSearchParams({ ...(kind ? { kind } : {}), page: String(n) })}`
    return reply.page(
      'security_log',
      pageData(request, reply, {
        title: 'Security log',
        events: events.map(describeEvent),
        kinds: Object.entries(KIND_LABELS).map(([value, label]) => ({ value, label, selected: value === kind })),
        total,
        page,
        pages,
        previous: page > 1 ? link(page - 1) : null,
        next: page < pages ? link(page + 1) : null,
      }),
    )
  })
}

export default securityLogRoutes
