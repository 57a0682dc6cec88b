import { writeTokenRules, type Access, type WriteTokenRule } from '../values.ts'
import { StoreError } from './errors.ts'
import { EXPIRY_DAYS } from './token-rules.ts'

// A site's token policy (docs/decisions.md, "Site administrators"), as pure rules: what a new
// personal token may be under it, which credentials the API takes, and what a change of it says.
// The policy is columns of the site's row (db/schema), read with the site on every request.

/** The longest lifetime the policy may allow: a year, as the token page always offered. */
export const MAX_TOKEN_DAYS = 365

export interface SitePolicy {
  /** The longest lifetime of a new personal token, 1 to MAX_TOKEN_DAYS days. */
  tokenMaxDays: number
  /** Who may make read-and-write personal tokens. */
  writeTokens: WriteTokenRule
  /** Whether the API takes the legacy account token (X-Service-Auth, auth=). */
  legacyTokenOn: boolean
  /** Whether the API takes multipass (X-Multipass, sso=). */
  multipassOn: boolean
  /** Whether the API takes email and password (Authorization: Basic). */
  passwordOn: boolean
  /** Whether the site's support staff must have a second factor to work on its pages. */
  staffSecondFactor: boolean
  /** Whether a visitor who is not signed in may start a discussion on the customer's pages (routes/web/customers.ts). */
  visitorDiscussions: boolean
  /** Whether the customer's pages show the site's public discussions beside a customer's own. */
  publicDiscussions: boolean
  /** Whether a supporter who has not chosen on their profile is mailed about every new discussion (db/stores/notifications.ts). */
  newDiscussionsToTeam: boolean
  /** Whether customers are asked to rate a resolved discussion (issue 69; routes/web/ratings.ts). */
  satisfactionOn: boolean
  /**
   * Whether its support staff sign in with the company's account only (issue 73;
   * routes/web/company-sign-in.ts): no password or passkey of theirs on the pages, and Basic and the
   * legacy token refused on the API whatever their own switches say.
   */
  companySignInOnly: boolean
}

export const DEFAULT_POLICY: SitePolicy = { tokenMaxDays: MAX_TOKEN_DAYS, writeTokens: 'everyone', legacyTokenOn: true, multipassOn: true, passwordOn: true, staffSecondFactor: false, visitorDiscussions: true, publicDiscussions: true, newDiscussionsToTeam: true, satisfactionOn: true, companySignInOnly: false }

/** The policy columns of a site row. */
export function policyOf(site: SitePolicy): SitePolicy {
  const { tokenMaxDays, writeTokens, legacyTokenOn, multipassOn, passwordOn, staffSecondFactor, visitorDiscussions, publicDiscussions, newDiscussionsToTeam, satisfactionOn, companySignInOnly } = site
  return { tokenMaxDays, writeTokens, legacyTokenOn, multipassOn, passwordOn, staffSecondFactor, visitorDiscussions, publicDiscussions, newDiscussionsToTeam, satisfactionOn, companySignInOnly }
}

/** The lifetimes the token page offers under a longest one: the usual ones up to it, and the limit itself. */
export function expiryChoices(maxDays: number): number[] {
  const choices: number[] = EXPIRY_DAYS.filter((days) => days <= maxDays)
  if (!choices.includes(maxDays)) choices.push(maxDays)
  return choices
}

/** The lifetime a form starts on: the usual default, or the longest allowed when that is shorter. */
export function defaultExpiry(maxDays: number, usual: number): number {
  const choices = expiryChoices(maxDays)
  return choices.includes(usual) ? usual : choices[choices.length - 1]
}

/**
 * A StoreError unless a new token of this lifetime and access is allowed by the policy to an owner
 * who is (or is not) an administrator of the site.
 */
