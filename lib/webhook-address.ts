import ipaddr from 'ipaddr.js'

// Where a webhook may be posted (docs/decisions.md, "Webhooks": no server-side request forgery).
// Only http and https, without a user or password; the host's addresses are each checked, and one
// that is loopback, private, link-local, unique-local, multicast, unspecified, reserved, shared
// (carrier-grade NAT), an IPv6 form that carries an IPv4 address (mapped, compatible, NAT64, 6to4,
// Teredo) or any other IPv6 address outside 2000::/3 is refused, unless the operator allowed its range (SERVICE_WEBHOOK_ALLOW). The sender connects
// to the address that was checked, never looking the name up a second time
// (plugins/webhooks/delivery.ts). Pure functions: the look-up is the caller's.

/** A range the operator allows (SERVICE_WEBHOOK_ALLOW): an address and a prefix length. */
export type AllowedRange = [ipaddr.IPv4 | ipaddr.IPv6, number]

/** The longest webhook address kept. */
export const MAX_URL_LENGTH = 2_000

/** The ranges of ipaddr.js that are the public internet. */
const PUBLIC = new Set(['unicast'])

/** The words for a refused range, as the page and the log say them. */
const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address (cloud metadata services live there)',
  uniqueLocal: 'a unique-local address',
  multicast: 'a multicast address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address',
  rfc6052: 'a NAT64 address',
  rfc6145: 'an IPv4-translated address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
  outsideGlobalUnicast: 'an IPv6 address outside the global unicast range (2000::/3)',
}

/** Parses SERVICE_WEBHOOK_ALLOW: CIDR ranges or single addresses, separated by commas or spaces; the words of the first mistake otherwise. */
export function parseAllowedRanges(value: string | undefined): AllowedRange[] | string {
  const ranges: AllowedRange[] = []
  for (const item of (value ?? '').split(/[\s,]+/).filter(Boolean)) {
    try {
      ranges.push(item.includes('/') ? ipaddr.parseCIDR(item) : ((address) => [address, address.kind() === 'ipv4' ? 32 : 128] as AllowedRange)(ipaddr.parse(item)))
    } catch {
      return `"${item}" is not an address or a CIDR range such as 10.0.0.0/8`
    }
  }
  return ranges
}

/** The class of an address that may not be posted to (`address` as judged: a mapped one as its IPv4), in words; null when it may. */
export function refusedClass(address: string, allowed: readonly AllowedRange[] = []): { address: string; words: string } | null {
  if (!ipaddr.isValid(address)) return { address, words: 'not an address' }
  const parsed = ipaddr.parse(address)
  // ::ffff:127.0.0.1 is 127.0.0.1: judged as the IPv4 address it carries, allowed ranges too.
  const plain = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed
  if (allowed.some(([range, bits]) => range.kind() === plain.kind() && plain.match(range, bits))) return null
  const range = ipv6Outside(plain) ?? plain.range()
  if (PUBLIC.has(range)) return null
  return { address: plain.toString(), words: RANGE_WORDS[range] ?? `a reserved address (${range})` }
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3')
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96')

/**
 * The class of an IPv6 address ipaddr.js calls unicast that is not on the public internet: the
 * IPv4-compatible form (`[::127.0.0.1]`, which URLs write `[::7f00:1]`), and anything else outside
 * the global unicast range 2000::/3, which is all the IPv6 internet there is. Undefined otherwise.
 */
function ipv6Outside(address: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
  if (address.kind() !== 'ipv6' || address.range() !== 'unicast' || address.match(GLOBAL_UNICAST)) return undefined
  return address.match(IPV4_COMPATIBLE) ? 'ipv4Compatible' : 'outsideGlobalUnicast'
}

/** Why an address (as a look-up or a URL gives it) may not be posted to; null when it may. */
export function refusedAddress(address: string, allowed: readonly AllowedRange[] = []): string | null {
  const refused = refusedClass(address, allowed)
  if (!refused) return null
  return refused.words === 'not an address' ? `"${address}" is not an address` : `${refused.address} is ${refused.words}`
}

/** The host of a URL as an address, when it is written as one (brackets taken off); null for a name. */
export function literalAddress(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null
}

/**
 * The webhook address as the service keeps it, or the words of what is wrong with it. The WHATWG
 * parser writes odd forms of an address plainly (`0x7f000001` is 127.0.0.1), so the check of a
 * literal address here and at each send sees the address that will be connected to.
 */
export function parseWebhookUrl(value: string, allowed: readonly AllowedRange[] = []): URL | string {
  if (value.length > MAX_URL_LENGTH) return `is longer than ${MAX_URL_LENGTH} characters`
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    return 'is not an address such as https://example.com/hooks/service-desk'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must start with https:// (or http://)'
  if (url.username || url.password) return 'must not hold a user name or password: put a secret in the path, or check the signature'
  url.hash = ''
  const literal = literalAddress(url.hostname)
  const refused = literal && refusedAddress(literal, allowed)
  if (refused) return `is refused: ${refused}`
  return url
}
