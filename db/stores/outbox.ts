import { randomBytes } from 'node:crypto'
import { and, asc, desc, eq, gt, isNull, like, lt, lte, ne, notInArray, or, sql } from '../drizzle.ts'
import { withoutNul } from '../../lib/nul.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import type { OutboxKind, OutboxState } from '../values.ts'

// What leaves the process, one outbox for both engines (docs/decisions.md, "Mail"): a row written
// in the transaction of its cause, so a message is queued exactly when its cause commits; the
// sender (plugins/mail/sender.ts) takes due rows under a lease, so two processes never send one
// row at once, and records each try. Reply mail is its first kind; a customer's links the second,
// sealed under the server key while they wait (mailOf).

export type OutboxRow = Tables['outbox']['$inferSelect']

/** A mail of the outbox: what nodemailer sends. */
export interface OutboxMail {
  /** The site's mailbox as `Name <address>`; the service's own From (SERVICE_MAIL_FROM) when the site has no mailbox. */
  from?: string
  to: string
  /** The discussion's participants a reply copies (db/stores/mail.ts); never on an acknowledgement. */
  cc?: string[]
  subject: string
  text: string
  messageId?: string
  inReplyTo?: string
  references?: string[]
  /** The mailbox it leaves from: its own SMTP address, when it has one, sends it. */
  mailboxId?: number
  /** An automatic answer (the acknowledgement): marked `Auto-Submitted: auto-replied` (RFC 3834). */
  automatic?: boolean
  /**
   * A mail to a supporter about a discussion (a notification): the sender makes its Reply-To their
   * reply address at this mailbox and its Message-ID one an answer threads by (lib/reply-address.ts),
   * with the server key, at each try: no such address is ever stored.
   */
  answerable?: { siteId: number; mailbox: string; number: number; userId: number }
  /** The discussion's page on the customer's side (on the staff's, for a notification), which the sender names below the text (plugins/mail/sender.ts). */
  page?: { site: string; number: number; staff?: boolean }
}

/** How a reply's mail is doing, as the API and the page show it. */
export interface Delivery {
  commentId: number
  state: OutboxState
  to: string
  cc: string[]
  attempts: number
  lastError: string | null
  sentAt: Date | null
}

/** Whom a mail goes to: its To and its copies. */
const addressesOf = (mail: OutboxMail) => ({ to: mail.to, cc: mail.cc ?? [] })

/** The most Message-IDs a reply's References names: the thread's first and its newest. */
const MAX_REFERENCES = 20

/** The kinds whose mail holds a link that signs in or posts: kept sealed under the server key until sent. */
const SEALED: ReadonlySet<OutboxKind> = new Set(['sign_in_link', 'confirmation', 'password_reset', 'invitation', 'data_export'])

/** The mail of an outbox row, opened when its kind is kept sealed; null when it cannot be opened (another server key). */
export function mailOf(row: Pick<OutboxRow, 'kind' | 'payload'>, box: SecretBox): OutboxMail | null {
  const text = SEALED.has(row.kind) ? box.open(row.payload) : row.payload
  return text === null ? null : (JSON.parse(text) as OutboxMail)
}

/** The site's first mailbox, which mail about a discussion not started by mail leaves from; none when the site has none. */
export async function siteMailbox(port: StorePort, siteId: number) {
  const { mailboxes, sites } = port.tables
  const read = port.prepared('outbox_site_mailbox', (db) =>
    db
      .select({ name: sites.name, permalink: sites.permalink, id: mailboxes.id, address: mailboxes.address })
      .from(sites)
      // In the subquery its own table: the site's lowest mailbox id.
      .leftJoin(mailboxes, eq(mailboxes.id, sql`(select min(${mailboxes.id}) from ${mailboxes} where ${mailboxes.siteId} = ${sites.id})`))
      .where(eq(sites.id, sql.placeholder('siteId')))
      .prepare('outbox_site_mailbox'),
  )
  const [{ name, permalink, id, address }] = await read.execute({ siteId })
  return { site: { name, permalink }, mailbox: id === null ? undefined : { id, address: address! } }
}

