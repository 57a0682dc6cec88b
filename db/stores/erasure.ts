import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, ne, notExists, or, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { ErasureMode } from '../values.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { NEVER } from '../../lib/sla.ts'
import { ERASED, ERASED_NAME, ERASED_TITLE, REMOVED_COMMENT, emptiedAddress, erasedAddress, monthsBefore, scrubbedJson, scrubberOf } from '../../lib/erasure.ts'
import { recordChange, type Actor } from './audit.ts'
import { slugify } from './categories.ts'
import { siteChanged } from './changes.ts'
import { counted, moveCount } from './discussion-counts.ts'
import type { DiscussionRow } from './discussion-listing.ts'
import { getIn } from './discussions.ts'
import { indexValuesIn, valuesOf } from './fields.ts'
import { mailOf } from './outbox.ts'
import { indexDiscussion } from './search.ts'
import { lockSite } from './sites.ts'
import { isStaffRole } from './staff.ts'
import { emailKey } from './users.ts'
import { noEvents, type EventSink } from './webhooks.ts'

// A customer's data on request, the erasure and the retention (issue 74; docs/decisions.md, "A
// customer's data on request"). Erasing a customer of a site goes a few discussions at a time
// (`step`, one short transaction each, so no request waits long behind it), then ends with what is
// left of them on the site (`finish`): their links, sessions, tokens, security lines, the mail
// queued to them, their membership, and their account when no other site has them.
// - The discussions they started: deleted for good (a row is left: its number, dates and the
//   reports' facts, in the deleted state, never restored) or kept anonymised, as the site chose.
// - In every discussion they wrote in or were copied on: what they wrote reads REMOVED_COMMENT,
//   signed by the site's erased-customer account; their files and kept mails are deleted; their
//   name and address are taken out of the title, the team's replies and notes and the fields;
//   they are no longer a participant; mail about it that names them is dropped.
// Each discussion is told to the change feed (`customer.erased`) and its search document written
// again; the webhooks hear `customer.erased` once, at the end. Run again, an erasure goes on where
// it stopped: each step takes the discussions that still hold them.
// The retention deletes a site's resolved discussions (and those marked spam) whose last
// activity is older than its months, the same way, a batch per transaction under the site's lock.

/** What an erasure will do, or did: the dry run's answer and the erasure's. */
export interface ErasurePlan {
  customer: { id: number; name: string; email: string }
  /** What happens to the discussions they started: the site's choice. */
  mode: ErasureMode
  /** The discussions they started. */
  discussions: number
  /** The other discussions they wrote in or were copied on: their part taken out. */
  others: number
  /** Their comments (their discussions' opening posts among them). */
  comments: number
  /** Their files (the mails they sent, kept as they came, among them). */
  files: number
  /** Their mails taken in. */
  mails: number
  /** Whether their account goes (on no other site: emptied, its row a disabled one of no one) or stays, taken off this site only. */
  account: 'removed' | 'kept'
}

/** What one step did: the discussions' numbers, by what became of them. */
export interface ErasureStep {
  deleted: number[]
  anonymised: number[]
  others: number[]
}

/** What a run of the retention did on a site: the numbers deleted. */
export interface RetentionBatch {
  siteId: number
  numbers: number[]
}

/** The privacy settings of a site. */
export interface PrivacySettings {
  erasureMode: ErasureMode
  /** Months after their last activity its resolved discussions are deleted; null: kept. */
  retentionMonths: number | null
}

/** Who deletes what the retention deletes, in the record of changes. */
const RETENTION: Actor = { id: null, name: 'the retention', via: 'service' }

/** The longest retention a site may set: ten years. */
export const MAX_RETENTION_MONTHS = 120

/** Discussions a step or a retention batch takes in one transaction. */
export const ERASURE_BATCH = 5

