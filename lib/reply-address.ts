import { timingSafeEqual } from 'node:crypto'
import { normalAddress } from './mail.ts'

// A supporter's reply address (docs/decisions.md, "Mail a team can rely on"): the one way a mail
// may speak for the team. Each mail the service sends a supporter about a discussion answers to a
// subaddress of the site's mailbox (RFC 5233) naming the discussion and the supporter, with a
// keyed digest under the server key that nobody else can make: `support+r-<number>-<user>-<digest>@`.
// Pure: the digest is given (SecretBox.digest).

/** What a keyed digest of a text is (lib/secret-box.ts). */
export type Digest = (plain: string) => string

/** What a reply address names. */
export interface ReplyTag {
  /** The mailbox it is a subaddress of. */
  mailbox: string
  /** The discussion's number on the mailbox's site. */
  number: number
  /** The supporter it was made for. */
  userId: number
}

/** Hex characters of the digest kept: 96 bits. */
const DIGEST_CHARS = 24

const tagOf = (digest: Digest, { mailbox, number, userId }: ReplyTag) =>
  `r-${number.toString(36)}-${userId.toString(36)}-${digest(`reply address v1 ${normalAddress(mailbox)} ${number} ${userId}`).slice(0, DIGEST_CHARS)}`

/** The reply address of a supporter for a discussion, at a mailbox of its site. */
export function replyAddress(digest: Digest, tag: ReplyTag): string {
  const at = tag.mailbox.lastIndexOf('@')
  return `${tag.mailbox.slice(0, at)}+${tagOf(digest, tag)}${tag.mailbox.slice(at)}`
}

const SHAPE = new RegExp(`^([^@\\s]+)\\+r-([0-9a-z]{1,11})-([0-9a-z]{1,11})-([0-9a-f]{${DIGEST_CHARS}})(@[^@\\s]+)$`)

/** What a reply address names, when it is one the digest made; undefined for any other address (a forged or altered one). */
export function readReplyAddress(digest: Digest, address: string): ReplyTag | undefined {
  const found = SHAPE.exec(normalAddress(address))
  if (!found) return undefined
  const tag = { mailbox: `${found[1]}${found[5]}`, number: parseInt(found[2], 36), userId: parseInt(found[3], 36) }
  if (!Number.isSafeInteger(tag.number) || !Number.isSafeInteger(tag.userId)) return undefined
  const expected = Buffer.from(tagOf(digest, tag).slice(-DIGEST_CHARS))
  return timingSafeEqual(expected, Buffer.from(found[4])) ? tag : undefined
}

/** Every text in `texts` that looks like a reply address (its digest unchecked), at most `max`. */
export function replyAddressesIn(texts: string[], max = 10): string[] {
  const shaped = new RegExp(`[^\\s<>,;:"'()\\[\\]]+\\+r-[0-9a-z]{1,11}-[0-9a-z]{1,11}-[0-9a-f]{${DIGEST_CHARS}}@[^\\s<>,;:"'()\\[\\]]+`, 'gi')
  return texts.flatMap((text) => text.match(shaped) ?? []).slice(0, max)
}

/** The marker that makes a supporter's answer by mail an internal note: `#note` starting its first line. */
const NOTE_MARKER = /^\s*#note\b[ \t]*:?[ \t]*\n?/i

/** A supporter's answer by mail: whether it starts with the note marker, and its text without it. */
export function noteMarked(text: string): { internal: boolean; body: string } {
  const marked = NOTE_MARKER.exec(text)
  return marked ? { internal: true, body: text.slice(marked[0].length).trim() || '(The note has no text.)' } : { internal: false, body: text }
}

/** The Message-ID of a mail to a supporter about a discussion: an answer naming it threads there, whatever address it is sent to. */
export function notificationMessageId(digest: Digest, siteId: number, number: number, mailbox: string, unique: string): string {
  return `<notify.${number}.${digest(`notification v1 ${siteId} ${number}`).slice(0, 16)}.${unique}@${mailbox.slice(mailbox.lastIndexOf('@') + 1)}>`
}

/** The number of the discussion that a mail of the site's to a supporter was about, when `messageIds` name one. */
export function notifiedAbout(digest: Digest, siteId: number, messageIds: string[]): number | undefined {
  for (const id of messageIds) {
    const found = /^<notify\.(\d{1,15})\.([0-9a-f]{16})\.[0-9a-f]+@[^>]+>$/.exec(id)
    if (found && digest(`notification v1 ${siteId} ${Number(found[1])}`).slice(0, 16) === found[2]) return Number(found[1])
  }
  return undefined
}
