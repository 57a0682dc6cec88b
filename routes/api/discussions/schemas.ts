import { ratings } from '../../../lib/reports.ts'
import { FIELD_KEY, MAX_CHOICES, MAX_FIELDS } from '../../../lib/fields.ts'
import { Type, type TProperties } from 'typebox'
import { changeKinds, commentVias, discussionStates, outboxStates } from '../../../db/values.ts'
import { sorts } from '../../../db/stores/discussion-listing.ts'
import { WINDOW } from '../../../db/stores/search.ts'
import { MAX_QUERY } from '../../../lib/search-text.ts'
import { NUL_PROBLEM } from '../../../lib/nul.ts'
import { MAX_TAG_LENGTH, MAX_TAGS } from '../../../lib/team-queue.ts'
import { slaKinds } from '../../../lib/sla.ts'
import { grouped } from '../../../lib/numbers.ts'
import { ErrorBody, InvalidRequestBody } from '../../schemas.ts'

// The v1 shapes of docs/decisions.md ("Discussions (v1 shape)"): what the routes accept and answer.
// Responses are serialised from these schemas, so a field not named here is never sent.

export const PER_PAGE = 30

/** Request bodies of the discussion routes above this size are refused with 413 before being read. */
export const DISCUSSION_BODY_LIMIT = 256 * 1024
export const MAX_TITLE = 200
export const MAX_BODY = 65_536
export const MAX_NAME = 100
const MAX_EMAIL = 254
const MAX_ID = Number.MAX_SAFE_INTEGER

const Moment = Type.String({ format: 'date-time' })
const Href = Type.String({ format: 'uri' })

// No text the service keeps holds U+0000 (lib/nul.ts): refused by a second pattern, a search for the
// one character, so the check stays linear on a 256 KiB body.
const NO_NUL = { not: { pattern: '\\u0000' } }

/** Text that must hold something besides white space, and no U+0000. */
const Text = (maxLength: number, description: string) =>
  Type.String({
    minLength: 1,
    maxLength,
    pattern: '\\S',
    ...NO_NUL,
    description,
    errorMessage: { pattern: 'must not be blank', not: NUL_PROBLEM },
  })

// Deliberately loose, like the user store's own check: one @, something on each side, no spaces, no U+0000.
const Email = (description: string) =>
  Type.String({
    maxLength: MAX_EMAIL,
    pattern: '^\\s*[^\\s@]+@[^\\s@]+\\s*$',
    ...NO_NUL,
    description,
    errorMessage: { maxLength: 'is not an email address', pattern: 'is not an email address', not: NUL_PROBLEM },
  })

const Id = (description: string, errorMessage?: string) =>
  Type.Integer({ minimum: 1, maximum: MAX_ID, description, ...(errorMessage && { errorMessage: { type: errorMessage } }) })

/** A supporter named in a query: a user id, `me`, or `none`. */
const Assignee = (description: string) => Type.String({ pattern: '^(me|none|[1-9]\\d{0,15})$', description, errorMessage: 'must be a user id, me or none' })

const Tags = Type.Array(Type.String({ minLength: 1, maxLength: MAX_TAG_LENGTH * 4, ...NO_NUL, errorMessage: { not: NUL_PROBLEM } }), {
  maxItems: MAX_TAGS,
  description: `All its tags (at most ${MAX_TAGS}, each at most ${MAX_TAG_LENGTH} characters): kept in lower case, spaces as -; letters, digits and - . / : only.`,
})

// ---- resources

const DueAt = (what: string) => Type.Union([Moment, Type.Null()], { description: `${what}; null when that clock does not run (nothing owed, paused while the discussion waits on its customer, or no such promise).` })

/** Which promise of an SLA policy, and its due time: what sla.warning and sla.breached tell. */
export const SlaAlert = Type.Object({ kind: Type.Enum(slaKinds), due_at: Moment })

