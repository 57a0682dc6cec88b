// The check that comes before any measurement: the baseline answers the same bytes as the service
// for the same page, so that a ratio compares the same job done two ways.

/** The first position where two strings differ (the shorter one's length when one is a prefix of the other), or -1. */
export function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return i
  return a.length === b.length ? -1 : n
}

const around = (text: string, at: number) => JSON.stringify(text.slice(Math.max(0, at - 80), at + 80))

/**
 * Undefined when the bodies are the same; otherwise a message naming the first differing position
 * and the text around it on both sides.
 */
export function bodyDifference(what: string, service: string, baseline: string): string | undefined {
  const at = firstDifference(service, baseline)
  if (at < 0) return undefined
  return (
    `${what}: the baseline's body (${baseline.length} bytes) differs from the service's (${service.length} bytes) at position ${at}:\n` +
    `  service:  ${around(service, at)}\n` +
    `  baseline: ${around(baseline, at)}\n` +
    'tools/bench/baseline.ts must answer the same bytes as the service for the same rows; fix it before measuring.'
  )
}
