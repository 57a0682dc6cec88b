// Erasing a customer (issue 74; docs/decisions.md, "A customer's data on request"): the pure part.
// What the team wrote to them or about them stays, with their name and address taken out of it;
// what they wrote is replaced by a line saying it was removed.

/** What stands where their name or address was. */
export const ERASED = '[erased]'

/** What a comment of theirs reads once they are erased. */
export const REMOVED_COMMENT = "(Removed at the customer's request.)"

/** The title of a discussion deleted for good (their erasure, the site's retention). */
export const ERASED_TITLE = '(deleted)'

/** The name of the account that stands for the site's erased customers. */
export const ERASED_NAME = 'Erased customer'

/** The address of that account: one per site, under a domain that never receives mail (RFC 2606). */
export const erasedAddress = (siteId: number) => `erased-customer-${siteId}@erased.invalid`

/** What an erased person's own account is left with when no other site has them: an address of no one. */
export const emptiedAddress = (userId: number) => `erased-account-${userId}@erased.invalid`

/** The parts of a name worth looking for on their own: two letters or more. */
const namePartsOf = (name: string) => name.split(/[^\p{L}\p{N}'-]+/u).filter((part) => [...part].length >= 2)

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** `text` as a whole word: not inside a longer one ("Ann" is not taken out of "Annual"). */
const wordOf = (text: string) => `(?<![\\p{L}\\p{N}])${escaped(text)}(?![\\p{L}\\p{N}])`

/**
 * The function that takes a person out of a text: their address, their whole name and each part
 * of it (a greeting names them by their first name), in any case, as whole words.
 */
export function scrubberOf(person: { name: string; email: string }): (text: string) => string {
  const words = [person.email, person.name.trim(), ...namePartsOf(person.name)].filter((word) => word.length > 0)
  // The longest first: the whole name before its parts, so "[erased]" stands once for it.
  const pattern = new RegExp([...new Set(words)].sort((a, b) => b.length - a.length).map(wordOf).join('|'), 'giu')
  return (text) => text.replace(pattern, ERASED)
}

/** The string values of a JSON object taken through `scrub` (the custom fields' values); the same text when none changed. */
export function scrubbedJson(json: string, scrub: (text: string) => string): string {
  let changed = false
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const after = scrub(value)
      changed ||= after !== value
      return after
    }
    if (Array.isArray(value)) return value.map(walk)
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]))
    return value
  }
  const after = JSON.stringify(walk(JSON.parse(json)))
  return changed ? after : json
}

/** The month `months` before `now` (the same day and time; the month's last day when it has fewer): what the retention counts from. */
export function monthsBefore(now: Date, months: number): Date {
  const at = new Date(now)
  const day = at.getUTCDate()
  at.setUTCDate(1)
  at.setUTCMonth(at.getUTCMonth() - months)
  const last = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 0)).getUTCDate()
  at.setUTCDate(Math.min(day, last))
  return at
}
