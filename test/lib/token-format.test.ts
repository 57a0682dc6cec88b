import t from 'tap'
import {
  base62,
  fingerprint,
  generatePersonalToken,
  isWellFormedPersonalToken,
  lastFour,
  looksLikePersonalToken,
  maskedToken,
  PERSONAL_TOKEN_LENGTH,
} from '../../lib/token-format.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('a new token has the prefix, 43 random base62 digits and a 6-digit checksum', async (t) => {
  const value = generatePersonalToken()
  t.match(value, /^service_pat_[0-9A-Za-z]{49}$/)
  t.equal(value.length, PERSONAL_TOKEN_LENGTH)
  t.ok(isWellFormedPersonalToken(value))
  t.ok(looksLikePersonalToken(value))
  t.not(generatePersonalToken(), value, 'two tokens differ')
})

t.test('the whole 256-bit number is encoded', async (t) => {
  const zeros = generatePersonalToken((size) => Buffer.alloc(size, 0))
  const ones = generatePersonalToken((size) => Buffer.alloc(size, 0xff))
  t.equal(zeros.slice(12, 55), '0'.repeat(43))
  t.equal(ones.slice(12, 55), base62(2n ** 256n - 1n, 43))
  t.ok(isWellFormedPersonalToken(zeros))
  t.ok(isWellFormedPersonalToken(ones))
})

t.test('base62 pads to the length asked for', async (t) => {
  t.equal(base62(0n, 3), '000')
  t.equal(base62(61n, 2), '0z')
  t.equal(base62(62n, 2), '10')
})

t.test('typos, truncations and foreign strings fail the checksum or the shape', async (t) => {
  const value = generatePersonalToken((size) => Buffer.alloc(size, 7))
  const i = 20
  const typo = value.slice(0, i) + (value[i] === 'a' ? 'b' : 'a') + value.slice(i + 1)
  t.notOk(isWellFormedPersonalToken(typo), 'one changed character')
  t.notOk(isWellFormedPersonalToken(value.slice(0, -1)), 'truncated')
  t.notOk(isWellFormedPersonalToken(value + 'a'), 'extended')
  t.notOk(isWellFormedPersonalToken(value.replace('service_pat_', 'service_pa_x')), 'other prefix')
  t.notOk(isWellFormedPersonalToken(value.slice(0, 30) + '-' + value.slice(31)), 'character outside base62')
  t.notOk(isWellFormedPersonalToken(''), 'empty')
  t.notOk(looksLikePersonalToken('ghp_abc'))
})

t.test('the fingerprint is the SHA-256 of the value; lists show the last four', async (t) => {
  t.equal(fingerprint('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  t.equal(lastFour('service_pat_xyzWXYZ'), 'WXYZ')
  t.equal(maskedToken('WXYZ'), 'service_pat_...WXYZ')
})
