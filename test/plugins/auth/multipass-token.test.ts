import { createHash } from 'node:crypto'
import t from 'tap'
import { decodeMultipass, multipassCipherKey, multipassCipherText, parseExpires } from '../../../plugins/auth/multipass-token.ts'
import { makeMultipass } from '../../fixtures/credentials.ts'

// Engines: one: the multipass token's format and checks. Every path of the stores and of PostgreSQL's own code it takes runs on PostgreSQL in a file that stays on both (tools/test/engine-coverage.ts, 2026-12-03).

const KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
const SITE = 'acme'
const LATER = '2030-01-01T00:00:00Z'
const claims = { email: 'ann@example.test', expires: LATER, name: 'Ann' }

t.test('the worked example of docs/decisions.md decrypts exactly', async (t) => {
  const token =
    '4rdsKqcXzJVqbltYJdayy6lIkwtl7vAivlgyDkWCfORWze5HrvfuarBh8Yvkush8cOywmDG4y4M9%0A6vuIyAIWskXOpUaCT/%2BzQ%2BJU8Jf0u0X7%2BbTwjdWyzub6srayFyKn%0A'
  const decoded = decodeMultipass(token, 'some_key', 'some_site')
  t.same(decoded, { email: 'michael@mtrichardson.com', name: 'Michael', expiresAt: Date.parse('2009-11-02T20:07:00Z') })
  t.equal(decodeMultipass(token, 'some_key', 'other_site'), null, 'the site is part of the key')
  t.same(multipassCipherKey('some_key', 'some_site'), createHash('sha1').update('some_keysome_site').digest().subarray(0, 16))
})

t.test('both alphabets, with and without padding, with newlines and URL-escaping', async (t) => {
  // A long name makes the cipher text long enough for line breaks and for + and / to appear.
  const long = { ...claims, name: 'Ann '.repeat(40).trim() }
  const standard = makeMultipass(long, KEY, SITE)
  t.match(standard, /[+/]/, 'the standard alphabet is exercised')
  t.match(makeMultipass(long, KEY, SITE, { urlSafe: true }), /[-_]/, 'the URL-safe alphabet is exercised')
  const forms = {
    standard: {},
    'URL-safe': { urlSafe: true },
    'standard without padding': { padding: false },
    'URL-safe without padding': { urlSafe: true, padding: false },
    'with newlines': { newlines: true },
    'URL-escaped, with newlines': { newlines: true, escaped: true },
    'URL-safe, URL-escaped': { urlSafe: true, escaped: true },
  }
  for (const [name, form] of Object.entries(forms)) {
    for (const length of [1, 2, 3]) {
      // Three plain-text lengths give cipher texts whose base64 ends in each padding shape.
      const c = { ...long, name: long.name + 'x'.repeat(length * 16) }
      const token = makeMultipass(c, KEY, SITE, form)
      t.match(decodeMultipass(token, KEY, SITE), { email: 'ann@example.test', name: c.name }, `${name} (${length})`)
    }
  }
  const padded = makeMultipass(claims, KEY, SITE)
  t.match(padded, /=$/, 'this one is padded')
  t.ok(decodeMultipass(encodeURIComponent(encodeURIComponent(padded)), KEY, SITE), 'escaped twice')
})

t.test('in a query value a space stands for a + sent unescaped', async (t) => {
  let token = ''
  for (let i = 0; !token.includes('+'); i++) token = makeMultipass({ ...claims, unique_id: i }, KEY, SITE)
  const asParsed = token.replaceAll('+', ' ')
  t.ok(decodeMultipass(asParsed, KEY, SITE, { fromQuery: true }), 'query value')
  t.equal(decodeMultipass(asParsed, KEY, SITE), null, 'a header has no such convention: the space is dropped, the token broken')
})

t.test('optional claims', async (t) => {
  const full = { email: ' bob@example.test ', expires: LATER, name: 'Bob', unique_id: 42, trusted: true, to: '/discussions/1' }
  t.same(decodeMultipass(makeMultipass(full, KEY, SITE), KEY, SITE), {
    email: 'bob@example.test',
    expiresAt: Date.parse(LATER),
    name: 'Bob',
    uniqueId: '42',
    trusted: true,
    to: '/discussions/1',
  })
  t.same(decodeMultipass(makeMultipass({ ...full, unique_id: 'u-7', trusted: 'yes', name: 3, to: null }, KEY, SITE), KEY, SITE), {
    email: 'bob@example.test',
    expiresAt: Date.parse(LATER),
    uniqueId: 'u-7',
  }, 'optional claims of another type are left out')
})

