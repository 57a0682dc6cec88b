import { and, asc, desc, eq, gte, inArray, sql } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { isMailAddress, normalAddress } from '../../lib/mail.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { StoreError } from './errors.ts'
import { findOrMakeUser, joinAsCustomer, roleOn, singleSignOnName, validateNewUser, defaultSingleSignOnName } from './users.ts'

// The mail of the sites, one store for both engines (docs/decisions.md, "Mail"): the addresses a
// site takes mail at (its mailboxes), and the messages taken in, by Message-ID, recorded in the
// transaction of the comment each became (plugins/mail/pipeline.ts).

export type Mailbox = Tables['mailboxes']['$inferSelect']

export interface TakenMessage {
  siteId: number
  mailboxId: number
  messageId: string
  discussionId: number
  commentId: number
  sender: string
  automatic: boolean
  /** DMARC's word on the sender: true pass, false fail, null none or not checked. */
  senderVerified: boolean | null
}

export function createMailStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { categories, discussions, mailboxes, mailMessages } } = port
  const p = sql.placeholder
  const byAddress = db.select().from(mailboxes).where(eq(mailboxes.address, p('address'))).prepare('mail_mailbox_by_address')
  const knownMessage = db
    .select({ id: mailMessages.id })
    .from(mailMessages)
    .where(and(eq(mailMessages.siteId, p('siteId')), eq(mailMessages.messageId, p('messageId'))))
    .prepare('mail_known_message')

  return {
    /** A new address of the site; one another site (or this one) has already is a StoreError (conflict). */
    async addMailbox(siteId: number, address: string, categoryId: number | null = null): Promise<Mailbox> {
      const clean = normalAddress(address)
      if (!isMailAddress(clean)) throw new StoreError(`"${address}" is not a mail address`, 'invalid', 'address')
      if (categoryId !== null) {
        const [category] = await db.select({ id: categories.id }).from(categories).where(and(eq(categories.id, categoryId), eq(categories.siteId, siteId)))
        if (!category) throw new StoreError(`there is no category ${categoryId} on this site`, 'not_found', 'category')
      }
      // The unique index has the last word: of two adding one address at once, one gets it.
      const [row] = await db.insert(mailboxes).values({ siteId, address: clean, categoryId, createdAt: new Date(clock()) }).onConflictDoNothing().returning()
      if (!row) throw new StoreError(`${clean} is already the address of a mailbox`, 'conflict', 'address')
      return row
    },

    /** The site's mailboxes, in the order they were added. */
    listMailboxes(siteId: number): Promise<Mailbox[]> {
      return db.select().from(mailboxes).where(eq(mailboxes.siteId, siteId)).orderBy(asc(mailboxes.id))
    },

    /** Removes the site's mailbox of this address; whether there was one. */
    async removeMailbox(siteId: number, address: string): Promise<boolean> {
      const gone = await db.delete(mailboxes).where(and(eq(mailboxes.siteId, siteId), eq(mailboxes.address, normalAddress(address)))).returning({ id: mailboxes.id })
      return gone.length > 0
    },

    /** The mailbox of an address, whichever site has it. */
    async mailbox(address: string): Promise<Mailbox | undefined> {
      return (await byAddress.execute({ address: normalAddress(address) }))[0]
    },

    /** Whether the site has taken a message of this Message-ID already. */
    async known(siteId: number, messageId: string): Promise<boolean> {
      return (await knownMessage.execute({ siteId, messageId })).length > 0
    },

    /** The number of the discussion of the newest of these messages the site has taken, if any. */
    async threadOf(siteId: number, messageIds: string[]): Promise<number | undefined> {
      if (messageIds.length === 0) return undefined
      const [row] = await db
        .select({ number: discussions.number })
        .from(mailMessages)
        .innerJoin(discussions, eq(discussions.id, mailMessages.discussionId))
        .where(and(eq(mailMessages.siteId, siteId), inArray(mailMessages.messageId, messageIds)))
        .orderBy(desc(mailMessages.id))
        .limit(1)
      return row?.number
    },

    /** What DMARC said of the senders of these comments' messages, by comment (mail ones only). */
    async senderVerdicts(commentIds: number[]): Promise<Map<number, boolean | null>> {
      if (commentIds.length === 0) return new Map()
      const rows = await db
        .select({ commentId: mailMessages.commentId, verified: mailMessages.senderVerified })
        .from(mailMessages)
        .where(and(inArray(mailMessages.commentId, commentIds), eq(mailMessages.outbound, false)))
      return new Map(rows.map((r) => [r.commentId, r.verified]))
    },

    /** How many messages the site took from `sender` since `since`: the per-sender limit's count. */
    async takenFrom(siteId: number, sender: string, since: Date): Promise<number> {
      const [{ n }] = await db
        .select({ n: sql<number>`count(*)` })
        .from(mailMessages)
        .where(and(eq(mailMessages.siteId, siteId), eq(mailMessages.sender, sender), gte(mailMessages.createdAt, since)))
      return Number(n)
    },

    /** The comment whose reply mail the site sent with this Message-ID, if any (what a delivery report names). */
    async replyOf(siteId: number, messageId: string): Promise<number | undefined> {
      const [sent] = await db
        .select({ commentId: mailMessages.commentId })
        .from(mailMessages)
        .where(and(eq(mailMessages.siteId, siteId), eq(mailMessages.messageId, messageId), eq(mailMessages.outbound, true)))
      return sent?.commentId
    },

    /**
     * The person a message is from, as the site knows them: an unknown address becomes a user
     * without a password and the site's customer, as a post on someone's behalf makes one.
     */
    customer(siteId: number, email: string, name: string | undefined): Promise<{ id: number; email: string }> {
      return port.atomic(async (tx) => {
        const user = await findOrMakeUser(tx, clock, box, email, () => validateNewUser({ email, name: singleSignOnName(name) ?? defaultSingleSignOnName(email) }))
        if (!(await roleOn(tx, siteId, user.id))) await joinAsCustomer(tx, clock, siteId, user.id)
        return { id: user.id, email: user.email }
      })
    },

    /**
     * Records a message taken in, in the transaction of its comment. Another process that took the
     * same message meanwhile made the unique index answer: a StoreError (conflict), which rolls the
     * comment back with it.
     */
    async record(message: TakenMessage): Promise<void> {
      const written = await db.insert(mailMessages).values({ ...message, createdAt: new Date(clock()) }).onConflictDoNothing().returning({ id: mailMessages.id })
      if (written.length === 0) throw new StoreError(`message ${message.messageId} was taken already`, 'conflict', 'message_id')
    },
  }
}

export type MailStore = ReturnType<typeof createMailStore>