/**
 * The states the retention deletes, past its age: resolved, and spam. Not deleted ones: what the
 * retention and the erasures deleted for good stays in that state, and a look among deleted ones by
 * age would go through all of those every time (their index has no way to leave them out).
 */
const RETAINED_STATES = ['resolved', 'spam'] as const

/** Rows read at a time when looking through a site's mail, security lines and record for an erased customer. */
const PAGE = 500

/** The ids of the rows that `test` keeps among those `read` gives a page at a time (each page after the last id). */
async function pagedIds<R extends { id: number }>(read: (after: number) => Promise<R[]>, test: (row: R) => boolean): Promise<number[]> {
  const found: number[] = []
  for (let after = 0; ; ) {
    const page = await read(after)
    for (const row of page) if (test(row)) found.push(row.id)
    if (page.length < PAGE) return found
    after = page[page.length - 1]!.id
  }
}

/** `ids` in lists of at most PAGE, each a statement's parameters. */
const chunks = (ids: number[]) => Array.from({ length: Math.ceil(ids.length / PAGE) }, (_, i) => ids.slice(i * PAGE, (i + 1) * PAGE))

/** The kinds of mail that go to a customer with no comment of theirs to find them by (sealed). */
const LINK_KINDS = ['sign_in_link', 'confirmation', 'data_export'] as const

