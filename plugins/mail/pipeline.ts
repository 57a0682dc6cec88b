import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser'
import type { Engine, EngineStores } from '../../db/engine.ts'
import type { EventSink } from '../../db/stores/webhooks.ts'
import type { DiscussionStore } from '../../db/stores/discussions.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { saveFile, type Attachment, type FileStore } from '../../db/stores/files.ts'
import type { Mailbox, MailStore } from '../../db/stores/mail.ts'
import type { OutboxStore } from '../../db/stores/outbox.ts'
import type { SenderStore } from '../../db/stores/senders.ts'
import type { Clock } from '../../lib/clock.ts'
import { cleanFileName, shownSize, type FileLimits } from '../../lib/files.ts'
import { automaticReason, hasNewText, newPart, spamReason, titleOf } from '../../lib/mail.ts'
import { notifiedAbout, noteMarked, readReplyAddress, replyAddressesIn, type ReplyTag } from '../../lib/reply-address.ts'
import { withoutNul } from '../../lib/nul.ts'
import { askRspamd, type Envelope } from '../../lib/rspamd.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { MAX_BODY } from '../../routes/api/discussions/schemas.ts'

// One pipeline from a raw message to a discussion (docs/decisions.md, "Mail"), for every door the
// mail comes in by (the built-in receiver, plugins/mail/receiver.ts; IMAP, plugins/mail/fetcher.ts):
// parsed once, its sender made the site's customer, its files kept as the comment's attachments,
// and the comment and the record of the message written in one transaction, so it is taken once.

export { MAX_MESSAGE_BYTES } from '../../lib/mail.ts'

/** The original message is kept beside its comment up to this size; past it, its whole text. */
export const ORIGINAL_KEPT_BYTES = 1024 * 1024

/** The most messages a site takes from one sender in a minute; past it, later (a flood waits, the rest goes on). */
export const MAX_PER_SENDER_PER_MINUTE = 30

export type Outcome =
  | { kind: 'opened' | 'added'; number: number; automatic: string | null; /** Why it was taken for spam (lib/mail.ts, spamReason). */ spam?: string }
  | { kind: 'duplicate' | 'dropped' | 'refused' | 'bounce'; reason: string }
  | { kind: 'later'; reason: string; sender: string }

/** Where an IMAP fetch stands, moved in the transaction of the message taken (plugins/mail/fetcher.ts). */
export interface FetchPosition {
  /** The process holding the mailbox's lease, renewed for `leaseMs` with the move. */
  owner: string
  leaseMs: number
  from: string | null
  to: string
}

export interface Pipeline {
  database: Engine
  discussions: DiscussionStore
  files: FileStore
  mailboxes: MailStore
  outbox: OutboxStore
  clock: Clock
  box: SecretBox
  limits: FileLimits
  /** What the discussions made by mail tell the site's webhooks (db/stores/webhooks.ts). */
  events: EventSink
  /** What the sites say of senders: allowed, or blocked as spam. */
  senders: SenderStore
  /** SERVICE_MAIL_SPAM_HEADERS: a mail provider's spam verdict in the headers counts (lib/mail.ts, spamReason). */
  spamHeaders: boolean
  /** SERVICE_RSPAMD_URL: rspamd's verdict on a new discussion no rule or header decided (lib/rspamd.ts); null when it is not spam or could not say. */
  rspamd?: (raw: Buffer, envelope: Envelope) => Promise<string | null>
}

/** How a door's mail is judged spam: the provider's headers (SERVICE_MAIL_SPAM_HEADERS), rspamd (SERVICE_RSPAMD_URL). */
export interface SpamSettings {
  headers: boolean
  rspamd?: { url: string; timeoutMs: number }
}