t.test('tampered, wrong-key and malformed tokens are all the same null', async (t) => {
  const token = makeMultipass(claims, KEY, SITE)
  const bytes = Buffer.from(token, 'base64')
  const flip = (index: number) => {
    const copy = Buffer.from(bytes)
    copy[index] ^= 0x01
    return copy.toString('base64')
  }
  const cases: Record<string, string> = {
    'a bit flipped in the last block (padding)': flip(bytes.length - 1),
    'a bit flipped in the first block (JSON)': flip(0),
    'a block dropped': bytes.subarray(16).toString('base64'),
    'truncated to a non-block length': bytes.subarray(0, 20).toString('base64'),
    'another key': makeMultipass(claims, 'another key entirely', SITE),
    'another site': makeMultipass(claims, KEY, 'other'),
    empty: '',
    'not base64': 'this is not base64 at all!',
    'impossible base64 length': 'abcde',
    'bad URL-escaping': '%E0%A4%A',
    'far too long': 'A'.repeat(10_000),
    'not JSON': makeMultipass('email=ann@example.test', KEY, SITE),
    'JSON but not an object': makeMultipass('["ann@example.test"]', KEY, SITE),
    'JSON null': makeMultipass('null', KEY, SITE),
    'no email': makeMultipass({ expires: LATER }, KEY, SITE),
    'an empty email': makeMultipass({ email: ' ', expires: LATER }, KEY, SITE),
    'no expires': makeMultipass({ email: 'ann@example.test' }, KEY, SITE),
    'expires as a number': makeMultipass({ email: 'ann@example.test', expires: 1893456000 }, KEY, SITE),
    'expires unreadable': makeMultipass({ email: 'ann@example.test', expires: 'next tuesday' }, KEY, SITE),
  }
  for (const [name, value] of Object.entries(cases)) t.equal(decodeMultipass(value, KEY, SITE), null, name)
})

t.test('the cipher text is found in every form, or not at all', async (t) => {
  t.equal(multipassCipherText('%zz', false), null, 'an undecodable escape')
  t.equal(multipassCipherText('QUJD', false), null, 'three bytes are no AES block')
  t.equal(multipassCipherText('QUJDREVGR0hJSktMTU5PUA', false)?.length, 16, 'sixteen bytes, unpadded')
})

t.test('expires: every accepted format, no zone meaning UTC', async (t) => {
  const at = (iso: string) => Date.parse(iso)
  const accepted: Record<string, string> = {
    '2009-11-02T20:07': '2009-11-02T20:07:00Z',
    '2011-07-06T23:28:40': '2011-07-06T23:28:40Z',
    '2011-07-06T23:28:40Z': '2011-07-06T23:28:40Z',
    '2011-07-06T23:28:40.123Z': '2011-07-06T23:28:40.123Z',
    '2011-07-06T23:28:40.123456': '2011-07-06T23:28:40.123Z',
    '2011-07-06T23:28:40+02:00': '2011-07-06T21:28:40Z',
    '2011-07-06T23:28:40-0530': '2011-07-07T04:58:40Z',
    '2011-07-06T23:28+01': '2011-07-06T22:28:00Z',
    '2011-07-06': '2011-07-06T00:00:00Z',
    '2011-07-06 23:28:40 UTC': '2011-07-06T23:28:40Z',
    '2011-07-06 23:28:40Z': '2011-07-06T23:28:40Z',
    '2011-07-06 23:28:40 +0000': '2011-07-06T23:28:40Z',
    '2011-07-06 23:28:40 GMT': '2011-07-06T23:28:40Z',
    'Wed, 06 Jul 2011 23:28:40 +0000': '2011-07-06T23:28:40Z',
    'Wed, 06 Jul 2011 23:28:40 -0700': '2011-07-07T06:28:40Z',
    'Wed, 06 Jul 2011 23:28:40 GMT': '2011-07-06T23:28:40Z',
    'Wed, 06 Jul 2011 23:28:40 PDT': '2011-07-07T06:28:40Z',
    '6 Jul 2011 23:28 UT': '2011-07-06T23:28:00Z',
    'Wed, 06 Jul 2011 23:28:40': '2011-07-06T23:28:40Z',
    'Wed Jul 06 23:28:40 UTC 2011': '2011-07-06T23:28:40Z',
    'Wed Jul  6 23:28:40 EST 2011': '2011-07-07T04:28:40Z',
    'Wed Jul 06 23:28:40 +0200 2011': '2011-07-06T21:28:40Z',
    'Wed Jul 06 23:28:40 2011': '2011-07-06T23:28:40Z',
    '  2011-07-06T23:28:40Z  ': '2011-07-06T23:28:40Z',
  }
  for (const [text, iso] of Object.entries(accepted)) t.equal(parseExpires(text), at(iso), text)

  for (const text of [
    '',
    'tomorrow',
    '2011-02-30T00:00:00Z',
    '2011-13-01',
    '2011-07-06T24:00',
    '2011-07-06T23:60',
    '2011-07-06T23:28:61',
    '2011-07-06T23:28:40+24:00',
    '2011-07-06T23:28:40+02:60',
    '2011-07-06 23:28:40 CEST',
    'Wed, 06 Foo 2011 23:28:40 +0000',
    '1309994920',
  ]) {
    t.equal(parseExpires(text), null, JSON.stringify(text))
  }
})
