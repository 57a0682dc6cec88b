import { createHash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

// Personal API tokens follow GitHub's scheme: a recognisable prefix, at least 256 bits of
// randomness in base62, and a CRC32 checksum of what precedes it, so typos and truncations are
// refused without a database read and leaked tokens can be recognised by secret scanners.
export const PERSONAL_TOKEN_PREFIX = 'service_pat_'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_BYTES = 32
// 62^43 > 2^256, so 43 digits hold any 256-bit number.
const RANDOM_LENGTH = 43
// 62^6 > 2^32, so 6 digits hold any CRC32.
const CHECKSUM_LENGTH = 6
export const PERSONAL_TOKEN_LENGTH = PERSONAL_TOKEN_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH
const SHAPE = new RegExp(`^${PERSONAL_TOKEN_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`)

export function base62(value: bigint, length: number): string {
  let digits = ''
  let rest = value
  while (rest > 0n) {
    digits = ALPHABET[Number(rest % 62n)] + digits
    rest /= 62n
  }
  return digits.padStart(length, '0')
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECKSUM_LENGTH)
}

/** A new token value. The whole 256-bit number is encoded, so every digit stays uniform. */
export function generatePersonalToken(random: (size: number) => Buffer = randomBytes): string {
  const body = PERSONAL_TOKEN_PREFIX + base62(BigInt('0x' + random(RANDOM_BYTES).toString('hex')), RANDOM_LENGTH)
  return body + checksum(body)
}

/** True when the value has the shape of a personal token, whatever its checksum. */
export function looksLikePersonalToken(value: string): boolean {
  return value.startsWith(PERSONAL_TOKEN_PREFIX)
}

/** True when the value is a well-formed token whose checksum matches: a cheap check before any look-up. */
export function isWellFormedPersonalToken(value: string): boolean {
  if (!SHAPE.test(value)) return false
  const split = value.length - CHECKSUM_LENGTH
  return checksum(value.slice(0, split)) === value.slice(split)
}

/** What is stored instead of the value. */
export function fingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

/** The end of a token shown in lists, after the prefix and an ellipsis. */
export function lastFour(value: string): string {
  return value.slice(-4)
}

export function maskedToken(end: string): string {
  return `${PERSONAL_TOKEN_PREFIX}...${end}`
}
