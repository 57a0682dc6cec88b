import type { Refusal } from './challenge.ts'
import { switchedOff } from '../../db/stores/site-policy.ts'
import type { Authenticated } from './types.ts'
import { READ_METHODS } from './checks/personal-token.ts'

// What a site's policy asks of a credential that was right (docs/decisions.md, "Site
// administrators" and "Second factors"), in one place for every door of the API: the pages ask
// the same rule through `heldForSecondFactor` (routes/web/enrollment.ts).

/**
 * Whether a person must show a second factor on this site before anything else: the site requires
 * one of its support staff, they are staff, and they have none yet. The one rule behind the pages'
 * enrollment hold, and behind the API's refusal of the doors that take a password or an
 * account-wide secret.
 */
export function heldForSecondFactor(site: { staffSecondFactor: boolean }, staff: boolean, hasFactor: boolean): boolean {
  return site.staffSecondFactor && staff && !hasFactor
}

/** The credentials that open every site of the person, not one: held on a site that requires a second factor. */
const ACCOUNT_WIDE: ReadonlySet<Authenticated['method']> = new Set(['password', 'legacy_token'])

/**
 * The credentials a person holds without an administrator's view of them as tokens: under "Read
 * and write tokens: administrators only" they read, and only an administrator's write. A personal
 * token was made under the policy, and is listed in the credentials inventory (its access shown).
 */
const BOUND_BY_WRITE_RULE: ReadonlySet<Authenticated['method']> = new Set(['password', 'legacy_token', 'multipass', 'oauth_token'])

export interface SiteRuleDeps {
  hasSecondFactor(userId: number): Promise<boolean>
  isAdministrator(siteId: number, userId: number): Promise<boolean>
}

/**
 * The site's rules for a right credential, in order: a kind the site switched off, a person held
 * for a second factor, a write under the write-token rule. The accepted credential (its access
 * read where the rule makes it so), or the refusal. A site with none of these rules on reads nothing.
 */
export function siteRules({ hasSecondFactor, isAdministrator }: SiteRuleDeps) {
  async function held(accepted: Authenticated, method: string): Promise<Authenticated | Refusal> {
    const { site, user } = accepted
    // Every credential here is of staff: the checks refused anyone else.
    if (site.staffSecondFactor && ACCOUNT_WIDE.has(accepted.method) && heldForSecondFactor(site, true, await hasSecondFactor(user.id))) {
      return { kind: 'second_factor_enrollment' }
    }
    if (accepted.access === 'write' && site.writeTokens === 'administrators' && BOUND_BY_WRITE_RULE.has(accepted.method) && !(await isAdministrator(site.id, user.id))) {
      if (!READ_METHODS.has(method)) return { kind: 'writes_for_administrators' }
      return { ...accepted, access: 'read' }
    }
    return accepted
  }
  // Synchronous on the hot path: most sites have neither rule on, and a personal token is bound by neither.
  return (accepted: Authenticated, method: string): Authenticated | Refusal | Promise<Authenticated | Refusal> => {
    const off = switchedOff(accepted.site, accepted.method)
    if (off) return { kind: 'switched_off', method: off }
    if (accepted.method === 'personal_token' || (!accepted.site.staffSecondFactor && accepted.site.writeTokens !== 'administrators')) return accepted
    return held(accepted, method)
  }
}
