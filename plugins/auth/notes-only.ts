import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { READ_METHODS } from './checks/personal-token.ts'

// A collaborator of a site (docs/decisions.md, "Collaborators") reads what its staff reads and
// writes internal notes only, whatever door they came in by (a personal or OAuth token, the legacy
// token, a password, a multipass: each check tells `request.auth.notesOnly`) and whatever access
// the credential has. Refused by default: a write is let through only by a route that says which of
// its bodies are a note (`notesOnly` in its config). The MCP endpoint's tools are requests to these
// routes with the caller's credential (routes/api/mcp/index.ts), so they are refused here too.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which bodies of this write a collaborator may send: the notes among them. */
    notesOnly?: (body: unknown) => boolean
  }
}

export const NOTES_ONLY_MESSAGE = 'Collaborators of this site write internal notes only: a reply to the customer or any other change is left to its supporters.'

/** Whether the authenticated request may go on: anything but a collaborator's write other than a note. */
export function mayWrite(request: Pick<FastifyRequest, 'auth' | 'method' | 'body' | 'routeOptions'>): boolean {
  if (!request.auth?.notesOnly || READ_METHODS.has(request.method)) return true
  const { notesOnly, checksWriteAccess } = request.routeOptions.config
  // The MCP endpoint is authenticated as a read: its tools call the routes, which decide.
  if (checksWriteAccess) return true
  return notesOnly !== undefined && notesOnly(request.body)
}

/** preHandler of the authenticated API: after the body is read (a note is told by its body), before any route or stored idempotent answer. */
export default fp(
  async (fastify) => {
    // A hook with a callback, not async: no promise per request for a check of a flag.
    fastify.addHook('preHandler', (request, _reply, done) => {
      done(mayWrite(request) ? undefined : Object.assign(new Error(NOTES_ONLY_MESSAGE), { statusCode: 403, code: 'forbidden' }))
    })
  },
  { name: 'notes-only', fastify: '5.x' },
)