/** `Site name <address>`, the From of the site's mail. */
export const fromOf = (siteName: string, address: string) => `${siteName.replace(/["\\\r\n]/g, '')} <${address}>`

/** A Message-ID of the service's, at the mailbox's domain. */
const newMessageId = (what: string, address: string) => `<${what}.${randomBytes(6).toString('hex')}@${address.slice(address.indexOf('@') + 1)}>`

/**
 * Queues a mail holding a customer's link in the transaction of `port` (to sign in, or to post what
 * a visitor wrote): from the site's first mailbox, or the service's From without one; its payload
 * sealed (SEALED). A link that opens the staff's side (a password's, an invitation's) always leaves
 * by the service's own mailer (SERVICE_SMTP_URL): a site's mailbox keeps a copy of what it sends in
 * its Sent folder, which its delegates and the provider's administrators can read.
 */
export async function queueCustomerMail(port: StorePort, clock: Clock, box: SecretBox, input: { siteId: number; kind: 'sign_in_link' | 'confirmation' | 'password_reset' | 'invitation' | 'data_export'; mail: (siteName: string) => Pick<OutboxMail, 'to' | 'subject' | 'text'> }): Promise<void> {
  const { site, mailbox } = await siteMailbox(port, input.siteId)
  const bySite = mailbox && input.kind !== 'password_reset' && input.kind !== 'invitation'
  const mail: OutboxMail = { ...input.mail(site.name), ...(bySite && { from: fromOf(site.name, mailbox.address), mailboxId: mailbox.id }), automatic: true }
  const now = new Date(clock())
  await port.db.insert(port.tables.outbox).values({ siteId: input.siteId, kind: input.kind, payload: box.seal(JSON.stringify(mail)), nextAttemptAt: now, createdAt: now })
}

/**
 * Who a reply to the discussion goes to, in one statement: the discussion's customer's newest
 * message (a thread is theirs, and no one else who wrote into it, naming its Message-ID, becomes
 * where the team's replies go), beside each of its participants in order (one row without any).
 * Sent before its first await (db/port.ts, together).
 */
export function replyPeopleIn(port: StorePort, discussionId: number) {
  const { discussions, mailboxes, mailMessages, participants, sites, users } = port.tables
  const people = port.prepared('outbox_reply_people', (db) => {
    const discussionId = sql.placeholder('discussionId')
    const customer = db
      .select({ messageId: mailMessages.messageId, sender: mailMessages.sender, mailboxId: mailboxes.id, address: mailboxes.address, siteName: sites.name, permalink: sites.permalink })
      .from(mailMessages)
      .innerJoin(mailboxes, eq(mailboxes.id, mailMessages.mailboxId))
      .innerJoin(sites, eq(sites.id, mailboxes.siteId))
      .innerJoin(discussions, eq(discussions.id, mailMessages.discussionId))
      .innerJoin(users, eq(users.id, discussions.authorId))
      .where(and(eq(mailMessages.discussionId, discussionId), eq(mailMessages.outbound, false), eq(mailMessages.automatic, false), eq(mailMessages.sender, users.email)))
      .orderBy(desc(mailMessages.id))
      .limit(1)
      .as('customer')
    return db
      .select({ messageId: customer.messageId, sender: customer.sender, mailboxId: customer.mailboxId, address: customer.address, siteName: customer.siteName, permalink: customer.permalink, participant: participants.email })
      .from(discussions)
      .leftJoin(customer, sql`true`)
      .leftJoin(participants, eq(participants.discussionId, discussions.id))
      .where(eq(discussions.id, discussionId))
      .orderBy(asc(participants.id))
      .prepare('outbox_reply_people')
  })
  return people.execute({ discussionId })
}

