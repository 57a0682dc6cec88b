import type { User, UserStore } from '../../../db/stores/users.ts'
import type { PasswordVerifier } from '../password-verifier.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

export interface PasswordDeps {
  verify: PasswordVerifier<User>['verify']
  isStaff: UserStore['isStaff']
}

/**
 * `Authorization: Basic` with email and password: the account, read and write, on a site where it
 * is staff. The check itself, with its budgets, slow-down and memory, is the password verifier.
 */
export function passwordCheck({ verify, isStaff }: PasswordDeps): CredentialCheck<{ email: string; password: string }> {
  return async ({ email, password }, site, { ip }) => {
    const verdict = await verify(email, password, ip)
    if (verdict.kind !== 'verified') return refuse(verdict)
    if (!site) return refuse('invalid_password')
    const { user } = verdict
    if (!(await isStaff(site.id, user.id))) return refuse('staff_only')
    return accept({ method: 'password', site, user: { id: user.id, email: user.email, name: user.name }, access: 'write' })
  }
}
