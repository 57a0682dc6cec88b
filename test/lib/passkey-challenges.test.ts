import { createHmac } from 'node:crypto'
import t from 'tap'
import { CHALLENGE_MS, challengeExpiry, makeChallenge } from '../../lib/passkey-challenges.ts'

// Engines: one: nothing here reaches a database of the suite's engine.
// The passkey challenges' signature (docs/decisions.md, "Passkeys"): made for one context, good
// until their expiry, and nothing else passes: another context, a changed part, a made-up one.

const sign = (text: string) => createHmac('sha256', 'test key').update(text).digest('hex')
const NOW = Date.UTC(2026, 10, 26, 12)

t.test('a challenge holds for its context until it expires', async (t) => {
  const challenge = makeChallenge(sign, 'passkey sign_in|1|p:abc', NOW)
  t.match(challenge, /^[\w-]{22}\.[0-9a-z]+\.[0-9a-f]{32}$/)
  t.not(makeChallenge(sign, 'passkey sign_in|1|p:abc', NOW), challenge, 'a new one each time')
  t.same(challengeExpiry(sign, 'passkey sign_in|1|p:abc', challenge, NOW + 1000), new Date(NOW + CHALLENGE_MS))
  t.equal(challengeExpiry(sign, 'passkey sign_in|1|p:abc', challenge, NOW + CHALLENGE_MS), undefined, 'expired')
  t.equal(challengeExpiry(sign, 'passkey sign_in|1|p:other', challenge, NOW), undefined, "another browser's")
  t.equal(challengeExpiry(sign, 'passkey confirm|1|p:abc', challenge, NOW), undefined, "another ceremony's")
  t.equal(challengeExpiry(sign, 'passkey sign_in|2|p:abc', challenge, NOW), undefined, "another site's")
  t.equal(challengeExpiry((text) => sign(`${text}!`), 'passkey sign_in|1|p:abc', challenge, NOW), undefined, 'another key')

  const [nonce, until, digest] = challenge.split('.')
  const later = (NOW + 10 * CHALLENGE_MS).toString(36)
  for (const [forged, what] of [
    [`${nonce}.${later}.${digest}`, 'a later expiry'],
    [`${nonce.slice(1)}x.${until}.${digest}`, 'another nonce'],
    [`${nonce}.${until}.${digest.slice(0, 31)}${digest.endsWith('0') ? '1' : '0'}`, 'a changed digest'],
    [`${nonce}.${until}.${digest}.x`, 'a part more'],
    [`${nonce}.${until}`, 'no digest'],
    [`.${until}.${digest}`, 'no nonce'],
    [`${nonce}..${digest}`, 'no expiry'],
    ['', 'nothing'],
  ]) {
    t.equal(challengeExpiry(sign, 'passkey sign_in|1|p:abc', forged, NOW), undefined, what)
  }
})
