import type { FastifyReply, FastifyRequest } from 'fastify'
import { unavailableStore, type Unavailable } from '../../lib/database-errors.ts'
import { unstorableTextCode } from '../../lib/nul.ts'

// How the API and the pages answer a database error that is not the request's fault: "not now"
// (lib/database-errors.ts) is a 503 with Retry-After; text the database cannot store (lib/nul.ts)
// is the request's 400, logged by its code only.

/**
 * For an error that means "not now": logs it, sets 503 and Retry-After on the reply and returns
 * what to tell the client (the API sends the body, the pages a page with its message); else null.
 */
export function answerUnavailable(error: unknown, request: FastifyRequest, reply: FastifyReply): Unavailable | null {
  const unavailable = unavailableStore(error)
  if (!unavailable) return null
  request.log.warn({ code: unavailable.code }, 'database unavailable')
  reply.code(503).header('retry-after', String(unavailable.retryAfter))
  return unavailable
}

/**
 * For an error of text the database cannot store: logs a warning with the code only (the driver's
 * message and drizzle's carry the query's parameters, the value itself) and says true; else false.
 */
export function refusedUnstorableText(error: unknown, request: FastifyRequest): boolean {
  const code = unstorableTextCode(error)
  if (!code) return false
  request.log.warn({ code }, 'refused text the database cannot store (U+0000)')
  return true
}
