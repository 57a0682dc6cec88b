import { randomBytes } from 'node:crypto'
import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { OutboxKind, OutboxState } from '../values.ts'

// What leaves the process, one outbox for both engines (docs/decisions.md, "Mail"): a row written
// in the transaction of its cause, so a message is queued exactly when its cause commits; the
// sender (plugins/mail/sender.ts) takes due rows under a lease, so two processes never send one
// row at once, and records each try. Reply mail is its first kind.

export type OutboxRow = Tables['outbox']['$inferSelect']

/** A reply mailed to a customer: what nodemailer sends. */
export interface ReplyMail {
  from: string
  to: string
  subject: string
  text: string
  messageId: string
  inReplyTo: string
  references: string[]
  /** The mailbox it leaves from: its own SMTP address, when it has one, sends it. */
  mailboxId: number
  /** An automatic answer (the acknowledgement): marked `Auto-Submitted: auto-replied` (RFC 3834). */
  automatic?: boolean
}

/** How a reply's mail is doing, as the API and the page show it. */
export interface Delivery {
  commentId: number
  state: OutboxState
  to: string
  attempts: number
  lastError: string | null
  sentAt: Date | null
}

/** The most Message-IDs a reply's References names: the thread's first and its newest. */
const MAX_REFERENCES = 20

/**
 * Queues the mail of a public reply by the staff (or of the acknowledgement of a new discussion),
 * in the transaction of `port` (the reply's own): when the discussion came by mail, to the sender
 * of its newest message taken in, from the mailbox it came to, threaded (In-Reply-To and
 * References name the messages of the discussion). Its Message-ID is recorded as the
 * discussion's, so the customer's answer finds it. Nothing when the discussion did not come by mail.
 */
export async function queueReplyMail(
  port: StorePort,
  clock: Clock,
  reply: { siteId: number; discussionId: number; number: number; title: string; commentId: number; body: string | ((siteName: string) => string) },
  kind: OutboxKind = 'reply_mail',
): Promise<void> {
  const { mailboxes, mailMessages, outbox, sites } = port.tables
  const [last] = await port.db
    .select({ messageId: mailMessages.messageId, sender: mailMessages.sender, mailboxId: mailboxes.id, address: mailboxes.address, siteName: sites.name })
    .from(mailMessages)
    .innerJoin(mailboxes, eq(mailboxes.id, mailMessages.mailboxId))
    .innerJoin(sites, eq(sites.id, mailboxes.siteId))
    .where(and(eq(mailMessages.discussionId, reply.discussionId), eq(mailMessages.outbound, false), eq(mailMessages.automatic, false)))
    .orderBy(desc(mailMessages.id))
    .limit(1)
  if (!last) return
  const thread = await port.db
    .select({ messageId: mailMessages.messageId })
    .from(mailMessages)
    .where(eq(mailMessages.discussionId, reply.discussionId))
    .orderBy(asc(mailMessages.id))
  const ids = thread.map((m) => m.messageId)
  const references = ids.length <= MAX_REFERENCES ? ids : [ids[0]!, ...ids.slice(-(MAX_REFERENCES - 1))]
  const domain = last.address.slice(last.address.indexOf('@') + 1)
  const messageId = `<reply-${reply.commentId}.${randomBytes(6).toString('hex')}@${domain}>`
  const mail: ReplyMail = {
    from: `${last.siteName.replace(/["\\\r\n]/g, '')} <${last.address}>`,
    to: last.sender,
    subject: `Re: [#${reply.number}] ${reply.title}`,
    text: typeof reply.body === 'string' ? reply.body : reply.body(last.siteName),
    messageId,
    inReplyTo: last.messageId,
    references,
    mailboxId: last.mailboxId,
    ...(kind === 'acknowledgement' && { automatic: true }),
  }
  const now = new Date(clock())
  await port.db.insert(outbox).values({ siteId: reply.siteId, commentId: reply.commentId, kind, payload: JSON.stringify(mail), nextAttemptAt: now, createdAt: now })
  await port.db.insert(mailMessages).values({
    siteId: reply.siteId,
    messageId,
    discussionId: reply.discussionId,
    commentId: reply.commentId,
    sender: last.address,
    mailboxId: last.mailboxId,
    outbound: true,
    createdAt: now,
  })
}

