import type { Static } from 'typebox'
import { valuesOf } from '../../../db/stores/fields.ts'
import { createKeptTexts } from '../../../lib/kept-texts.ts'
import type { Urls } from '../../../lib/urls.ts'
import type { Category as CategoryRow } from '../../../db/stores/categories.ts'
import { emptyStateCounts, type StateCounts } from '../../../db/stores/discussion-counts.ts'
import type { CommentRow, DiscussionRow } from '../../../db/stores/discussions.ts'
import { tagList } from '../../../lib/team-queue.ts'
import { clockOf } from '../../../db/stores/sla.ts'
import type { Attachment } from '../../../db/stores/files.ts'
import type { Delivery } from '../../../db/stores/outbox.ts'
import type { MailOrigin } from '../../../db/stores/mail.ts'
import type { AttachmentResource, Category, Comment, Discussion } from './schemas.ts'
import { PER_PAGE } from './schemas.ts'

// From stored rows to the v1 resources. Every address is built from the configured base and site
// URLs (lib/urls.ts), never from the request.

/** How many characters of listing items the views keep as JSON. */
export const LISTING_JSON_CHARS = 4_000_000

const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'))
// 10000-01-01T00:00:00Z: past it, toISOString writes a longer year form.
const YEAR_10000 = 253_402_300_800_000

/**
 * ISO 8601 in UTC to the second, the form v1 clients parse: 2026-03-01T12:00:00Z. Computed from
 * the day number (the civil-from-days algorithm of H. Hinnant) rather than through toISOString:
 * a listing page writes ninety of these, and this is three times faster. Moments before 1970 or
 * after 9999 take toISOString's longer forms (test/discussions/views.test.ts compares the two).
 */
export function moment(date: Date): string {
  const ms = date.getTime()
  if (!(ms >= 0 && ms < YEAR_10000)) return date.toISOString().replace(/\.\d{3}Z$/, 'Z')
  const seconds = Math.floor(ms / 1000)
  const days = Math.floor(seconds / 86_400)
  const second = seconds - days * 86_400
  // Days since 0000-03-01, in eras of 400 years (146,097 days) that start with a March.
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365)
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  const [h, m, s] = [Math.floor(second / 3600), Math.floor(second / 60) % 60, second % 60]
  return `${year}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[h]}:${TWO_DIGITS[m]}:${TWO_DIGITS[s]}Z`
}

/** An attachment as the API shows it; `site` is the site's API address. */
export function attachmentView(site: string, row: Attachment): Static<typeof AttachmentResource> {
  return { id: row.id, href: `${site}/attachments/${row.id}`, name: row.name, size: row.size, content_type: row.contentType }
}

/** Attachments by the id of the comment that carries them. */
export function byComment(attachments: Attachment[]): Map<number, Attachment[]> {
  const grouped = new Map<number, Attachment[]>()
  for (const a of attachments) grouped.set(a.commentId!, [...(grouped.get(a.commentId!) ?? []), a])
  return grouped
}

/** What a comment's view shows beside its row (context.ts, commentExtras). */
export interface CommentExtras {
  attachments?: Attachment[]
  delivery?: Delivery
  mail?: MailOrigin
}

