import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Access } from '../../db/schema.ts'
import type { Refusal } from './refusals.ts'
import type { Site } from '../../db/stores/sites.ts'

export interface Authenticated {
  method: 'personal_token' | 'legacy_token' | 'multipass' | 'password'
  site: Site
  user: { id: number; email: string; name: string }
  access: Access
  /** The credential came in the query string (auth= or sso=), so no answer may be stored. */
  viaQuery: boolean
}

/** What checking one credential gives: who the request acts as, or the refusal to send. */
export type CheckResult = Authenticated | Refusal

/**
 * Checks one kind of credential. `site` is undefined for an unknown permalink, which every check
 * answers exactly like a wrong credential of its kind, so no answer reveals whether a site exists.
 */
export type CredentialCheck<C> = (
  credential: C,
  site: Site | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
) => CheckResult | Promise<CheckResult>
