import type { FastifyPluginAsync } from 'fastify'
import { AUDIT_THINGS, auditActions } from '../../db/stores/audit.ts'
import { shownMoment } from '../../lib/clock.ts'
import { cursorOf, positionOf } from '../../lib/cursors.ts'
import { AUDIT_PAGE } from '../api/audit-log.ts'
import { pageData, queryString, requireAdministrator } from './pages.ts'

// {site_url}/admin/record: the site's record of changes for its administrators (issue 67;
// docs/decisions.md, "The record of changes"), as the API's /<site>/audit_log has it: newest first,
// filtered by the kind of thing changed, a page at a time ("Older changes").

/** How the page names each kind of thing in its filter. */
const THING_NAMES: Record<string, string> = {
  team: 'Team and invitations',
  category: 'Categories',
  policy: 'Token policy',
  mailbox: 'Mailboxes',
  webhook: 'Webhooks',
  saved_reply: 'Saved replies',
  schedule: 'Business hours',
  discussion: 'Discussions deleted or restored',
}

/** A detail as one line of text: `name: before → after`, or `name: value`. */
export function shownDetail(detail: Record<string, unknown>): string[] {
  const shown = (v: unknown) => (v === null ? 'none' : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v))
  const { before, after, ...rest } = detail as { before?: Record<string, unknown>; after?: Record<string, unknown> }
  const lines = after ? Object.keys(after).map((k) => `${k}: ${shown(before?.[k])} → ${shown(after[k])}`) : []
  return [...lines, ...Object.entries(rest).map(([k, v]) => `${k}: ${shown(v)}`)]
}

const adminRecordRoutes: FastifyPluginAsync = async (fastify) => {
  fastify.get('/admin/record', { preHandler: requireAdministrator }, async (request, reply) => {
    const site = request.web.site
    const query = request.query as { action?: unknown; cursor?: unknown }
    const action = typeof query.action === 'string' && (AUDIT_THINGS.includes(query.action) || (auditActions as readonly string[]).includes(query.action)) ? query.action : undefined
    const before = positionOf('audit', typeof query.cursor === 'string' ? query.cursor : '', Number.MAX_SAFE_INTEGER) ?? Number.MAX_SAFE_INTEGER
    const rows = await fastify.securityLog.changes({ siteId: site.id, action, before, limit: AUDIT_PAGE + 1 })
    const page = rows.slice(0, AUDIT_PAGE)
    const older = rows.length > AUDIT_PAGE ? `${fastify.urls.siteWeb(site.permalink)}/admin/record${queryString({ action, cursor: cursorOf('audit', page.at(-1)!.id) })}` : null
    const lines = page.map((e) => ({ ...e, when: shownMoment(e.createdAt), how: e.via === 'cli' ? 'command line' : e.via === 'api' ? 'API' : 'pages', detail: shownDetail(e.detail) }))
    return reply.page('admin_record', pageData(request, reply, { title: 'Record', lines, things: Object.entries(THING_NAMES), action: action ?? '', older }))
  })
}

export default adminRecordRoutes