export function createViews(urls: Urls) {
  // A site's addresses, built once per site rather than for every field of every row (a listing
  // page asks for them 240 times). Only authenticated sites reach here, so the sites bound the map.
  const addresses = new Map<string, { site: string; discussions: string; siteWeb: string }>()
  const of = (permalink: string) => {
    let found = addresses.get(permalink)
    if (!found) {
      found = { site: urls.site(permalink), discussions: urls.discussions(permalink), siteWeb: urls.siteWeb(permalink) }
      addresses.set(permalink, found)
    }
    return found
  }
  // A listing's items as JSON, kept per version of each discussion (docs/decisions.md, "A
  // listing's items are serialized once per version"): about 4,000 items of a kilobyte.
  const keptJson = createKeptTexts(LISTING_JSON_CHARS)
  const discussionHref = (permalink: string, number: number) => `${of(permalink).discussions}/${number}`
  const categoryHref = (permalink: string, id: number) => `${of(permalink).site}/categories/${id}`

  function comment(permalink: string, discussionNumber: number, row: CommentRow, { attachments = [], delivery, mail }: CommentExtras = {}): Static<typeof Comment> {
    const discussion = discussionHref(permalink, discussionNumber)
    const site = of(permalink).site
    return {
      href: `${discussion}/comments/${row.number}`,
      number: row.number,
      body: row.body,
      author_email: row.authorEmail,
      author_name: row.authorName,
      user_is_supporter: row.bySupporter,
      internal: row.internal,
      created_at: moment(row.createdAt),
      via: row.via,
      discussion_href: discussion,
      attachments: attachments.map((a) => attachmentView(site, a)),
      sender_verified: mail?.verified ?? null,
      mailbox: mail?.mailbox ?? null,
      delivery: delivery ? { state: delivery.state, to: delivery.to, cc: delivery.cc, attempts: delivery.attempts, last_error: delivery.lastError, sent_at: delivery.sentAt && moment(delivery.sentAt) } : null,
      moved_from: row.movedFrom === null ? null : { discussion: row.movedFrom, comment: row.movedFromNumber!, discussion_href: discussionHref(permalink, row.movedFrom) },
    }
  }

  return {
    discussionHref,
    categoryHref,
    comment,

    discussion(permalink: string, row: DiscussionRow): Static<typeof Discussion> {
      const site = of(permalink)
      const href = `${site.discussions}/${row.number}`
      return {
        href,
        number: row.number,
        title: row.title,
        permalink: row.permalink,
        state: row.state,
        public: row.public,
        created_at: moment(row.createdAt),
        updated_at: moment(row.updatedAt),
        last_updated_at: moment(row.lastUpdatedAt),
        author_email: row.authorEmail,
        author_name: row.authorName,
        // There is no user resource yet: the author's discussions are what the API can show.
        user_href: `${site.discussions}?user_id=${row.authorId}`,
        comments_count: row.commentsCount,
        category_href: `${site.site}/categories/${row.categoryId}`,
        comments_href: `${href}/comments`,
        html_href: `${site.siteWeb}/discussions/${row.number}`,
        resolve_href: `${href}/resolve`,
        unresolve_href: `${href}/unresolve`,
        toggle_href: `${href}/toggle`,
        restore_href: `${href}/restore`,
        change_category_href: `${href}/change_category`,
        assignee: row.assigneeId === null ? null : { id: row.assigneeId, name: row.assigneeName ?? '' },
        assign_href: `${href}/assign`,
        tags: tagList(row.tags),
        sla:
          row.slaPolicyId === null
            ? null
            : {
                policy: { id: row.slaPolicyId, href: `${site.site}/sla_policies/${row.slaPolicyId}` },
                first_reply_due_at: row.firstReplyDueAt && moment(row.firstReplyDueAt),
                next_reply_due_at: row.nextReplyDueAt && moment(row.nextReplyDueAt),
                resolution_due_at: row.resolutionDueAt && moment(row.resolutionDueAt),
                breached: clockOf(row).breached,
              },
        facts: {
          first_reply_at: row.firstReplyAt && moment(row.firstReplyAt),
          first_reply_minutes: row.firstReplyMinutes,
          first_reply_business_minutes: row.firstReplyBusiness,
          resolved_at: row.resolvedAt && moment(row.resolvedAt),
          resolution_minutes: row.resolutionMinutes,
          resolution_business_minutes: row.resolutionBusiness,
          reopens: row.reopens,
          team_replies: row.teamReplies,
        },
        satisfaction: row.rating === null || row.ratedAt === null ? null : { rating: row.rating, comment: row.ratingComment, rated_at: moment(row.ratedAt) },
        fields: valuesOf(row.fields),
        merged_into: row.mergedInto === null ? null : { number: row.mergedInto, href: `${site.discussions}/${row.mergedInto}` },
        merge_href: `${href}/merge`,
        split_from: row.splitFrom === null ? null : { number: row.splitFrom, href: `${site.discussions}/${row.splitFrom}` },
        split_href: `${href}/split`,
      }
    },

    /**
     * The discussion as `serialize` (the route's serializer of one Discussion) writes it. Its
     * version moves with every change to what it shows (the author's name included), and the site's
     * permalink and the configured URLs make the rest, so the text made for a version is kept.
     */
    discussionJson(permalink: string, row: DiscussionRow, serialize: (discussion: Static<typeof Discussion>) => string): string {
      return keptJson(`${permalink}/${row.id}/${row.version}`, () => serialize(this.discussion(permalink, row)))
    },

    category(permalink: string, row: CategoryRow, counts: StateCounts = emptyStateCounts()): Static<typeof Category> {
      return {
        id: row.id,
        href: categoryHref(permalink, row.id),
        name: row.name,
        permalink: row.permalink,
        public: row.public,
        created_at: moment(row.createdAt),
        discussions_href: `${categoryHref(permalink, row.id)}/discussions`,
        round_robin: row.roundRobin,
        discussions_count: counts.new + counts.open + counts.resolved,
        new_discussions_count: counts.new,
        open_discussions_count: counts.open,
        resolved_discussions_count: counts.resolved,
        deleted_discussions_count: counts.deleted,
        spam_discussions_count: counts.spam,
      }
    },
  }
}

