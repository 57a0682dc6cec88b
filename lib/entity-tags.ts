import { hash } from 'node:crypto'
import { createKeptTexts } from './kept-texts.ts'

// Entity tags and the conditional headers that carry them (RFC 9110, sections 8.8.3 and 13.1).
// The service's tags are strong: one names one representation, byte for byte.

/**
 * The entity tag of a representation: the version of what it shows (a site's or a discussion's
 * counter, written in the transaction of every change) and a digest of what else makes the
 * bytes (the address with its query, the media type), so that two representations of one
 * version never share a tag.
 */
export function entityTag(version: string, representation: string): string {
  return `"${version}-${digests(representation, () => hash('sha256', representation, 'base64url').slice(0, 16))}"`
}

// A client polling asks for the same few representations again and again: their digests are
// kept (a request's address is as long as a client makes it, so the bound is in characters), and
// a hash is spared on each poll.
const digests = createKeptTexts(200_000)

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
