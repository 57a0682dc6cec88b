import type { FastifyRequest } from 'fastify'
import type { Actor } from '../db/stores/audit.ts'

/**
 * Who makes a change through this request, for the site's record of changes (db/stores/audit.ts):
 * the person of the API's credential, or of the page's session.
 */
export function actorOf(request: FastifyRequest): Actor {
  const person = request.auth?.user ?? request.web.user!
  return { id: person.id, name: person.email, via: request.auth ? 'api' : 'page', address: request.ip }
}
