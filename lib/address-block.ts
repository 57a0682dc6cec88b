// Every budget kept per client address (failures, sign-in, registrations, authorization starts,
// fair use) keys the address through this one function (docs/decisions.md, "Fair use"): IPv4
// whole, IPv6 by its /64, the block one machine or one home gets, so that walking the addresses
// of one block does not make new budgets. An IPv4 address mapped into IPv6 is the IPv4 address.

/** The block an address's budgets are kept under: `203.0.113.5`, or `2001:db8:0:1::/64`. */
export function addressBlock(address: string): string {
  if (!address.includes(':')) return address
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]
  const [head, tail = ''] = address.toLowerCase().split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '')).join(':')}::/64`
}