export function createOutboxStore(port: StorePort, clock: Clock) {
  const { db, tables: { outbox } } = port
  const p = sql.placeholder
  const due = db
    .select()
    .from(outbox)
    .where(and(eq(outbox.state, 'queued'), lte(outbox.nextAttemptAt, p('now')), or(isNull(outbox.leaseUntil), lt(outbox.leaseUntil, p('now')))))
    .orderBy(asc(outbox.id))
    .limit(p('limit'))
    .prepare('outbox_due')

  return {
    /**
     * Queues the acknowledgement of a new discussion by mail (in the transaction that opened it):
     * an automatic answer to its sender, from the mailbox, threaded like a reply.
     */
    acknowledge(opened: { siteId: number; discussionId: number; number: number; title: string; commentId: number }): Promise<void> {
      const body = (siteName: string) => [
        `Thank you for writing to ${siteName}. Your message is #${opened.number}, "${opened.title}", and the team will answer it by mail.`,
        'To add to it, answer this mail; please keep "[#' + opened.number + ']" in the subject.',
        '(This answer was sent automatically.)',
      ].join('\n\n')
      return queueReplyMail(port, clock, { ...opened, body }, 'acknowledgement')
    },

    /** Rows due now and held by no live lease, oldest first. */
    due(limit: number): Promise<OutboxRow[]> {
      return due.execute({ now: port.moment(new Date(clock())), limit })
    },

    /** Takes the row's lease until `ms` from now, when no other live lease holds it; whether it was taken. */
    async claim(id: number, ms: number): Promise<boolean> {
      const now = new Date(clock())
      const taken = await db
        .update(outbox)
        .set({ leaseUntil: new Date(now.getTime() + ms) })
        .where(and(eq(outbox.id, id), eq(outbox.state, 'queued'), or(isNull(outbox.leaseUntil), lt(outbox.leaseUntil, now))))
        .returning({ id: outbox.id })
      return taken.length > 0
    },

    /** The try succeeded: sent, and never tried again. */
    async sent(id: number): Promise<void> {
      await db.update(outbox).set({ state: 'sent', sentAt: new Date(clock()), attempts: sql`${outbox.attempts} + 1`, leaseUntil: null, lastError: null }).where(eq(outbox.id, id))
    },

    /** The try failed with `error`: tried again at `retryAt`, or never (failed) when there is none. */
    async tried(id: number, error: string, retryAt: Date | null): Promise<void> {
      await db
        .update(outbox)
        .set({ state: retryAt ? 'queued' : 'failed', attempts: sql`${outbox.attempts} + 1`, lastError: error.slice(0, 500), nextAttemptAt: retryAt ?? new Date(clock()), leaseUntil: null })
        .where(eq(outbox.id, id))
    },

    /** The row cannot be sent now (no way out): looked at again at `at`, why kept, no try counted. */
    async postpone(id: number, why: string, at: Date): Promise<void> {
      await db.update(outbox).set({ lastError: why, nextAttemptAt: at }).where(and(eq(outbox.id, id), eq(outbox.state, 'queued')))
    },

    /** A delivery report says the reply mail of `commentId` never arrived: failed, with its words. */
    async bounced(commentId: number, words: string): Promise<void> {
      await db.update(outbox).set({ state: 'failed', lastError: `bounced: ${words}`.slice(0, 500), leaseUntil: null }).where(eq(outbox.commentId, commentId))
    },

    /** How the mail of these comments is doing, by comment. */
    async deliveries(commentIds: number[]): Promise<Map<number, Delivery>> {
      if (commentIds.length === 0) return new Map()
      const rows = await db.select().from(outbox).where(and(inArray(outbox.commentId, commentIds), eq(outbox.kind, 'reply_mail')))
      return new Map(
        rows.map((row) => [
          row.commentId,
          { commentId: row.commentId, state: row.state, to: (JSON.parse(row.payload) as ReplyMail).to, attempts: row.attempts, lastError: row.lastError, sentAt: row.sentAt },
        ]),
      )
    },
  }
}

export type OutboxStore = ReturnType<typeof createOutboxStore>
