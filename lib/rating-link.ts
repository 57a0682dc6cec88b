import { timingSafeEqual } from 'node:crypto'
import { DAY_MS } from './clock.ts'
import type { Digest } from './reply-address.ts'
import { RATING_DAYS } from './reports.ts'

// The customer's rating link (issue 69; docs/decisions.md, "Satisfaction"): {site_url}/help/rate/<token>,
// where the token names the discussion's number and the moment of the resolution it was sent for,
// with a keyed digest under the server key of those and the discussion's id and site, which nobody
// else can make: a link works for its own discussion only, and only while that resolution is its
// last. Pure: the digest is given (SecretBox.digest).

/** What a rating link names. */
export interface RatingTag {
  siteId: number
  discussionId: number
  number: number
  /** The resolution it was sent for, in milliseconds. */
  resolvedAt: number
}

/** Hex characters of the digest kept: 128 bits. */
const DIGEST_CHARS = 32

const digestOf = (digest: Digest, tag: RatingTag) => digest(`rating link v1 ${tag.siteId} ${tag.discussionId} ${tag.number} ${tag.resolvedAt}`).slice(0, DIGEST_CHARS)

/** The token of a rating link. */
export function ratingToken(digest: Digest, tag: RatingTag): string {
  return `${tag.number.toString(36)}-${tag.resolvedAt.toString(36)}-${digestOf(digest, tag)}`
}

const SHAPE = new RegExp(`^([0-9a-z]{1,11})-([0-9a-z]{1,11})-([0-9a-f]{${DIGEST_CHARS}})$`)

/** The number and resolution a token claims (to read the discussion by), before its digest is checked; undefined for no token's shape. */
export function claimedBy(token: string): { number: number; resolvedAt: number } | undefined {
  const found = SHAPE.exec(token)
  if (!found) return undefined
  const number = parseInt(found[1]!, 36)
  const resolvedAt = parseInt(found[2]!, 36)
  return Number.isSafeInteger(number) && Number.isSafeInteger(resolvedAt) ? { number, resolvedAt } : undefined
}

/** Whether the token is the one made for this discussion and resolution (compared in constant time). */
export function holdsToken(digest: Digest, token: string, tag: RatingTag): boolean {
  const expected = Buffer.from(ratingToken(digest, tag))
  const given = Buffer.from(token)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** The rating link of a discussion's last resolution, under `base` ({site_url}); null when it is not resolved or that was RATING_DAYS ago. */
export function ratingLink(digest: Digest, base: string, d: { siteId: number; id: number; number: number; state: string; resolvedAt: Date | null }, now: number): string | null {
  if (d.state !== 'resolved' || d.resolvedAt === null || now > d.resolvedAt.getTime() + RATING_DAYS * DAY_MS) return null
  return `${base}/help/rate/${ratingToken(digest, { siteId: d.siteId, discussionId: d.id, number: d.number, resolvedAt: d.resolvedAt.getTime() })}`
}