export function createErasureStore(port: StorePort, clock: Clock, box: SecretBox, events: EventSink = noEvents) {
  const { db, tables } = port
  const { users, memberships, sites, discussions, comments, attachments, files, mailMessages, participants, outbox } = tables

  /** The customer of the site, or undefined (a member of its staff is not one). */
  async function customerOf(q: StorePort, siteId: number, userId: number) {
    const [person] = await q.db
      .select({ id: users.id, name: users.name, email: users.email, role: memberships.role })
      .from(users)
      .innerJoin(memberships, and(eq(memberships.userId, users.id), eq(memberships.siteId, siteId)))
      .where(eq(users.id, userId))
    return person && !isStaffRole(person.role) && person.email !== erasedAddress(siteId) ? { id: person.id, name: person.name, email: person.email } : undefined
  }

  /** Whether they are on another site too (their account then stays). */
  async function elsewhere(q: StorePort, siteId: number, userId: number): Promise<boolean> {
    const [other] = await q.db.select({ siteId: memberships.siteId }).from(memberships).where(and(eq(memberships.userId, userId), ne(memberships.siteId, siteId))).limit(1)
    return other !== undefined
  }

  /**
   * The site's discussions that still hold them (started, written in, or copied on), by id, at most
   * `limit` they started and every other: reads by index (their discussions, their comments, their
   * address among the participants), never a scan of the site's discussions.
   */
  async function holding(q: StorePort, siteId: number, userId: number, email: string, limit: number): Promise<Array<{ id: number; authorId: number }>> {
    const live = and(eq(discussions.siteId, siteId), isNull(discussions.erasedAt))
    const started = await q.db.select({ id: discussions.id, authorId: discussions.authorId }).from(discussions).where(and(live, eq(discussions.authorId, userId))).limit(limit)
    // The discussions of their comments and of their address, read by those indexes first and then
    // by id: a join ordered for a limit had PostgreSQL walk every discussion of the site.
    const wrote = await q.db.select({ id: comments.discussionId }).from(comments).where(eq(comments.authorId, userId))
    const copied = await q.db.select({ id: participants.discussionId }).from(participants).where(and(eq(participants.siteId, siteId), eq(participants.email, emailKey(email))))
    const others = [...new Set([...wrote, ...copied].map((d) => d.id))].sort((x, y) => x - y)
    // By id alone, a few at a time until `limit` are found, the site and the state checked here:
    // with the site in the query, SQLite took an index of the site's discussions and read them all
    // (266 ms at a million); all at once, a thousand rows read each step for five.
    const joined: Array<{ id: number; authorId: number }> = []
    for (let i = 0; i < others.length && joined.length < limit; i += Math.min(limit, PAGE)) {
      const rows = await q.db.select({ id: discussions.id, authorId: discussions.authorId, siteId: discussions.siteId, erasedAt: discussions.erasedAt }).from(discussions).where(inArray(discussions.id, others.slice(i, i + Math.min(limit, PAGE))))
      for (const d of rows) if (d.siteId === siteId && d.erasedAt === null) joined.push({ id: d.id, authorId: d.authorId })
    }
    return [...new Map([...started, ...joined].map((d) => [d.id, d])).values()].sort((a, b) => a.id - b.id)
  }

  /** The site's account that signs what erased customers wrote: made the first time, a customer of the site that cannot sign in. */
  async function erasedAccount(tx: StorePort, siteId: number): Promise<number> {
    const address = erasedAddress(siteId)
    const now = new Date(clock())
    await tx.db.insert(users).values({ email: address, emailKey: address, name: ERASED_NAME, disabled: true, createdAt: now }).onConflictDoNothing()
    const [account] = await tx.db.select({ id: users.id }).from(users).where(eq(users.emailKey, address))
    await tx.db.insert(memberships).values({ siteId, userId: account!.id, role: 'customer', createdAt: now }).onConflictDoNothing()
    return account!.id
  }

  /** Deletes the files no attachment names any more among `fileIds`. */
  async function dropUnusedFiles(tx: StorePort, fileIds: number[]): Promise<void> {
    if (fileIds.length === 0) return
    await tx.db.delete(files).where(and(inArray(files.id, fileIds), notExists(tx.db.select({ id: attachments.id }).from(attachments).where(eq(attachments.fileId, files.id)))))
  }

  /** The files of these comments, and their attachments deleted. */
  async function dropAttachments(tx: StorePort, commentIds: number[]): Promise<number[]> {
    if (commentIds.length === 0) return []
    const gone = await tx.db.delete(attachments).where(inArray(attachments.commentId, commentIds)).returning({ fileId: attachments.fileId })
    return gone.map((a) => a.fileId)
  }

  /**
   * Deletes the discussion for good in `tx` (its row locked by the caller): every comment with its
   * files, kept mails and mail; its participants, tags, fields, merges, links and rules' history.
   * The row stays, in the deleted state, with its facts for the reports; `authorId` signs it.
   */
  async function deleteForGood(tx: StorePort, d: DiscussionRow, authorId: number, kind: 'customer.erased' | 'discussion.deleted'): Promise<DiscussionRow> {
    const { discussionTags, fieldValues, discussionMerges, ruleFirings, customerLinks } = tx.tables
    const now = new Date(clock())
    const ids = (await tx.db.select({ id: comments.id }).from(comments).where(eq(comments.discussionId, d.id))).map((c) => c.id)
    const fileIds = await dropAttachments(tx, ids)
    // Its comments take their kept mails, their mail in the outbox and their changes in the feed with them.
    await tx.db.delete(comments).where(eq(comments.discussionId, d.id))
    await dropUnusedFiles(tx, fileIds)
    await tx.db.delete(participants).where(eq(participants.discussionId, d.id))
    await tx.db.delete(discussionTags).where(eq(discussionTags.discussionId, d.id))
    await tx.db.delete(fieldValues).where(eq(fieldValues.discussionId, d.id))
    await tx.db.delete(discussionMerges).where(or(eq(discussionMerges.fromId, d.id), eq(discussionMerges.intoId, d.id)))
    await tx.db.delete(ruleFirings).where(eq(ruleFirings.discussionId, d.id))
    await tx.db.delete(customerLinks).where(eq(customerLinks.discussionId, d.id))
    await tx.db
      .update(discussions)
      .set({
        title: ERASED_TITLE,
        permalink: 'deleted',
        state: 'deleted',
        stateBeforeDelete: null,
        erasedAt: now,
        authorId,
        commentsCount: 0,
        tags: '',
        fields: '{}',
        ratingComment: '',
        awaitingTeam: false,
        firstReplyDueAt: null,
        nextReplyDueAt: null,
        resolutionDueAt: null,
        dueAt: NEVER,
        slaAlertAt: null,
        updatedAt: now,
        version: sql`${discussions.version} + 1`,
      })
      .where(eq(discussions.id, d.id))
    await indexDiscussion(tx, { id: d.id, title: ERASED_TITLE })
    await siteChanged(tx, { siteId: d.siteId, kind, discussionId: d.id, at: now })
    await moveCount(tx, counted(d), counted({ ...d, state: 'deleted' }))
    return getIn(tx, d.siteId, d.number)
  }

  /**
   * Takes the customer out of the discussion in `tx` (its row locked by the caller): what they wrote
   * reads REMOVED_COMMENT, signed by `erasedId`; their files, kept mails and mail gone; their name and
   * address out of everything else in it.
   */
  async function anonymise(tx: StorePort, d: DiscussionRow, person: { id: number; name: string; email: string }, erasedId: number): Promise<void> {
    const { discussionMerges } = tx.tables
    const scrub = scrubberOf(person)
    const now = new Date(clock())
    const all = await tx.db.select({ id: comments.id, authorId: comments.authorId, body: comments.body }).from(comments).where(eq(comments.discussionId, d.id))
    const theirs = all.filter((c) => c.authorId === person.id).map((c) => c.id)
    if (theirs.length > 0) {
      await dropUnusedFiles(tx, await dropAttachments(tx, theirs))
      await tx.db.delete(mailMessages).where(and(eq(mailMessages.discussionId, d.id), inArray(mailMessages.commentId, theirs)))
      await tx.db.update(comments).set({ body: REMOVED_COMMENT, authorId: erasedId }).where(inArray(comments.id, theirs))
    }
    for (const c of all) {
      if (c.authorId === person.id) continue
      const body = scrub(c.body)
      if (body !== c.body) await tx.db.update(comments).set({ body }).where(eq(comments.id, c.id))
    }
    // Mail about it (to them, copying them, telling the team what they wrote): whatever names them.
    if (all.length > 0) {
      const mail = await tx.db.select({ id: outbox.id, commentId: outbox.commentId, payload: outbox.payload }).from(outbox).where(inArray(outbox.commentId, all.map((c) => c.id)))
      const naming = mail.filter((m) => theirs.includes(m.commentId!) || scrub(m.payload) !== m.payload).map((m) => m.id)
      if (naming.length > 0) await tx.db.delete(outbox).where(inArray(outbox.id, naming))
    }
    await tx.db.delete(participants).where(and(eq(participants.discussionId, d.id), eq(participants.email, emailKey(person.email))))
    for (const m of await tx.db.select({ id: discussionMerges.id, participants: discussionMerges.participants }).from(discussionMerges).where(or(eq(discussionMerges.fromId, d.id), eq(discussionMerges.intoId, d.id)))) {
      // What an undo would put back names them: that merge can no longer be undone.
      if (scrub(m.participants) !== m.participants) await tx.db.delete(discussionMerges).where(eq(discussionMerges.id, m.id))
    }
    const title = scrub(d.title)
    const fields = scrubbedJson(d.fields, scrub)
    if (fields !== d.fields) await indexValuesIn(tx, d.siteId, d.id, valuesOf(fields))
    const started = d.authorId === person.id
    await tx.db
      .update(discussions)
      .set({
        title,
        permalink: slugify(title, 'discussion'),
        fields,
        ...(started && { authorId: erasedId, ratingComment: '' }),
        updatedAt: now,
        version: sql`${discussions.version} + 1`,
      })
      .where(eq(discussions.id, d.id))
    await indexDiscussion(tx, { id: d.id, title })
    await siteChanged(tx, { siteId: d.siteId, kind: 'customer.erased', discussionId: d.id, at: now })
  }

  /** The discussions' rows by id, locked until `tx` ends, in id order. */
  async function lockedRows(tx: StorePort, siteId: number, ids: number[]): Promise<DiscussionRow[]> {
    if (ids.length === 0) return []
    const numbers = await tx.db.select({ number: discussions.number }).from(discussions).where(inArray(discussions.id, ids)).orderBy(asc(discussions.id))
    const rows: DiscussionRow[] = []
    for (const { number } of numbers) rows.push(await getIn(tx, siteId, number, true))
    return rows
  }

  async function settings(siteId: number): Promise<PrivacySettings> {
    const [site] = await db.select({ erasureMode: sites.erasureMode, retentionMonths: sites.retentionMonths }).from(sites).where(eq(sites.id, siteId))
    return site!
  }

  return {
    /** The site's privacy settings. */
    settings,

    /** Sets the site's privacy settings, with a line of its record of changes; what they are now. */
    async setSettings(siteId: number, changes: Partial<PrivacySettings>, by: Actor): Promise<PrivacySettings> {
      return port.atomic(async (tx) => {
        await lockSite(tx, siteId)
        const [before] = await tx.db.select({ erasureMode: sites.erasureMode, retentionMonths: sites.retentionMonths }).from(sites).where(eq(sites.id, siteId))
        const after = { ...before!, ...Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) }
        if (after.erasureMode === before!.erasureMode && after.retentionMonths === before!.retentionMonths) return after
        await tx.db.update(sites).set(after).where(eq(sites.id, siteId))
        await recordChange(tx, clock, by, siteId, 'privacy.changed', 'privacy', { before: { erasure: before!.erasureMode, retention_months: before!.retentionMonths }, after: { erasure: after.erasureMode, retention_months: after.retentionMonths } })
        return after
      })
    },

    /** The dry run: what erasing the customer would do now; undefined when the id is no customer of the site. */
    async plan(siteId: number, userId: number): Promise<ErasurePlan | undefined> {
      const person = await customerOf(port, siteId, userId)
      if (!person) return undefined
      const [site] = await db.select({ mode: sites.erasureMode }).from(sites).where(eq(sites.id, siteId))
      const held = await holding(port, siteId, userId, person.email, Number.MAX_SAFE_INTEGER)
      const ids = held.map((d) => d.id)
      const theirs = ids.length === 0 ? [] : await db.select({ id: comments.id }).from(comments).where(and(eq(comments.authorId, userId), inArray(comments.discussionId, ids)))
      const commentIds = theirs.map((c) => c.id)
      const [sent] = commentIds.length === 0 ? [{ n: 0 }] : await db.select({ n: sql<number>`count(*)` }).from(attachments).where(inArray(attachments.commentId, commentIds))
      const [mails] = commentIds.length === 0 ? [{ n: 0 }] : await db.select({ n: sql<number>`count(*)` }).from(mailMessages).where(and(inArray(mailMessages.commentId, commentIds), eq(mailMessages.outbound, false)))
      const started = held.filter((d) => d.authorId === userId).length
      return {
        customer: person,
        mode: site!.mode,
        discussions: started,
        others: held.length - started,
        comments: commentIds.length,
        files: Number(sent!.n),
        mails: Number(mails!.n),
        account: (await elsewhere(port, siteId, userId)) ? 'kept' : 'removed',
      }
    },

    /**
     * One step of an erasure, in a transaction of its own: up to `limit` of the site's discussions
     * that still hold the customer, deleted or anonymised. Nothing done (all empty) when none is left.
     */
    step(siteId: number, userId: number, limit = ERASURE_BATCH): Promise<ErasureStep> {
      return port.atomic(async (tx) => {
        const done: ErasureStep = { deleted: [], anonymised: [], others: [] }
        const person = await customerOf(tx, siteId, userId)
        if (!person) return done
        const ids = (await holding(tx, siteId, userId, person.email, limit)).slice(0, limit).map((d) => d.id)
        if (ids.length === 0) return done
        const [site] = await tx.db.select({ mode: sites.erasureMode }).from(sites).where(eq(sites.id, siteId))
        const erasedId = await erasedAccount(tx, siteId)
        for (const d of await lockedRows(tx, siteId, ids)) {
          const started = d.authorId === userId
          if (started && site!.mode === 'delete') {
            await deleteForGood(tx, d, erasedId, 'customer.erased')
            done.deleted.push(d.number)
          } else {
            await anonymise(tx, d, person, erasedId)
            ;(started ? done.anonymised : done.others).push(d.number)
          }
        }
        return done
      })
    },

    /**
     * The erasure's end, once no discussion holds them (`step` found none): the mail queued to them,
     * their links, sessions, tokens and security lines on the site, its record of changes cleaned of
     * their address, their membership, and their account when no other site has them; a line
     * `customer.erased` in the record of changes, and the event. `none` when they are not (or no
     * longer) a customer of the site; `more` when a discussion holds them again (a step first).
     */
    async finish(siteId: number, userId: number, by: Actor, told: ErasureStep): Promise<'erased' | 'none' | 'more'> {
      const person = await customerOf(port, siteId, userId)
      if (!person) return 'none'
      const key = emailKey(person.email)
      const containing = `%${key}%`
      const scrub = scrubberOf(person)
      const { securityEvents, auditEvents } = tables
      // Their address, or their whole name (the team's mail tells of "Zoe Marlow started a discussion"):
      // not each part of it here, where a mail about anyone else could hold one.
      const fullName = person.name.trim().toLowerCase()
      const names = (text: string) => {
        const lower = text.toLowerCase()
        return lower.includes(key) || (fullName.length >= 3 && lower.includes(fullName))
      }
      // What names them among the site's rows that may be many, read a page at a time before the
      // transaction (never one long read, nor a scan holding the site): mail not tied to a comment
      // (their links' sealed mail opened, the webhooks' events read), security lines, the record's lines.
      const mail = await pagedIds(
        (after) => db.select({ id: outbox.id, kind: outbox.kind, payload: outbox.payload }).from(outbox).where(and(eq(outbox.siteId, siteId), isNull(outbox.commentId), gt(outbox.id, after))).orderBy(asc(outbox.id)).limit(PAGE),
        (row) => names((LINK_KINDS as readonly string[]).includes(row.kind) ? (mailOf(row, box)?.to ?? '') : row.payload),
      )
      const security = await pagedIds(
        (after) => db.select({ id: securityEvents.id, userId: securityEvents.userId, detail: securityEvents.detail }).from(securityEvents).where(and(eq(securityEvents.siteId, siteId), gt(securityEvents.id, after))).orderBy(asc(securityEvents.id)).limit(PAGE),
        (row) => row.userId === userId || names(row.detail),
      )
      const record = await pagedIds(
        (after) => db.select({ id: auditEvents.id, target: auditEvents.target, detail: auditEvents.detail }).from(auditEvents).where(and(eq(auditEvents.siteId, siteId), gt(auditEvents.id, after))).orderBy(asc(auditEvents.id)).limit(PAGE),
        (row) => names(row.target) || names(row.detail),
      )
      return port.atomic(async (tx) => {
        const { customerLinks, invitations, personalTokens, webSessions, rateLimitWindows, oauthRecords, senderRules } = tx.tables
        await lockSite(tx, siteId)
        if (!(await customerOf(tx, siteId, userId))) return 'none'
        // Something of theirs came since the last step (a mail of theirs taken in): steps again first.
        if ((await holding(tx, siteId, userId, person.email, 1)).length > 0) return 'more'
        for (const ids of chunks(mail)) await tx.db.delete(outbox).where(inArray(outbox.id, ids))
        for (const ids of chunks(security)) await tx.db.delete(securityEvents).where(inArray(securityEvents.id, ids))
        await tx.db.delete(customerLinks).where(and(eq(customerLinks.siteId, siteId), sql`lower(${customerLinks.email}) = ${key}`))
        await tx.db.delete(invitations).where(and(eq(invitations.siteId, siteId), sql`lower(${invitations.email}) = ${key}`))
        // Written since the pages were read (a sign-in refused meanwhile, say).
        await tx.db.delete(securityEvents).where(and(eq(securityEvents.siteId, siteId), eq(securityEvents.userId, userId)))
        await tx.db.delete(personalTokens).where(and(eq(personalTokens.siteId, siteId), eq(personalTokens.userId, userId)))
        await tx.db.delete(webSessions).where(and(eq(webSessions.siteId, siteId), eq(webSessions.userId, userId)))
        await tx.db.delete(rateLimitWindows).where(sql`lower(${rateLimitWindows.key}) like ${containing}`)
        // What the site said of their address (allowed by "not spam", or blocked); of their domain stays.
        await tx.db.delete(senderRules).where(and(eq(senderRules.siteId, siteId), eq(senderRules.pattern, key)))
        // The lines of the record that name them: kept (what the team did stays on record), without them.
        for (const ids of chunks(record)) {
          for (const line of await tx.db.select({ id: auditEvents.id, target: auditEvents.target, detail: auditEvents.detail }).from(auditEvents).where(inArray(auditEvents.id, ids))) {
            await tx.db.update(auditEvents).set({ target: scrub(line.target), detail: scrub(line.detail) === line.detail ? line.detail : '{}' }).where(eq(auditEvents.id, line.id))
          }
        }
        // Their uploads no comment took.
        const uploads = await tx.db.delete(attachments).where(and(isNotNull(attachments.expiresAt), eq(attachments.siteId, siteId), eq(attachments.uploaderId, userId), isNull(attachments.commentId))).returning({ fileId: attachments.fileId })
        await dropUnusedFiles(tx, uploads.map((u) => u.fileId))
        await tx.db.delete(memberships).where(and(eq(memberships.siteId, siteId), eq(memberships.userId, userId)))
        const kept = await elsewhere(tx, siteId, userId)
        if (!kept) {
          // Their account goes: everything of it deleted, its row left empty and disabled (a name
          // and an address of no one), since deleting the row would have the database look through
          // every discussion and file for a reference to it (the foreign keys) in this transaction.
          const { secondFactors, recoveryCodes, signInLinks } = tx.tables
          for (const table of [personalTokens, webSessions, secondFactors, recoveryCodes, securityEvents, signInLinks]) await tx.db.delete(table).where(eq(table.userId, userId))
          await tx.db.delete(oauthRecords).where(eq(oauthRecords.accountId, String(userId)))
          const nobody = emptiedAddress(userId)
          await tx.db.update(users).set({ name: ERASED_NAME, email: nobody, emailKey: nobody, passwordHash: null, disabled: true, passwordChangedAt: null, legacyTokenFingerprint: null, legacyTokenEncrypted: null, legacyTokenExpiresAt: null, secondStepFailures: 0 }).where(eq(users.id, userId))
        }
        const erasedId = await erasedAccount(tx, siteId)
        const at = new Date(clock())
        const target = `customer ${userId}`
        await recordChange(tx, clock, by, siteId, 'customer.erased', target, { deleted: told.deleted.length, anonymised: told.anonymised.length, others: told.others.length, account: kept ? 'kept' : 'removed' })
        await events(tx, { type: 'customer.erased', siteId, erasure: { customerId: userId, erasedId, at, ...told } })
        return 'erased'
      })
    },

    /** How many of the site's discussions its retention would delete now (the dry run); 0 when it keeps them. */
    async retentionDue(siteId: number, months?: number | null): Promise<number> {
      const kept = months === undefined ? (await settings(siteId)).retentionMonths : months
      if (kept === null) return 0
      const [row] = await db.select({ n: sql<number>`count(*)` }).from(discussions).where(retained(siteId, monthsBefore(new Date(clock()), kept)))
      return Number(row!.n)
    },

    /**
     * One batch of the retention on every site that has one, each site's in a transaction of its own
     * under its lock: up to `limit` of its discussions past the age, deleted for good; a line of its
     * record of changes for each batch. What each site's batch deleted (none: nothing was due).
     */
    async retain(limit = ERASURE_BATCH): Promise<RetentionBatch[]> {
      const due = await db.select({ id: sites.id, months: sites.retentionMonths }).from(sites).where(sql`${sites.retentionMonths} is not null`)
      const done: RetentionBatch[] = []
      for (const site of due) {
        const numbers = await port.atomic(async (tx) => {
          await lockSite(tx, site.id)
          const cutoff = monthsBefore(new Date(clock()), site.months!)
          const ids = (await tx.db.select({ id: discussions.id }).from(discussions).where(retained(site.id, cutoff)).orderBy(asc(discussions.lastUpdatedAt)).limit(limit)).map((d) => d.id)
          const deleted: number[] = []
          for (const d of await lockedRows(tx, site.id, ids)) {
            const after = await deleteForGood(tx, d, d.authorId, 'discussion.deleted')
            await events(tx, { type: 'discussion.deleted', siteId: site.id, discussion: after })
            deleted.push(d.number)
          }
          if (deleted.length > 0) await recordChange(tx, clock, RETENTION, site.id, 'retention.deleted', `${deleted.length} discussion${deleted.length === 1 ? '' : 's'}`, { numbers: deleted.map(String), months: site.months })
          return deleted
        })
        if (numbers.length > 0) done.push({ siteId: site.id, numbers })
      }
      return done
    },
  }

  /** The site's discussions the retention deletes: resolved (or spam) and idle since before `cutoff`. */
  function retained(siteId: number, cutoff: Date) {
    return and(eq(discussions.siteId, siteId), inArray(discussions.state, [...RETAINED_STATES]), lt(discussions.lastUpdatedAt, cutoff), isNull(discussions.erasedAt))
  }
}