export const DiscussionSla = Type.Object({
  policy: Type.Object({ id: Type.Integer(), href: Href }),
  first_reply_due_at: DueAt('When the first reply of the team is due'),
  next_reply_due_at: DueAt("When the team's answer to the customer's newest message is due"),
  resolution_due_at: DueAt('When it is to be resolved, the time it waited on the customer aside'),
  breached: Type.Array(Type.Enum(slaKinds), { description: 'Every promise broken on it: first_reply, next_reply, resolution.' }),
})

const Minutes = (what: string) => Type.Union([Type.Integer(), Type.Null()], { description: `${what}; null until it happens.` })
/** What the reports count of a discussion (issue 69; docs/decisions.md, "Reports"). */
export const DiscussionFacts = Type.Object(
  {
    first_reply_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: "The team's first public reply; null until then (and for a discussion the team started)." }),
    first_reply_minutes: Minutes('Minutes from its creation to the first reply'),
    first_reply_business_minutes: Minutes('The same in the business hours of its SLA policy (around the clock without one)'),
    resolved_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Its last resolution; null until then.' }),
    resolution_minutes: Minutes('Minutes from its creation to its last resolution'),
    resolution_business_minutes: Minutes('The same in business hours'),
    reopens: Type.Integer({ description: 'How often it was resolved and then opened again.' }),
    team_replies: Type.Integer({ description: "The team's public replies." }),
  },
  { description: 'What the reports count of it, kept as it happens.' },
)
export const Satisfaction = Type.Object({
  rating: Type.Enum(ratings, { description: 'good or not_good.' }),
  comment: Type.String({ description: 'What the customer wrote with it; empty for nothing.' }),
  rated_at: Type.String({ format: 'date-time', description: 'When it was first given (it may be changed for 7 days after its resolution).' }),
})

const discussionFields = {
  href: Href,
  number: Type.Integer({ description: "The discussion's number on its site: the {number} of every discussion path." }),
  title: Type.String(),
  permalink: Type.String(),
  state: Type.Enum(discussionStates),
  public: Type.Boolean(),
  created_at: Moment,
  updated_at: Type.String({ format: 'date-time', description: 'Last change of any kind.' }),
  last_updated_at: Type.String({ format: 'date-time', description: 'Last activity: the newest comment.' }),
  author_email: Type.String(),
  author_name: Type.String(),
  user_href: Type.String({ format: 'uri', description: "The author's discussions." }),
  comments_count: Type.Integer({ description: 'Comments including the opening post.' }),
  category_href: Href,
  comments_href: Type.String({ format: 'uri', description: 'GET lists the comments; POST adds a reply.' }),
  html_href: Href,
  resolve_href: Href,
  unresolve_href: Href,
  toggle_href: Href,
  restore_href: Href,
  change_category_href: Type.String({ format: 'uri', description: 'POST with ?to=<category id>.' }),
  assignee: Type.Union([Type.Object({ id: Type.Integer({ description: 'The user id: what ?assignee= and assign?to= take.' }), name: Type.String() }), Type.Null()], {
    description: 'The supporter of the site who owns it; null when nobody does.',
  }),
  assign_href: Type.String({ format: 'uri', description: 'POST with ?to=<user id>, me or none.' }),
  tags: Type.Array(Type.String(), { description: 'Its tags: lower case, sorted.' }),
  sla: Type.Union([DiscussionSla, Type.Null()], { description: 'The SLA policy that chose it and its due times; null when no policy of the site chooses it.' }),
  facts: DiscussionFacts,
  satisfaction: Type.Union([Satisfaction, Type.Null()], { description: "Its customer's rating, once it was resolved; null until they rate it." }),
  fields: Type.Object({}, {
    additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String())]),
    description: "Its custom fields' values, by key: text, link, date (YYYY-MM-DD) and choice as a string, number as a number, yes_no as a boolean, choices as a list (GET /{site}/fields says each field's kind). A removed field's value stays readable here.",
  }),
  merged_into: Type.Union([Type.Object({ number: Type.Integer(), href: Href }), Type.Null()], {
    description: 'Once merged (state merged): the discussion of its site it went into, which holds its comments now; its own address answers with a redirect there. Null otherwise.',
  }),
  merge_href: Type.String({ format: 'uri', description: 'POST with {"into": <number or href of another discussion of the site>} merges this one into it; POST to …/unmerge undoes the last merge into a discussion for a day.' }),
  split_from: Type.Union([Type.Object({ number: Type.Integer(), href: Href }), Type.Null()], {
    description: 'Made by a split: the discussion its first comments were taken from (a note there names this one). Null otherwise.',
  }),
  split_href: Type.String({ format: 'uri', description: 'POST with {"comment": <number>, "following": true|false, "title": "…"} makes a new discussion of that comment (and those after it).' }),
} satisfies TProperties

