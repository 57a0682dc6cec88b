import { z } from 'zod'
import { MAX_QUERY } from '../../../lib/search-text.ts'
import { breakdowns, reportNames } from '../../../lib/reports.ts'

// The tools of the MCP endpoint (routes/api/mcp/index.ts; docs/decisions.md, "MCP"): each is one
// request to the API of the token's site, described for a model. The API answers it exactly as
// it answers a client (its schemas, limits and refusals), so a tool can do nothing the token
// could not do with curl. This table is pure: a tool's arguments give the request to make.

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** Under the site: `/discussions`, `/categories/3/discussions`... */
  path: string
  body?: Record<string, unknown>
}

export interface McpTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string
  title: string
  description: string
  input: Shape
  /** Needs only read access; every other tool needs write (a `Read only` token is refused at the HTTP level). */
  readOnly: boolean
  request(args: z.infer<z.ZodObject<Shape>>): ApiRequest
  /** `file`: the answer is a file, given to the model as its text (server.ts, fileResult); JSON otherwise. */
  answers?: 'file'
}

/** The most of a text attachment read_attachment gives the model. */
export const MCP_TEXT_BYTES = 100 * 1024

const number = z.number().int().min(1).describe('The discussion number, as in its address: /discussions/<number>.')
const page = z.number().int().min(1).optional().describe('The page, 30 discussions each; 1 by default.')
const states = ['new', 'open', 'resolved', 'deleted', 'spam', 'merged'] as const

const assignee = z.string().regex(/^(me|none|[1-9]\d{0,15})$/, 'me, none or a user id')

const tool = <Shape extends z.ZodRawShape>(definition: McpTool<Shape>) => definition as unknown as McpTool

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value))
  const text = search.toString()
  return text ? `?${text}` : ''
}