/**
 * Queues the mail of a public reply by the staff (or of the acknowledgement of a new discussion),
 * in the transaction of `port` (the reply's own): when the discussion came by mail, to its
 * customer, from their newest message taken in, from the mailbox it came to, threaded (In-Reply-To and
 * References name the messages of the discussion); when a customer started it on the customer's
 * pages, to them, from the site's first mailbox or the service's From. Its Message-ID is recorded
 * as the discussion's when it leaves from a mailbox, so the customer's answer by mail finds it.
 * Nothing for a discussion that came neither way. Whether a mail was queued.
 */
export async function queueReplyMail(
  port: StorePort,
  clock: Clock,
  // startedOnTheWeb, when the caller has the discussion's row: false spares the read of whether it was.
  reply: { siteId: number; discussionId: number; number: number; title: string; commentId: number; body: string | ((siteName: string) => string); startedOnTheWeb?: boolean },
  kind: OutboxKind = 'reply_mail',
  // Who it goes to, when the caller read it (replyPeopleIn) with another statement.
  people?: Awaited<ReturnType<typeof replyPeopleIn>>,
): Promise<boolean> {
  const { mailMessages, outbox } = port.tables
  const discussionId = sql.placeholder('discussionId')
  const rows = people ?? (await replyPeopleIn(port, reply.discussionId))
  const last = rows[0]?.messageId ? rows[0] : undefined
  const customer = last ? { mailbox: { id: last.mailboxId!, address: last.address! }, site: { name: last.siteName!, permalink: last.permalink! }, to: last.sender! } : reply.startedOnTheWeb === false ? undefined : await startedOnTheWeb(port, reply)
  // The discussion's participants are copied on a reply (an acknowledgement answers its sender
  // alone); on a discussion its customer cannot be mailed about, the reply goes to them instead.
  const copied = kind === 'acknowledgement' ? [] : rows.flatMap((row) => (row.participant === null ? [] : [row.participant])).filter((email) => email !== customer?.to)
  const from = customer ?? (copied.length > 0 ? { ...(await siteMailbox(port, reply.siteId)), to: copied.shift()! } : undefined)
  if (!from) return false
  const threadOf = port.prepared('outbox_reply_thread', (db) =>
    db.select({ messageId: mailMessages.messageId }).from(mailMessages).where(eq(mailMessages.discussionId, discussionId)).orderBy(asc(mailMessages.id)).prepare('outbox_reply_thread'),
  )
  const thread = await threadOf.execute({ discussionId: reply.discussionId })
  const ids = thread.map((m) => m.messageId)
  const references = ids.length <= MAX_REFERENCES ? ids : [ids[0]!, ...ids.slice(-(MAX_REFERENCES - 1))]
  const messageId = from.mailbox && newMessageId(`reply-${reply.commentId}`, from.mailbox.address)
  const mail: OutboxMail = {
    ...(from.mailbox && { from: fromOf(from.site.name, from.mailbox.address), mailboxId: from.mailbox.id }),
    to: from.to,
    ...(copied.length > 0 && { cc: copied }),
    subject: `Re: [#${reply.number}] ${reply.title}`,
    text: typeof reply.body === 'string' ? reply.body : reply.body(from.site.name),
    // Without a mailbox no answer by mail can come back to the site: nodemailer makes the Message-ID, at the domain of the service's From.
    ...(from.mailbox && { messageId }),
    // The customer's newest message by mail, or, on a discussion of the pages, the last reply mailed.
    ...(ids.length > 0 && { inReplyTo: last?.messageId ?? ids[ids.length - 1], references }),
    page: { site: from.site.permalink, number: reply.number },
    ...(kind === 'acknowledgement' && { automatic: true }),
  }
  const now = new Date(clock())
  await port.db.insert(outbox).values({ siteId: reply.siteId, commentId: reply.commentId, kind, payload: JSON.stringify(mail), nextAttemptAt: now, createdAt: now })
  if (!from.mailbox) return true
  await port.db.insert(mailMessages).values({
    siteId: reply.siteId,
    messageId: messageId!,
    discussionId: reply.discussionId,
    commentId: reply.commentId,
    sender: from.mailbox.address,
    mailboxId: from.mailbox.id,
    outbound: true,
    createdAt: now,
  })
  return true
}