export const Discussion = Type.Object(discussionFields)

export const AttachmentResource = Type.Object({
  id: Type.Integer({ description: 'The attachment id; for an upload, what `uploads` of a comment names.' }),
  href: Type.String({ format: 'uri', description: 'GET downloads the file.' }),
  name: Type.String({ description: 'The name it was sent with, cleaned: no path, no control characters.' }),
  size: Type.Integer({ description: 'In bytes.' }),
  content_type: Type.String({ description: 'Detected from its bytes, never taken from its name or from the type it was sent with.' }),
})

export const Delivery = Type.Object({
  state: Type.Enum(outboxStates, { description: 'queued (waiting, or to be tried again), sent, or failed for good.' }),
  to: Type.String({ description: 'The address it is mailed to.' }),
  cc: Type.Array(Type.String(), { description: "The discussion's participants it copies (GET .../participants)." }),
  attempts: Type.Integer({ description: 'Tries so far.' }),
  last_error: Type.Union([Type.String(), Type.Null()], { description: "The mail server's words on the last failed try." }),
  sent_at: Type.Union([Moment, Type.Null()]),
})

export const Comment = Type.Object({
  href: Href,
  number: Type.Integer({ description: 'Position in the discussion; 1 is the opening post.' }),
  body: Type.String(),
  author_email: Type.String(),
  author_name: Type.String(),
  user_is_supporter: Type.Boolean(),
  internal: Type.Boolean({ description: 'A note among the staff, not a reply the customer sees.' }),
  created_at: Moment,
  via: Type.Enum(commentVias),
  discussion_href: Href,
  attachments: Type.Array(AttachmentResource, { description: "The files it carries; an internal note's are the staff's only." }),
  sender_verified: Type.Union([Type.Boolean(), Type.Null()], {
    description: 'For a message that came by mail: true when its sender passed DMARC, false when it failed or when it names the address of a member of the team, which a mail cannot prove (the address may be spoofed: "sender not verified"), null when nothing could say, or not by mail.',
  }),
  mailbox: Type.Union([Type.String(), Type.Null()], { description: 'For a message that came by mail: the address of the site it was sent to (null once that mailbox is removed, or not by mail).' }),
  delivery: Type.Union([Delivery, Type.Null()], { description: "For a public reply of the staff to a discussion that came by mail or that a customer started on the customer's pages: how its mail to the customer is doing. Null otherwise." }),
  moved_from: Type.Union([Type.Object({ discussion: Type.Integer({ description: 'The number of the discussion it was written in.' }), comment: Type.Integer({ description: 'Its number there.' }), discussion_href: Href }), Type.Null()], {
    description: 'For a comment a merge brought here: where it was written. Null otherwise.',
  }),
})

export const DiscussionWithComments = Type.Object({ ...discussionFields, comments: Type.Array(Comment) })

const countFields = {
  discussions_count: Type.Integer({ description: 'Discussions in every state but deleted and spam.' }),
  new_discussions_count: Type.Integer(),
  open_discussions_count: Type.Integer(),
  resolved_discussions_count: Type.Integer(),
  deleted_discussions_count: Type.Integer(),
  spam_discussions_count: Type.Integer(),
}

