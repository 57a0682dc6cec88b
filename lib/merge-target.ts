// What a merge names as the discussion to merge into (issue 71): its number, `#12`, or one of its
// addresses, the API's or the page's, under the site's own (docs/decisions.md, "Merge and split").
// A discussion's address under another site is refused as such: discussions merge within their site.

/** The most a discussion number can be (the database's integer). */
const MAX_NUMBER = 2_147_483_647

const numberOf = (digits: string) => {
  const n = Number(digits)
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_NUMBER ? n : undefined
}

/** The number `into` names, with `own` the prefixes of the site's discussions' addresses (no trailing slash); or the problem with it. */
export function mergeTarget(into: number | string, own: readonly string[]): { number: number } | { problem: string } {
  if (typeof into === 'number') return numberOf(String(into)) === undefined ? { problem: 'is not a discussion number' } : { number: into }
  const text = into.trim()
  const plain = /^#?(\d{1,10})$/.exec(text)
  if (plain) {
    const n = numberOf(plain[1]!)
    return n === undefined ? { problem: 'is not a discussion number' } : { number: n }
  }
  for (const prefix of own) {
    const rest = text.startsWith(`${prefix}/`) ? /^(\d{1,10})\/?(?:[?#].*)?$/.exec(text.slice(prefix.length + 1)) : null
    if (!rest) continue
    const n = numberOf(rest[1]!)
    return n === undefined ? { problem: 'is not a discussion number' } : { number: n }
  }
  if (/^https?:\/\/.*\/discussions\/\d+\/?(?:[?#].*)?$/.test(text)) return { problem: 'is the address of a discussion of another site: a discussion merges into one of its own site' }
  return { problem: "is not a discussion's number or address" }
}