/** Where the reply to a discussion a customer started on the customer's pages goes: to them, from the site's mailbox if any. */
async function startedOnTheWeb(port: StorePort, reply: { siteId: number; discussionId: number }) {
  const { discussions, users } = port.tables
  const [author] = await port.db
    .select({ email: users.email })
    .from(discussions)
    .innerJoin(users, eq(users.id, discussions.authorId))
    .where(and(eq(discussions.id, reply.discussionId), eq(discussions.startedOnTheWeb, true)))
  if (!author) return undefined
  return { ...(await siteMailbox(port, reply.siteId)), to: author.email }
}

/** How the last word of a row postponed without a try begins (plugins/mail/sender.ts): what wakeWaiting finds. */
export const WAITING = 'waiting: '

/**
 * The mail rows that wait for a way out (postponed, their last word "waiting: ...": no SMTP address,
 * or a mailbox that cannot sign in), of one site or all, due now: a way out came (the service
 * started with SERVICE_SMTP_URL, a mailbox connected). How many. Each is looked at once more, and
 * waits again if it still cannot leave (plugins/mail/sender.ts, waitMs).
 */
export async function wakeWaiting(port: StorePort, clock: Clock, siteId?: number): Promise<number> {
  const { outbox } = port.tables
  const now = new Date(clock())
  const waiting = and(eq(outbox.state, 'queued'), ne(outbox.kind, 'webhook'), gt(outbox.nextAttemptAt, now), like(outbox.lastError, `${WAITING}%`))
  const woken = await port.db
    .update(outbox)
    .set({ nextAttemptAt: now })
    .where(siteId === undefined ? waiting : and(waiting, eq(outbox.siteId, siteId)))
    .returning({ id: outbox.id })
  return woken.length
}

