import { and, asc, eq, inArray, or, sql } from '../drizzle.ts'
import type { StorePort } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { recordChange, type Actor } from './audit.ts'
import { isStaffRole } from './staff.ts'
import { emailKey } from './users.ts'

// A customer's data on request (issue 74; docs/decisions.md, "A customer's data on request"): what
// the site holds of one customer, read for their export (GDPR articles 15 and 20). Their account's
// name and address, the team's record of them (customer fields), every discussion of the site they
// started, wrote in or were copied on, with its comments they could see: theirs and the team's
// replies in full; another customer's comment named, never copied; no internal note. The files they
// sent (the mails they wrote kept as they came among them), the headers kept of their mails, and
// their ratings.

/** A comment as the export shows it. */
export interface ExportedComment {
  number: number
  created_at: string
  /** `you`, `support` (a reply of the team) or `another customer`. */
  from: 'you' | 'support' | 'another customer'
  name: string
  /** The text: theirs and the team's replies; null for another customer's (named, not copied). */
  body: string | null
  via: string
  attachments: Array<{ id: number; name: string; content_type: string; size: number; file: string }>
}

export interface ExportedDiscussion {
  number: number
  title: string
  state: string
  public: boolean
  category: string
  created_at: string
  /** How they are on it: they started it, wrote in it, or were copied on its mail. */
  role: 'started' | 'wrote' | 'copied'
  rating: { rating: string; comment: string; rated_at: string | null } | null
  comments: ExportedComment[]
}

/** A file of theirs in the export: its path in the ZIP, and where its bytes are. */
export interface ExportedFile {
  path: string
  fileId: number
  size: number
}

export interface CustomerExport {
  account: { id: number; name: string; email: string; created_at: string; on_site_since: string }
  fields: Record<string, unknown>
  discussions: ExportedDiscussion[]
  mails: Array<{ message_id: string; sender: string; received_at: string; discussion: number; automatic: boolean; sender_verified: boolean | null; spam_reason: string | null }>
  files: ExportedFile[]
}

const at = (date: Date) => date.toISOString()

/** A file's name in the ZIP: its attachment id and its name, kept to what every unzip takes. */
const filePath = (id: number, name: string) => `files/${id}-${name.replace(/[^\p{L}\p{N}._ -]/gu, '_').slice(0, 100) || 'file'}`

export function createCustomerDataStore(port: StorePort, clock: Clock) {
  const { db, tables: { users, memberships, discussions, comments, categories, participants, attachments, files, mailMessages } } = port

  return {
    /** A line of the record of changes: who exported whose data (the export itself is not kept). */
    recordExport(siteId: number, email: string, by: Actor): Promise<void> {
      return recordChange(port, clock, by, siteId, 'customer.exported', email)
    },

    /**
     * Everything the site holds of one customer, or undefined when the id is no customer of the
     * site (a member of its staff is not: their data is the team's, exported another way).
     */
    async exportOf(siteId: number, userId: number): Promise<CustomerExport | undefined> {
      const [person] = await db
        .select({ id: users.id, name: users.name, email: users.email, createdAt: users.createdAt, role: memberships.role, since: memberships.createdAt, fields: memberships.fields })
        .from(users)
        .innerJoin(memberships, and(eq(memberships.userId, users.id), eq(memberships.siteId, siteId)))
        .where(eq(users.id, userId))
      if (!person || isStaffRole(person.role)) return undefined
      const key = emailKey(person.email)
      // The discussions they started, wrote in, or were copied on.
      const wrote = db.select({ id: comments.discussionId }).from(comments).where(eq(comments.authorId, userId))
      const copied = db.select({ id: participants.discussionId }).from(participants).where(and(eq(participants.siteId, siteId), sql`lower(${participants.email}) = ${key}`))
      const rows = await db
        .select({ d: discussions, category: categories.name })
        .from(discussions)
        .innerJoin(categories, eq(categories.id, discussions.categoryId))
        .where(and(eq(discussions.siteId, siteId), or(eq(discussions.authorId, userId), inArray(discussions.id, wrote), inArray(discussions.id, copied))))
        .orderBy(asc(discussions.number))
      const ids = rows.map((r) => r.d.id)
      const shown = ids.length === 0
        ? []
        : await db
            .select({ c: comments, name: users.name })
            .from(comments)
            .innerJoin(users, eq(users.id, comments.authorId))
            .where(and(inArray(comments.discussionId, ids), eq(comments.internal, false)))
            .orderBy(asc(comments.discussionId), asc(comments.number))
      const own = shown.filter((s) => s.c.authorId === userId).map((s) => s.c.id)
      const sent = own.length === 0
        ? []
        : await db
            .select({ id: attachments.id, commentId: attachments.commentId, name: attachments.name, fileId: attachments.fileId, contentType: files.contentType, size: files.size })
            .from(attachments)
            .innerJoin(files, eq(files.id, attachments.fileId))
            .where(inArray(attachments.commentId, own))
            .orderBy(asc(attachments.id))
      const mails = own.length === 0 ? [] : await db.select().from(mailMessages).where(and(inArray(mailMessages.commentId, own), eq(mailMessages.outbound, false))).orderBy(asc(mailMessages.id))
      const numberOf = new Map(rows.map((r) => [r.d.id, r.d.number]))
      // Each discussion's comments, and its files by comment, found once (not scanned again per discussion).
      const commentsOf = Map.groupBy(shown, (s) => s.c.discussionId)
      const filesOf = Map.groupBy(sent, (a) => a.commentId!)
      const exported = rows.map(({ d, category }): ExportedDiscussion => ({
        number: d.number,
        title: d.title,
        state: d.state,
        public: d.public,
        category,
        created_at: at(d.createdAt),
        role: d.authorId === userId ? 'started' : commentsOf.get(d.id)?.some((s) => s.c.authorId === userId) ? 'wrote' : 'copied',
        rating: d.authorId === userId && d.rating ? { rating: d.rating, comment: d.ratingComment, rated_at: d.ratedAt && at(d.ratedAt) } : null,
        comments: (commentsOf.get(d.id) ?? []).map(({ c, name }) => {
          const from = c.authorId === userId ? 'you' : c.bySupporter ? 'support' : 'another customer'
          return {
            number: c.number,
            created_at: at(c.createdAt),
            from,
            name,
            body: from === 'another customer' ? null : c.body,
            via: c.via,
            attachments: (filesOf.get(c.id) ?? []).map((a) => ({ id: a.id, name: a.name, content_type: a.contentType, size: a.size, file: filePath(a.id, a.name) })),
          }
        }),
      }))
      return {
        account: { id: person.id, name: person.name, email: person.email, created_at: at(person.createdAt), on_site_since: at(person.since) },
        fields: JSON.parse(person.fields) as Record<string, unknown>,
        discussions: exported,
        mails: mails.map((m) => ({ message_id: m.messageId, sender: m.sender, received_at: at(m.createdAt), discussion: numberOf.get(m.discussionId)!, automatic: m.automatic, sender_verified: m.senderVerified, spam_reason: m.spamReason })),
        files: sent.map((a) => ({ path: filePath(a.id, a.name), fileId: a.fileId, size: a.size })),
      }
    },
  }
}

export type CustomerDataStore = ReturnType<typeof createCustomerDataStore>
