import t from 'tap'
import { createSecretBox } from '../../lib/secret-box.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

const SECRET = 'x'.repeat(64)

t.test('sealed values open under the same key only, and a change is refused', async (t) => {
  const box = createSecretBox(SECRET)
  const sealed = box.seal('the legacy token')
  t.match(sealed, /^v1\.[\w-]+$/)
  t.notMatch(sealed, 'legacy', 'nothing of the plain text shows')
  t.not(box.seal('the legacy token'), sealed, 'a fresh nonce each time')
  t.equal(box.open(sealed), 'the legacy token')
  t.equal(createSecretBox(SECRET).open(sealed), 'the legacy token', 'the key depends on the secret alone')
  t.equal(createSecretBox('y'.repeat(64)).open(sealed), null, 'another server key')

  const bytes = Buffer.from(sealed.slice(3), 'base64url')
  bytes[bytes.length - 1] ^= 1
  t.equal(box.open(`v1.${bytes.toString('base64url')}`), null, 'a changed cipher text')
  t.equal(box.open('v2.' + sealed.slice(3)), null, 'an unknown version')
  t.equal(box.open('v1'), null, 'no body')
  t.equal(box.open('v1.AAAA'), null, 'too short to hold a nonce and a tag')
  t.equal(box.open('plain text'), null)
})
