import type { FastifyInstance } from 'fastify'
import type { CredentialCheck } from '../types.ts'

export { REMEMBER_MS } from '../password-verifier.ts'

/**
 * `Authorization: Basic` with email and password: the account, read and write, on a site where it
 * is staff. The check itself, with its slow-down and memory, is fastify.passwords.
 */
export function passwordCheck({ users, passwords }: FastifyInstance): CredentialCheck<{ email: string; password: string }> {
  return async ({ email, password }, site, request) => {
    const verdict = await passwords.verify(email, password, request.ip)
    if (verdict.kind !== 'verified') return verdict
    if (!site) return { kind: 'invalid_password' }
    const { user } = verdict
    if (users.role(site.id, user.id) !== 'supporter') return { kind: 'staff_only' }
    return { method: 'password', site, user: { id: user.id, email: user.email, name: user.name }, access: 'write', viaQuery: false }
  }
}
