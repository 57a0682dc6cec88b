import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'

// Secrets the service must be able to show again (the legacy account token on the profile page)
// are kept encrypted under the server key: AES-256-GCM, a fresh 96-bit nonce per value, and the
// authentication tag, so a changed or swapped value is refused instead of read.

const VERSION = 'v1'
const NONCE_BYTES = 12
const TAG_BYTES = 16

export interface SecretBox {
  /** `v1.` + base64url(nonce | tag | cipher text). */
  seal(plain: string): string
  /** The plain text, or null when the value was not sealed by this key or was changed. */
  open(sealed: string): string | null
  /**
   * A keyed digest (HMAC-SHA256 under a key of its own from the server secret), hex: what a
   * one-time secret is stored as (recovery codes), so a copy of the database cannot test guesses.
   */
  digest(plain: string): string
}

/**
 * A box keyed by the server secret. The secret is text of high entropy (SERVICE_SECRET or the key
 * file), so HKDF, not a slow password hash, turns it into the 256-bit key.
 */
export function createSecretBox(secret: string): SecretBox {
  const key = Buffer.from(hkdfSync('sha256', secret, 'service-desk', 'secret box v1', 32))
  const digestKey = Buffer.from(hkdfSync('sha256', secret, 'service-desk', 'digest v1', 32))
  return {
    digest: (plain) => createHmac('sha256', digestKey).update(plain).digest('hex'),
    seal(plain) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, nonce)
      const text = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
      return `${VERSION}.${Buffer.concat([nonce, cipher.getAuthTag(), text]).toString('base64url')}`
    },
    open(sealed) {
      const [version, body] = sealed.split('.')
      if (version !== VERSION || body === undefined) return null
      const bytes = Buffer.from(body, 'base64url')
      if (bytes.length < NONCE_BYTES + TAG_BYTES) return null
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, NONCE_BYTES))
      decipher.setAuthTag(bytes.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES))
      try {
        return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        return null
      }
    },
  }
}