export const Category = Type.Object({
  id: Type.Integer({ description: 'What change_category?to= and category (PUT) take.' }),
  href: Href,
  name: Type.String(),
  permalink: Type.String(),
  public: Type.Boolean({ description: 'New discussions here are public unless created with public: false.' }),
  created_at: Moment,
  discussions_href: Type.String({ format: 'uri', description: 'GET lists them; POST creates one.' }),
  round_robin: Type.Boolean({ description: "Whether the discussions customers start here are given to the site's supporters in turn." }),
  ...countFields,
})

const CategoryName = Type.String({ minLength: 1, maxLength: 100, ...NO_NUL, errorMessage: { not: NUL_PROBLEM }, description: 'Its name, as the queue and the support site show it (1 to 100 characters).' })
const CategoryPublic = Type.Boolean({ description: 'New discussions here are public unless created with public: false.' })
const CategoryTurns = Type.Boolean({ description: "Give the discussions customers start here to the site's supporters in turn." })
export const NewCategory = Type.Object({ name: CategoryName, public: Type.Optional(CategoryPublic), round_robin: Type.Optional(CategoryTurns) })
export const CategoryChange = Type.Object({ name: Type.Optional(CategoryName), public: Type.Optional(CategoryPublic), round_robin: Type.Optional(CategoryTurns) }, { minProperties: 1 })
export const RemovedCategoryQuery = Type.Object({
  into: Type.Optional(Id('The category its discussions move into: needed when it holds any.', 'must be a category id')),
})

const page = { offset: Type.Integer(), total: Type.Integer(), per_page: Type.Integer() }
// A listing walked by cursor (?cursor=) says where the next page starts instead of where this one is.
const walked = {
  offset: Type.Optional(Type.Integer({ description: 'How many come before this page; absent on a page walked by cursor.' })),
  total: Type.Integer(),
  per_page: Type.Integer(),
  next_cursor: Type.Optional(
    Type.Union([Type.String(), Type.Null()], { description: 'On a page walked by cursor: the cursor of the next page (as in the Link header), null on the last page.' }),
  ),
}
export const DiscussionListing = Type.Object({ ...walked, discussions: Type.Array(Discussion) })
// The two forms that listing is written in, each its fields in this order: a serializer puts the
// required fields before the optional ones, which would move `offset` behind the items.
const walkedFields = { total: Type.Integer(), per_page: Type.Integer(), next_cursor: Type.Union([Type.String(), Type.Null()]) }
export const PagedForm = { discussions: Type.Object({ ...page, discussions: Type.Array(Discussion) }), comments: Type.Object({ ...page, comments: Type.Array(Comment) }) }
export const WalkedForm = { discussions: Type.Object({ ...walkedFields, discussions: Type.Array(Discussion) }), comments: Type.Object({ ...walkedFields, comments: Type.Array(Comment) }) }

export const SearchSnippet = Type.Object(
  {
    comment: Type.Union([Type.Integer(), Type.Null()], { description: 'The number of the comment it is taken from; null for the title.' }),
    text: Type.String({ description: 'About two dozen words around the first match, as written; … where the text goes on.' }),
    matches: Type.Array(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }), {
      description: 'Where the words searched for are in text: [start, end) pairs, counted in UTF-16 code units (as JavaScript strings are).',
    }),
  },
  { description: 'Where the discussion matches.' },
)
export const SearchResult = Type.Object({
  discussion: Discussion,
  snippet: Type.Union([SearchSnippet, Type.Null()], { description: 'Null when the query had filters only.' }),
})
export const SearchListing = Type.Object({
  ...page,
  capped: Type.Boolean({ description: `More than ${grouped(WINDOW)} discussions match: the newest ${grouped(WINDOW)} are ranked and paged; narrow the query to reach older ones.` }),
  results: Type.Array(SearchResult, { description: 'Best match first.' }),
})
export const CommentListing = Type.Object({ ...walked, comments: Type.Array(Comment) })

