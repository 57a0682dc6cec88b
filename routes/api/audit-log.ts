import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import { AUDIT_THINGS, auditActions, type AuditEntry } from '../../db/stores/audit.ts'
import { cursorOf, positionOf } from '../../lib/cursors.ts'
import { InvalidRequest } from '../../plugins/http/validation.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { administratorsOnly } from './administrators-only.ts'
import { moment } from './discussions/views.ts'

// The site's record of changes through the API (issue 67; docs/decisions.md, "The record of
// changes"), for its administrators as Administration -> Record is: newest first, walked by cursor.

export const AUDIT_PAGE = 50

export const AuditLine = Type.Object({
  id: Type.Integer(),
  at: Type.String({ format: 'date-time' }),
  action: Type.Enum([...auditActions], { description: 'What changed: <thing>.<what>.' }),
  target: Type.String({ description: 'What it was done to, as it was named then: an address, a name, a discussion.' }),
  actor: Type.Object({
    id: Type.Union([Type.Integer(), Type.Null()], { description: "The person's account; null for the operator (or an account since deleted)." }),
    name: Type.String({ description: 'Their address as it was then, or "the operator".' }),
    via: Type.Enum(['page', 'api', 'cli', 'rule', 'service'], { description: "How: the pages, the API (MCP included), the command line, a rule of the site (its actor names it), or the service's own work (the site's retention)." }),
    address: Type.Union([Type.String(), Type.Null()], { description: 'The client address of the request; null at the command line.' }),
  }),
  detail: Type.Object({}, { additionalProperties: true, description: 'What changed: {before, after} of the fields that changed (each value text, a number, yes/no, a list or null), or what was made or removed. Never a secret.' }),
})

export const AuditListing = Type.Object({
  per_page: Type.Integer(),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'The cursor of the next (older) page, as in the Link header; null on the last page.' }),
  entries: Type.Array(AuditLine),
})

const things = [...AUDIT_THINGS, ...auditActions]
export const AuditQuery = Type.Object({
  action: Type.Optional(Type.Enum(things, { description: 'Only lines of this kind of thing (team, category, ...) or this action (team.invited, ...).' })),
  actor: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Only the changes this account made.' })),
  cursor: Type.Optional(Type.String({ maxLength: 100, description: 'Where the page starts: a next_cursor given before.' })),
})

export function auditLine(entry: AuditEntry): Static<typeof AuditLine> {
  return {
    id: entry.id,
    at: moment(entry.createdAt),
    action: entry.action,
    target: entry.target,
    actor: { id: entry.actorId, name: entry.actor, via: entry.via, address: entry.address },
    detail: entry.detail,
  }
}

const auditRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, 'its record of changes', { strict: true })
  fastify.get(
    '/:site/audit_log',
    {
      schema: {
        tags: ['team'],
        operationId: 'listAuditLog',
        summary: "The site's record of changes: who changed what, when and from where, newest first",
        params: SiteParams,
        querystring: AuditQuery,
        response: { 200: AuditListing, 400: InvalidRequestBody, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const { action, actor, cursor } = request.query
      const before = positionOf('audit', cursor ?? '', Number.MAX_SAFE_INTEGER)
      if (before === undefined) throw new InvalidRequest([{ field: 'cursor', problem: 'is not a cursor of this record' }])
      // One more than a page: whether there is a next one.
      const rows = await fastify.securityLog.changes({ siteId: site.id, action, actorId: actor, before, limit: AUDIT_PAGE + 1 })
      const page = rows.slice(0, AUDIT_PAGE)
      const next = rows.length > AUDIT_PAGE ? cursorOf('audit', page.at(-1)!.id) : null
      if (next) {
        const query = new URLSearchParams({ ...(action && { action }), ...(actor && { actor: String(actor) }), cursor: next })
        reply.header('link', `<${fastify.urls.site(site.permalink)}/audit_log?${query}>; rel="next"`)
      }
      return { per_page: AUDIT_PAGE, next_cursor: next, entries: page.map(auditLine) }
    },
  )
}

export default auditRoutes