export const MCP_TOOLS: McpTool[] = [
  tool({
    name: 'list_discussions',
    title: 'List discussions',
    description:
      'Lists the discussions of the help desk, most recent activity first, 30 per page, with their number, title, state ' +
      '(new, open, resolved, deleted, spam), category, author and counts, and `sla`: the SLA policy that chose it, its due times ' +
      '(first reply, next reply, resolution) and the promises it broke. Without a state: every discussion but deleted and spam ones. ' +
      'sort=due lists what the team owes (new and open) by due time, the soonest first; sla=breached only those that broke a promise. ' +
      'The answer gives `total` and `per_page` for paging.',
    input: {
      state: z.enum(states).optional().describe('Only discussions in this state.'),
      category_id: z.number().int().min(1).optional().describe('Only discussions of this category (see list_categories).'),
      assignee: assignee.optional().describe('Only the discussions this supporter owns: me, none (nobody owns them) or a user id.'),
      tag: z.string().optional().describe('Only the discussions carrying this tag.'),
      sort: z.enum(['activity', 'due']).optional().describe('activity (the default): the latest activity first; due: the soonest SLA due time first (new and open only).'),
      sla: z.enum(['breached']).optional().describe('breached: only the discussions that broke a promise of an SLA policy.'),
      page,
    },
    readOnly: true,
    request: ({ state, category_id, assignee, tag, sort, sla, page }) => ({
      method: 'GET',
      path: category_id !== undefined ? `/categories/${category_id}/discussions${query({ assignee, tag, sort, sla, page })}` : `/discussions${state ? `/${state}` : ''}${query({ assignee, tag, sort, sla, page })}`,
    }),
  }),
  tool({
    name: 'search_discussions',
    title: 'Search discussions',
    description:
      'Searches the titles, replies and internal notes of every discussion, best match first, 30 per page, each with a snippet of ' +
      'where it matches. The query: words (all must be there; case and accents do not matter), "exact phrases", -excluded words, ' +
      'and filters: state:new|open|resolved|deleted|spam|todo, category:<name>, from:<customer email>, assignee:me|none|<email>, tag:<tag>, sla:breached, ' +
      'after:YYYY-MM-DD, before:YYYY-MM-DD (created on or after, before). Example: printer -toner from:carol@example.com. ' +
      'Without state: every discussion but deleted ones. The answer gives `total` and `per_page` for paging; `capped` means more ' +
      'than 1,000 match and only the newest 1,000 were ranked.',
    input: {
      q: z.string().min(1).max(MAX_QUERY).describe('The query.'),
      page,
    },
    readOnly: true,
    request: ({ q, page }) => ({ method: 'GET', path: `/search${query({ q, page })}` }),
  }),
  tool({
    name: 'list_changes',
    title: 'What changed since',
    description:
      'Lists what happened in the help desk since a cursor, oldest first, up to 100 at a time: discussion.created, ' +
      'discussion.updated (state, title, owner, tags, category), discussion.deleted, discussion.restored and comment.created ' +
      '(replies and internal notes), each with the discussion as it is now and, for a comment, the comment. Without `after`: ' +
      'from the very first change. Keep `next_cursor` and pass it as `after` next time to hear only what is new; ' +
      '`end_of_stream` says nothing more has happened yet.',
    input: {
      after: z.string().max(64).regex(/^[A-Za-z0-9_-]*$/, 'a cursor the last answer gave').optional().describe('The next_cursor of the last answer.'),
    },
    readOnly: true,
    request: ({ after }) => ({ method: 'GET', path: `/changes${query({ after })}` }),
  }),
  tool({
    name: 'get_report',
    title: 'Read a report',
    description:
      "Reads one of the help desk's reports over a range of days (UTC), as lines by period or by group and a total: " +
      'volume (created, resolved, reopened, replies), first_reply and resolution (count, median and 90th percentile in minutes, ' +
      'of the clock and of business hours), sla (kept, breached, kept_percent), satisfaction (good, not_good, good_percent). ' +
      'by: day, week, month, supporter, category, channel or tag. Without from and to: the last 30 days.',
    input: {
      name: z.enum(reportNames).describe('Which report.'),
      by: z.enum(breakdowns).optional().describe('How its lines are broken down; day by default.'),
      from: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a day, YYYY-MM-DD').optional().describe('The first day, YYYY-MM-DD.'),
      to: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a day, YYYY-MM-DD').optional().describe('The last day, YYYY-MM-DD, included; today by default.'),
    },
    readOnly: true,
    request: ({ name, by, from, to }) => ({ method: 'GET', path: `/reports/${name}${query({ from, to, by })}` }),
  }),
  tool({
    name: 'get_discussion',
    title: 'Read a discussion',
    description:
      'Reads one discussion with all its comments, oldest first: the opening post, replies, and internal notes of the staff. ' +
      'Each comment lists its attachments (id, name, size, content_type); read_attachment reads a text one.',
    input: { number },
    readOnly: true,
    request: ({ number }) => ({ method: 'GET', path: `/discussions/${number}` }),
  }),
  tool({
    name: 'read_attachment',
    title: 'Read a text attachment',
    description:
      'Reads a file attached to a comment when it is text (a log, a CSV, a plain-text note): its first 100 KB, said when cut. ' +
      'Images and other binary files are not read here; their href downloads them with a token.',
    input: { id: z.number().int().min(1).describe('The attachment id, from the attachments of a comment (get_discussion).') },
    readOnly: true,
    request: ({ id }) => ({ method: 'GET', path: `/attachments/${id}` }),
    answers: 'file',
  }),
  tool({
    name: 'list_categories',
    title: 'List categories',
    description: 'Lists the categories of the help desk with their id, name and whether new discussions in them are public.',
    input: { page },
    readOnly: true,
    request: ({ page }) => ({ method: 'GET', path: `/categories${query({ page })}` }),
  }),
  tool({
    name: 'create_discussion',
    title: 'Open a discussion',
    description:
      'Opens a discussion in a category, on behalf of a customer when customer_email is given (an unknown address becomes ' +
      'a customer of the help desk), else as yourself.',
    input: {
      category_id: z.number().int().min(1).describe('The category (see list_categories).'),
      title: z.string().describe('The subject, at most 200 characters.'),
      body: z.string().describe('The opening post.'),
      customer_email: z.string().optional().describe('Post on behalf of this customer.'),
      customer_name: z.string().optional().describe('The name of a customer created from customer_email.'),
      public: z.boolean().optional().describe("Whether it is public; the category's visibility by default."),
    },
    readOnly: false,
    request: ({ category_id, title, body, customer_email, customer_name, public: visible }) => ({
      method: 'POST',
      path: `/categories/${category_id}/discussions`,
      body: { title, body, author_email: customer_email, author_name: customer_name, public: visible },
    }),
  }),
  tool({
    name: 'post_reply',
    title: 'Reply to a discussion',
    description: 'Posts a comment on a discussion: a reply the customer sees, or, with internal true, a note for the staff only.',
    input: {
      number,
      body: z.string().describe('The comment.'),
      internal: z.boolean().optional().describe('A note among the staff, not shown to the customer. False by default.'),
    },
    readOnly: false,
    request: ({ number, body, internal }) => ({ method: 'POST', path: `/discussions/${number}/comments`, body: { body, internal } }),
  }),
  tool({
    name: 'merge_discussion',
    title: 'Merge a discussion into another',
    description:
      'Merges a discussion into another of the help desk (the same question asked twice, or one outage reported by several customers): ' +
      'its comments and files move to the end of the other, its customer and participants are copied on it, and its number then leads there. ' +
      'Answers with the discussion merged into. unmerge_discussion undoes it for a day.',
    input: { number, into: z.number().int().min(1).describe('The number of the discussion to merge into.') },
    readOnly: false,
    request: ({ number, into }) => ({ method: 'POST', path: `/discussions/${number}/merge`, body: { into } }),
  }),
  tool({
    name: 'split_discussion',
    title: 'Split a discussion',
    description:
      'Makes a new discussion of one comment (and, with following, those after it) when a discussion holds a second question: ' +
      'same category, the comment\'s author its customer, and a note in the old one pointing to it. Answers with the new discussion.',
    input: {
      number,
      comment: z.number().int().min(2).describe('The comment the new discussion starts with (see get_discussion).'),
      following: z.boolean().optional().describe('Take the comments after it too. False by default.'),
      title: z.string().optional().describe("The new discussion's title; the old one's by default."),
    },
    readOnly: false,
    request: ({ number, comment, following, title }) => ({ method: 'POST', path: `/discussions/${number}/split`, body: { comment, following, title } }),
  }),
  tool({
    name: 'unmerge_discussion',
    title: 'Undo a merge',
    description: 'Puts a merged discussion back as it was before its merge, with its comments. Only the last merge into a discussion, within a day.',
    input: { number: z.number().int().min(1).describe('The number of the discussion that was merged.') },
    readOnly: false,
    request: ({ number }) => ({ method: 'POST', path: `/discussions/${number}/unmerge` }),
  }),
  tool({
    name: 'resolve_discussion',
    title: 'Resolve a discussion',
    description: 'Marks a discussion resolved. Resolving a resolved one changes nothing.',
    input: { number },
    readOnly: false,
    request: ({ number }) => ({ method: 'POST', path: `/discussions/${number}/resolve` }),
  }),
  tool({
    name: 'unresolve_discussion',
    title: 'Reopen a discussion',
    description: 'Moves a resolved discussion back to open. Other states are left as they are.',
    input: { number },
    readOnly: false,
    request: ({ number }) => ({ method: 'POST', path: `/discussions/${number}/unresolve` }),
  }),
  tool({
    name: 'mark_spam',
    title: 'Mark a discussion spam',
    description: 'Marks a discussion spam: it leaves the queue and its counts, and nobody is told of it any more. Undone by mark_not_spam.',
    input: { number },
    readOnly: false,
    request: ({ number }) => ({ method: 'POST', path: `/discussions/${number}/spam` }),
  }),
  tool({
    name: 'mark_not_spam',
    title: 'Mark a discussion not spam',
    description: 'Brings a discussion marked spam back to the queue, in the state it had (new when it arrived as spam), and allows its sender on the help desk, so their mail is never taken for spam again.',
    input: { number },
    readOnly: false,
    request: ({ number }) => ({ method: 'POST', path: `/discussions/${number}/not_spam` }),
  }),
  tool({
    name: 'list_participants',
    title: "List who a discussion's replies copy",
    description:
      "Lists a discussion's participants: the people its public replies are mailed to besides its customer (those the customer's mail copied, and those the team added), " +
      'each with how they joined. Their answers by mail join the discussion.',
    input: { number },
    readOnly: true,
    request: ({ number }) => ({ method: 'GET', path: `/discussions/${number}/participants` }),
  }),
  tool({
    name: 'add_participant',
    title: "Copy someone on a discussion's replies",
    description: "Adds a participant to a discussion: its public replies are mailed to them too, and their answers by mail join it. Adding someone already there changes nothing.",
    input: { number, email: z.string().describe('Their mail address.'), name: z.string().optional().describe('Their name, for the mail.') },
    readOnly: false,
    request: ({ number, email, name }) => ({ method: 'POST', path: `/discussions/${number}/participants`, body: { email, name } }),
  }),
  tool({
    name: 'remove_participant',
    title: "Stop copying someone on a discussion's replies",
    description: 'Takes a participant off a discussion: its replies are no longer mailed to them, and their later mail is a note for the team.',
    input: { number, email: z.string().describe('The address to take off.') },
    readOnly: false,
    request: ({ number, email }) => ({ method: 'DELETE', path: `/discussions/${number}/participants/${encodeURIComponent(email)}` }),
  }),
  tool({
    name: 'list_sender_rules',
    title: 'List the blocked and allowed senders',
    description:
      "Lists the help desk's sender rules (for its administrators): addresses and domains whose new mail is always spam (block) or never is (allow). " +
      'A domain covers its subdomains; the most particular rule wins.',
    input: {},
    readOnly: true,
    request: () => ({ method: 'GET', path: '/sender_rules' }),
  }),
  tool({
    name: 'set_sender_rule',
    title: 'Block or allow a sender',
    description:
      'Blocks an address or a domain (its new mail goes to spam, told to no one) or allows it (never taken for spam), for the administrators of the help desk. ' +
      'A rule for the same address or domain is replaced.',
    input: {
      pattern: z.string().describe('An address (ann@example.com) or a domain (example.com, which covers its subdomains).'),
      verdict: z.enum(['block', 'allow']).describe('block or allow.'),
    },
    readOnly: false,
    request: ({ pattern, verdict }) => ({ method: 'POST', path: '/sender_rules', body: { pattern, verdict } }),
  }),
  tool({
    name: 'remove_sender_rule',
    title: 'Remove a sender rule',
    description: 'Removes one of the sender rules (its id from list_sender_rules), for the administrators of the help desk: that sender is judged as anyone else again.',
    input: { id: z.number().int().min(1).describe('The rule id, from list_sender_rules.') },
    readOnly: false,
    request: ({ id }) => ({ method: 'DELETE', path: `/sender_rules/${id}` }),
  }),
  tool({
    name: 'change_category',
    title: 'Move a discussion to another category',
    description: 'Moves a discussion to another category of the help desk (see list_categories).',
    input: { number, category_id: z.number().int().min(1).describe('The category to move it to.') },
    readOnly: false,
    request: ({ number, category_id }) => ({ method: 'POST', path: `/discussions/${number}/change_category?to=${category_id}` }),
  }),
  tool({
    name: 'assign_discussion',
    title: 'Give a discussion to a supporter',
    description: 'Makes a supporter of the help desk the owner of a discussion: me (yourself), a user id (see the assignee of discussions), or none to leave it to nobody.',
    input: { number, to: assignee.describe('me, none or a user id.') },
    readOnly: false,
    request: ({ number, to }) => ({ method: 'POST', path: `/discussions/${number}/assign?to=${to}` }),
  }),
  tool({
    name: 'tag_discussion',
    title: 'Set the tags of a discussion',
    description: 'Sets all the tags of a discussion (an empty list removes them): short labels such as billing or vip, kept in lower case.',
    input: { number, tags: z.array(z.string()).max(20).describe('Every tag it should carry.') },
    readOnly: false,
    request: ({ number, tags }) => ({ method: 'PUT', path: `/discussions/${number}`, body: { tags } }),
  }),
  tool({
    name: 'list_fields',
    title: 'List custom fields',
    description: "Lists the help desk's custom fields (an order number, a plan, a product...): each one's key, name, kind (text, number, date, choice, choices, yes_no, link), choices, and what it is kept on (of: discussion or customer). set_fields gives a discussion values by the keys of the fields of discussions.",
    input: {},
    readOnly: true,
    request: () => ({ method: 'GET', path: '/fields' }),
  }),
  tool({
    name: 'set_fields',
    title: "Set a discussion's custom fields",
    description:
      "Sets custom fields of a discussion by key (list_fields names them): text, link, date (YYYY-MM-DD) and choice as a string, number as a number, yes_no as true or false, choices as a list; null clears one. The fields not named stay as they are.",
    input: { number, fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.null()])).describe('The values, by key.') },
    readOnly: false,
    request: ({ number, fields }) => ({ method: 'PUT', path: `/discussions/${number}`, body: { fields } }),
  }),
  tool({
    name: 'list_saved_replies',
    title: 'List saved replies',
    description:
      "Lists the help desk's saved replies (answers its team wrote once for questions that come often). With a discussion number, " +
      "each one's `filled` text has the customer's name and the rest filled in, ready to send with post_reply.",
    input: { number: number.optional() },
    readOnly: true,
    request: ({ number }) => ({ method: 'GET', path: `/saved_replies${query({ discussion: number })}` }),
  }),
  tool({
    name: 'list_macros',
    title: 'List macros',
    description:
      "Lists the help desk's macros: saved replies with actions (set the state, category or owner, add or remove tags) that " +
      'apply_macro does in one go with the reply. With a discussion number, each text is filled in for it.',
    input: { number: number.optional() },
    readOnly: true,
    request: ({ number }) => ({ method: 'GET', path: `/macros${query({ discussion: number })}` }),
  }),
  tool({
    name: 'apply_macro',
    title: 'Apply a macro to a discussion',
    description:
      "Applies a macro (see list_macros) to a discussion: its text, filled in, is posted as your reply (mailed to the customer as any " +
      'reply is), or as an internal note with internal=true; then its actions are done. The discussion as it is after is returned.',
    input: {
      number,
      macro: z.number().int().min(1).describe('The macro id, from list_macros.'),
      internal: z.boolean().optional().describe('Post the text as an internal note, seen by the team only.'),
    },
    readOnly: false,
    request: ({ number, macro, internal }) => ({ method: 'POST', path: `/discussions/${number}/apply_macro`, body: { macro, ...(internal !== undefined && { internal }) } }),
  }),
  tool({
    name: 'find_customer',
    title: 'Find a customer by address',
    description: "Finds the help desk's customer with an email address (in any case): their id, name, address and values of the customer fields; an empty list when there is none.",
    input: { email: z.string().min(1).max(254).describe('Their address.') },
    readOnly: true,
    request: ({ email }) => ({ method: 'GET', path: `/customers${query({ email })}` }),
  }),
  tool({
    name: 'plan_erasure',
    title: "Say what erasing a customer would do",
    description:
      "For a customer's request to be forgotten (GDPR article 17), administrators only: what erasing them would do now, " +
      'without doing it: how many discussions they started (deleted or kept anonymised, as the site chose), how many others they ' +
      'wrote in or were copied on, their comments, files and mails, and whether their account goes. The erasure itself is done ' +
      'by an administrator on the page or the API, never by this tool.',
    input: { customer: z.number().int().min(1).describe('The customer id, from find_customer.') },
    readOnly: true,
    request: ({ customer }) => ({ method: 'GET', path: `/customers/${customer}/erasure` }),
  }),
]

/** The tools a `read` token may not call. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set(MCP_TOOLS.filter((t) => !t.readOnly).map((t) => t.name))
