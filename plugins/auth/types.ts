import type { Access } from '../../db/values.ts'
import type { Site } from '../../db/stores/sites.ts'
import type { Refusal } from './challenge.ts'

export interface Authenticated {
  method: 'personal_token' | 'oauth_token' | 'legacy_token' | 'multipass' | 'password'
  site: Site
  user: { id: number; email: string; name: string }
  access: Access
  /**
   * The person is a collaborator of the site (docs/decisions.md, "Collaborators"): whatever the
   * credential's access, they write internal notes only (plugins/auth/notes-only.ts).
   */
  notesOnly: boolean
  /** The personal token's id, when a personal token authenticated the request. */
  tokenId?: number
  /** The fingerprint of the OAuth grant, when an OAuth access token authenticated the request. */
  grant?: string
}

/**
 * What checking one credential gives: who the request acts as, or the refusal to send, with the
 * headers the answer carries either way (a genuine token's expiry). plugins/auth/authenticate.ts
 * alone turns it into the reply.
 */
export type CheckResult =
  | { accepted: Authenticated; headers?: Record<string, string> }
  | { refused: Refusal; headers?: Record<string, string> }

/** What a check may know of the request: nothing that lets it write the reply. */
export interface RequestFacts {
  method: string
  /** The client address (request.ip). */
  ip: string
}

/**
 * Checks one kind of credential. `site` is undefined for an unknown permalink, which every check
 * answers exactly like a wrong credential of its kind, so no answer reveals whether a site exists;
 * a check that reads the site itself, with its credential, is given the permalink (S = string).
 */
export type CredentialCheck<C, S = Site | undefined> = (credential: C, site: S, request: RequestFacts) => CheckResult | Promise<CheckResult>

export const refuse = (refusal: Refusal['kind'] | Refusal): CheckResult => ({
  refused: typeof refusal === 'string' ? ({ kind: refusal } as Refusal) : refusal,
})

export const accept = (accepted: Authenticated, headers?: Record<string, string>): CheckResult => ({ accepted, headers })