export function createOutboxStore(port: StorePort, clock: Clock) {
  const { db, tables: { outbox } } = port
  const p = sql.placeholder
  // Due: queued, its time come, and held by no live lease. Mail and webhooks are read apart: mail
  // leaves in order, one row after another; webhooks several at once (plugins/mail/sender.ts).
  // The reply mail of a write's comment or of a page's comments (`deliveries`): one statement, prepared
  // and planned once (docs/decisions.md, "Plans that are made once"), the ids bound as a list.
  const deliveriesOf = onFirstUse(() =>
    port.prepared('outbox_deliveries_of', (db) => db.select().from(outbox).where(and(port.anyOf(outbox.commentId, 'commentIds'), sql`${outbox.kind} = 'reply_mail'`)).prepare('outbox_deliveries_of')),
  )
  const dueWhere = and(eq(outbox.state, 'queued'), lte(outbox.nextAttemptAt, p('now')), or(isNull(outbox.leaseUntil), lt(outbox.leaseUntil, p('now'))))
  const dueMail = onFirstUse(() => db.select().from(outbox).where(and(dueWhere, ne(outbox.kind, 'webhook'))).orderBy(asc(outbox.id)).limit(p('limit')).prepare('outbox_due_mail'))

  /** The row, while the lease a claim took is still its own (a lease ended and taken by another process is not). */
  const held = (id: number, lease: Date | null | undefined) => (lease ? and(eq(outbox.id, id), eq(outbox.leaseUntil, lease)) : eq(outbox.id, id))

  return {
    /**
     * Queues the acknowledgement of a new discussion by mail (in the transaction that opened it):
     * an automatic answer to its sender, from the mailbox, threaded like a reply.
     */
    acknowledge(opened: { siteId: number; discussionId: number; number: number; title: string; commentId: number }): Promise<boolean> {
      const body = (siteName: string) => [
        `Thank you for writing to ${siteName}. Your message is #${opened.number}, "${opened.title}", and the team will answer it by mail.`,
        'To add to it, answer this mail; please keep "[#' + opened.number + ']" in the subject.',
        '(This answer was sent automatically.)',
      ].join('\n\n')
      return queueReplyMail(port, clock, { ...opened, body }, 'acknowledgement')
    },

    /** Mail rows due now and held by no live lease, oldest first. */
    dueMail(limit: number): Promise<OutboxRow[]> {
      return dueMail.execute({ now: port.moment(new Date(clock())), limit })
    },

    /** Webhook rows due now and held by no live lease, oldest first, but for those of the endpoints in `busy`. */
    dueWebhooks(limit: number, busy: number[] = []): Promise<OutboxRow[]> {
      const now = new Date(clock())
      const due = and(eq(outbox.state, 'queued'), eq(outbox.kind, 'webhook'), lte(outbox.nextAttemptAt, now), or(isNull(outbox.leaseUntil), lt(outbox.leaseUntil, now)))
      return db.select().from(outbox).where(busy.length === 0 ? due : and(due, notInArray(outbox.webhookId, busy))).orderBy(asc(outbox.id)).limit(limit)
    },

    /**
     * Takes the row's lease until `ms` from now, when it is still queued, due, and held by no other
     * live lease: the row as it is now (its tries counted by whoever tried it last), or undefined.
     */
    async claim(id: number, ms: number): Promise<OutboxRow | undefined> {
      const now = new Date(clock())
      const [taken] = await db
        .update(outbox)
        .set({ leaseUntil: new Date(now.getTime() + ms) })
        .where(and(eq(outbox.id, id), eq(outbox.state, 'queued'), lte(outbox.nextAttemptAt, now), or(isNull(outbox.leaseUntil), lt(outbox.leaseUntil, now))))
        .returning()
      return taken
    },

    /** Holds the claim's lease `ms` longer while its try is under way: the new lease, or undefined when it is no longer the claim's (lost). */
    async renew(id: number, lease: Date, ms: number): Promise<Date | undefined> {
      const [kept] = await db.update(outbox).set({ leaseUntil: new Date(clock() + ms) }).where(and(held(id, lease), eq(outbox.state, 'queued'))).returning({ leaseUntil: outbox.leaseUntil })
      return kept?.leaseUntil ?? undefined
    },

    /** The try succeeded: sent, and never tried again. `lease`: only while the claim that made the try still holds it. */
    async sent(id: number, lease?: Date | null): Promise<void> {
      await db.update(outbox).set({ state: 'sent', sentAt: new Date(clock()), attempts: sql`${outbox.attempts} + 1`, leaseUntil: null, lastError: null }).where(held(id, lease))
    },

    /** The try failed with `error`: tried again at `retryAt`, or never (failed) when there is none. `lease`: as for sent. */
    async tried(id: number, error: string, retryAt: Date | null, lease?: Date | null): Promise<void> {
      await db
        .update(outbox)
        .set({ state: retryAt ? 'queued' : 'failed', attempts: sql`${outbox.attempts} + 1`, lastError: withoutNul(error).slice(0, 500), nextAttemptAt: retryAt ?? new Date(clock()), leaseUntil: null })
        .where(held(id, lease))
    },

    /** The rows of every site that wait for a way out, due now (wakeWaiting): how many. */
    wake(): Promise<number> {
      return wakeWaiting(port, clock)
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
      const rows = await deliveriesOf.execute({ commentIds: port.list(commentIds) })
      return new Map(
        rows.map((row) => [
          row.commentId!,
          { commentId: row.commentId!, state: row.state, ...addressesOf(JSON.parse(row.payload) as OutboxMail), attempts: row.attempts, lastError: row.lastError, sentAt: row.sentAt },
        ]),
      )
    },
  }
}

export type OutboxStore = ReturnType<typeof createOutboxStore>
