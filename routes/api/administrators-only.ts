import type { FastifyError, FastifyInstance } from 'fastify'
import { strictValidatorCompiler } from '../../plugins/http/validation.ts'
import { httpError } from './discussions/http-errors.ts'

/** The routes of this plugin validate bodies strictly and answer the stores' refusals as the discussion routes answer them. */
export function answeredAsDiscussions(fastify: FastifyInstance): void {
  fastify.setValidatorCompiler(strictValidatorCompiler)
  fastify.setErrorHandler((error: FastifyError) => {
    throw httpError(error)
  })
}

/**
 * The routes of this plugin answer the site's administrators only (`403` to anyone else, whatever
 * credential they sent), after the credential is checked; `what` completes "Only administrators of
 * this site can read or change ...". With `strict`, bodies are validated strictly and the stores'
 * refusals answered as the discussion routes answer them.
 */
export function administratorsOnly(fastify: FastifyInstance, what: string, { strict = false } = {}): void {
  if (strict) answeredAsDiscussions(fastify)
  fastify.addHook('preHandler', async (request) => {
    const { site, user } = request.auth!
    if (!(await fastify.users.isAdministrator(site.id, user.id))) {
      throw Object.assign(new Error(`Only administrators of this site can read or change ${what}.`), { statusCode: 403, code: 'forbidden' })
    }
  })
}
