import { and, asc, desc, eq, gte, inArray, isNotNull, isNull, lt, or, sql, type SQL } from '../drizzle.ts'
import { onFirstUse, type StorePort, type Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { isMailAddress, isSmtpUrl, normalAddress, untagged, type ImapSettings } from '../../lib/mail.ts'
import type { ParticipantSource } from '../values.ts'

/** Why a copy holds mail and webhooks, found on the day `at`. */
const copyHeld = (at: Date) =>
  `this database is a copy (restored or copied from the one where mail was at home, ${at.toISOString().slice(0, 10)}): mail is not fetched and mail and webhooks are not sent here until an operator runs service-desk mail resume`
import type { SecretBox } from '../../lib/secret-box.ts'
import { recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { mailConnectionMethods } from './mail-connections.ts'
import { isStaffRole } from './staff.ts'
import { findOrMakeUser, joinAsCustomer, roleOn, singleSignOnName, validateNewUser, defaultSingleSignOnName } from './users.ts'

// The mail of the sites, one store for both engines (docs/decisions.md, "Mail"): the addresses a
// site takes mail at (its mailboxes), and the messages taken in, by Message-ID, recorded in the
// transaction of the comment each became (plugins/mail/pipeline.ts).

export type Mailbox = Tables['mailboxes']['$inferSelect']
export type Participant = Tables['participants']['$inferSelect']

/**
 * The most participants a discussion has: a mail copying a hundred people makes no mailing list of
 * the team's replies (a customer's mail may name anyone; docs/decisions.md, "Mail a team can rely on").
 */
export const MAX_PARTICIPANTS = 20

/** How a new mailbox's mail arrives and leaves, and where it goes. */
export interface MailboxSettings {
  /** The category its mail opens discussions in; null: the site's first. */
  categoryId?: number | null
  /** An IMAP mailbox to fetch; null: the built-in receiver takes its mail. */
  imap?: ImapSettings | null
  /** The SMTP address its replies leave by; null: the service's (SERVICE_SMTP_URL). */
  smtpUrl?: string | null
  /** Whether a new discussion by mail is acknowledged by a mail to its sender. */
  acknowledge?: boolean
}

/** How a comment came by mail: the address it was sent to (null once that mailbox is removed) and DMARC's word on its sender. */
export interface MailOrigin {
  mailbox: string | null
  verified: boolean | null
  /** Why it was taken for spam, or null. */
  spamReason: string | null
}

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
  /** Why it was taken for spam (lib/mail.ts, spamReason); null or absent when it was not. */
  spamReason?: string | null
}

/** An IMAP message put off for later: its UID and its sender, whose limit says when to look again. */
export type Deferred = [uid: number, sender: string]

export function createMailStore(port: StorePort, clock: Clock, box: SecretBox) {
  const { db, tables: { categories, discussions, mailboxes, mailHome, mailMessages, memberships, participants, users } } = port
  const home = async () => (await db.select().from(mailHome).where(eq(mailHome.id, 1)))[0]
  const p = sql.placeholder
  const byAddress = onFirstUse(() => db.select().from(mailboxes).where(eq(mailboxes.address, p('address'))).prepare('mail_mailbox_by_address'))
  const knownMessage = onFirstUse(() => db
    .select({ id: mailMessages.id })
    .from(mailMessages)
    .where(and(eq(mailMessages.siteId, p('siteId')), eq(mailMessages.messageId, p('messageId'))))
    .prepare('mail_known_message'))
  // The per-sender limit's count, at each message taken in: by its index (site, sender, time), prepared once.
  const takenSince = onFirstUse(() => db
    .select({ n: sql<number>`count(*)` })
    .from(mailMessages)
    .where(and(eq(mailMessages.siteId, p('siteId')), eq(mailMessages.sender, p('sender')), gte(mailMessages.createdAt, p('since'))))
    .prepare('mail_taken_from'))

  // What the views show of a comment that came by mail (`origins`): where it came, DMARC's word on it.
  const originsOf = (on: StorePort['db'], which: SQL) =>
    on
      .select({ commentId: mailMessages.commentId, verified: mailMessages.senderVerified, mailbox: mailboxes.address, spamReason: mailMessages.spamReason })
      .from(mailMessages)
      .leftJoin(mailboxes, eq(mailboxes.id, mailMessages.mailboxId))
      .where(and(which, eq(mailMessages.outbound, false)))
  // Of a write's comment or a page's: one statement, prepared and planned once (docs/decisions.md, "Plans that are made once").
  const originsOfComments = onFirstUse(() => port.prepared('mail_origins_of', (on) => originsOf(on, port.anyOf(mailMessages.commentId, 'commentIds')).prepare('mail_origins_of')))

  const reaches = async (address: string): Promise<Mailbox | undefined> => {
    const clean = normalAddress(address)
    return (await byAddress.execute({ address: clean }))[0] ?? (untagged(clean) === clean ? undefined : (await byAddress.execute({ address: untagged(clean) }))[0])
  }
  const listParticipants = (discussionId: number): Promise<Participant[]> => db.select().from(participants).where(eq(participants.discussionId, discussionId)).orderBy(asc(participants.id))
  /** Whether an address is that of one of the site's support staff. */
  const isStaffAddress = async (siteId: number, email: string): Promise<boolean> => {
    const [row] = await db
      .select({ role: memberships.role })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.siteId, siteId), eq(users.email, normalAddress(email))))
    return isStaffRole(row?.role)
  }

  return {
    ...mailConnectionMethods(port, clock, box),

    /**
     * A new address of the site, and how its mail arrives (an IMAP mailbox, or the built-in
     * receiver without one) and leaves (an SMTP address, or the service's); the passwords sealed.
     * One another site (or this one) has already is a StoreError (conflict).
     */
    async addMailbox(siteId: number, address: string, settings: MailboxSettings = {}, by?: Actor): Promise<Mailbox> {
      const clean = normalAddress(address)
      const { categoryId = null, imap = null, smtpUrl = null, acknowledge = false } = settings
      if (!isMailAddress(clean)) throw new StoreError(`"${address}" is not a mail address`, 'invalid', 'address')
      if (smtpUrl !== null && !isSmtpUrl(smtpUrl)) throw new StoreError('must be an smtp:// or smtps:// address with a host, such as smtp://user:password@mail.example.com:587', 'invalid', 'smtp')
      if (categoryId !== null) {
        const [category] = await db.select({ id: categories.id }).from(categories).where(and(eq(categories.id, categoryId), eq(categories.siteId, siteId)))
        if (!category) throw new StoreError(`there is no category ${categoryId} on this site`, 'not_found', 'category')
      }
      // None named: the site's first category by creation, chosen now and shown from now on (mail
      // of a site with none yet goes to its first once it has one: plugins/mail/pipeline.ts).
      const [first] = categoryId === null ? await db.select({ id: categories.id }).from(categories).where(eq(categories.siteId, siteId)).orderBy(asc(categories.id)).limit(1) : []
      const sealed = { imap: imap && box.seal(JSON.stringify(imap)), smtp: smtpUrl && box.seal(smtpUrl) }
      // The unique index has the last word: of two adding one address at once, one gets it.
      return port.atomic(async (tx) => {
        const [row] = await tx.db.insert(mailboxes).values({ siteId, address: clean, categoryId: categoryId ?? first?.id ?? null, ...sealed, acknowledge, createdAt: new Date(clock()) }).onConflictDoNothing().returning()
        if (!row) throw new StoreError(`${clean} is already the address of a mailbox`, 'conflict', 'address')
        // How it takes and sends mail, never with what password.
        await recordChange(tx, clock, by, siteId, 'mailbox.added', clean, { fetched_from: imap ? `${imap.host}:${imap.port}` : null, own_smtp: smtpUrl !== null, acknowledge })
        return row
      })
    },

    /** The IMAP mailbox a mailbox's mail is fetched from, opened; null for the built-in receiver's (or a seal this key cannot open). */
    async imapOf(mailbox: Mailbox): Promise<ImapSettings | null> {
      const plain = mailbox.imap && box.open(mailbox.imap)
      return plain ? (JSON.parse(plain) as ImapSettings) : null
    },

    /** The SMTP address a mailbox's replies leave by, opened; null for the service's own. */
    async smtpOf(mailbox: Mailbox): Promise<string | null> {
      return mailbox.smtp ? box.open(mailbox.smtp) : null
    },

    /** Every mailbox fetched over IMAP, of every site. */
    fetched(): Promise<Mailbox[]> {
      // A connected mailbox the provider refused to renew is not, until it is connected again.
      return db.select().from(mailboxes).where(and(isNotNull(mailboxes.imap), isNull(mailboxes.oauthProblem))).orderBy(asc(mailboxes.id))
    },

    /**
     * Takes (or keeps) the fetch lease of a mailbox for `owner` until `ms` from now, when no other
     * owner's live lease holds it (but `gone`'s, a holder known to be dead); the mailbox as it now
     * is, or undefined when another process fetches it (or it is gone). One process fetches a
     * mailbox at a time.
     */
    async lease(id: number, owner: string, ms: number, gone?: string): Promise<Mailbox | undefined> {
      const now = new Date(clock())
      const free = or(eq(mailboxes.leaseOwner, owner), isNull(mailboxes.leaseUntil), lt(mailboxes.leaseUntil, now), gone === undefined ? undefined : eq(mailboxes.leaseOwner, gone))
      const [row] = await db
        .update(mailboxes)
        .set({ leaseOwner: owner, leaseUntil: new Date(now.getTime() + ms) })
        .where(and(eq(mailboxes.id, id), isNotNull(mailboxes.imap), free))
        .returning()
      return row
    },

    /** Lets the lease go (the process stops), so another may take the mailbox at once. */
    async release(id: number, owner: string): Promise<void> {
      await db.update(mailboxes).set({ leaseOwner: null, leaseUntil: null }).where(and(eq(mailboxes.id, id), eq(mailboxes.leaseOwner, owner)))
    },

    /**
     * Moves the fetch's place from `from` to `to` ("UIDVALIDITY:UID"), in the transaction of the
     * message taken there, when `owner` still holds the lease and the place is still `from`, and
     * renews the lease for `leaseMs`: else a StoreError (conflict), which rolls the message back
     * (another process took the mailbox, or moved on, meanwhile).
     */
    async advance(id: number, { owner, from, to, leaseMs }: { owner: string; from: string | null; to: string; leaseMs: number }): Promise<void> {
      const moved = await db
        .update(mailboxes)
        .set({ imapPosition: to, leaseUntil: new Date(clock() + leaseMs) })
        .where(and(eq(mailboxes.id, id), eq(mailboxes.leaseOwner, owner), from === null ? isNull(mailboxes.imapPosition) : eq(mailboxes.imapPosition, from)))
        .returning({ id: mailboxes.id })
      if (moved.length === 0) throw new StoreError('another process fetches this mailbox now', 'conflict', 'imap_position')
    },

    /** A fetch ended: when it did, and what went wrong in words (null: nothing). */
    async fetchEnded(id: number, error: string | null): Promise<void> {
      await db.update(mailboxes).set(error === null ? { lastFetchAt: new Date(clock()), lastError: null } : { lastError: error.slice(0, 500) }).where(eq(mailboxes.id, id))
    },

    /** How many messages each of these mailboxes took in since `since` (the page's "today"). */
    async takenSince(ids: number[], since: Date): Promise<Map<number, number>> {
      if (ids.length === 0) return new Map()
      const rows = await db
        .select({ id: mailMessages.mailboxId, n: sql<number>`count(*)` })
        .from(mailMessages)
        .where(and(inArray(mailMessages.mailboxId, ids), eq(mailMessages.outbound, false), gte(mailMessages.createdAt, since)))
        .groupBy(mailMessages.mailboxId)
      return new Map(rows.map((r) => [r.id!, Number(r.n)]))
    },

    /** The site's mailboxes, in the order they were added. */
    listMailboxes(siteId: number): Promise<Mailbox[]> {
      return db.select().from(mailboxes).where(eq(mailboxes.siteId, siteId)).orderBy(asc(mailboxes.id))
    },

    /** Removes the site's mailbox of this address; whether there was one. */
    async removeMailbox(siteId: number, address: string, by?: Actor): Promise<boolean> {
      return port.atomic(async (tx) => {
        const [gone] = await tx.db.delete(mailboxes).where(and(eq(mailboxes.siteId, siteId), eq(mailboxes.address, normalAddress(address)))).returning({ address: mailboxes.address })
        if (gone) await recordChange(tx, clock, by, siteId, 'mailbox.removed', gone.address)
        return gone !== undefined
      })
    },

    /** The mailbox of an id, whichever site has it. */
    async byId(id: number): Promise<Mailbox | undefined> {
      return (await db.select().from(mailboxes).where(eq(mailboxes.id, id)))[0]
    },

    /** The mailbox of an address, whichever site has it. */
    async mailbox(address: string): Promise<Mailbox | undefined> {
      return (await byAddress.execute({ address: normalAddress(address) }))[0]
    },

    /** The mailbox an address reaches, whichever site has it: its own, or its subaddress (`support+anything@`). */
    reaches,

    /** The discussion's participants, in the order they joined. */
    participants: listParticipants,

    /** Whether the address is a participant of the discussion. */
    async isParticipant(discussionId: number, email: string): Promise<boolean> {
      const [row] = await db.select({ id: participants.id }).from(participants).where(and(eq(participants.discussionId, discussionId), eq(participants.email, normalAddress(email))))
      return row !== undefined
    },

    /**
     * Adds people to a discussion's participants, as the team did (`team`) or a customer's mail copied
     * them (`mail`); those added, in order. Nobody is added who is its customer, one of the site's
     * support staff (they read it on the page), an address of the service (any site's mailbox or its
     * subaddress: no loop), or past MAX_PARTICIPANTS; someone there already is left as they are. The
     * team hears why in a StoreError (`strict`); a mail's copies that will not do are passed over.
     */
    async addParticipants(discussion: { siteId: number; id: number; authorEmail: string }, people: Array<{ email: string; name?: string | null }>, addedBy: ParticipantSource, strict = false): Promise<Participant[]> {
      const refuse = (message: string) => {
        if (strict) throw new StoreError(message, 'invalid', 'email')
      }
      const there = new Set((await listParticipants(discussion.id)).map((p) => p.email))
      const added: Participant[] = []
      for (const person of people) {
        const email = normalAddress(person.email)
        if (there.has(email)) continue
        if (!isMailAddress(email)) refuse(`"${person.email}" is not a mail address`)
        else if (email === normalAddress(discussion.authorEmail)) refuse(`${email} is the discussion's customer: its replies go to them already`)
        else if (await reaches(email)) refuse(`${email} is an address of the service itself`)
        else if (await isStaffAddress(discussion.siteId, email)) refuse(`${email} is one of the site's support staff, who read it on its page`)
        else if (there.size >= MAX_PARTICIPANTS) refuse(`a discussion has at most ${MAX_PARTICIPANTS} participants`)
        else {
          const name = person.name?.replace(/[\r\n"<>]/g, '').trim().slice(0, 200) || null
          // Of two adding one address at once, the unique index lets one in.
          added.push(...(await db.insert(participants).values({ siteId: discussion.siteId, discussionId: discussion.id, email, name, addedBy, createdAt: new Date(clock()) }).onConflictDoNothing().returning()))
          there.add(email)
        }
      }
      return added
    },

    /** Takes an address off a discussion's participants; whether it was one. */
    async removeParticipant(discussionId: number, email: string): Promise<boolean> {
      const gone = await db.delete(participants).where(and(eq(participants.discussionId, discussionId), eq(participants.email, normalAddress(email)))).returning({ id: participants.id })
      return gone.length > 0
    },


    /**
     * Where mail and webhooks are at home (docs/decisions.md, "Mail a team can rely on"), looked at
     * by a process at its first send or fetch from `place` (Engine.place): the first to look on a
     * database makes it their home; one that finds itself elsewhere (a restored backup, a copy)
     * holds them there. Why they are held, or null when they go.
     */
    async settleHome(place: string): Promise<string | null> {
      const changedAt = new Date(clock())
      // Of two first looks at once, the first insert makes the home.
      await db.insert(mailHome).values({ id: 1, place, held: null, changedAt }).onConflictDoNothing()
      const row = (await home())!
      if (row.place === place || row.held !== null) return row.held
      const held = copyHeld(changedAt)
      await db.update(mailHome).set({ held, changedAt }).where(and(eq(mailHome.id, 1), isNull(mailHome.held)))
      return (await home())!.held
    },

    /** Why mail and webhooks are held on this database, or null when they go. */
    async held(): Promise<string | null> {
      return (await home())?.held ?? null
    },

    /** What a process at `place` would find (settleHome), without writing: why mail would be held there, or null. */
    async heldAt(place: string): Promise<string | null> {
      const row = await home()
      return !row || row.place === place || row.held !== null ? (row?.held ?? null) : copyHeld(new Date(clock()))
    },

    /** Mail and webhooks go from `place` on (`mail resume`), or wait for the reason given (`mail hold`). */
    async setHome(place: string, held: string | null): Promise<void> {
      const changedAt = new Date(clock())
      await db.insert(mailHome).values({ id: 1, place, held, changedAt }).onConflictDoUpdate({ target: mailHome.id, set: { place, held, changedAt } })
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

    /** Of these comments that came by mail, by comment: the address it came to, what DMARC said of its sender, and why it was taken for spam. */
    async origins(commentIds: number[]): Promise<Map<number, MailOrigin>> {
      if (commentIds.length === 0) return new Map()
      const rows = await originsOfComments.execute({ commentIds: port.list(commentIds) })
      return new Map(rows.map((r) => [r.commentId, { verified: r.verified, mailbox: r.mailbox, spamReason: r.spamReason }]))
    },

    /** How many messages the site took from `sender` since `since`: the per-sender limit's count. */
    async takenFrom(siteId: number, sender: string, since: Date): Promise<number> {
      const [{ n }] = await takenSince.execute({ siteId, sender, since: port.moment(since) })
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
     * The person a message is from, as the site knows them, and whether the address is one of its
     * support staff (whose account is on): an unknown address becomes a user without a password and the site's customer,
     * as a post on someone's behalf makes one.
     */
    customer(siteId: number, email: string, name: string | undefined): Promise<{ id: number; email: string; staff: boolean }> {
      return port.atomic(async (tx) => {
        const user = await findOrMakeUser(tx, clock, box, email, () => validateNewUser({ email, name: singleSignOnName(name) ?? defaultSingleSignOnName(email) }))
        const role = await roleOn(tx, siteId, user.id)
        if (!role) await joinAsCustomer(tx, clock, siteId, user.id)
        return { id: user.id, email: user.email, staff: isStaffRole(role) && !user.disabled }
      })
    },

    /**
     * The IMAP messages of a mailbox put off for later (a sender past its limit), oldest first, under
     * the UIDVALIDITY `validity`: none when the server renumbered since (their UIDs mean nothing now).
     */
    async deferred(mailbox: Mailbox, validity: string): Promise<Deferred[]> {
      if (!mailbox.imapDeferred) return []
      const kept = JSON.parse(mailbox.imapDeferred) as { validity: string; messages: Deferred[] }
      return kept.validity === validity ? kept.messages : []
    },

    /**
     * Writes the messages put off for later, while `owner` holds the mailbox's lease (else a
     * StoreError, conflict, as `advance`): written before the place moves past a message put off, so
     * a process stopped between the two finds it here (taken twice, it is known by its Message-ID).
     */
    async defer(id: number, owner: string, validity: string, messages: Deferred[]): Promise<void> {
      const moved = await db
        .update(mailboxes)
        .set({ imapDeferred: messages.length === 0 ? null : JSON.stringify({ validity, messages }) })
        .where(and(eq(mailboxes.id, id), eq(mailboxes.leaseOwner, owner)))
        .returning({ id: mailboxes.id })
      if (moved.length === 0) throw new StoreError('another process fetches this mailbox now', 'conflict', 'imap_position')
    },

    /** A message passed over and left unread, and why, for the mailbox's page (the newest only). */
    async passedOver(id: number, what: string): Promise<void> {
      await db.update(mailboxes).set({ passedOver: `${new Date(clock()).toISOString()} ${what}`.slice(0, 500) }).where(eq(mailboxes.id, id))
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