export const Change = Type.Object({
  cursor: Type.String({ description: 'The feed read with after= this cursor goes on after this change.' }),
  type: Type.Enum(changeKinds, { description: 'What happened; the same names as the webhook events.' }),
  at: Moment,
  discussion: Discussion,
  comment: Type.Union([Comment, Type.Null()], { description: 'The comment written (comment.created, and the opening post of discussion.created); null otherwise.' }),
})
export const ChangeFeed = Type.Object(
  {
  changes: Type.Array(Change, { description: 'In the order they were committed, oldest first.' }),
  next_cursor: Type.String({ description: 'Where to go on from (after=): the last change of this page, or the after= sent when there was none.' }),
  end_of_stream: Type.Boolean({ description: 'Nothing more had been committed when this page was read: ask again later, or with wait=.' }),
  },
  {
    description:
      'Each change shows its discussion as it is now, not as it was then: a mirror that writes each in place of its copy is up to date once it reaches the end of the stream.',
  },
)
export const CategoryListing = Type.Object({ ...page, categories: Type.Array(Category) })

// ---- path and query

const site = Type.String({ description: 'The site permalink.' })
const number = Id('The discussion number.', 'must be a discussion number')

export const NumberParams = Type.Object({ site, number })
// GET /<site>/discussions/<anything but a state> lands here, so the refusal names both.
export const ShowParams = Type.Object({
  site,
  number: Id('The discussion number.', `must be a discussion number or a state: ${discussionStates.join(', ')}`),
})
export const ParticipantParams = Type.Object({ site, number, email: Type.String({ minLength: 3, maxLength: 254, description: "The participant's address." }) })
export const CommentParams = Type.Object({ site, number, comment: Id('The comment number; 1 is the opening post.', 'must be a comment number') })
export const CategoryParams = Type.Object({ site, id: Id('The category id.', 'must be a category id') })

const Page = Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: '1-based page of 30.' })
const Cursor = Type.String({
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]*$',
  description: 'Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page.',
  errorMessage: 'must be a cursor this API gave (empty to start)',
})
export const PageQuery = Type.Object({ page: Type.Optional(Page), cursor: Type.Optional(Cursor) })

export const ChangesQuery = Type.Object({
  after: Type.Optional(
    Type.String({
      maxLength: 64,
      pattern: '^[A-Za-z0-9_-]*$',
      description: 'The cursor to go on after (next_cursor or a change\'s cursor); from the first change without one.',
      errorMessage: 'must be a cursor of the change feed',
    }),
  ),
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60, description: 'Seconds to wait for a change when there is none yet (long polling); 0 by default.' })),
})

export const ListingQuery = Type.Object({
  page: Type.Optional(Page),
  cursor: Type.Optional(Cursor),
  sort: Type.Optional(
    Type.Enum(sorts, {
      description: 'Newest first by: last activity (the default), creation or last change; or due: the soonest SLA due time first, of what the team owes (new and open; on /discussions, both), those with no clock running last.',
    }),
  ),
  public: Type.Optional(Type.Enum(['1', '0', 'true', 'false'], { description: '1: public discussions only; 0: private only.' })),
  since: Type.Optional(
    Type.String({
      pattern: '^(\\d{1,16}|\\d{4}-\\d{2}-\\d{2})$',
      description: 'A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it.',
      errorMessage: 'must be a discussion number or a date as YYYY-MM-DD',
    }),
  ),
  user_id: Type.Optional(Id("Only this user's discussions.", 'must be a user id')),
  user_email: Type.Optional(Email("Only the discussions of the user with this address.")),
  assignee: Type.Optional(Assignee('Only the discussions this supporter owns: a user id, me, or none for those nobody owns.')),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_TAG_LENGTH * 4, ...NO_NUL, description: 'Only the discussions carrying this tag.', errorMessage: { not: NUL_PROBLEM } })),
  sla: Type.Optional(Type.Literal('breached', { description: 'breached: only the discussions that broke a promise of an SLA policy.', errorMessage: 'must be breached' })),
})

export const SearchQuery = Type.Object({
  q: Type.String({
    minLength: 1,
    maxLength: MAX_QUERY,
    description:
      'Words (every one must be there; accents and case do not matter), "a phrase", -excluded words or phrases, and filters: state:new|open|resolved|deleted|spam|todo (without one: every state but deleted and spam), category:<name or id>, from:<email>, assignee:me|none|<email>, tag:<tag>, sla:breached, after:YYYY-MM-DD, before:YYYY-MM-DD, and <key>:<value> for each of the site\'s custom fields (GET /{site}/fields); a date field by a range too: <key>:>YYYY-MM-DD, >=, <, <=, or <key>:YYYY-MM-DD..YYYY-MM-DD (both days included).',
  }),
  page: Type.Optional(Page),
})

