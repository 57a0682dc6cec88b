import { and, asc, count, eq, gt, inArray, sql, type SQL } from '../drizzle.ts'
import { given, lastlyNow, onFirstUse, pageBounds, together, type StorePort, type Tables } from '../port.ts'
import type { CommentVia, DiscussionState } from '../values.ts'
import { DAY_MS, type Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { tagList, tagsOf } from '../../lib/team-queue.ts'
import { channelOf, dueAlerts, type SlaChannel } from '../../lib/sla.ts'
import type { Schedule } from '../../lib/business-time.ts'
import { checkAssignee, nextInTurn } from './assignment.ts'
import { slugify } from './categories.ts'
import { createAuthors, type Authors, type PostedBy } from './discussion-authors.ts'
import { bumpCount, counted, createDiscussionCounts, moveCount } from './discussion-counts.ts'
import { discussionViews, type CommentRow, type DiscussionRow, type ListingOf, type ListingQuery } from './discussion-listing.ts'
import { initialState, stateAfterAction, stateAfterComment, type Action } from './discussion-states.ts'
import { StoreError, VersionMoved } from './errors.ts'
import { claimUploads } from './files.ts'
import { allowSenderIn } from './senders.ts'
import { hearsOfNew, notifyAssigned, notifyNewDiscussion, notifyOwnerOfComment } from './notifications.ts'
import { queueReplyMail, replyPeopleIn } from './outbox.ts'
import { indexDiscussion } from './search.ts'
import { recordChangesTo, siteChanged, takeSite } from './changes.ts'
import { bumpSiteVersion, lockSite } from './sites.ts'
import { recordChange, type Actor } from './audit.ts'
import { policiesFollowCategory } from './sla-policies.ts'
import { alertsDue, boundColumns, clockOf, columnsOf, policiesOf, slaOfWrite, tellSla } from './sla.ts'
import { listenersIn, noEvents, type EventSink } from './webhooks.ts'
import { addRating, addTallies } from './reports.ts'
import { indexValuesIn, reportedFieldsIn, valuesAfter, valuesJson, valuesOf } from './fields.ts'
import { dayOf, RATING_DAYS, reportStep, type Rating, type ReportFacts } from '../../lib/reports.ts'

export type { CommentRow, DiscussionRow } from './discussion-listing.ts'
export type { Action } from './discussion-states.ts'
export type Discussion = Tables['discussions']['$inferSelect']

export interface NewDiscussion extends PostedBy {
  siteId: number
  categoryId: number
  title: string
  body: string
  /** Defaults to the category's visibility. */
  public?: boolean
  via: CommentVia
  /** Uploads of the supporter (db/stores/files.ts) the opening post carries. */
  uploads?: number[]
  /**
   * Arrived as spam (the mail pipeline's verdict, lib/mail.ts spamReason): in the spam state, owned by
   * nobody, told to no one (no notification, no webhook but discussion.spam).
   */
  spam?: boolean
  /** Values of the site's custom fields, by key (db/stores/fields.ts). */
  fields?: Record<string, unknown>
}

export interface NewComment extends PostedBy {
  siteId: number
  number: number
  body: string
  internal: boolean
  via: CommentVia
  /** Uploads of the supporter (db/stores/files.ts) the comment carries. */
  uploads?: number[]
  /** Resolve the discussion with the reply, in its transaction ("Send and resolve"). */
  resolve?: boolean
}

export interface DiscussionChanges {
  title?: string
  public?: boolean
  categoryId?: number
  /** The supporter of the site who owns it (db/stores/assignment.ts), or null for nobody. */
  assigneeId?: number | null
  /** Its tags, all of them (lib/team-queue.ts, tagsOf). */
  tags?: string[]
  /** Who makes the change (the owner is told of a discussion given them by someone else). */
  actor?: { id: number; name: string }
  /** Values of the site's custom fields, by key; null clears one (db/stores/fields.ts). */
  fields?: Record<string, unknown>
}

// The discussions, one store for both engines (db/port.ts). Every write is one transaction that
// first locks what it decides on (port.locked: the site's row for a create, so two creates on one
// site take turns and the next number is read after the previous one committed; the discussion's
// row for a reply or a change), and moves the counts in the same transaction, so they commit with
// the rows. Numbers and ids a request names are compared through port.wide.

/** How many merges `current` looks past (each merged discussion names the one it went into, never itself). */
const MAX_MERGE_HOPS = 16

function notFound(number: number): StoreError {
  return new StoreError(`there is no discussion ${number} on this site`, 'not_found', 'number')
}

/**
 * What a change asks of the discussion's version (If-Match, plugins/http/conditional.ts): checked
 * under the row's lock, so two changes made for one version cannot both go ahead.
 */
export type Expected = (version: number) => boolean

export function holdsExpected(discussion: DiscussionRow, expected: Expected | undefined): void {
  if (expected && !expected(discussion.version)) throw new VersionMoved(`discussion ${discussion.number}`, discussion.version)
}

/** A merged discussion is a pointer to the one it went into (db/stores/merges.ts): written to there, never here. */
function refuseMerged(discussion: DiscussionRow): void {
  if (discussion.state === 'merged') {
    throw new StoreError(`discussion ${discussion.number} was merged into discussion ${discussion.mergedInto}: write to that one`, 'conflict', 'number')
  }
}

function refuseDeleted(discussion: DiscussionRow): void {
  refuseMerged(discussion)
  if (discussion.state === 'deleted') {
    throw new StoreError(`discussion ${discussion.number} is deleted; restore it before changing it`, 'conflict', 'number')
  }
}

/** Resolving (or unresolving) spam would make it the team's work again without saying it is not spam. */
function refuseSpam(discussion: DiscussionRow, action: Action): void {
  if (discussion.state === 'spam' && (action === 'resolve' || action === 'unresolve' || action === 'toggle')) {
    throw new StoreError(`discussion ${discussion.number} is marked spam; mark it not spam before you ${action} it`, 'conflict', 'number')
  }
}

/** The discussion, read in the transaction of `port`; `lock` holds its row until that ends. */
export async function getIn(port: StorePort, siteId: number, number: number, lock = false): Promise<DiscussionRow> {
  const { discussions, users } = port.tables
  const p = sql.placeholder
  const read = port.prepared(lock ? 'discussions_get_locked' : 'discussions_get', (db) => {
    const query = db
      .select(discussionViews(port).discussion)
      .from(discussions)
      .innerJoin(users, eq(users.id, discussions.authorId))
      .where(and(eq(discussions.siteId, p('siteId')), eq(discussions.number, port.wide(p('number')))))
    return (lock ? port.locked(query, discussions) : query).prepare(lock ? 'discussions_get_locked' : 'discussions_get')
  })
  const [discussion] = await read.execute({ siteId, number })
  if (!discussion) throw notFound(number)
  return discussion
}

export async function categoryOfSite(port: StorePort, siteId: number, id: number) {
  const { categories } = port.tables
  const p = sql.placeholder
  const read = port.prepared('discussions_category_of_site', (db) =>
    db
      .select({ id: categories.id, public: categories.public, roundRobin: categories.roundRobin, lastAssigneeId: categories.lastAssigneeId })
      .from(categories)
      .where(and(eq(categories.id, port.wide(p('id'))), eq(categories.siteId, p('siteId'))))
      .prepare('discussions_category_of_site'),
  )
  return (await read.execute({ siteId, id }))[0]
}

/** Comment `number` of a discussion, with its author, read on `port`. */
function commentOf(port: StorePort) {
  const { comments, users } = port.tables
  const p = sql.placeholder
  return port.prepared('discussions_comment', (db) =>
    db
      .select(discussionViews(port).comment)
      .from(comments)
      .innerJoin(users, eq(users.id, comments.authorId))
      .where(and(eq(comments.discussionId, port.wide(p('discussionId'))), eq(comments.number, port.wide(p('number')))))
      .prepare('discussions_comment'),
  )
}

/** The names of the SLA clock's columns (db/stores/sla.ts), each bound by a placeholder of its name. */
const SLA_COLUMNS = ['slaPolicyId', 'slaReplySince', 'slaFirstRepliedAt', 'slaResolutionSince', 'slaResolutionSpent', 'firstReplyDueAt', 'nextReplyDueAt', 'resolutionDueAt', 'dueAt', 'slaBreached', 'slaTold', 'slaAlertAt'] as const
const slaSet = () => Object.fromEntries(SLA_COLUMNS.map((name) => [name, given(name)])) as Record<(typeof SLA_COLUMNS)[number], SQL>
/** The names of the reports' facts (lib/reports.ts ReportFacts), bound the same way. */
const FACT_COLUMNS = ['firstReplyAt', 'firstReplyMinutes', 'firstReplyBusiness', 'resolvedAt', 'resolvedById', 'resolutionMinutes', 'resolutionBusiness', 'reopens', 'teamReplies'] as const
const factSet = () => Object.fromEntries(FACT_COLUMNS.map((name) => [name, given(name)])) as Record<(typeof FACT_COLUMNS)[number], SQL>

/** The facts as a prepared statement binds them (moments through port.moment). */
function boundFacts(port: StorePort, facts: ReportFacts) {
  const at = (date: Date | null) => (date === null ? null : port.moment(date))
  return { ...facts, firstReplyAt: at(facts.firstReplyAt), resolvedAt: at(facts.resolvedAt) }
}

/** The reports' facts of a row. */
const factsOfRow = (d: DiscussionRow): ReportFacts & { state: string } => ({
  state: d.state,
  firstReplyAt: d.firstReplyAt,
  firstReplyMinutes: d.firstReplyMinutes,
  firstReplyBusiness: d.firstReplyBusiness,
  resolvedAt: d.resolvedAt,
  resolvedById: d.resolvedById,
  resolutionMinutes: d.resolutionMinutes,
  resolutionBusiness: d.resolutionBusiness,
  reopens: d.reopens,
  teamReplies: d.teamReplies,
})

/** The statements every write of a discussion runs, prepared once per port. */
function writes(port: StorePort) {
  const { comments, discussions } = port.tables
  const p = sql.placeholder
  /** A new comment's row as its insert binds it, in the discussion `discussionId` says. */
  const commentRow = (discussionId: SQL | ReturnType<typeof p>) => ({
    discussionId,
    number: p('number'),
    authorId: p('authorId'),
    bySupporter: p('bySupporter'),
    body: p('body'),
    internal: p('internal'),
    via: p('via'),
    createdAt: p('at'),
  })
  // Placeholders in set() are bound as they are given (port.ts), not through the columns: moments through port.moment.
  return {
    insert: port.prepared('discussions_insert', (db) =>
      db
        .insert(discussions)
        // A new discussion's row as its insert binds it.
        .values({
          siteId: p('siteId'),
          // The site's highest and one: under the site's row, which its caller holds (lockSite, takeSite).
          number: sql`(select coalesce(max(${discussions.number}), 0) + 1 from ${discussions} where ${discussions.siteId} = ${p('siteId')})`,
          title: p('title'),
          permalink: p('permalink'),
          state: p('state'),
          stateBeforeDelete: p('stateBefore'),
          public: p('public'),
          authorId: p('authorId'),
          categoryId: p('categoryId'),
          createdAt: p('at'),
          updatedAt: p('at'),
          lastUpdatedAt: p('at'),
          commentsCount: p('commentsCount'),
          awaitingTeam: p('awaitingTeam'),
          startedOnTheWeb: p('startedOnTheWeb'),
          assigneeId: p('assigneeId'),
          channel: p('channel'),
          splitFrom: p('splitFrom'),
          fields: p('fields'),
          ...slaSet(),
        })
        .returning(discussionViews(port).insertedDiscussion)
        .prepare('discussions_insert'),
    ),
    comment: port.prepared('discussions_comment_insert', (db) =>
      db
        .insert(comments)
        .values(commentRow(p('discussionId')))
        .returning(discussionViews(port).insertedComment)
        .prepare('discussions_comment_insert'),
    ),
    // A new discussion's opening post, its discussion the site's newest (the create holds the site's
    // row): sent with the discussion's insert (together), which the server runs first, before its id is known here.
    opening: port.prepared('discussions_opening_insert', (db) =>
      db
        .insert(comments)
        .values(commentRow(sql`(select ${discussions.id} from ${discussions} where ${discussions.siteId} = ${p('siteId')} order by ${discussions.number} desc limit 1)`))
        .returning(discussionViews(port).insertedComment)
        .prepare('discussions_opening_insert'),
    ),
    afterComment: port.prepared('discussions_after_comment', (db) =>
      db
        .update(discussions)
        .set({ state: given('state'), commentsCount: given('count'), updatedAt: given('at'), lastUpdatedAt: given('at'), awaitingTeam: given('awaitingTeam'), ...slaSet(), ...factSet(), version: sql`${discussions.version} + 1` })
        .where(eq(discussions.id, p('id')))
        .prepare('discussions_after_comment'),
    ),
    save: port.prepared('discussions_save', (db) =>
      db
        .update(discussions)
        .set({
          title: given('title'),
          permalink: given('permalink'),
          state: given('state'),
          stateBeforeDelete: given('stateBeforeDelete'),
          public: given('public'),
          categoryId: given('categoryId'),
          assigneeId: given('assigneeId'),
          tags: given('tags'),
          updatedAt: given('at'),
          lastUpdatedAt: given('lastUpdatedAt'),
          commentsCount: given('commentsCount'),
          awaitingTeam: given('awaitingTeam'),
          mergedInto: given('mergedInto'),
          fields: given('fields'),
          ...slaSet(),
          ...factSet(),
          version: sql`${discussions.version} + 1`,
        })
        .where(eq(discussions.id, p('id')))
        .prepare('discussions_save'),
    ),
    // What the SLA alerts' loop writes: the clock told, and (`bump`: a breach the API shows) the version moved on.
    slaTold: port.prepared('discussions_sla_told', (db) =>
      db
        .update(discussions)
        .set({ ...slaSet(), version: sql`${discussions.version} + ${p('bump')}` })
        .where(eq(discussions.id, p('id')))
        .prepare('discussions_sla_told'),
    ),
  }
}

/** The tags as a discussion row keeps them; a StoreError (invalid `tags`) naming the first that cannot be one. */
function keptTags(texts: string[]): string {
  const found = tagsOf(texts)
  if ('problem' in found) throw new StoreError(found.problem, 'invalid', 'tags')
  return found.tags.join(' ')
}

/** The rows `?tag=` finds the discussion by, made again for its tags (in the change's transaction). */
async function retag(port: StorePort, d: DiscussionRow): Promise<void> {
  const { discussionTags } = port.tables
  await port.db.delete(discussionTags).where(eq(discussionTags.discussionId, d.id))
  const tags = tagList(d.tags)
  if (tags.length > 0) await port.db.insert(discussionTags).values(tags.map((tag) => ({ discussionId: d.id, siteId: d.siteId, tag })))
}

/** What a change of one discussion writes, decided from it as it is under its lock; null: nothing. */
type Decide = (tx: StorePort, d: DiscussionRow) => Promise<Partial<DiscussionRow> | null>
/** What the change feed and the webhooks are told of a change, from the discussion after it. */
type EventOf = (after: DiscussionRow) => 'discussion.updated' | 'discussion.deleted' | 'discussion.restored' | 'discussion.spam' | 'discussion.merged'

/** The category a discussion is moved to; another site's or an unknown one is an invalid `field`. */
async function checkCategory(port: StorePort, siteId: number, id: number, field: string) {
  const category = await categoryOfSite(port, siteId, id)
  if (!category) throw new StoreError(`is ${id}, which is not a category of this site`, 'invalid', field)
  return category
}

/** What an SLA policy's conditions look at in a discussion (lib/sla.ts). */
const factsOf = (d: DiscussionRow) => ({ categoryId: d.categoryId, tags: tagList(d.tags), authorEmail: d.authorEmail, channel: d.channel })

/**
 * What a write made beside its comment, in its own transaction: attachments (the uploads it claimed)
 * and a reply mail queued. What it did not make, its answer does not read (routes/api/discussions/context.ts).
 */
export interface Made {
  files: boolean
  mailed: boolean
}

/** A discussion written with a comment: both as the write left them, and what it made beside the comment. */
export interface Written {
  discussion: DiscussionRow
  comment: CommentRow
  made: Made
}

/** What a write of a discussion is given: the clock, the sink its events go to, and who posts. */
export interface WriteContext {
  clock: Clock
  events: EventSink
  authorOf: Authors
}

/**
 * Reads the discussion under its row lock in the transaction `tx`, asks `decide` what changes,
 * writes that, moves the counts and tells `events` (as `event`). The discussion as it is after,
 * read again when the events' rules changed it further (db/stores/rules.ts).
 */
export async function changeDiscussionIn(tx: StorePort, { clock, events }: WriteContext, siteId: number, number: number, decide: Decide, expected?: Expected, event: EventOf = () => 'discussion.updated'): Promise<DiscussionRow> {
  const before = await getIn(tx, siteId, number, true)
  holdsExpected(before, expected)
  const changes = await decide(tx, before)
  if (!changes) return before
  const moved: DiscussionRow = { ...before, ...changes, updatedAt: new Date(clock()), version: before.version + 1 }
  // Who listens, read before the site's row is taken (replyDiscussionIn); its rules' version says whether the SLA policies kept are the site's.
  const listeners = await listenersIn(tx, siteId)
  const sla = await slaOfWrite(tx, { siteId, before, after: moved, facts: factsOf(moved), at: moved.updatedAt, rulesVersion: listeners.rulesVersion })
  const report = reportStep({ before: factsOfRow(before), after: { ...moved, tags: tagList(moved.tags), reportedFields: await reportedFieldsIn(tx, siteId, moved.fields) }, sla: { policyId: sla.columns.slaPolicyId, breached: sla.columns.slaBreached }, schedule: sla.schedule, at: moved.updatedAt })
  const after: DiscussionRow = { ...moved, ...sla.columns, ...report.facts }
  await writes(tx).save.execute({ ...after, id: before.id, public: after.public ? 1 : 0, at: tx.moment(after.updatedAt), lastUpdatedAt: tx.moment(after.lastUpdatedAt), awaitingTeam: tx.flag(after.awaitingTeam), ...boundColumns(tx, sla.columns), ...boundFacts(tx, report.facts) })
  if (after.tags !== before.tags) await retag(tx, after)
  if (after.fields !== before.fields) await indexValuesIn(tx, siteId, before.id, valuesOf(after.fields))
  if (after.title !== before.title) await indexDiscussion(tx, after)
  const type = event(after)
  // The site's row before the counts' rows and the reports' day rows, in every write (a create
  // takes it first of all): two writes that took them in the other order each would wait for the
  // other (PostgreSQL's deadlock).
  await siteChanged(tx, { siteId, kind: type, discussionId: before.id, at: after.updatedAt })
  await moveCount(tx, counted(before), counted(after))
  await addTallies(tx, siteId, report.tallies)
  const ruled = await events(tx, { type, siteId, discussion: after, before, listeners })
  await tellSla(tx, clock, events, after, sla.late, listeners)
  return ruled ? getIn(tx, siteId, number) : after
}

/** resolve, unresolve, toggle, delete, restore, spam or not_spam, in the transaction `tx`. */
export function actDiscussionIn(tx: StorePort, write: WriteContext, siteId: number, number: number, action: Action, expected?: Expected): Promise<DiscussionRow> {
  return changeDiscussionIn(tx, write, siteId, number, async (tx, d) => {
    if (action !== 'restore' && action !== 'delete') refuseDeleted(d)
    else refuseMerged(d)
    if (d.erasedAt) throw new StoreError(`discussion ${d.number} was deleted for good (its customer erased, or the site's retention): nothing of it is left to restore`, 'conflict', 'number')
    refuseSpam(d, action)
    const state = stateAfterAction(d.state, action, d.stateBeforeDelete)
    if (state === d.state) return null
    // "Not spam" allows its customer: their next mail is never taken for spam (db/stores/senders.ts).
    if (action === 'not_spam') await allowSenderIn(tx, write.clock, siteId, d.authorEmail)
    return { state, stateBeforeDelete: state === 'deleted' || state === 'spam' ? d.state : null }
  }, expected, (after) => (after.state === 'deleted' ? 'discussion.deleted' : after.state === 'spam' ? 'discussion.spam' : action === 'restore' || action === 'not_spam' ? 'discussion.restored' : 'discussion.updated'))
}

/**
 * Title, visibility, category, owner and tags, in the transaction `tx`; a deleted discussion must be
 * restored first. A category or owner that cannot be is refused (invalid) naming the field as the
 * request named it (`fields`; `category` and `assignee` by default).
 */
export function updateDiscussionIn(tx: StorePort, write: WriteContext, siteId: number, number: number, changes: DiscussionChanges, fields: { category?: string; assignee?: string } = {}, expected?: Expected): Promise<DiscussionRow> {
  const { clock } = write
  return changeDiscussionIn(tx, write, siteId, number, async (tx, d) => {
    refuseDeleted(d)
    if (changes.categoryId !== undefined) await checkCategory(tx, siteId, changes.categoryId, fields.category ?? 'category')
    const title = changes.title?.trim()
    const next: Partial<DiscussionRow> = {}
    if (title !== undefined && title !== d.title) Object.assign(next, { title, permalink: slugify(title, 'discussion') })
    if (changes.public !== undefined && changes.public !== d.public) next.public = changes.public
    if (changes.categoryId !== undefined && changes.categoryId !== d.categoryId) next.categoryId = changes.categoryId
    if (changes.assigneeId !== undefined && changes.assigneeId !== d.assigneeId) {
      const owner = changes.assigneeId === null ? null : await checkAssignee(tx, siteId, changes.assigneeId, fields.assignee ?? 'assignee')
      Object.assign(next, { assigneeId: owner?.id ?? null, assigneeName: owner?.name ?? null })
      if (owner) await notifyAssigned(tx, clock, { siteId, number, title: d.title, ownerId: owner.id, actorId: changes.actor?.id ?? null, actorName: changes.actor?.name ?? null })
    }
    if (changes.tags !== undefined) {
      const kept = keptTags(changes.tags)
      if (kept !== d.tags) next.tags = kept
    }
    if (changes.fields !== undefined) {
      const kept = valuesJson(await valuesAfter(tx, siteId, valuesOf(d.fields), changes.fields))
      if (kept !== d.fields) next.fields = kept
    }
    return Object.keys(next).length === 0 ? null : next
  }, expected)
}

/** Adds a comment in the transaction `tx` and moves the discussion's state as a reply does. */
export async function replyDiscussionIn(tx: StorePort, { clock, events, authorOf }: WriteContext, input: NewComment, expected?: Expected): Promise<Written> {
  // Who listens read with it, before the site's row is taken (as every read that needs no lock).
  // Its rules' version says whether the SLA policies kept are the site's (policiesOf).
  const [before, listeners] = await together(tx, () => getIn(tx, input.siteId, input.number, true), () => listenersIn(tx, input.siteId))
  holdsExpected(before, expected)
  refuseDeleted(before)
  if (input.resolve) refuseSpam(before, 'resolve')
  const author = await authorOf(tx, input.siteId, input)
  const now = new Date(clock())
  const number = before.commentsCount + 1
  const state = input.resolve ? 'resolved' : stateAfterComment(before.state, author.bySupporter, input.internal)
  const write = writes(tx)
  // A public reply of the staff to a discussion that came by mail is mailed, queued with it: who it
  // goes to read with the comment's insert.
  const mails = author.bySupporter && !input.internal
  const [[comment], people] = await together(
    tx,
    () => write.comment.execute({
      discussionId: before.id,
      number,
      authorId: author.id,
      bySupporter: author.bySupporter,
      body: input.body,
      internal: input.internal,
      via: input.via,
      at: now,
    }),
    () => (mails ? replyPeopleIn(tx, before.id) : Promise.resolve(undefined)),
  )
  const { id } = comment!
  if (input.uploads) await claimUploads(tx, clock, { siteId: input.siteId, uploaderId: input.supporterId, commentId: id, ids: input.uploads })
  const mailed = mails && (await queueReplyMail(tx, clock, { siteId: input.siteId, discussionId: before.id, number: before.number, title: before.title, commentId: id, body: input.body, startedOnTheWeb: before.startedOnTheWeb }, 'reply_mail', people))
  // The team owes an answer after a customer's public comment, not after its own; a note moves nothing.
  const awaitingTeam = input.internal ? before.awaitingTeam : !author.bySupporter
  const sla = await slaOfWrite(tx, { siteId: input.siteId, before, after: { state, awaitingTeam }, facts: factsOf(before), at: now, rulesVersion: listeners.rulesVersion })
  const report = reportStep({
    before: factsOfRow(before),
    after: { ...before, state, tags: tagList(before.tags), reportedFields: await reportedFieldsIn(tx, input.siteId, before.fields) },
    comment: { bySupporter: author.bySupporter, internal: input.internal, authorId: author.id },
    sla: { policyId: sla.columns.slaPolicyId, breached: sla.columns.slaBreached },
    schedule: sla.schedule,
    at: now,
  })
  // The discussion's row and its comments' texts for its search document: neither waits for the other.
  await together(tx, () => write.afterComment.execute({ id: before.id, state, count: number, at: tx.moment(now), awaitingTeam: tx.flag(awaitingTeam), ...boundColumns(tx, sla.columns), ...boundFacts(tx, report.facts) }), () => indexDiscussion(tx, before))
  // The row as that statement left it, as changeDiscussionIn makes its own: nothing to read again.
  const discussion: DiscussionRow = { ...before, state, commentsCount: number, updatedAt: now, lastUpdatedAt: now, awaitingTeam, ...sla.columns, ...report.facts, version: before.version + 1 }
  // Its owner hears of it (as the discussion was before: the rules below may give it to another), queued before the row too.
  if (before.assigneeId !== null) {
    await notifyOwnerOfComment(tx, clock, { siteId: input.siteId, number: before.number, title: before.title, ownerId: before.assigneeId, authorId: author.id, authorName: comment.authorName, body: input.body, internal: input.internal })
  }
  // The site's row before the counts' rows, as in every write (changeDiscussionIn above).
  await siteChanged(tx, { siteId: input.siteId, kind: 'comment.created', discussionId: before.id, commentId: id, at: now })
  await moveCount(tx, counted(before), counted({ ...before, state }))
  // The day rows after the site's row and the counts', as in every write (the order of changeDiscussionIn above).
  await addTallies(tx, input.siteId, report.tallies)
  const ruled = await events(tx, { type: 'comment.created', siteId: input.siteId, discussion, comment, files: (input.uploads?.length ?? 0) > 0, before, listeners })
  await tellSla(tx, clock, events, discussion, sla.late, listeners)
  // As the rules left it, when one of them changed it (db/stores/rules.ts).
  return { discussion: ruled ? await getIn(tx, input.siteId, input.number) : discussion, comment, made: { files: (input.uploads?.length ?? 0) > 0, mailed } }
}

/** What a new discussion's row is made of: a created one's (createDiscussionIn), or a split's (db/stores/merges.ts). */
export interface NewRow {
  siteId: number
  categoryId: number
  title: string
  state: DiscussionState
  stateBefore: DiscussionState | null
  public: boolean
  authorId: number
  /** Its customer's address, which an SLA policy's domains look at ('' for none). */
  customerEmail: string
  awaitingTeam: boolean
  startedOnTheWeb: boolean
  assigneeId: number | null
  channel: SlaChannel
  splitFrom: number | null
  /** Its custom fields' values, as the row keeps them (db/stores/fields.ts, valuesJson). */
  fields: string
  /** How many comments it starts with: 1, the opening post, but for a split. */
  commentsCount: number
  at: Date
  /** The site's rules' version under the site's row (takeSite), when the caller read it: its SLA policies may be the ones kept. */
  rulesVersion?: number
}

/**
 * Inserts a new discussion's row, numbered next on its site, with its SLA clocks; the row as its
 * insert returned it (discussionViews, insertedDiscussion) and its SLA policy's schedule (for the reports). The caller holds the site's row (lockSite, or takeSite)
 * from before this until it commits, so the next create is numbered after this one.
 */
export async function insertDiscussionIn<A = undefined>(port: StorePort, row: NewRow, opening?: () => Promise<A>): Promise<{ discussion: DiscussionRow; schedule: Schedule | null; openedAs: A | undefined }> {
  const write = writes(port)
  const { sla, params } = await newDiscussion(port, row, row.rulesVersion)
  const insert = () => write.insert.execute(params)
  // `opening`: a statement sent with the insert, run after it (a create's opening post), as insertEarlyIn's.
  const [[discussion], openedAs] = opening ? await together(port, insert, opening) : [await insert(), undefined]
  await indexFieldsOf(port, discussion)
  return { discussion, schedule: sla.schedule, openedAs }
}

/** A new discussion's SLA, by the policies of the site's rules' version given, and what its insert binds. */
async function newDiscussion(port: StorePort, row: NewRow, rulesVersion: number | undefined) {
  const facts = { categoryId: row.categoryId, tags: [], authorEmail: row.customerEmail, channel: row.channel }
  const sla = await slaOfWrite(port, { siteId: row.siteId, before: null, after: { state: row.state, awaitingTeam: row.awaitingTeam }, facts, at: row.at, rulesVersion })
  return { sla, params: { ...row, ...boundColumns(port, sla.columns), permalink: slugify(row.title, 'discussion'), at: row.at } }
}

/**
 * A new discussion inserted with its opening post (`opening`), numbered by the statement, in one
 * round trip with the one that takes the site's row (takeSite): its SLA is that of the policies of
 * the rules' version read before (`row.rulesVersion`), and when the row says the site's rules
 * moved meanwhile, that of the policies under the row, written over it.
 */
async function insertEarlyIn<A>(port: StorePort, row: NewRow, opening: () => Promise<A>): Promise<{ discussion: DiscussionRow; schedule: Schedule | null; openedAs: A; changeSeq: number }> {
  const write = writes(port)
  let { sla, params } = await newDiscussion(port, row, row.rulesVersion)
  const [site, [inserted], openedAs] = await together(port, () => takeSite(port, row.siteId, 1), () => write.insert.execute(params), opening)
  let discussion = inserted
  if (site.rulesVersion !== row.rulesVersion) {
    ;({ sla } = await newDiscussion(port, row, site.rulesVersion))
    await write.slaTold.execute({ id: discussion.id, bump: 0, ...boundColumns(port, sla.columns) })
    discussion = { ...discussion, ...sla.columns }
  }
  await indexFieldsOf(port, discussion)
  return { discussion, schedule: sla.schedule, openedAs, changeSeq: site.last }
}

/** A new discussion's custom fields in the index of their values. */
async function indexFieldsOf(port: StorePort, discussion: DiscussionRow): Promise<void> {
  if (discussion.fields !== '{}') await indexValuesIn(port, discussion.siteId, discussion.id, valuesOf(discussion.fields))
}

/** A new discussion counted: in its counts' row, and in the reports' day rows (the site's row, when taken, before these). */
export async function countNewIn(port: StorePort, discussion: DiscussionRow, schedule: Schedule | null): Promise<void> {
  await bumpCount(port, counted(discussion), 1)
  const report = reportStep({ before: null, after: { ...discussion, tags: [], reportedFields: await reportedFieldsIn(port, discussion.siteId, discussion.fields) }, sla: { policyId: discussion.slaPolicyId, breached: discussion.slaBreached }, schedule, at: discussion.createdAt })
  await addTallies(port, discussion.siteId, report.tallies)
}

/**
 * Creates a discussion with its opening post (comment 1) in the transaction of `port` and returns
 * both, as written, telling `events` of it. A category that is not the site's is a StoreError (not_found).
 */
export async function createDiscussionIn(
  port: StorePort,
  clock: Clock,
  authorOf: Authors,
  input: NewDiscussion,
  events: EventSink = noEvents,
): Promise<Written> {
  const write = writes(port)
  // Read before the site's row is taken, as every read that needs no lock: each statement after it
  // is one more that the site's other writes wait for. The category's settings are as they were
  // when the create began (a change of them takes the site's row); its turn is read again under it.
  // A spam's event tells no rule and no webhook, and no one hears of it. The three read together.
  const [found, listeners, hearing] = await together(
    port,
    () => categoryOfSite(port, input.siteId, input.categoryId),
    () => (input.spam ? Promise.resolve(undefined) : listenersIn(port, input.siteId)),
    () => (input.spam ? Promise.resolve([]) : hearsOfNew(port, input.siteId)),
  )
  if (!found) throw new StoreError(`there is no category ${input.categoryId} on this site`, 'not_found', 'category')
  let category = found
  // A supporter's own discussion knows its author without a statement (authorOf), and all its
  // insert needs before the site's row is taken: the row is taken, the discussion numbered and
  // inserted, and its opening post inserted, in one round trip (`early`). Otherwise the row is taken
  // first, by moving the site's version with this create's number in the feed, and held until
  // commit: the next create on this site is numbered after this one (the insert numbers it, under
  // the row). The author after it: a new customer's account and membership
  // are written under it, as every write that adds them does; and custom fields' values, read by
  // their definitions, which a removal changes under the row.
  const early = !input.onBehalfOf && !input.fields && listeners !== undefined
  const taken = early ? undefined : await takeSite(port, input.siteId, 1)
  const author = await authorOf(port, input.siteId, input)
  const title = input.title.trim()
  const now = new Date(clock())
  // A customer's new discussion in a round-robin category goes to the next supporter in turn, read under the site's row.
  const inTurn = !author.bySupporter && !input.spam && category.roundRobin
  if (inTurn) category = (await categoryOfSite(port, input.siteId, input.categoryId))!
  const assigneeId = inTurn && category.roundRobin ? await nextInTurn(port, input.siteId, { id: input.categoryId, lastAssigneeId: category.lastAssigneeId }) : undefined
  const state = input.spam ? 'spam' : initialState(author.bySupporter)
  const values = input.fields ? await valuesAfter(port, input.siteId, {}, input.fields) : {}
  const row: NewRow = {
    siteId: input.siteId,
    categoryId: input.categoryId,
    title,
    state,
    stateBefore: input.spam ? initialState(author.bySupporter) : null,
    public: input.public ?? category.public,
    authorId: author.id,
    // A supporter's own discussion has no customer yet: no domain chooses it.
    customerEmail: input.onBehalfOf?.email ?? '',
    awaitingTeam: !author.bySupporter,
    startedOnTheWeb: input.via === 'web' && !author.bySupporter,
    assigneeId: assigneeId ?? null,
    channel: channelOf(input.via),
    splitFrom: null,
    fields: valuesJson(values),
    commentsCount: 1,
    at: now,
    // Under the site's row, or (early) as read with who listens, checked once the row is taken.
    rulesVersion: taken ? taken.rulesVersion : listeners!.rulesVersion,
  }
  const post = { number: 1, authorId: author.id, bySupporter: author.bySupporter, body: input.body, internal: false, via: input.via }
  // The opening post sent with the discussion's insert: one round trip fewer under the site's row.
  const openingPost = () => write.opening.execute({ ...post, siteId: input.siteId, at: now })
  const { discussion, schedule, openedAs, changeSeq } = taken
    ? await insertDiscussionIn(port, row, openingPost).then((made) => ({ ...made, openedAs: made.openedAs!, changeSeq: taken.last }))
    : await insertEarlyIn(port, row, openingPost)
  const { number } = discussion
  const [{ id }] = openedAs
  const opening = { discussionId: discussion.id, ...post }
  await indexDiscussion(port, discussion, { body: input.body })
  if (input.uploads) await claimUploads(port, clock, { siteId: input.siteId, uploaderId: input.supporterId, commentId: id, ids: input.uploads })
  await countNewIn(port, discussion, schedule)
  // Numbered when the site's row was taken, above.
  await recordChangesTo(port, input.siteId, changeSeq, [{ kind: input.spam ? 'discussion.spam' : 'discussion.created', discussionId: discussion.id, commentId: id, at: now }])
  // The opening post's author is the discussion's: the row just read names them.
  const comment: CommentRow = { id, ...opening, createdAt: now, movedFrom: null, movedFromNumber: null, authorEmail: discussion.authorEmail, authorName: discussion.authorName }
  // A new discussion's opening post is mailed to no one as a reply (its notices are the staff's own mail).
  const made = { files: (input.uploads?.length ?? 0) > 0, mailed: false }
  if (input.spam) {
    await events(port, { type: 'discussion.spam', siteId: input.siteId, discussion })
    return { discussion, comment, made }
  }
  const about = { siteId: input.siteId, number, title }
  await notifyNewDiscussion(port, clock, hearing.filter((r) => r.id !== author.id), { ...about, authorName: discussion.authorName, body: input.body })
  if (assigneeId !== undefined) await notifyAssigned(port, clock, { ...about, ownerId: assigneeId, actorId: null, actorName: null })
  // Last: the rules the event starts (db/stores/rules.ts) see it made and its people told; as they left it, when they changed it.
  const ruled = await events(port, { type: 'discussion.created', siteId: input.siteId, discussion, comment, files: (input.uploads?.length ?? 0) > 0, listeners })
  return { discussion: ruled ? await getIn(port, input.siteId, number) : discussion, comment, made }
}

/**
 * The discussions of the sites. The listing's page is read by the engine's own query
 * (db/stores/discussion-listing.ts), made from the counts' sum by `listingOf`.
 */
export function createDiscussionStore(
  port: StorePort,
  clock: Clock,
  box: SecretBox,
  listingOf: ListingOf,
  events: EventSink = noEvents,
) {
  const { db, tables: { comments, discussions, users } } = port
  const counts = createDiscussionCounts(port)
  const listing = listingOf(port, counts.total)
  const authorOf = createAuthors(clock, box)
  const write: WriteContext = { clock, events, authorOf }
  const view = discussionViews(port)
  const p = sql.placeholder

  // The reads outside a write, prepared once.
  const commentsOf = onFirstUse(() => db
    .select(view.comment)
    .from(comments)
    .innerJoin(users, eq(users.id, comments.authorId))
    .where(eq(comments.discussionId, port.wide(p('discussionId'))))
    .orderBy(asc(comments.number))
    .limit(p('limit'))
    .offset(p('offset'))
    .prepare('discussions_comments'))

  return {
    /** A page of a listing; by due time, of the new and open discussions of its scope only (none of another state has a due time). */
    list(query: ListingQuery) {
      if (query.sort !== 'due' || query.state === 'todo' || query.state === 'new' || query.state === 'open') return listing.list(query)
      if (query.state === 'live') return listing.list({ ...query, state: 'todo' })
      return Promise.resolve({ total: 0, discussions: [] })
    },
    explain: listing.explain,
    counts,

    /** The discussion with this number on this site; a StoreError (not_found) otherwise. */
    get: (siteId: number, number: number): Promise<DiscussionRow> => getIn(port, siteId, number),

    /**
     * The discussion with this number, or when it was merged the one it went into, past those that
     * went further (db/stores/merges.ts): where its comments, and its mail, are now.
     */
    async current(siteId: number, number: number): Promise<DiscussionRow> {
      let d = await getIn(port, siteId, number)
      for (let hops = 0; d.state === 'merged' && hops < MAX_MERGE_HOPS; hops++) d = await getIn(port, siteId, d.mergedInto!)
      return d
    },

    /** The comments of a discussion in the order they were written; all of them unless a page is asked for. */
    comments(discussionId: number, offset = 0, limit = -1): Promise<CommentRow[]> {
      return commentsOf.execute({ discussionId, ...pageBounds(offset, limit) })
    },

    /** How many discussions the author started on the site since `since` (the customer's pages bound it). */
    async startedSince(siteId: number, authorId: number, since: Date): Promise<number> {
      const [{ n }] = await db
        .select({ n: count() })
        .from(discussions)
        .where(and(eq(discussions.siteId, siteId), eq(discussions.authorId, authorId), gt(discussions.createdAt, since)))
      return Number(n)
    },

    /** Comment `number` (1 is the opening post) of the discussion, or undefined. */
    async comment(discussionId: number, number: number): Promise<CommentRow | undefined> {
      return (await commentOf(port).execute({ discussionId, number }))[0]
    },

    /**
     * Creates a discussion with its opening post (comment 1) and returns both, as written: no
     * need to read them back. A category that is not the site's is a StoreError (not_found).
     */
    create(input: NewDiscussion): Promise<Written> {
      return port.atomic((tx) => createDiscussionIn(tx, clock, authorOf, input, events))
    },

    /**
     * Tells the SLA warnings and breaches due now (the alerts' loop, plugins/sla-alerts.ts), at most
     * `limit` discussions: each in one transaction that takes its row's lock, checks the alert is
     * still due (another process may have told it since the read), queues what is told and marks it
     * told. Whatever commits is told once; whatever does not (a crash) is told by the next run.
     * How many discussions were looked at, and how many alerts told.
     */
    async tellAlerts(limit = 100): Promise<{ discussions: number; alerts: number }> {
      const now = new Date(clock())
      let told = 0
      const due = await alertsDue(port, now, limit)
      for (const { siteId, number } of due) {
        told += await port.atomic(async (tx) => {
          const d = await getIn(tx, siteId, number, true)
          if (d.slaAlertAt === null || d.slaAlertAt > now) return 0
          // An alert waits only under a policy; removing the policy clears it under this row's lock (db/stores/sla-policies.ts).
          const policy = (await policiesOf(tx, siteId)).find((p) => p.id === d.slaPolicyId)!
          const { alerts, clock: after } = dueAlerts(clockOf(d), now, policy.warnBefore)
          const columns = columnsOf(after)
          // A breach is shown by the API (`sla.breached`): the discussion's version moves on, and the feed says it changed.
          const shown = columns.slaBreached !== d.slaBreached
          await writes(tx).slaTold.execute({ id: d.id, bump: shown ? 1 : 0, ...boundColumns(tx, columns) })
          const discussion: DiscussionRow = { ...d, ...columns, version: d.version + (shown ? 1 : 0) }
          if (shown) await siteChanged(tx, { siteId, kind: 'discussion.updated', discussionId: d.id, at: now })
          // A warning changes no field the API shows; the site's version moves so that its live pages mark it due soon.
          else if (alerts.length > 0) await bumpSiteVersion(tx, siteId)
          await tellSla(tx, clock, events, discussion, alerts)
          return alerts.length
        })
      }
      return { discussions: due.length, alerts: told }
    },

    /**
     * Its customer's rating of the resolution made at `resolvedAt` (the rating link's, checked by the
     * caller: routes/web/ratings.ts): given, or changed, until RATING_DAYS after it, while it is the
     * discussion's last; counted on the day it was first given (db/stores/reports.ts), and told to
     * the webhooks (satisfaction.rated) and the change feed. The same rating again changes nothing.
     */
    rate(siteId: number, number: number, resolvedAt: number, rating: Rating, comment: string): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        const d = await getIn(tx, siteId, number, true)
        if (d.state !== 'resolved' || d.resolvedAt?.getTime() !== resolvedAt) {
          throw new StoreError(`discussion ${number} was opened again since this link was sent: it can be rated once it is resolved again`, 'conflict', 'number')
        }
        const now = new Date(clock())
        if (now.getTime() > resolvedAt + RATING_DAYS * DAY_MS) throw new StoreError(`discussion ${number} was resolved more than ${RATING_DAYS} days ago: its rating is closed`, 'conflict', 'number')
        if (d.rating === rating && d.ratingComment === comment) return d
        const ratedAt = d.ratedAt ?? now
        await tx.db.update(discussions).set({ rating, ratingComment: comment, ratedAt, updatedAt: now, version: sql`${discussions.version} + 1` }).where(eq(discussions.id, d.id))
        const after: DiscussionRow = { ...d, rating, ratingComment: comment, ratedAt, updatedAt: now, version: d.version + 1 }
        await siteChanged(tx, { siteId, kind: 'discussion.updated', discussionId: d.id, at: now })
        if (d.rating !== rating) await addRating(tx, siteId, d, dayOf(ratedAt), d.rating, rating)
        await events(tx, { type: 'satisfaction.rated', siteId, discussion: after })
        return after
      })
    },

    /** Adds a comment and moves the discussion's state as a reply does. */
    reply(input: NewComment, expected?: Expected): Promise<Written> {
      return port.atomic((tx) => replyDiscussionIn(tx, write, input, expected))
    },

    /**
     * Title, visibility, category, owner and tags; a deleted discussion must be restored first. A
     * category or owner that cannot be is refused (invalid) naming the field as the request named
     * it (`fields`; `category` and `assignee` by default).
     */
    update(siteId: number, number: number, changes: DiscussionChanges, fields: { category?: string; assignee?: string } = {}, expected?: Expected): Promise<DiscussionRow> {
      return port.atomic((tx) => updateDiscussionIn(tx, write, siteId, number, changes, fields, expected))
    },

    /**
     * Removes a category of the site (docs/decisions.md, "Categories"): its discussions, whatever
     * their state, moved into `intoId` first, each as a change of its category (its version, the
     * change feed, the webhooks), and the mailboxes that file into it filed there too (or into the
     * site's first category, when none is named and it holds no discussion). How many moved. A
     * StoreError when it is not the site's, when it holds discussions and no category is named, when
     * it is the one named, or when it is the site's last.
     */
    removeCategory(siteId: number, id: number, intoId: number | null, by?: Actor): Promise<number> {
      const { categories, discussions, mailboxes } = port.tables
      return port.atomic(async (tx) => {
        const names = async (ids: number[]) => new Map((await tx.db.select({ id: categories.id, name: categories.name }).from(categories).where(and(eq(categories.siteId, siteId), inArray(categories.id, ids)))).map((c) => [c.id, c.name]))
        if (!(await categoryOfSite(tx, siteId, id))) throw new StoreError(`there is no category ${id} on this site`, 'not_found', 'category')
        if (intoId === id) throw new StoreError('is the category removed: name another one', 'invalid', 'into')
        if (intoId !== null) await checkCategory(tx, siteId, intoId, 'into')
        // The site's last one stays (asked again once the site is held: two removals at once take turns).
        const lastOne = async () => {
          const [{ n }] = await tx.db.select({ n: count() }).from(categories).where(eq(categories.siteId, siteId))
          if (n <= 1) throw new StoreError("is the site's last category: a site keeps one", 'conflict', 'category')
        }
        await lastOne()
        let moved = 0
        // Its discussions locked first, then the site (as every change of one takes them); once the
        // site is held no new one can be made in it, so a second look moves what was made meanwhile.
        const move = async () => {
          const rows = await tx.locked(tx.db.select({ number: discussions.number }).from(discussions).where(and(eq(discussions.siteId, siteId), eq(discussions.categoryId, port.wide(id)))))
          if (rows.length > 0 && intoId === null) throw new StoreError(`holds ${rows.length} discussion${rows.length === 1 ? '' : 's'}: name the category they move into`, 'conflict', 'into')
          for (const { number } of rows) await changeDiscussionIn(tx, write, siteId, number, async () => ({ categoryId: intoId! }))
          moved += rows.length
        }
        await move()
        await lockSite(tx, siteId)
        await move()
        await lastOne()
        const named = await names(intoId === null ? [id] : [id, intoId])
        // Its discussions' counts moved off it before it goes (they name it).
        await lastlyNow(tx)
        await recordChange(tx, clock, by, siteId, 'category.removed', named.get(id)!, { into: intoId === null ? null : named.get(intoId)!, discussions_moved: moved })
        await tx.db.update(mailboxes).set({ categoryId: intoId }).where(and(eq(mailboxes.siteId, siteId), eq(mailboxes.categoryId, id)))
        await policiesFollowCategory(tx, siteId, id, intoId)
        await tx.db.delete(categories).where(and(eq(categories.siteId, siteId), eq(categories.id, port.wide(id))))
        await bumpSiteVersion(tx, siteId)
        return moved
      })
    },

    /**
     * resolve, unresolve, toggle, delete, restore, spam or not_spam. Repeating one changes nothing.
     * Deleted and spam keep the state they came from (the column is named for the first of them).
     * A discussion back from spam is told as restored: the webhooks heard nothing of it while it was.
     */
    act(siteId: number, number: number, action: Action, expected?: Expected, by?: Actor): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        const before = (await getIn(tx, siteId, number)).state
        const after = await actDiscussionIn(tx, write, siteId, number, action, expected)
        // A deletion, and a restore from it, go into the site's record of changes: what cannot be seen after is told there.
        if (before !== after.state && (after.state === 'deleted' || before === 'deleted')) {
          await recordChange(tx, clock, by, siteId, after.state === 'deleted' ? 'discussion.deleted' : 'discussion.restored', `#${number} ${after.title}`)
        }
        return after
      })
    },
  }
}

export type DiscussionStore = ReturnType<typeof createDiscussionStore>
