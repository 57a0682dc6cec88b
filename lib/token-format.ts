import { hash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

// Personal API tokens follow GitHub's scheme: a recognisable prefix, at least 256 bits of
// randomness in base62, and a CRC32 checksum of what precedes it, so typos and truncations are
// refused without a database read and leaked tokens can be recognised by secret scanners.
export const PERSONAL_TOKEN_PREFIX = 'service_pat_'
// OAuth access and refresh tokens (plugins/oauth) have the same shape under prefixes of their own,
// so scanners, the logs' redaction and the cheap checksum check treat them alike.
export const OAUTH_ACCESS_TOKEN_PREFIX = 'service_oat_'
export const OAUTH_REFRESH_TOKEN_PREFIX = 'service_ort_'
// A link mailed to a customer (db/stores/customer-links.ts) holds a value of the same shape, so the
// logs' redaction hides it in the path of the page it opens.
export const CUSTOMER_LINK_PREFIX = 'service_cln_'
/** Every prefix of a secret value the service issues. */
export const TOKEN_PREFIXES = [PERSONAL_TOKEN_PREFIX, OAUTH_ACCESS_TOKEN_PREFIX, OAUTH_REFRESH_TOKEN_PREFIX, CUSTOMER_LINK_PREFIX] as const

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_BYTES = 32
// 62^43 > 2^256, so 43 digits hold any 256-bit number.
const RANDOM_LENGTH = 43
// 62^6 > 2^32, so 6 digits hold any CRC32.
const CHECKSUM_LENGTH = 6
export const PERSONAL_TOKEN_LENGTH = PERSONAL_TOKEN_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH
const SHAPE = /^service_(pat|oat|ort|cln)_[0-9A-Za-z]{49}$/

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
export function generateToken(prefix: (typeof TOKEN_PREFIXES)[number], random: (size: number) => Buffer = randomBytes): string {
  const body = prefix + base62(BigInt('0x' + random(RANDOM_BYTES).toString('hex')), RANDOM_LENGTH)
  return body + checksum(body)
}

/** A new personal token value. */
export function generatePersonalToken(random: (size: number) => Buffer = randomBytes): string {
  return generateToken(PERSONAL_TOKEN_PREFIX, random)
}

/** True when the text holds the start of any token the service issues (what logs and URLs must not show). */
export function holdsIssuedToken(text: string): boolean {
  return TOKEN_PREFIXES.some((prefix) => text.includes(prefix))
}

/** True when the value has the shape of a personal token, whatever its checksum. */
export function looksLikePersonalToken(value: string): boolean {
  return value.startsWith(PERSONAL_TOKEN_PREFIX)
}

/** True when the value is a well-formed token of that prefix whose checksum matches: a cheap check before any look-up. */
export function isWellFormedToken(value: string, prefix: (typeof TOKEN_PREFIXES)[number]): boolean {
  if (!value.startsWith(prefix) || !SHAPE.test(value)) return false
  const split = value.length - CHECKSUM_LENGTH
  return checksum(value.slice(0, split)) === value.slice(split)
}

export function isWellFormedPersonalToken(value: string): boolean {
  return isWellFormedToken(value, PERSONAL_TOKEN_PREFIX)
}

/** What is stored instead of the value. */
export function fingerprint(value: string): string {
  return hash('sha256', value)
}

/** The end of a token shown in lists, after the prefix and an ellipsis. */
export function lastFour(value: string): string {
  return value.slice(-4)
}

export function maskedToken(end: string): string {
  return `${PERSONAL_TOKEN_PREFIX}...${end}`
}