export type Views = ReturnType<typeof createViews>

/**
 * RFC 8288 links to the first, previous, next and last pages of a listing at `address`, keeping
 * its filters (`query`, already validated: never a credential) and adding `page`. The previous
 * page of one past the end is the last page.
 */
export function pageLinks(address: string, query: Record<string, string | number | undefined>, page: number, total: number): string {
  const last = Math.max(1, Math.ceil(total / PER_PAGE))
  const to = (n: number) => {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value))
    params.set('page', String(n))
    return `<${address}?${params}>`
  }
  const links = [`${to(1)}; rel="first"`]
  if (page > 1) links.push(`${to(Math.min(page - 1, last))}; rel="prev"`)
  if (page < last) links.push(`${to(page + 1)}; rel="next"`)
  links.push(`${to(last)}; rel="last"`)
  return links.join(', ')
}

/**
 * The RFC 8288 links of a page walked by cursor: the first page (the empty cursor) and, unless
 * this is the last, the next one; `query` is kept in each.
 */
export function cursorLinks(address: string, query: Record<string, string | number | undefined>, next: string | null): string {
  const to = (cursor: string) => {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value))
    params.set('cursor', cursor)
    return `<${address}?${params}>`
  }
  return next === null ? `${to('')}; rel="first"` : `${to('')}; rel="first", ${to(next)}; rel="next"`
}

/** The refusal of `page` sent with `cursor` (a listing's, a discussion's comments'). */
export const PAGE_WITH_CURSOR = { field: 'page', problem: 'cannot be combined with cursor: a walk by cursor follows the Link header instead' }

/** A page walked by cursor: at most PER_PAGE of the rows read (PER_PAGE + 1 asked), and the cursor after them when there are more. */
export function walkedPage<R>(rows: R[], cursorAfter: (last: R) => string): { rows: R[]; next: string | null } {
  if (rows.length <= PER_PAGE) return { rows, next: null }
  const shown = rows.slice(0, PER_PAGE)
  return { rows: shown, next: cursorAfter(shown[PER_PAGE - 1]) }
}

/** The listing envelope of docs/decisions.md around one page of items. */
export function envelope(page: number, total: number) {
  return { offset: (page - 1) * PER_PAGE, total, per_page: PER_PAGE }
}