export function checkTokenPolicy(policy: SitePolicy, token: { access: Access; expiresInDays: number }, administrator: boolean): void {
  const choices = expiryChoices(policy.tokenMaxDays)
  if (!choices.includes(token.expiresInDays)) {
    const limit = policy.tokenMaxDays < MAX_TOKEN_DAYS ? ` (this site's token policy allows at most ${policy.tokenMaxDays} days)` : ''
    throw new StoreError(`expiry must be ${choices.join(', ')} days${limit}`, 'invalid', 'expires')
  }
  if (token.access === 'write' && policy.writeTokens === 'administrators' && !administrator) {
    throw new StoreError("this site's token policy lets only its administrators create Read and write tokens; create a Read only token", 'forbidden', 'access')
  }
}

/** A StoreError for a longest lifetime that is not a whole number of days from 1 to MAX_TOKEN_DAYS. */
export function checkTokenMaxDays(days: number): void {
  if (!Number.isInteger(days) || days < 1 || days > MAX_TOKEN_DAYS) {
    throw new StoreError(`the longest token lifetime must be a whole number of days from 1 to ${MAX_TOKEN_DAYS}`, 'invalid', 'max_token_days')
  }
}

/** The policy with the changes applied, each checked; a StoreError names the first that will not do. */
export function changedPolicy(before: SitePolicy, changes: Partial<SitePolicy>): SitePolicy {
  if (changes.tokenMaxDays !== undefined) checkTokenMaxDays(changes.tokenMaxDays)
  if (changes.writeTokens !== undefined && !(writeTokenRules as readonly string[]).includes(changes.writeTokens)) {
    throw new StoreError(`who may create Read and write tokens must be ${writeTokenRules.join(' or ')}`, 'invalid', 'write_tokens')
  }
  const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<SitePolicy>
  return { ...before, ...defined }
}

/** What changed between two policies, as the security log records it: each field, before and after. */
export function policyDifference(before: SitePolicy, after: SitePolicy): Record<string, string> {
  const difference: Record<string, string> = {}
  for (const key of Object.keys(before) as Array<keyof SitePolicy>) {
    if (before[key] !== after[key]) difference[POLICY_NAMES[key]] = `${String(before[key])} -> ${String(after[key])}`
  }
  return difference
}

/** Each policy field by the name the API, the CLI and the log give it. */
export const POLICY_NAMES: Record<keyof SitePolicy, string> = {
  tokenMaxDays: 'max_token_days',
  writeTokens: 'write_tokens',
  legacyTokenOn: 'legacy_token',
  multipassOn: 'multipass',
  passwordOn: 'password',
  staffSecondFactor: 'staff_second_factor',
  visitorDiscussions: 'visitor_discussions',
  publicDiscussions: 'public_discussions',
  newDiscussionsToTeam: 'new_discussions_to_team',
  satisfactionOn: 'satisfaction',
  companySignInOnly: 'company_sign_in_only',
}

/** The credentials a site may switch off, by the authentication method they are. */
export type SwitchableMethod = 'legacy_token' | 'multipass' | 'password'

const SWITCHES: Record<SwitchableMethod, keyof SitePolicy> = { legacy_token: 'legacyTokenOn', multipass: 'multipassOn', password: 'passwordOn' }

/** The credentials of the staff's own that signing in with the company's account only switches off on the API. */
const COMPANY_ONLY_OFF: ReadonlySet<string> = new Set<SwitchableMethod>(['password', 'legacy_token'])

/** The method, when the policy switches it off; undefined for one it takes (personal tokens and OAuth always). */
export function switchedOff(policy: SitePolicy, method: string): SwitchableMethod | undefined {
  if (policy.companySignInOnly && COMPANY_ONLY_OFF.has(method)) return method as SwitchableMethod
  return method in SWITCHES && policy[SWITCHES[method as SwitchableMethod]] === false ? (method as SwitchableMethod) : undefined
}

/** What each switchable credential is called in an answer. */
export const SWITCHABLE_NAMES: Record<SwitchableMethod, string> = {
  legacy_token: 'The legacy API token',
  multipass: 'Multipass',
  password: 'Basic authentication with email and password',
}
