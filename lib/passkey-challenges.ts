import { randomBytes, timingSafeEqual } from 'node:crypto'

// A passkey's challenge (WebAuthn) made without a database row, so a page that offers a passkey
// (the sign-in page, to anyone) writes nothing: 16 random bytes and an expiry, signed with a
// keyed digest over what the challenge is for (the ceremony, the site, and the browser's session
// or pre-session). The browser signs it back; the server checks the signature and the expiry here,
// and that it is answered once in the store (db/stores/second-factors.ts, claimChallenge).
// docs/decisions.md, "Passkeys", says why this small scheme is ours and not a library's.

/** How long a page's passkey challenge can be answered. */
export const CHALLENGE_MS = 5 * 60_000

/** A keyed digest, hex (lib/secret-box.ts). */
export type Sign = (text: string) => string

const DIGEST_CHARS = 32

/** A new challenge for `context`, answerable until `now + CHALLENGE_MS`. */
export function makeChallenge(sign: Sign, context: string, now: number): string {
  const nonce = randomBytes(16).toString('base64url')
  const until = (now + CHALLENGE_MS).toString(36)
  return `${nonce}.${until}.${sign(`${context}|${nonce}|${until}`).slice(0, DIGEST_CHARS)}`
}

/** When the challenge stops being answerable, if it is one of ours for `context` and has not expired; else undefined. */
export function challengeExpiry(sign: Sign, context: string, challenge: string, now: number): Date | undefined {
  const [nonce, until, digest, extra] = challenge.split('.')
  if (extra !== undefined || !nonce || !until || digest?.length !== DIGEST_CHARS) return undefined
  const expected = Buffer.from(sign(`${context}|${nonce}|${until}`).slice(0, DIGEST_CHARS))
  if (!timingSafeEqual(expected, Buffer.from(digest))) return undefined
  const expiry = parseInt(until, 36)
  return expiry > now ? new Date(expiry) : undefined
}