export const AssignQuery = Type.Object({ to: Assignee('Give it to this supporter of the site (a user id, or me), or to nobody (none).') })

export const ChangeCategoryQuery = Type.Object({ to: Id('The id of the category to move to.', 'must be a category id') })
export const SplitBody = Type.Object(
  {
    comment: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The comment the new discussion starts with (not the opening post, not an internal note).' }),
    following: Type.Optional(Type.Boolean({ description: 'Take the comments after it too. False by default: that one alone, the later ones taking its number.' })),
    title: Type.Optional(Text(MAX_TITLE, "The new discussion's title; this one's by default.")),
  },
  { additionalProperties: false },
)
export const MergeBody = Type.Object(
  {
    into: Type.Union([Type.Integer({ minimum: 1, maximum: 2_147_483_647 }), Type.String({ minLength: 1, maxLength: 2048 })], {
      description: "The discussion of the same site to merge into: its number, or its href (another site's is refused).",
    }),
  },
  { additionalProperties: false },
)

// ---- bodies

const onBehalf = {
  author_email: Type.Optional(
    Email('Post on behalf of this user; an unknown address becomes a customer of the site. Without it the post is yours.'),
  ),
  author_name: Type.Optional(Text(MAX_NAME, 'The name of a user created from author_email.')),
}

const uploads = {
  uploads: Type.Optional(
    Type.Array(Id('An upload id (POST /<site>/uploads).', 'must be an upload id'), {
      maxItems: 10,
      description: 'Uploads of yours (POST /<site>/uploads) that the post carries, at most 10 and 25 MB together. With multipart/form-data, file parts are uploaded and carried as well.',
    }),
  ),
}

/** Values of the site's custom fields by key (GET /{site}/fields says each one's kind); null clears one. */
export const FieldsGiven = Type.Object({}, {
  additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String(), { maxItems: MAX_CHOICES }), Type.Null()]),
  propertyNames: { pattern: FIELD_KEY.source },
  maxProperties: MAX_FIELDS,
  description: "Values of the site's custom fields, by key (GET /{site}/fields lists them and their kinds); null clears one.",
})

export const CreateBody = Type.Object({
  title: Text(MAX_TITLE, 'The subject.'),
  body: Text(MAX_BODY, 'The opening post.'),
  public: Type.Optional(Type.Boolean({ description: "Defaults to the category's visibility." })),
  fields: Type.Optional(FieldsGiven),
  ...onBehalf,
  ...uploads,
})

export const ReplyBody = Type.Object({
  body: Text(MAX_BODY, 'The comment.'),
  internal: Type.Optional(Type.Boolean({ description: 'A note among the staff. Default false.' })),
  ...onBehalf,
  ...uploads,
})

export const UpdateBody = Type.Object({
  title: Type.Optional(Text(MAX_TITLE, 'The subject.')),
  public: Type.Optional(Type.Boolean()),
  category: Type.Optional(Id('Move to the category with this id.', 'must be a category id')),
  assignee: Type.Optional(Type.Union([Id('Give it to this supporter of the site.', 'must be a user id or null'), Type.Null()], { description: 'The supporter who owns it, or null for nobody.' })),
  tags: Type.Optional(Tags),
  fields: Type.Optional(FieldsGiven),
})

// ---- answers that are not the resource

/** The JSON error answers of a route that takes a body: 400, 404, 413 and 415. */
export const writeErrorResponses = { 400: InvalidRequestBody, 404: ErrorBody, 413: ErrorBody, 415: ErrorBody }

/** The same plus 409, for the routes that change an existing discussion (refused while it is deleted). */
export const errorResponses = { ...writeErrorResponses, 409: ErrorBody }