export type ErasureStore = ReturnType<typeof createErasureStore>
export { ERASED }

/**
 * Lets the requests that waited for a step go through before the next one: as long as the step
 * took (at most 50 ms), so an erasure or a retention takes at most half of the connection, and a
 * request waiting behind a step finds none in its way when it asks again (a request asks for the
 * connection several times: its credential, its discussion, its comments).
 */
export function yieldAfter(stepMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(stepMs, 1), 50)))
}

/**
 * Erases the customer of the site: the dry run's plan, then steps until no discussion holds them,
 * each its own transaction with a pause between them (requests go on meanwhile),
 * then the end (yieldAfter). Over the guarded store, as the routes and the command line have it. Undefined when
 * the id is no customer of the site.
 */
export async function eraseCustomer(store: ErasureStore, siteId: number, userId: number, by: Actor): Promise<{ plan: ErasurePlan; done: ErasureStep } | undefined> {
  const plan = await store.plan(siteId, userId)
  if (!plan) return undefined
  const done: ErasureStep = { deleted: [], anonymised: [], others: [] }
  do {
    for (;;) {
      const began = performance.now()
      const step = await store.step(siteId, userId)
      if (step.deleted.length + step.anonymised.length + step.others.length === 0) break
      done.deleted.push(...step.deleted)
      done.anonymised.push(...step.anonymised)
      done.others.push(...step.others)
      await yieldAfter(performance.now() - began)
    }
    // Gone meanwhile (erased by another request): what this one did is all it did.
  } while ((await store.finish(siteId, userId, by, done)) === 'more')
  return { plan, done }
}
