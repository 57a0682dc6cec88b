import { randomBytes } from 'node:crypto'
import type { InteractionResults } from 'oidc-provider'
import { fingerprint } from '../../lib/token-format.ts'

// An authorization is answered on the site's consent page and finished by the library at its resume
// address (`returnTo`, on the issuer), which takes only the browser holding the library's signed
// resume cookie: the browser that started the authorization. The consent page may be on another
// host than the issuer (SERVICE_SITE_URL), where that cookie cannot be seen, so a link to it could
// be opened by anyone: an attacker starts an authorization and sends the consent page's link to a
// signed-in supporter, who allows, and the attacker resumes with its own cookies (RFC 9700 section
// 4.7). Hence the answer carries a one-time proof that only the answering browser is given, in the
// address it is sent to, and the resume needs both: the starter's cookie and the answerer's proof.

/** The query parameter of the resume address that carries the proof. */
export const PROOF_PARAMETER = 'consent'

/** Where the answer is kept with the proof's fingerprint, beside the library's own fields. */
const PROOF_FIELD = 'serviceConsentProof'

type Interaction = { result?: InteractionResults; returnTo: string }

/** Sets the answer of an interaction, bound to a new proof; the address the answering browser goes to. */
export function bindToBrowser(interaction: Interaction, result: InteractionResults): string {
  const proof = randomBytes(32).toString('base64url')
  interaction.result = { ...result, [PROOF_FIELD]: fingerprint(proof) }
  const url = new URL(interaction.returnTo)
  url.searchParams.set(PROOF_PARAMETER, proof)
  return url.href
}

/**
 * Whether a request to the resume address may go on to the library: an interaction without an
 * answer yet (the library asks again), or one whose answer's proof the request carries.
 */
export function resumeAllowed(interaction: Interaction | undefined, proof: unknown): boolean {
  if (interaction?.result === undefined) return true
  return typeof proof === 'string' && fingerprint(proof) === interaction.result[PROOF_FIELD]
}