/** The pipeline of an app: its stores, clock and key, and the files' limits. */
export function pipelineOf(fastify: FastifyInstance, limits: FileLimits, spam: SpamSettings = { headers: true }): Pipeline {
  const { rspamd } = spam
  return {
    database: fastify.database,
    discussions: fastify.discussions,
    files: fastify.files,
    mailboxes: fastify.mailboxes,
    outbox: fastify.outbox,
    clock: fastify.clock,
    box: fastify.secretBox,
    limits,
    events: fastify.events,
    senders: fastify.senders,
    spamHeaders: spam.headers,
    // rspamd that cannot say (down, slow, an answer not its own) lets the mail in as not spam: a
    // customer's mail is never lost to a filter's outage; the log says so.
    ...(rspamd && {
      rspamd: (raw: Buffer, envelope: Envelope) =>
        askRspamd(rspamd.url, raw, envelope, rspamd.timeoutMs).catch((error: unknown) => {
          fastify.log.warn({ err: error, rspamd: rspamd.url }, 'rspamd could not check a message: taken as not spam')
          return null
        }),
    }),
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** The addresses of a header (From, To, Cc), groups opened, each lower-cased with its name. */
function addressesOf(header: AddressObject | AddressObject[] | undefined): Array<{ address: string; name: string | undefined }> {
  const entries = [header ?? []].flat().flatMap((list) => list.value).flatMap((entry) => [entry, ...(entry.group ?? [])])
  return entries.filter((entry) => entry.address).map((entry) => ({ address: entry.address!.toLowerCase(), name: entry.name.trim() || undefined }))
}

const firstAddress = (from: AddressObject | AddressObject[] | undefined) => addressesOf(from)[0]

/** The people a message copied besides its sender: its To and Cc (the mailbox among them is passed over by the store). */
const copiedOn = (parsed: ParsedMail, sender: string) => [...addressesOf(parsed.to), ...addressesOf(parsed.cc)].filter((entry) => entry.address !== sender).map(({ address, name }) => ({ email: address, name }))

/** The Message-IDs a reply names: In-Reply-To and References. */
function namedMessages(parsed: ParsedMail): string[] {
  return [...new Set([parsed.inReplyTo ?? [], parsed.references ?? []].flat().filter(Boolean))]
}

/** A header's text, for the automatic-mail rules (mailparser gathers the List-* headers into one, `list`). */
function headerOf(parsed: ParsedMail) {
  return (name: string) => {
    const value = name === 'list-id' ? (parsed.headers.get('list') as { id?: unknown } | undefined)?.id : parsed.headers.get(name)
    return value === undefined ? undefined : typeof value === 'string' ? value : JSON.stringify(value)
  }
}

/** The Content-Type with its parameters, as one text (`multipart/report; report-type=delivery-status`). */
function contentTypeOf(parsed: ParsedMail): string {
  const header = parsed.headers.get('content-type') as { value: string; params: Record<string, string> } | undefined
  if (!header) return ''
  return [header.value, ...Object.entries(header.params).map(([name, value]) => `${name}=${value}`)].join('; ')
}

/**
 * A delivery status report (RFC 3464): the Message-ID of the message it reports on (from the
 * returned headers) and what it says (Status, Diagnostic-Code); undefined for any other message.
 */
function deliveryReport(parsed: ParsedMail): { messageId: string; words: string } | undefined {
  if (!/^multipart\/report\b.*delivery-status/i.test(contentTypeOf(parsed))) return undefined
  const returned = parsed.attachments.find((a) => /^(text\/rfc822-headers|message\/rfc822)$/i.test(a.contentType))
  const messageId = returned && /^Message-ID:\s*(<[^>\s]+>)/im.exec(returned.content.toString('utf8'))?.[1]
  if (!messageId) return undefined
  // mailparser reads the report's machine-readable part (message/delivery-status) into the text.
  const status = parsed.text ?? ''
  const words = [/^Status:\s*(.+)$/im, /^Diagnostic-Code:\s*(.+)$/im].map((line) => line.exec(status)?.[1]?.trim()).filter(Boolean).join(', ')
  return { messageId, words: words || 'the mail could not be delivered' }
}

/** The comment a message makes: its new text (a reply's quoted history cut), never blank, within the API's limit. */
function commentText(parsed: ParsedMail, isReply: boolean, notes: string[]): string {
  const text = withoutNul(parsed.text ?? '').trim()
  const kept = isReply ? newPart(text) : text
  const body = [kept || '(The message has no text.)', ...notes].join('\n\n')
  return [...body].length <= MAX_BODY ? body : `${[...body].slice(0, MAX_BODY - 80).join('')}\n\n[Cut here: the whole message is kept beside it.]`
}

/**
 * The site's first category by creation, where the mail of a mailbox added before the site had a
 * category opens discussions; a site without one takes no new mail until it has one.
 */
async function firstCategory(stores: EngineStores, clock: Clock, siteId: number): Promise<number> {
  const first = await stores.categories(clock).first(siteId)
  if (!first) throw new Error('the site has no category for new discussions: add one (service-desk category add)')
  return first.id
}

/**
 * The supporter's reply address a message was sent to (lib/reply-address.ts), when one of its
 * recipients is one the server key made, at a mailbox of this site; its digest proves only that
 * the address was given out, so the sender must still be the supporter it names.
 */
async function replyTagOf(pipeline: Pipeline, siteId: number, parsed: ParsedMail): Promise<ReplyTag | undefined> {
  const header = headerOf(parsed)
  const texts = ['to', 'cc', 'delivered-to', 'x-original-to'].map(header).filter((text): text is string => text !== undefined)
  const candidates = replyAddressesIn(texts)
  if (candidates.length === 0) return undefined
  const ours = new Set((await pipeline.mailboxes.listMailboxes(siteId)).map((mailbox) => mailbox.address))
  return candidates.map((address) => readReplyAddress(pipeline.box.digest, address)).find((tag) => tag && ours.has(tag.mailbox))
}

/**
 * Why a new discussion's message is spam, or null: the site's rule for its sender decides when
 * there is one, then the provider's headers, then rspamd (asked only when nothing before decided).
 */
async function spamVerdict(pipeline: Pipeline, mailbox: Mailbox, parsed: ParsedMail, raw: Buffer, sender: string, check: SenderCheck): Promise<string | null> {
  const rule = await pipeline.senders.verdictFor(mailbox.siteId, sender)
  const said = spamReason(headerOf(parsed), rule, pipeline.spamHeaders)
  if (said !== null || rule !== undefined || !pipeline.rspamd) return said
  const { ip, helo, mailFrom } = check.connection ?? {}
  return pipeline.rspamd(raw, { from: mailFrom || sender, rcpt: mailbox.address, ...(ip && { ip }), ...(helo && { helo }) })
}

/** A discussion that is not there (a reply address or a notification naming a number the site never had) is none. */
function notFoundAsUndefined(error: unknown): undefined {
  if (error instanceof StoreError && error.code === 'not_found') return undefined
  throw error
}

/** What the door that took a message knows of its sender. */
export interface SenderCheck {
  /** DMARC's verdict (the built-in receiver): true pass, false fail, null none or not checked. */
  verified: boolean | null
  /** Whether an acknowledgement may go to the From: never to an address the door could not tie to the message. */
  acknowledge: boolean
  /** What the built-in receiver saw of the connection, for rspamd: the connecting address, its HELO, the envelope's sender. */
  connection?: { ip: string; helo?: string; mailFrom?: string }
}

/** IMAP's word on a sender: no check of its own (the provider filtered the mail), acknowledgements as the mailbox says. */
export const UNCHECKED: SenderCheck = { verified: null, acknowledge: true }

/** The longest reason a message's refusal gives (a parser's words about hostile input are not repeated whole). */
const MAX_REASON_CHARS = 200

/** Parses a message; a message the parser refuses (too many parts, a header block too large, broken MIME) is its reason instead. */
async function parse(raw: Buffer): Promise<ParsedMail | { unreadable: string }> {
  try {
    return await simpleParser(raw, { skipImageLinks: true, skipTextLinks: true })
  } catch (error) {
    return { unreadable: `the message cannot be read: ${withoutNul(String((error as Error).message ?? error)).slice(0, MAX_REASON_CHARS)}` }
  }
}

/**
 * Takes one message for a mailbox: opens a discussion, or adds to the one it answers (a message
 * it names was taken by the site), or says why not. Mail never speaks for the team: its From is
 * only claimed, so a message is posted on the customer's side whoever it names, a staff address
 * marks it "sender not verified", and a message in a thread from anyone but its customer (a staff
 * address, a stranger naming the thread's Message-ID) is an internal note that moves nothing and is
 * mailed to no one (docs/decisions.md, "Mail never speaks for the team"). `check` is what the door
 * knows of the sender, kept with the message. Files that cannot be kept (too large, the site's
 * space full) are named in the comment instead. Throws only what a later try could mend (the
 * database unreachable): the door then asks the sender to try again.
 */
export async function takeMessage(pipeline: Pipeline, mailbox: Mailbox, raw: Buffer, check: SenderCheck = UNCHECKED, position?: FetchPosition): Promise<Outcome> {
  const { database, discussions, files, mailboxes, clock, box, limits, events } = pipeline
  const siteId = mailbox.siteId
  const parsed = await parse(raw)
  if ('unreadable' in parsed) return { kind: 'refused', reason: parsed.unreadable }
  const from = firstAddress(parsed.from)
  if (!from) return { kind: 'refused', reason: 'the message names no sender (From)' }
  if (await mailboxes.reaches(from.address)) return { kind: 'dropped', reason: `it is from ${from.address}, an address of the service itself` }
  const messageId = parsed.messageId ?? `<${sha256(raw)}@no-message-id.invalid>`
  if (await mailboxes.known(siteId, messageId)) return { kind: 'duplicate', reason: `message ${messageId} was taken already` }

  const automatic = automaticReason(headerOf(parsed), contentTypeOf(parsed))
  // A delivery report about a reply the site mailed is that reply's outcome, not a message.
  const report = deliveryReport(parsed)
  const bounced = report && (await mailboxes.replyOf(siteId, report.messageId))
  if (report && bounced !== undefined) {
    await pipeline.outbox.bounced(bounced, report.words)
    return { kind: 'bounce', reason: `the reply ${report.messageId} bounced: ${report.words}` }
  }
  if ((await mailboxes.takenFrom(siteId, from.address, new Date(clock() - 60_000))) >= MAX_PER_SENDER_PER_MINUTE) {
    return { kind: 'later', reason: `more than ${MAX_PER_SENDER_PER_MINUTE} messages from ${from.address} in a minute`, sender: from.address }
  }
  // A supporter's reply address, or a mail to a supporter about a discussion, names its thread.
  const tag = await replyTagOf(pipeline, siteId, parsed)
  const thread = tag?.number ?? (await mailboxes.threadOf(siteId, namedMessages(parsed))) ?? notifiedAbout(box.digest, siteId, namedMessages(parsed))
  // A thread merged into another continues there (db/stores/merges.ts).
  const answered = thread === undefined ? undefined : await discussions.current(siteId, thread).catch(notFoundAsUndefined)
  const isReply = answered !== undefined && answered.state !== 'deleted'
  // A new discussion from a blocked sender, or one the mail provider or rspamd judged spam, is spam:
  // told to no one, acknowledged to no one. A reply joins its thread as any reply does (its team
  // decided on it).
  const spam = isReply ? null : await spamVerdict(pipeline, mailbox, parsed, raw, from.address, check)
  const customer = await mailboxes.customer(siteId, from.address, from.name)
  // The supporter answering by mail: their reply address, from their own address (not failing
  // DMARC), by a person rather than an auto-responder.
  const supporter = isReply && tag !== undefined && tag.userId === customer.id && customer.staff && automatic === null && check.verified !== false
  // A thread is its customer's and its participants' (the people they copied, those the team
  // added): anyone else who names its messages writes a note for the team.
  const stranger = isReply && !supporter && answered!.authorEmail.toLowerCase() !== from.address && !(await mailboxes.isParticipant(answered!.id, from.address))
  const internal = automatic !== null || (isReply && (stranger || customer.staff))
  const verified = customer.staff && !supporter ? false : check.verified
  const notes: string[] = []
  // A supporter answering by their reply address speaks for the team: no note about its sender.
  if (customer.staff && !supporter) notes.push(`[Sent from the address of a member of the team, which a mail cannot prove: kept as ${isReply ? 'an internal note' : "the customer's side"}, mailed to no one. The team answers on the discussion's page.]`)
  else if (stranger) notes.push(`[From ${from.address}, who is not this discussion's customer: kept as an internal note, mailed to no one. The team decides what to do with it.]`)

  // The files first (each a short write of its own), then the comment that carries them.
  const owner = { siteId, uploaderId: customer.id }
  const uploads: Attachment[] = []
  const keep = async (name: string, bytes: Buffer, originalMessage = false) => {
    try {
      uploads.push(await saveFile(files, { ...owner, name: cleanFileName(name), originalMessage }, [bytes], limits))
    } catch (error) {
      if (!(error instanceof StoreError) || error.code !== 'too_large') throw error
      notes.push(`[${cleanFileName(name)} (${shownSize(bytes.length)}) was not kept: ${error.message}.]`)
    }
  }
  try {
    for (const file of parsed.attachments) await keep(file.filename ?? 'attachment', file.content)
    // The message as it came (its quoted history and headers included), beside the comment: for
    // the staff and this sender only, whatever the discussion's visibility.
    if (raw.length <= ORIGINAL_KEPT_BYTES) await keep('original-message.eml', raw, true)
    else await keep('original-message.txt', Buffer.from(withoutNul(parsed.text ?? '')), true)
    // A supporter's answer is their reply, or with the marker their internal note (lib/reply-address.ts);
    // one with nothing new above what it quotes (an image only, an answer under the quote) is a note:
    // what it quotes may be an internal note, never to be mailed to the customer.
    const answer = !supporter
      ? { internal, body: commentText(parsed, isReply, notes) }
      : hasNewText(withoutNul(parsed.text ?? ''))
        ? noteMarked(commentText(parsed, isReply, notes))
        : { internal: true, body: commentText(parsed, false, ['[Nothing new was found above the quoted mail: kept whole as an internal note, mailed to no one.]']) }
    const body = answer.body
    const outcome = await database.atomic(async (stores) => {
      const inside = stores.discussions(clock, box, events)
      const posted = { siteId, supporterId: customer.id, ...(!supporter && { onBehalfOf: { email: customer.email, unproven: true } }), via: 'email' as const, uploads: uploads.map((u) => u.id) }
      const made = isReply
        ? await inside.reply({ ...posted, number: answered!.number, body, internal: answer.internal })
        : await inside.create({
            ...posted,
            categoryId: mailbox.categoryId ?? (await firstCategory(stores, clock, siteId)),
            title: titleOf(parsed.subject),
            body,
            // Mail is between the customer and the team: never shown to other customers.
            public: false,
            spam: spam !== null,
          })
      const mail = stores.mail(clock, box)
      // Whom a person's mail copied joins the discussion: the team's replies copy them. Never what a
      // machine, a staff address, a stranger to the thread, a mail failing DMARC or spam copied.
      if (automatic === null && spam === null && !customer.staff && !stranger && verified !== false) await mail.addParticipants({ siteId, id: made.discussion.id, authorEmail: made.discussion.authorEmail }, copiedOn(parsed, from.address), 'mail')
      await mail.record({ siteId, mailboxId: mailbox.id, messageId, discussionId: made.discussion.id, commentId: made.comment.id, sender: from.address, automatic: automatic !== null, senderVerified: verified, spamReason: spam })
      if (position) await mail.advance(mailbox.id, position)
      // An acknowledgement answers a person's new discussion, never a machine (no loop), nor an
      // address the door could not tie to the message (a forger's victims are not mailed).
      if (!isReply && spam === null && automatic === null && mailbox.acknowledge && check.acknowledge && verified !== false) {
        await stores.outbox(clock).acknowledge({ siteId, discussionId: made.discussion.id, number: made.discussion.number, title: made.discussion.title, commentId: made.comment.id })
      }
      return { kind: isReply ? 'added' : 'opened', number: made.discussion.number, automatic, ...(spam !== null && { spam }) } as const
    })
    return outcome
  } catch (error) {
    await files.discard(siteId, customer.id, uploads.map((u) => u.id))
    // Another process (or an earlier try) took the same message meanwhile.
    if (error instanceof StoreError && error.field === 'message_id') return { kind: 'duplicate', reason: error.message }
    throw error
  }
}
