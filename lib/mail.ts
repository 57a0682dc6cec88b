// Pure rules of the mail a site takes in (docs/decisions.md, "Mail"): whether a message was sent
// by a machine, what of a reply is new, and the title a subject makes.

/** The largest message taken in, by either door: what a message may carry, and room for its encoding. */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024

/** The longest title a subject gives (the API's own limit on a title). */
export const MAX_TITLE_CHARS = 200

/** What the headers of a message say of it, lower-cased names to their text. */
export type HeaderLookup = (name: string) => string | undefined

/**
 * Why a message was sent by a machine, or null for a person's: RFC 3834's `Auto-Submitted` (any
 * value but `no`), the older `X-Autoreply`/`X-Autorespond`, Microsoft's `X-Auto-Response-Suppress`,
 * `Precedence: bulk, junk or list`, a mailing list's `List-Id`, and a delivery report (RFC 3464).
 * Such mail is kept, never answered, and never reopens a discussion.
 */
export function automaticReason(header: HeaderLookup, contentType = ''): string | null {
  const submitted = header('auto-submitted')?.trim().toLowerCase()
  if (submitted && submitted !== 'no') return `Auto-Submitted: ${submitted}`
  for (const name of ['x-autoreply', 'x-autorespond', 'x-auto-response-suppress']) if (header(name) !== undefined) return name
  const precedence = header('precedence')?.trim().toLowerCase()
  if (precedence === 'bulk' || precedence === 'junk' || precedence === 'list') return `Precedence: ${precedence}`
  if (header('list-id') !== undefined) return 'a mailing list (List-Id)'
  if (/^multipart\/report\b/i.test(contentType) && /report-type\s*=\s*"?delivery-status/i.test(contentType)) return 'a delivery status report'
  return null
}

/**
 * Why a message is taken for spam (docs/decisions.md, "Spam"), or null: the site's word on its
 * sender first (allowed: never; blocked: always), then a mail provider's verdict in its headers
 * (SpamAssassin's X-Spam-Flag and X-Spam-Status, Microsoft 365's SFV:SPM), read when the operator
 * trusts them (`trustHeaders`). Only a verdict of spam is read, never one of "not spam": a stranger
 * who writes those headers himself can send only his own message to the spam state.
 */
export function spamReason(header: HeaderLookup, rule: { pattern: string; verdict: 'allow' | 'block' } | undefined, trustHeaders: boolean): string | null {
  if (rule?.verdict === 'allow') return null
  if (rule?.verdict === 'block') return `its sender is blocked on this site (${rule.pattern})`
  if (!trustHeaders) return null
  // A header given twice comes as a list (its JSON): the first verdict counts.
  const yes = (name: string) => /^[\s"[]*yes\b/i.test(header(name) ?? '')
  if (yes('x-spam-flag')) return 'the mail provider marked it spam (X-Spam-Flag)'
  if (yes('x-spam-status')) return 'the mail provider marked it spam (X-Spam-Status)'
  if (/\bSFV:\s*SPM\b/i.test(header('x-forefront-antispam-report') ?? '')) return 'Microsoft 365 marked it spam (X-Forefront-Antispam-Report)'
  return null
}

/** An address as the service compares it: trimmed and lower-cased. */
export const normalAddress = (address: string) => address.trim().toLowerCase()

/**
 * An address without its last `+tag` (`support+r-1-2-x@example.com` is `support@example.com`, and
 * `team+help+r-1-2-x@` is `team+help@`): where subaddressed mail is delivered (RFC 5233).
 */
export function untagged(address: string): string {
  const at = address.lastIndexOf('@')
  const plus = address.lastIndexOf('+', at)
  return plus < 0 || plus > at ? address : `${address.slice(0, plus)}${address.slice(at)}`
}

/** Whether a text is a plausible mail address (one @, something each side, no spaces), as the users store checks. */
export const isMailAddress = (address: string) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address) && address.length <= 254

/**
 * A discussion's title from a subject: reply and forward prefixes (Re:, Fwd:, AW:, SV:...) and a
 * leading `[#12]` dropped, white space folded, at most MAX_TITLE_CHARS characters; `(no subject)`
 * when nothing is left.
 */
export function titleOf(subject: string | undefined): string {
  let title = (subject ?? '').replace(/\s+/g, ' ').trim()
  for (;;) {
    const shorter = title.replace(/^(re|fwd?|aw|sv|vs|antw|wg|tr|rif|r)\s*(\[\d+\])?\s*:\s*/i, '').replace(/^\[#\d+\]\s*/, '')
    if (shorter === title) break
    title = shorter
  }
  const chars = [...title]
  if (chars.length === 0) return '(no subject)'
  return chars.length <= MAX_TITLE_CHARS ? title : `${chars.slice(0, MAX_TITLE_CHARS - 1).join('')}…`
}

// Where the quoted history of a reply begins: "On <date>, <name> wrote:" (Gmail, Apple Mail,
// Thunderbird, and their translations' common shapes), Outlook's separator and header block.
const HISTORY = [
  /^\s*On\b.{0,300}\bwrote:\s*$/im,
  /^\s*Am\b.{0,300}\bschrieb.{0,100}:\s*$/im,
  /^\s*Le\b.{0,300}\ba écrit\s*:\s*$/im,
  /^\s*-{2,}\s*Original Message\s*-{2,}\s*$/im,
  /^\s*_{10,}\s*$\n^\s*From:/im,
  /^\s*From:\s.+$\n^\s*(Sent|Date):\s.+$/im,
]

/**
 * What is new in the text of a reply: the quoted history (from its first marker, and a block of
 * `>` lines at the end) and a signature after `-- ` dropped, trailing white space trimmed. The whole
 * text when that would leave nothing.
 */
export function newPart(text: string): string {
  return cutHistory(text) || text.trim()
}

/** Whether a reply says anything above what it quotes (newPart would otherwise fall back to the whole text). */
export const hasNewText = (text: string): boolean => cutHistory(text) !== ''

/** A reply's text without its quoted history and signature; empty when nothing else is left. */
function cutHistory(text: string): string {
  let cut = text.replace(/\r\n/g, '\n')
  for (const marker of HISTORY) {
    const found = marker.exec(cut)
    if (found) cut = cut.slice(0, found.index)
  }
  const lines = cut.split('\n')
  while (lines.length > 0 && (/^\s*>/.test(lines.at(-1)!) || lines.at(-1)!.trim() === '')) lines.pop()
  const signature = lines.findIndex((line) => line === '-- ' || line === '--')
  const kept = (signature >= 0 ? lines.slice(0, signature) : lines).join('\n').trimEnd()
  return kept.trim() === '' ? '' : kept
}

/** An IMAP mailbox the service fetches a site's mail from (plugins/mail/fetcher.ts). */
export interface ImapSettings {
  host: string
  port: number
  /** TLS from the start (imaps://); otherwise STARTTLS when the server offers it. */
  secure: boolean
  user: string
  password: string
  folder: string
}

const IMAP_EXAMPLE = 'imaps://user:password@imap.example.com/INBOX'

/**
 * An IMAP mailbox from its address, `imaps://user:password@host[:993][/Folder]` (or `imap://`, port
 * 143, STARTTLS when offered); user and password percent-encoded, the folder INBOX when none. A
 * text saying what is wrong otherwise, which never repeats the address (it may hold a password).
 */
export function parseImapUrl(value: string): ImapSettings | string {
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (!url || !['imap:', 'imaps:'].includes(url.protocol) || url.hostname === '') return `must be an imap:// or imaps:// address, such as ${IMAP_EXAMPLE}`
  if (url.username === '' || url.password === '') return `must name the user and the password, such as ${IMAP_EXAMPLE}`
  const secure = url.protocol === 'imaps:'
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (secure ? 993 : 143) : Number(url.port),
    secure,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    folder: decodeURIComponent(url.pathname.slice(1)) || 'INBOX',
  }
}

/** An IMAP mailbox as it is shown: its address without the password. */
export function shownImap(settings: ImapSettings): string {
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host
  return `${settings.secure ? 'imaps' : 'imap'}://${encodeURIComponent(settings.user)}@${host}:${settings.port}/${encodeURIComponent(settings.folder)}`
}

/** Whether a text is an SMTP address a mailbox's replies can leave by (smtp:// or smtps://, with a host). */
export function isSmtpUrl(value: string): boolean {
  return URL.canParse(value) && ['smtp:', 'smtps:'].includes(new URL(value).protocol) && new URL(value).hostname !== ''
}

/** An SMTP address as it is shown: without its password. */
export function shownSmtp(value: string): string {
  const url = new URL(value)
  url.password = ''
  return url.toString()
}
