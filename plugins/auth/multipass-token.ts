import { createDecipheriv, createHash } from 'node:crypto'

// Multipass single sign-on tokens (docs/decisions.md, "Multipass"), read the way the existing multipass
// libraries in Ruby, Python, PHP and Node write them: JSON, AES-128-CBC with PKCS#7 padding under
// the first 16 bytes of SHA-1(multipass key + site permalink) and an all-zero IV, then base64.
//
// Every failure (bad base64, bad length, bad padding, not JSON, missing fields) is the same null:
// a caller that told them apart would be a padding oracle for anyone holding a captured token.

export interface MultipassClaims {
  email: string
  /** The moment the token stops being accepted, in milliseconds since the epoch. */
  expiresAt: number
  name?: string
  uniqueId?: string
  trusted?: boolean
  /** Where the web sign-in goes next; the caller decides whether it may. */
  to?: string
}

const ZERO_IV = Buffer.alloc(16)
// Far above any real token (a few hundred characters); refused before any work.
const MAX_TOKEN_LENGTH = 8192

export function multipassCipherKey(multipassKey: string, permalink: string): Buffer {
  return createHash('sha1').update(multipassKey + permalink, 'utf8').digest().subarray(0, 16)
}

/**
 * The cipher text of a token as it reached us. Tolerated: URL-escaping (once by the library,
 * sometimes once more by the caller), newlines (Ruby's Base64.encode64 breaks lines), the URL-safe
 * alphabet, missing `=` padding, and in a query value a space where a `+` was sent unescaped.
 */
export function multipassCipherText(raw: string, fromQuery: boolean): Buffer | null {
  let text = fromQuery ? raw.replaceAll(' ', '+') : raw
  for (let round = 0; round < 2 && /%[0-9a-f]{2}/i.test(text); round++) {
    try {
      text = decodeURIComponent(text)
    } catch {
      return null
    }
  }
  text = text.replace(/\s+/g, '').replaceAll('-', '+').replaceAll('_', '/').replace(/=+$/, '')
  if (!/^[A-Za-z0-9+/]+$/.test(text) || text.length % 4 === 1) return null
  const bytes = Buffer.from(text, 'base64')
  return bytes.length % 16 === 0 ? bytes : null
}

