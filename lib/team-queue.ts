// The pure rules of the team's queue (docs/decisions.md, "The team's queue"): what a tag may be,
// and how a saved reply is filled in for the discussion it answers.

/** The most tags a discussion carries, and the longest tag, in characters. */
export const MAX_TAGS = 20
export const MAX_TAG_LENGTH = 40

/**
 * A tag as it is kept: NFC, lower case, runs of spaces and underscores as one `-`, at most
 * MAX_TAG_LENGTH characters of letters, marks, digits and `-`, `.`, `/`, `:`; or the reason it cannot be one.
 * "Billing Issue" and "billing-issue" are the same tag (Zendesk and Help Scout fold case alike).
 */
export function tagOf(text: string): { tag: string } | { problem: string } {
  const tag = text.normalize('NFC').trim().toLowerCase().replace(/[\s_]+/gu, '-')
  if (tag === '') return { problem: 'must not be empty' }
  if ([...tag].length > MAX_TAG_LENGTH) return { problem: `must be at most ${MAX_TAG_LENGTH} characters` }
  if (!/^[\p{L}\p{M}\p{N}][\p{L}\p{M}\p{N}.\/:-]*$/u.test(tag)) return { problem: `"${tag}" may hold letters, digits and - . / : only, starting with a letter or digit` }
  return { tag }
}

/** The tags of a list, each as kept, without repeats, sorted; or the first problem, naming the tag. */
export function tagsOf(texts: readonly string[]): { tags: string[] } | { problem: string } {
  const tags = new Set<string>()
  for (const text of texts) {
    const found = tagOf(text)
    if ('problem' in found) return { problem: `tag ${JSON.stringify(text.slice(0, MAX_TAG_LENGTH + 10))}: ${found.problem}` }
    tags.add(found.tag)
  }
  if (tags.size > MAX_TAGS) return { problem: `a discussion carries at most ${MAX_TAGS} tags` }
  return { tags: [...tags].sort() }
}

/** The tags a form's text field names, separated by commas or spaces ("billing, vip"). */
export const splitTags = (text: string): string[] => text.split(/[,\s]+/u).filter((t) => t !== '')

/** The tags a discussion row keeps (`tags`: sorted, separated by spaces). */
export const tagList = (kept: string): string[] => (kept === '' ? [] : kept.split(' '))

/** The placeholders a saved reply may hold, and what each becomes. */
export interface ReplyContext {
  customerName: string
  supporterName: string
  siteName: string
  number: number
}

const PLACEHOLDERS: Record<string, (c: ReplyContext) => string> = {
  'customer.name': (c) => c.customerName,
  // split always gives one part at least: '' for a customer without a name.
  'customer.first_name': (c) => c.customerName.trim().split(/\s+/u)[0]!,
  'supporter.name': (c) => c.supporterName,
  'site.name': (c) => c.siteName,
  'discussion.number': (c) => String(c.number),
}

/** The placeholders' names, as the pages and the docs list them. */
export const placeholderNames = Object.keys(PLACEHOLDERS).map((name) => `{{${name}}}`)

/**
 * A saved reply's text with `{{customer.name}}` and its kin filled in; a placeholder it does not
 * know is left as it is written, so a typo shows in the reply form instead of vanishing.
 */
export function fillSavedReply(body: string, context: ReplyContext): string {
  // Its own names only: `{{__proto__}}` or `{{constructor}}` are left as written too.
  return body.replace(/\{\{\s*([a-z_.]+)\s*\}\}/g, (whole, name: string) => (Object.hasOwn(PLACEHOLDERS, name) ? PLACEHOLDERS[name]!(context) : whole))
}
