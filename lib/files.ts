// Pure rules for the files people attach (docs/decisions.md, "Attachments"): what a file is called
// once its name is cleaned, what it is (from its bytes, never from its name or the type it was sent
// with), and how it goes back out (RFC 6266).

export const MiB = 1024 * 1024

/** What one comment (one message) may carry. */
export const MESSAGE_LIMITS = { files: 10, bytes: 25 * MiB } as const

/** The operator's limits (SERVICE_FILE_MAX_MB, SERVICE_SITE_FILES_MB): per file, and per site in all. */
export interface FileLimits {
  fileBytes: number
  siteBytes: number
}

export const DEFAULT_FILE_LIMITS: FileLimits = { fileBytes: 10 * MiB, siteBytes: 1024 * MiB }

/**
 * The most a reply's files add up to and still go attached to its mail, by default
 * (SERVICE_MAIL_ATTACHMENTS_MB; plugins/mail/sender.ts): base64 makes them a third larger, 13.3 MB,
 * under the 20-25 MB most mail servers take; past it the mail links to them.
 */
export const DEFAULT_MAIL_ATTACH_BYTES = 10 * MiB

/** The most characters a kept file name has; a longer one keeps its end (the extension). */
export const MAX_FILE_NAME = 200

/** How many leading bytes the type is detected from (file-type's own sample size). */
export const SNIFF_BYTES = 4100

/**
 * The types a browser is allowed to show in the page, with the extensions a name of each may end
 * in: raster images only. SVG can carry script, and HTML, PDF or text are documents of their own.
 */
export const INLINE_TYPES: ReadonlyMap<string, readonly string[]> = new Map([
  ['image/png', ['.png']],
  ['image/jpeg', ['.jpg', '.jpeg', '.jfif']],
  ['image/gif', ['.gif']],
  ['image/webp', ['.webp']],
])

/** Whether a file is shown in the page: a raster image whose name says what it is (a PNG named `.exe` is downloaded). */
export function shownInline(name: string, type: string): boolean {
  const lower = name.toLowerCase()
  return INLINE_TYPES.get(type)?.some((extension) => lower.endsWith(extension)) ?? false
}

/**
 * The name a file is kept under: the last part of any path (either slash), without control
 * characters (C0, DEL, C1; line breaks and tabs become spaces), bidirectional overrides or the characters Windows refuses, white space
 * folded, leading dots dropped (no hidden files), in Unicode's composed form (NFC), at most
 * MAX_FILE_NAME characters, keeping the extension. A name that is nothing after that is `file`.
 */
export function cleanFileName(raw: string): string {
  const last = raw.split(/[/\\]/).pop()!
  const cleaned = last
    .normalize('NFC')
    .replace(/[\t\n\v\f\r]/g, ' ')
    .replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff<>:"|?*]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
    .trim()
  if (cleaned === '') return 'file'
  const chars = [...cleaned]
  if (chars.length <= MAX_FILE_NAME) return cleaned
  const dot = cleaned.lastIndexOf('.')
  const extension = dot > 0 ? [...cleaned.slice(dot)].slice(0, 20).join('') : ''
  return chars.slice(0, MAX_FILE_NAME - [...extension].length).join('') + extension
}

/** RFC 8187's encoding of a parameter value: UTF-8, percent-encoded but for attr-char. */
function extValue(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * Content-Disposition for a file going out (RFC 6266): `inline` for the raster images of
 * INLINE_TYPES named as what they are, `attachment` for everything else; the name as an ASCII fallback (anything else
 * an underscore, quotes and backslashes dropped) and, when it is not plain ASCII, as `filename*`.
 */
export function contentDisposition(name: string, type: string): string {
  const kind = shownInline(name, type) ? 'inline' : 'attachment'
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '')
  const plain = `${kind}; filename="${ascii}"`
  return ascii === name ? plain : `${plain}; filename*=UTF-8''${extValue(name)}`
}

/** Whether the bytes read as text: valid UTF-8 with no NUL and few other control characters. */
function looksLikeText(sample: Buffer): boolean {
  if (sample.length === 0) return true
  // A full sample may end inside a character: decoded as a stream, an unfinished last one is no error.
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: sample.length >= SNIFF_BYTES })
  } catch {
    return false
  }
  const controls = text.match(/[\u0000-\u0008\u000e-\u001f\u007f]/g)?.length ?? 0
  return !text.includes('\u0000') && controls * 100 <= text.length
}

/**
 * The type of text: HTML and SVG are told apart, since they are what a browser would run; the
 * rest is plain text. (file-type reads binary signatures only.)
 */
function textType(sample: Buffer): string {
  const head = sample.subarray(0, 1024).toString('utf8').replace(/^\ufeff/, '').trimStart().toLowerCase()
  if (/^<(!doctype html|html|head|body|script|iframe)[\s>]/.test(head)) return 'text/html'
  if (/<svg[\s>]/.test(head)) return 'image/svg+xml'
  if (head.startsWith('<?xml')) return 'application/xml'
  return 'text/plain'
}

/** file-type's detector, loaded on the first file (it is an ES module of its own, with its own imports). */
let detect: ((sample: Uint8Array) => Promise<{ mime: string } | undefined>) | undefined

/**
 * The type of a file from its first SNIFF_BYTES bytes: file-type's signatures for binary formats,
 * then text (HTML, SVG or plain), else `application/octet-stream`.
 */
export async function detectContentType(sample: Buffer): Promise<string> {
  detect ??= (await import('file-type')).fileTypeFromBuffer
  const found = await detect(sample)
  // file-type names any XML application/xml, SVG included: XML is told apart as text is.
  if (found && found.mime !== 'application/xml') return found.mime
  if (looksLikeText(sample)) return textType(sample)
  return found?.mime ?? 'application/octet-stream'
}

/**
 * A size as people read it, in the units the limits are set in (MiB, written MB as the settings
 * and messages say it): 912 bytes, 14.2 KB, 10 MB.
 */
export function shownSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`
  const units = ['KB', 'MB', 'GB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1023.95 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return `${value.toFixed(1).replace(/\.0$/, '')} ${units[unit]}`
}
