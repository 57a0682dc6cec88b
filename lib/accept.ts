// Accept negotiation for the v1 API (docs/decisions.md, "Versioning and media types").

export const V1_MEDIA_TYPE = 'application/vnd.service-v1+json'
export const JSON_MEDIA_TYPE = 'application/json'
/**
 * The type Fastify gives the JSON it serializes; a route that sends JSON it put together itself (a
 * listing of kept items) names it too, and plugins/versioning.ts puts the v1 type in its place alike.
 */
export const SERIALIZED_JSON = `${JSON_MEDIA_TYPE}; charset=utf-8`
export type ApiMediaType = typeof V1_MEDIA_TYPE | typeof JSON_MEDIA_TYPE

export const SUPPORTED_MEDIA_TYPES = [V1_MEDIA_TYPE, JSON_MEDIA_TYPE] as const

// What each acceptable range of the client gives; ranges not named here allow nothing we serve.
// A Map, not an object: a range named `constructor` or `__proto__` must find nothing.
const RANGES = new Map<string, ApiMediaType>([
  [V1_MEDIA_TYPE, V1_MEDIA_TYPE],
  // The unversioned vendor type asks for the current version, which is v1.
  ['application/vnd.service+json', V1_MEDIA_TYPE],
  [JSON_MEDIA_TYPE, JSON_MEDIA_TYPE],
  ['application/*', JSON_MEDIA_TYPE],
  ['*/*', JSON_MEDIA_TYPE],
])

const QUALITY = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i

/**
 * The media type to answer with, or null when the Accept header allows nothing this API serves
 * (another version such as `application/vnd.service-v2+json`, or no JSON at all). A missing or
 * empty header accepts anything. Among acceptable ranges the highest quality wins; on a tie the
 * versioned type wins, so a client that names it gets it back.
 */
export function negotiateMediaType(accept: string | undefined): ApiMediaType | null {
  if (accept === undefined || accept.trim() === '') return JSON_MEDIA_TYPE
  // One range as it is, the documented clients' header: what the loop below would find.
  const exact = RANGES.get(accept)
  if (exact) return exact
  let best: ApiMediaType | null = null
  let bestQuality = 0
  for (const entry of accept.split(',')) {
    const [range, ...params] = entry.split(';').map((part) => part.trim())
    const mediaType = RANGES.get(range.toLowerCase())
    if (!mediaType) continue
    const qParam = params.find((p) => /^q=/i.test(p))
    if (qParam !== undefined && !QUALITY.test(qParam)) continue
    const quality = qParam === undefined ? 1 : Number(qParam.slice(2))
    if (quality <= 0) continue
    if (quality > bestQuality || (quality === bestQuality && mediaType === V1_MEDIA_TYPE)) {
      best = mediaType
      bestQuality = quality
    }
  }
  return best
}

/** The quality an Accept header gives `text/csv` (by itself, `text/*` or `*\/*`): 0 when it allows none. */
function csvQuality(accept: string): number {
  let best = 0
  for (const entry of accept.split(',')) {
    const [range, ...params] = entry.split(';').map((part) => part.trim())
    if (!['text/csv', 'text/*'].includes(range.toLowerCase())) continue
    const qParam = params.find((p) => /^q=/i.test(p))
    if (qParam !== undefined && !QUALITY.test(qParam)) continue
    best = Math.max(best, qParam === undefined ? 1 : Number(qParam.slice(2)))
  }
  return best
}

/**
 * How a route that also answers CSV (the reports) answers: 'csv' when the Accept header names
 * text/csv, or takes text/* and no JSON; else the JSON type negotiated, or null for an Accept that
 * allows neither.
 */
export function negotiateCsv(accept: string | undefined): ApiMediaType | 'csv' | null {
  const json = negotiateMediaType(accept)
  const csv = accept === undefined ? 0 : csvQuality(accept)
  if (csv === 0) return json
  if (json === null || accept!.split(',').some((entry) => entry.trim().toLowerCase().startsWith('text/csv'))) return 'csv'
  return json
}
