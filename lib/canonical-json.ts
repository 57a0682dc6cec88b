/**
 * The JSON text of a value with every object's keys sorted: equal values give equal texts, whatever
 * order their keys were written in (the OpenAPI document's named shapes, routes/openapi.ts; the body
 * an Idempotency-Key's repeat must match, plugins/http/idempotency.ts).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)) // an object's keys are distinct
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`
}
