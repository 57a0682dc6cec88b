import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { CategoryStore } from '../../../db/stores/categories.ts'
import type { DiscussionStore, Expected } from '../../../db/stores/discussions.ts'
import type { FileStore } from '../../../db/stores/files.ts'
import type { OutboxStore } from '../../../db/stores/outbox.ts'
import type { MailStore } from '../../../db/stores/mail.ts'
import type { FieldStore } from '../../../db/stores/fields.ts'
import type { CommentRow, Made } from '../../../db/stores/discussions.ts'
import { discussionVersion, ifMatch } from '../../../plugins/http/conditional.ts'
import { byComment, createViews, type CommentExtras, type Views } from './views.ts'

/** What every discussion route plugin is given. */
export interface DiscussionContext {
  discussions: DiscussionStore
  categories: CategoryStore
  files: FileStore
  outbox: OutboxStore
  mailboxes: MailStore
  /** The site's custom fields (the listing's `?field.<key>=`). */
  fields: FieldStore
  views: Views
}

/**
 * The address of the discussion a request is about (/<site>/discussions/<number>), as the client
 * wrote it: its GET's ETag is made for it, and If-Match on a change to it is compared with that.
 */
export function discussionAddress(request: FastifyRequest): string {
  return /^\/[^/?]+\/discussions\/[^/?]+/.exec(request.url)![0]
}

/** What If-Match asks of the discussion a change is about; undefined without the header. */
export function expectedVersion(request: FastifyRequest): Expected | undefined {
  return ifMatch(request, discussionAddress(request), discussionVersion)
}

/**
 * What the views show of comments beside their rows (routes/api/discussions/views.ts): their
 * attachments, how a reply's mail is doing, and for a message that came by mail the address it came to and DMARC's word on its sender. Three reads,
 * whatever the number of comments: of the whole discussion's attachments when `discussionId` is
 * given (a page of comments), else of these comments'. The API's views and the discussion's page
 * (routes/web/queue.ts) both show them. For comments a write has just made, `made` says which of
 * these it made: what it did not is not read.
 */
export async function commentExtras(context: Pick<DiscussionContext, 'files' | 'outbox' | 'mailboxes'>, rows: CommentRow[], discussionId?: number, made?: Made): Promise<(row: CommentRow) => CommentExtras> {
  const ids = rows.map((c) => c.id)
  const [attachments, deliveries, origins] = await Promise.all([
    made?.files === false ? [] : discussionId === undefined ? Promise.all(ids.map((id) => context.files.ofComment(id))).then((lists) => lists.flat()) : context.files.ofDiscussion(discussionId),
    made?.mailed === false ? new Map() : context.outbox.deliveries(ids),
    // Only a message taken in by mail has a mail origin (plugins/mail/pipeline.ts records it with its comment).
    context.mailboxes.origins(rows.filter((c) => c.via === 'email').map((c) => c.id)),
  ])
  const carried = byComment(attachments)
  return (row) => ({ attachments: carried.get(row.id), delivery: deliveries.get(row.id), mail: origins.get(row.id) })
}

/** The stores the instance is decorated with (plugins/stores.ts) and the views over its URLs. */
export function discussionContext(fastify: FastifyInstance): DiscussionContext {
  return {
    discussions: fastify.discussions,
    categories: fastify.categories,
    files: fastify.files,
    outbox: fastify.outbox,
    mailboxes: fastify.mailboxes,
    fields: fastify.fields,
    views: createViews(fastify.urls),
  }
}
