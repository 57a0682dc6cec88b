import type { DiscussionState } from '../db/values.ts'
import type { SlaChannel } from './sla.ts'

// Rules and macros (issue 70; docs/decisions.md, "Rules and macros"), the pure part: what starts a
// rule, whether its conditions hold for a discussion, and what its actions change of the fields.
// The store (db/stores/rules.ts) reads, writes and runs them.

/** What starts a rule on events: each a kind of write of a discussion. */
export const ruleTriggers = [
  'created',
  'customer_replied',
  'team_replied',
  'note_added',
  'state_changed',
  'category_changed',
  'owner_changed',
  'tags_changed',
  'fields_changed',
  'sla_warning',
  'sla_breached',
] as const
export type RuleTrigger = (typeof ruleTriggers)[number]

/** The moment a rule on time counts from: the discussion's creation, its last change, or its newest comment. */
export const ruleAnchors = ['created', 'updated', 'last_comment'] as const
export type RuleAnchor = (typeof ruleAnchors)[number]

/**
 * What a rule looks at: every condition named must hold (each list: one of its values). `words`:
 * one of them, as a whole word or phrase, in the title or the comment that started the rule.
 */
export interface RuleConditions {
  states?: DiscussionState[]
  categories?: number[]
  channels?: SlaChannel[]
  /** Tags it has, all of them. */
  tags?: string[]
  /** Tags it has none of. */
  no_tags?: string[]
  /** Its owner: nobody, anybody, or one of these supporters. */
  owner?: 'none' | 'anyone' | number[]
  /** Its customer's address ends with one of these domains. */
  domains?: string[]
  words?: string[]
  /** Who owes the next answer: the team (the customer wrote last) or the customer. */
  awaiting?: 'team' | 'customer'
  /** Custom fields (issue 72), by key: its value is one of these, as a filter reads it (lib/fields.ts, filterText). */
  fields?: Record<string, string[]>
}

/** The states an action may set: the team's own ones (spam has its action, deleted is not a rule's). */
export const settableStates = ['open', 'resolved'] as const

/** What a macro may do to a discussion (field changes), and a rule besides them. */
export type FieldAction =
  | { type: 'set_category'; category: number }
  | { type: 'set_state'; state: (typeof settableStates)[number] }
  | { type: 'set_owner'; owner: number | 'none' | 'round_robin' }
  | { type: 'add_tags'; tags: string[] }
  | { type: 'remove_tags'; tags: string[] }
  /** Custom fields' values by key, null clearing one (issue 72). */
  | { type: 'set_fields'; fields: Record<string, unknown> }

export type RuleAction =
  | FieldAction
  | { type: 'add_note'; body: string }
  | { type: 'send_reply'; saved_reply: number }
  | { type: 'mark_spam' }
  | { type: 'notify'; to: 'owner' | 'team' | number }
  | { type: 'webhook' }

export const fieldActionTypes = ['set_category', 'set_state', 'set_owner', 'add_tags', 'remove_tags', 'set_fields'] as const
export const ruleActionTypes = [...fieldActionTypes, 'add_note', 'send_reply', 'mark_spam', 'notify', 'webhook'] as const

/**
 * How deep rules may start rules: the events of a write start rules (depth 1), the events of their
 * actions start rules (depth 2) and theirs (depth 3); the events of depth 3's actions start none.
 * Two rules that feed each other stop there, the write commits, and the history shows each firing.
 */
export const MAX_RULE_DEPTH = 3
/** The most rules a site keeps (each write of a discussion looks at its rules on events). */
export const MAX_RULES = 100
/** The most actions a rule or a macro has, conditions' values a list has. */
export const MAX_ACTIONS = 20
export const MAX_CONDITION_VALUES = 50
/** How many discussions a dry run looks at: the newest. */
export const DRY_RUN_DISCUSSIONS = 1_000

