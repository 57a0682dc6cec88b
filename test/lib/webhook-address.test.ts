import t from 'tap'
import { literalAddress, MAX_URL_LENGTH, parseAllowedRanges, parseWebhookUrl, refusedAddress, type AllowedRange } from '../../lib/webhook-address.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// Where a webhook may be posted (lib/webhook-address.ts): the address classes refused, the
// operator's allowed ranges, and the address as kept. The deliveries' side, looking names up and
// connecting to the address checked, is test/webhooks/delivery.test.ts.

t.test('every class of address that is not the public internet is refused, with its name', async (t) => {
  const refused: Record<string, string> = {
    '127.0.0.1': 'a loopback address',
    '::1': 'a loopback address',
    '10.0.0.1': 'a private address',
    '172.16.5.4': 'a private address',
    '192.168.1.1': 'a private address',
    '169.254.169.254': 'a link-local address',
    'fe80::1': 'a link-local address',
    'fd12::1': 'a unique-local address',
    '224.0.0.1': 'a multicast address',
    'ff02::1': 'a multicast address',
    '0.0.0.0': 'the unspecified address',
    '::': 'the unspecified address',
    '255.255.255.255': 'the broadcast address',
    '100.64.0.1': 'a shared (carrier-grade NAT) address',
    '64:ff9b::7f00:1': 'a NAT64 address',
    '2002:7f00:1::1': 'a 6to4 address',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2': 'a Teredo address',
    '240.0.0.1': 'a reserved address (reserved)',
    // Issue 62: what ipaddr.js calls unicast is the internet only inside 2000::/3.
    '::7f00:1': 'an IPv4-compatible IPv6 address',
    '::a00:1': 'an IPv4-compatible IPv6 address',
    '::1:0:0:1': 'an IPv6 address outside the global unicast range (2000::/3)',
    'c000::1': 'an IPv6 address outside the global unicast range (2000::/3)',
  }
  for (const [address, words] of Object.entries(refused)) t.match(refusedAddress(address), `is ${words}`, address)
  t.equal(refusedAddress('::ffff:127.0.0.1'), '127.0.0.1 is a loopback address', 'a mapped address is the IPv4 address it carries')
  for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700::1111']) t.equal(refusedAddress(address), null, address)
  t.equal(refusedAddress('not-an-address'), '"not-an-address" is not an address')
})

t.test('SERVICE_WEBHOOK_ALLOW: ranges and single addresses let private ones in, mapped forms too', async (t) => {
  const allowed = parseAllowedRanges(' 10.20.0.0/16, fd12::/64 192.168.1.7 ::1 ') as AllowedRange[]
  t.same(allowed.map(([address, bits]) => `${address.toString()}/${bits}`), ['10.20.0.0/16', 'fd12::/64', '192.168.1.7/32', '::1/128'])
  t.equal(refusedAddress('10.20.3.4', allowed), null)
  t.equal(refusedAddress('::ffff:10.20.3.4', allowed), null, 'mapped')
  t.equal(refusedAddress('fd12::9', allowed), null)
  t.equal(refusedAddress('::1', allowed), null)
  t.equal(refusedAddress('192.168.1.7', allowed), null)
  t.match(refusedAddress('192.168.1.8', allowed), 'a private address', 'only what is named')
  t.match(refusedAddress('10.21.0.1', allowed), 'a private address')
  t.same(parseAllowedRanges(undefined), [])
  t.same(parseAllowedRanges(''), [])
  t.equal(parseAllowedRanges('10.0.0.0/8,intranet'), '"intranet" is not an address or a CIDR range such as 10.0.0.0/8')
  t.equal(parseAllowedRanges('10.0.0.0/33'), '"10.0.0.0/33" is not an address or a CIDR range such as 10.0.0.0/8')
})

t.test('the address as kept: http or https, no user, odd forms of an address written plainly and judged', async (t) => {
  t.equal((parseWebhookUrl(' https://hooks.example.com/desk#part ') as URL).href, 'https://hooks.example.com/desk', 'trimmed, without its fragment')
  t.equal((parseWebhookUrl('http://[2606:4700::1111]:8080/x') as URL).href, 'http://[2606:4700::1111]:8080/x')
  t.equal(parseWebhookUrl('http://0x7f000001/'), 'is refused: 127.0.0.1 is a loopback address')
  t.equal(parseWebhookUrl('http://017700000001/'), 'is refused: 127.0.0.1 is a loopback address')
  t.equal(parseWebhookUrl('http://127.1/'), 'is refused: 127.0.0.1 is a loopback address')
  t.equal(parseWebhookUrl('http://[::ffff:7f00:1]/'), 'is refused: 127.0.0.1 is a loopback address')
  t.equal(parseWebhookUrl('http://[::127.0.0.1]/'), 'is refused: ::7f00:1 is an IPv4-compatible IPv6 address', 'the form a URL writes as [::7f00:1]')
  t.equal(parseWebhookUrl('http://[::7f00:1]:8080/'), 'is refused: ::7f00:1 is an IPv4-compatible IPv6 address')
  t.equal((parseWebhookUrl('http://127.0.0.1:9000/', parseAllowedRanges('127.0.0.0/8') as AllowedRange[]) as URL).port, '9000', 'allowed by the operator')
  t.equal(parseWebhookUrl('ftp://example.com/'), 'must start with https:// (or http://)')
  t.equal(parseWebhookUrl('https://me:pw@example.com/'), 'must not hold a user name or password: put a secret in the path, or check the signature')
  t.equal(parseWebhookUrl('not a url'), 'is not an address such as https://example.com/hooks/service-desk')
  t.equal(parseWebhookUrl(`https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`), `is longer than ${MAX_URL_LENGTH} characters`)
  t.equal(literalAddress('[::1]'), '::1')
  t.equal(literalAddress('127.0.0.1'), '127.0.0.1')
  t.equal(literalAddress('hooks.example.com'), null)
  t.equal(literalAddress('1234'), null, 'only the four-part form: the URL parser has already written any other as one')
})
