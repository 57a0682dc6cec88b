import type { FastifyReply, FastifyRequest } from 'fastify'
import { entityTag, matchHolds, noneMatchHolds } from '../../lib/entity-tags.ts'

// Conditional requests on the API (RFC 9110, section 13; docs/decisions.md, "Conditional
// requests"). A GET answers with an ETag made from the version of what it shows, read before
// anything else: an If-None-Match that names it gets 304 Not Modified at the cost of the
// authentication (and, for a discussion, one indexed read). A change to a discussion with
// If-Match goes ahead only while the discussion is still at the version the client saw.

/** A site's version, in a tag: of its listings, its categories and the site resource. */
export const siteVersion = (version: number) => `s${version}`

/** A discussion's version, in a tag: of the discussion, its comments, and what If-Match compares. */
export const discussionVersion = (version: number) => `d${version}`

/** The tag of what `request` asks for at `version`: its address, with the query, in its media type. */
export function tagOf(request: FastifyRequest, version: string, address = request.url): string {
  return entityTag(version, `${request.apiMediaType} ${address}`)
}

/**
 * Sets the answer's ETag for this version; when the request's If-None-Match already names it,
 * answers 304 Not Modified and says so: the caller returns the reply without reading further.
 */
export function notModified(request: FastifyRequest, reply: FastifyReply, version: string, address = request.url): boolean {
  const tag = tagOf(request, version, address)
  reply.header('etag', tag)
  if (!noneMatchHolds(request.headers['if-none-match'], tag)) return false
  void reply.code(304).send()
  return true
}

/**
 * The check If-Match asks of a change to the resource at `address` (the discussion's own, as
 * its GET answered it): undefined without the header; otherwise whether a version of the
 * resource is the one the client names.
 */
export function ifMatch(request: FastifyRequest, address: string, tag: (version: number) => string): ((version: number) => boolean) | undefined {
  const field = request.headers['if-match']
  if (field === undefined) return undefined
  return (version) => matchHolds(field, tagOf(request, tag(version), address))
}