/** What a rule's conditions are held against: a discussion as it is now. */
export interface RuleSubject {
  state: DiscussionState
  categoryId: number
  channel: SlaChannel
  tags: readonly string[]
  assigneeId: number | null
  authorEmail: string
  awaitingTeam: boolean
  title: string
  /** The comment that started the rule (or the opening post of a new discussion), when there is one. */
  message?: string
  /** Its custom fields' values, by key, as a filter reads each (lib/fields.ts, indexedTexts). */
  fields: Readonly<Record<string, readonly string[]>>
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** One expression for a rule's words: each a whole word or phrase, any case, spaces as any run of spaces. */
export function wordsPattern(words: readonly string[]): RegExp | null {
  const parts = words.map((w) => w.trim()).filter((w) => w !== '').map((w) => w.split(/\s+/u).map(escaped).join('\\s+'))
  if (parts.length === 0) return null
  return new RegExp(`(?<![\\p{L}\\p{N}_])(?:${parts.join('|')})(?![\\p{L}\\p{N}_])`, 'iu')
}

/** The domain of an address, folded (the part after its last @). */
export const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase()

/** A rule's conditions, made ready to be held against many discussions (its words' expression built once). */
export interface ReadyConditions {
  conditions: RuleConditions
  words: RegExp | null
  domains: Set<string> | null
}

export function readyConditions(conditions: RuleConditions): ReadyConditions {
  return {
    conditions,
    words: conditions.words ? wordsPattern(conditions.words) : null,
    domains: conditions.domains ? new Set(conditions.domains.map((d) => d.toLowerCase().replace(/^@/, ''))) : null,
  }
}

/** Whether every condition named holds for the discussion. */
export function conditionsHold({ conditions: c, words, domains }: ReadyConditions, s: RuleSubject): boolean {
  if (c.states && !c.states.includes(s.state)) return false
  if (c.categories && !c.categories.includes(s.categoryId)) return false
  if (c.channels && !c.channels.includes(s.channel)) return false
  if (c.tags && !c.tags.every((t) => s.tags.includes(t))) return false
  if (c.no_tags && c.no_tags.some((t) => s.tags.includes(t))) return false
  if (c.owner === 'none' && s.assigneeId !== null) return false
  if (c.owner === 'anyone' && s.assigneeId === null) return false
  if (Array.isArray(c.owner) && (s.assigneeId === null || !c.owner.includes(s.assigneeId))) return false
  if (c.awaiting && (c.awaiting === 'team') !== s.awaitingTeam) return false
  if (domains && !domains.has(domainOf(s.authorEmail))) return false
  if (words && !words.test(s.title) && !(s.message !== undefined && words.test(s.message))) return false
  if (c.fields && !Object.entries(c.fields).every(([key, wanted]) => (s.fields[key] ?? []).some((value) => wanted.includes(value)))) return false
  return true
}

/** What a write of a discussion starts, told by its event (the store's: db/stores/webhooks.ts StoreEvent). */
export type TriggerEvent =
  | { type: 'discussion.created' }
  | { type: 'comment.created'; comment: { bySupporter: boolean; internal: boolean }; before?: TriggerFields; discussion: TriggerFields }
  | { type: 'discussion.updated'; before?: TriggerFields; discussion: TriggerFields }
  | { type: 'sla.warning' | 'sla.breached' }
  | { type: string }

type TriggerFields = { state: string; categoryId: number; assigneeId: number | null; tags: string; fields?: string }

export function triggersOf(event: TriggerEvent): RuleTrigger[] {
  switch (event.type) {
    case 'discussion.created':
      return ['created']
    case 'comment.created': {
      // A reply may move the state too (the team's first answer opens it; "Send and resolve").
      const { comment, before, discussion } = event as { comment: { bySupporter: boolean; internal: boolean }; before?: TriggerFields; discussion: TriggerFields }
      const kind: RuleTrigger = comment.internal ? 'note_added' : comment.bySupporter ? 'team_replied' : 'customer_replied'
      return before && before.state !== discussion.state ? [kind, 'state_changed'] : [kind]
    }
    case 'discussion.updated': {
      const { before, discussion: after } = event as { before?: TriggerFields; discussion: TriggerFields }
      if (!before) return []
      const found: RuleTrigger[] = []
      if (before.state !== after.state) found.push('state_changed')
      if (before.categoryId !== after.categoryId) found.push('category_changed')
      if (before.assigneeId !== after.assigneeId) found.push('owner_changed')
      if (before.tags !== after.tags) found.push('tags_changed')
      // Its custom fields' values (the row's JSON, keys sorted: the same values are the same text).
      if (before.fields !== after.fields) found.push('fields_changed')
      return found
    }
    case 'sla.warning':
      return ['sla_warning']
    case 'sla.breached':
      return ['sla_breached']
    default:
      return []
  }
}

/** What the field actions ask of a discussion, together: each field once, the tags added and removed in order. */
export interface FieldChanges {
  categoryId?: number
  state?: (typeof settableStates)[number]
  /** A supporter, null for nobody, or the category's next in turn. */
  owner?: number | null | 'round_robin'
  tags?: string[]
  /** Custom fields' values by key (null clears one), as the API's PUT takes them. */
  fields?: Record<string, unknown>
}

export function fieldChangesOf(actions: readonly RuleAction[], tags: readonly string[]): FieldChanges {
  const changes: FieldChanges = {}
  let kept = [...tags]
  let tagsMoved = false
  for (const action of actions) {
    switch (action.type) {
      case 'set_category':
        changes.categoryId = action.category
        break
      case 'set_state':
        changes.state = action.state
        break
      case 'set_owner':
        changes.owner = action.owner === 'none' ? null : action.owner
        break
      case 'add_tags':
        kept = [...kept, ...action.tags.filter((t) => !kept.includes(t))]
        tagsMoved = true
        break
      case 'remove_tags':
        kept = kept.filter((t) => !action.tags.includes(t))
        tagsMoved = true
        break
      case 'set_fields':
        changes.fields = { ...changes.fields, ...action.fields }
        break
    }
  }
  if (tagsMoved) changes.tags = kept.sort()
  return changes
}

/** Names for what actions point at (a category, a supporter, a saved reply), for a sentence. */
export interface ActionNames {
  category(id: number): string
  person(id: number): string
  savedReply(id: number): string
}

/** The names of a site's categories, staff and saved replies as actions show them; one gone since says so. */
export function actionNamesFrom(categories: ReadonlyArray<{ id: number; name: string }>, staff: ReadonlyArray<{ id: number; name: string }>, savedReplies: ReadonlyArray<{ id: number; title: string }>): ActionNames {
  const named = (rows: ReadonlyArray<{ id: number; name: string }>, what: string) => {
    const names = new Map(rows.map((r) => [r.id, r.name]))
    return (id: number) => names.get(id) ?? `${what} ${id} (gone)`
  }
  return { category: named(categories, 'category'), person: named(staff, 'supporter'), savedReply: named(savedReplies.map((r) => ({ id: r.id, name: r.title })), 'saved reply') }
}

/** What an action does, in a few words (the dry run, the history). */
export function describeAction(action: RuleAction, names: ActionNames): string {
  switch (action.type) {
    case 'set_category':
      return `move to ${names.category(action.category)}`
    case 'set_state':
      return action.state === 'resolved' ? 'resolve' : 'open again'
    case 'set_owner':
      return action.owner === 'none' ? 'give to nobody' : action.owner === 'round_robin' ? "give to the category's next in turn" : `give to ${names.person(action.owner)}`
    case 'add_tags':
      return `tag ${action.tags.join(', ')}`
    case 'remove_tags':
      return `untag ${action.tags.join(', ')}`
    case 'set_fields':
      return `set ${Object.entries(action.fields).map(([key, value]) => (value === null ? `no ${key}` : `${key} to ${Array.isArray(value) ? value.join(', ') : String(value)}`)).join(', ')}`
    case 'add_note':
      return 'add an internal note'
    case 'send_reply':
      return `reply with "${names.savedReply(action.saved_reply)}"`
    case 'mark_spam':
      return 'mark spam'
    case 'notify':
      return action.to === 'owner' ? 'notify its owner' : action.to === 'team' ? 'notify the team' : `notify ${names.person(action.to)}`
    case 'webhook':
      return 'post a webhook'
  }
}

/**
 * Whether a rule on time is due for a discussion: `minutes` since its anchor, counted around the
 * clock or (`business`) by `businessMinutes` (the site's hours).
 */
export function timeRuleDue(anchor: Date, now: Date, minutes: number, businessMinutes: ((from: Date, to: Date) => number) | null): boolean {
  if (now.getTime() - anchor.getTime() < minutes * 60_000) return false
  return businessMinutes === null || businessMinutes(anchor, now) >= minutes
}