/** The claims of a token made with this site's key, or null when it is anything else. Expiry is the caller's to judge. */
export function decodeMultipass(raw: string, multipassKey: string, permalink: string, options: { fromQuery?: boolean } = {}): MultipassClaims | null {
  if (raw.length > MAX_TOKEN_LENGTH) return null
  const cipherText = multipassCipherText(raw, options.fromQuery ?? false)
  if (!cipherText) return null
  let plain: string
  try {
    const decipher = createDecipheriv('aes-128-cbc', multipassCipherKey(multipassKey, permalink), ZERO_IV)
    plain = Buffer.concat([decipher.update(cipherText), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
  return parseClaims(plain)
}

function parseClaims(plain: string): MultipassClaims | null {
  let json: unknown
  try {
    json = JSON.parse(plain)
  } catch {
    return null
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null
  const fields = json as Record<string, unknown>
  if (typeof fields.email !== 'string' || fields.email.trim() === '' || typeof fields.expires !== 'string') return null
  const expiresAt = parseExpires(fields.expires)
  if (expiresAt === null) return null
  const claims: MultipassClaims = { email: fields.email.trim(), expiresAt }
  // Optional fields of another type are ignored rather than refused, as the libraries did.
  if (typeof fields.name === 'string') claims.name = fields.name
  if (typeof fields.unique_id === 'string' || typeof fields.unique_id === 'number') claims.uniqueId = String(fields.unique_id)
  if (typeof fields.trusted === 'boolean') claims.trusted = fields.trusted
  if (typeof fields.to === 'string') claims.to = fields.to
  return claims
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
// Offsets in minutes of the zone names RFC 2822 and Ruby's Time#to_s write.
const NAMED_ZONES = new Map([
  ['Z', 0], ['UT', 0], ['UTC', 0], ['GMT', 0],
  ['EST', -300], ['EDT', -240], ['CST', -360], ['CDT', -300], ['MST', -420], ['MDT', -360], ['PST', -480], ['PDT', -420],
])
const ZONE = String.raw`(Z|[A-Za-z]{2,4}|[+-]\d{2}(?::?\d{2})?)`

// 2009-11-02T20:07, 2011-07-06T23:28:40.123+02:00, 2011-07-06 23:28:40 UTC, 2011-07-06 23:28:40Z
const ISO = new RegExp(String.raw`^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(?: ?${ZONE})?$`)
// Wed, 06 Jul 2011 23:28:40 +0000 (RFC 2822; the day name and the seconds are optional)
const RFC_2822 = new RegExp(String.raw`^(?:[A-Za-z]{3}, *)?(\d{1,2}) +([A-Za-z]{3}) +(\d{4}) +(\d{2}):(\d{2})(?::(\d{2}))?(?: +${ZONE})?$`)
// Wed Jul 06 23:28:40 UTC 2011 (Ruby 1.8's Time#to_s, date(1))
const UNIX = new RegExp(String.raw`^[A-Za-z]{3} +([A-Za-z]{3}) +(\d{1,2}) +(\d{2}):(\d{2}):(\d{2})(?: +${ZONE})? +(\d{4})$`)

/** Minutes east of UTC; none given means UTC; null for a zone we cannot place. */
function zoneOffset(zone: string | undefined): number | null {
  if (zone === undefined) return 0
  const named = NAMED_ZONES.get(zone.toUpperCase())
  if (named !== undefined) return named
  const numeric = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone)
  if (!numeric) return null
  const [, sign, hours, minutes = '00'] = numeric
  if (Number(hours) > 23 || Number(minutes) > 59) return null
  return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes))
}

interface Parts {
  year: string
  month: number
  day: string
  hour?: string
  minute?: string
  second?: string
  fraction?: string
  zone?: string
}

function moment(p: Parts): number | null {
  const [year, day, hour, minute, second] = [p.year, p.day, p.hour ?? '0', p.minute ?? '0', p.second ?? '0'].map(Number)
  const offset = zoneOffset(p.zone)
  if (offset === null || hour > 23 || minute > 59 || second > 59) return null
  const millis = Number((p.fraction ?? '').slice(0, 3).padEnd(3, '0'))
  const time = Date.UTC(year, p.month - 1, day, hour, minute, second, millis)
  // Date.UTC rolls 2011-02-30 over to March; a date that does not read back the same is not one.
  const check = new Date(time)
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== p.month - 1 || check.getUTCDate() !== day) return null
  return time - offset * 60_000
}

const monthNumber = (name: string) => MONTHS.indexOf(name.toLowerCase()) + 1

/**
 * The `expires` claim as a moment, read leniently (docs/decisions.md): ISO 8601 with or without seconds
 * or zone, `2011-07-06 23:28:40 UTC`, `2011-07-06 23:28:40Z`, RFC 2822, and
 * `Wed Jul 06 23:28:40 UTC 2011`. No zone means UTC. Null when it is none of them.
 */
export function parseExpires(text: string): number | null {
  const value = text.trim()
  let m = ISO.exec(value)
  if (m) return moment({ year: m[1], month: Number(m[2]), day: m[3], hour: m[4], minute: m[5], second: m[6], fraction: m[7], zone: m[8] })
  m = RFC_2822.exec(value)
  if (m) return moment({ day: m[1], month: monthNumber(m[2]), year: m[3], hour: m[4], minute: m[5], second: m[6], zone: m[7] })
  m = UNIX.exec(value)
  if (m) return moment({ month: monthNumber(m[1]), day: m[2], hour: m[3], minute: m[4], second: m[5], zone: m[6], year: m[7] })
  return null
}
