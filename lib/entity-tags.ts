import { createHash } from 'node:crypto'

// Entity tags and the conditional headers that carry them (RFC 9110, sections 8.8.3 and 13.1).
// The service's tags are strong: one names one representation, byte for byte.

/**
 * The entity tag of a representation: the version of what it shows (a site's or a discussion's
 * counter, written in the transaction of every change) and a digest of what else makes the
 * bytes (the address with its query, the media type), so that two representations of one
 * version never share a tag.
 */
export function entityTag(version: string, representation: string): string {
  return `"${version}-${digestOf(representation)}"`
}

// A client polling asks for the same few representations again and again: their digests are
// remembered (at most DIGESTS of them, the oldest forgotten first), a hash spared on each poll.
const DIGESTS = 1000
const digests = new Map<string, string>()

function digestOf(representation: string): string {
  let digest = digests.get(representation)
  if (digest === undefined) {
    digest = createHash('sha256').update(representation).digest('base64url').slice(0, 16)
    digests.set(representation, digest)
    if (digests.size > DIGESTS) digests.delete(digests.keys().next().value!)
  }
  return digest
}

/** The entity tags of an If-None-Match or If-Match field value; `*` as itself. */
export function listedTags(field: string): string[] {
  if (field.trim() === '*') return ['*']
  return [...field.matchAll(/(W\/)?"[\x21\x23-\x7e\x80-\xff]*"/g)].map((m) => m[0])
}

/** If-None-Match: whether it names the current tag, weakly (a W/ prefix is set aside), or is `*`. */
export function noneMatchHolds(field: string | undefined, current: string): boolean {
  if (field === undefined) return false
  return listedTags(field).some((tag) => tag === '*' || tag.replace(/^W\//, '') === current)
}

/** If-Match: whether it names the current tag strongly (a weak tag never matches), or is `*`. */
export function matchHolds(field: string, current: string): boolean {
  return listedTags(field).some((tag) => tag === '*' || tag === current)
}
