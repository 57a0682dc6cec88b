import type { User, UserStore } from '../../../db/stores/users.ts'
import type { PasswordVerifier } from '../password-verifier.ts'
import { accept, refuse, type CredentialCheck } from '../types.ts'

export interface PasswordDeps {
  verify: PasswordVerifier<User>['verify']
  staffRole: UserStore['staffRole']
  /** Whether the account has a second factor: then a password alone opens nothing on the API. */
  hasSecondFactor(userId: number): Promise<boolean>
}

/**
 * `Authorization: Basic` with email and password: the account, read and write, on a site where it
 * is staff. The check itself, with its budgets, slow-down and memory, is the password verifier.
 */
export function passwordCheck({ verify, staffRole, hasSecondFactor }: PasswordDeps): CredentialCheck<{ email: string; password: string }> {
  return async ({ email, password }, site, { ip }) => {
    const verdict = await verify(email, password, ip)
    if (verdict.kind !== 'verified') return refuse(verdict)
    if (!site) return refuse('invalid_password')
    const { user } = verdict
    const role = await staffRole(site.id, user.id)
    if (!role) return refuse('staff_only')
    // Told only to the one who knows the password: a wrong one is answered as wrong above.
    if (await hasSecondFactor(user.id)) return refuse('second_factor_required')
    return accept({ method: 'password', site, user: { id: user.id, email: user.email, name: user.name }, access: 'write', notesOnly: role === 'collaborator' })
  }
}
