import { and, asc, count, desc, eq, gt, inArray, isNotNull, lte, or, sql, type SQL } from '../drizzle.ts'
import { isLive } from '../live.ts'
import { filterText, indexedTexts } from '../../lib/fields.ts'
import { activeFieldsIn, shapeOf, valuesAfter, valuesOf } from './fields.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SecretBox } from '../../lib/secret-box.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { holdsNul } from '../../lib/nul.ts'
import { businessMinutesBetween } from '../../lib/business-time.ts'
import { fillSavedReply, tagList, tagsOf } from '../../lib/team-queue.ts'
import {
  conditionsHold,
  DRY_RUN_DISCUSSIONS,
  fieldChangesOf,
  MAX_RULE_DEPTH,
  MAX_RULES,
  readyConditions,
  timeRuleDue,
  triggersOf,
  type ReadyConditions,
  type RuleAction,
  type RuleAnchor,
  type RuleConditions,
  type RuleSubject,
  type RuleTrigger,
} from '../../lib/rules.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { checkAssignee, nextInTurn, staffMemberOf } from './assignment.ts'
import { createAuthors } from './discussion-authors.ts'
import { actDiscussionIn, categoryOfSite, getIn, replyDiscussionIn, updateDiscussionIn, type DiscussionRow, type Expected, type WriteContext } from './discussions.ts'
import type { CommentVia } from '../values.ts'
import { StoreError } from './errors.ts'
import { notifyByRule } from './notifications.ts'
import { policiesOf } from './sla.ts'
import { bumpRulesVersion, lockSite } from './sites.ts'
import { listenersIn, type EventSink, type StoreEvent } from './webhooks.ts'

// A site's rules (issue 70; lib/rules.ts; docs/decisions.md, "Rules and macros"): kept here, run
// in the transaction of the write whose event starts them (`createRuleSink`, which every store's
// events go through) or, for rules on time, by the SLA alerts' loop (`runDue`, one process of many
// each time: a firing is a row whose unique index lets only one transaction write it).

export type RuleRow = Tables['rules']['$inferSelect']

export interface Rule {
  id: number
  siteId: number
  position: number
  name: string
  enabled: boolean
  events: RuleTrigger[]
  afterMinutes: number | null
  business: boolean
  since: RuleAnchor
  conditions: RuleConditions
  actions: RuleAction[]
  authorId: number | null
  createdAt: Date
  updatedAt: Date
}

export interface RuleInput {
  name: string
  enabled?: boolean
  /** Where it goes among the site's rules, 1 first; the end when not given. */
  position?: number
  events?: RuleTrigger[]
  afterMinutes?: number | null
  business?: boolean
  since?: RuleAnchor
  conditions?: RuleConditions
  actions: RuleAction[]
}

export const MAX_RULE_NAME = 100
export const MAX_NOTE = 65_536

/** A firing of a rule, as a discussion's history shows it. */
export interface RuleFiring {
  ruleId: number | null
  ruleName: string
  trigger: string
  actions: RuleAction[]
  at: Date
}

const listOf = (text: string) => (text === '' ? [] : text.split(' '))

export function ruleOf(row: RuleRow): Rule {
  return {
    id: row.id,
    siteId: row.siteId,
    position: row.position,
    name: row.name,
    enabled: row.enabled,
    events: listOf(row.events) as RuleTrigger[],
    afterMinutes: row.afterMinutes,
    business: row.business,
    since: row.since as RuleAnchor,
    conditions: JSON.parse(row.conditions) as RuleConditions,
    actions: JSON.parse(row.actions) as RuleAction[],
    authorId: row.authorId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}

/** A rule made ready to run: its conditions' expressions built once. */
interface ReadyRule extends Rule {
  ready: ReadyConditions
}

const readied = (rule: Rule): ReadyRule => ({ ...rule, ready: readyConditions(rule.conditions) })

function invalid(problem: string, field: string): StoreError {
  return new StoreError(problem, 'invalid', field)
}

function checkedTags(tags: string[], field: string): string[] {
  const found = tagsOf(tags)
  if ('problem' in found) throw invalid(found.problem, field)
  return found.tags
}

/**
 * What a rule or a macro says, checked against the site in the transaction `tx`: its categories,
 * supporters and saved replies are the site's, its tags can be tags, its texts are texts.
 */
export async function checkActions(tx: StorePort, siteId: number, actions: RuleAction[], field = 'actions'): Promise<RuleAction[]> {
  const { savedReplies } = tx.tables
  const checked: RuleAction[] = []
  for (const [i, action] of actions.entries()) {
    const at = `${field}[${i}]`
    switch (action.type) {
      case 'set_category':
        if (!(await categoryOfSite(tx, siteId, action.category))) throw invalid(`names category ${action.category}, which is not a category of this site`, at)
        checked.push(action)
        break
      case 'set_owner':
        if (typeof action.owner === 'number') await checkAssignee(tx, siteId, action.owner, at)
        checked.push(action)
        break
      case 'notify':
        if (typeof action.to === 'number') await checkAssignee(tx, siteId, action.to, at)
        checked.push(action)
        break
      case 'add_tags':
      case 'remove_tags':
        checked.push({ type: action.type, tags: checkedTags(action.tags, at) })
        break
      case 'set_fields': {
        // Checked as a PUT of them would be, each refusal naming its place in the rule.
        try {
          await valuesAfter(tx, siteId, {}, action.fields)
        } catch (error) {
          if (error instanceof StoreError && error.code === 'invalid') throw invalid(error.message, `${at}.${error.field}`)
          throw error
        }
        checked.push(action)
        break
      }
      case 'add_note':
        if (action.body.trim() === '' || action.body.length > MAX_NOTE || holdsNul(action.body)) throw invalid(`must be a note of 1 to ${MAX_NOTE} characters, without U+0000`, at)
        checked.push(action)
        break
      case 'send_reply': {
        const [found] = await tx.db.select({ id: savedReplies.id }).from(savedReplies).where(and(eq(savedReplies.siteId, siteId), eq(savedReplies.id, tx.wide(action.saved_reply))))
        if (!found) throw invalid(`names saved reply ${action.saved_reply}, which is not a saved reply of this site`, at)
        checked.push(action)
        break
      }
      default:
        checked.push(action)
    }
  }
  return checked
}

/** A rule's conditions on custom fields: each key a field of the site, each value one its kind takes, kept as a filter reads it. */
async function checkedFieldConditions(tx: StorePort, siteId: number, conditions: Record<string, string[]>): Promise<Record<string, string[]>> {
  const fields = await activeFieldsIn(tx, siteId)
  const checked: Record<string, string[]> = {}
  for (const [key, values] of Object.entries(conditions)) {
    const field = fields.find((f) => f.key === key)
    if (!field) throw invalid('is not a field of this site (GET /<site>/fields lists them)', `conditions.fields.${key}`)
    checked[key] = values.map((value) => {
      const text = filterText(shapeOf(field), value)
      if ('problem' in text) throw invalid(text.problem, `conditions.fields.${key}`)
      return text.text
    })
  }
  return checked
}

async function checkedRule(tx: StorePort, siteId: number, rule: Omit<Rule, 'id' | 'siteId' | 'position' | 'authorId' | 'createdAt' | 'updatedAt'>): Promise<typeof rule> {
  const name = rule.name.trim()
  if (name === '' || name.length > MAX_RULE_NAME || holdsNul(name)) throw invalid(`must be 1 to ${MAX_RULE_NAME} characters, without U+0000`, 'name')
  const onTime = rule.afterMinutes !== null
  if (onTime === rule.events.length > 0) throw invalid('a rule runs on events or after a time: name its events, or after_minutes, not both', rule.events.length > 0 ? 'events' : 'after_minutes')
  // A rule on time names the states it looks at: its scan reads the index of each state, not the site.
  if (onTime && !rule.conditions.states?.length) throw invalid('a rule on time names the states it looks at (conditions.states)', 'conditions.states')
  if (rule.actions.length === 0) throw invalid('a rule does something: name one action at least', 'actions')
  // An empty list asks nothing (the API refuses one; a caller of the store may send one).
  const conditions = Object.fromEntries(Object.entries(rule.conditions).filter(([, value]) => !(Array.isArray(value) && value.length === 0))) as RuleConditions
  if (conditions.tags) conditions.tags = checkedTags(conditions.tags, 'conditions.tags')
  if (conditions.no_tags) conditions.no_tags = checkedTags(conditions.no_tags, 'conditions.no_tags')
  if (conditions.words?.some((w) => w.trim() === '' || holdsNul(w))) throw invalid('each word is some text, without U+0000', 'conditions.words')
  for (const id of conditions.categories ?? []) if (!(await categoryOfSite(tx, siteId, id))) throw invalid(`names category ${id}, which is not a category of this site`, 'conditions.categories')
  if (Array.isArray(conditions.owner)) for (const id of conditions.owner) await checkAssignee(tx, siteId, id, 'conditions.owner')
  if (conditions.fields) conditions.fields = await checkedFieldConditions(tx, siteId, conditions.fields)
  return { ...rule, name, conditions, actions: await checkActions(tx, siteId, rule.actions) }
}

/** A new rule's fields, with what it does not give as a new rule has it. */
const withDefaults = (input: RuleInput) => ({
  name: input.name,
  enabled: input.enabled ?? true,
  events: input.events ?? [],
  afterMinutes: input.afterMinutes ?? null,
  business: input.business ?? false,
  since: input.since ?? 'updated',
  conditions: input.conditions ?? {},
  actions: input.actions,
})

/** A name taken by another rule of the site: the database's refusal made the API's (two writes at once cannot both pass). */
async function nameUnique<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error)) throw new StoreError(`is "${name.trim()}", which another rule of this site has`, 'conflict', 'name')
    throw error
  }
}

/** The rule's columns as written. */
const columnsOf = (rule: Pick<Rule, 'name' | 'enabled' | 'events' | 'afterMinutes' | 'business' | 'since' | 'conditions' | 'actions'>) => ({
  name: rule.name,
  enabled: rule.enabled,
  events: rule.events.join(' '),
  afterMinutes: rule.afterMinutes,
  business: rule.business,
  since: rule.since,
  conditions: JSON.stringify(rule.conditions),
  actions: JSON.stringify(rule.actions),
})


/** The site's rules in order, numbered 1.. again after `moved` takes `position` (the end when beyond it). */
async function renumber(tx: StorePort, siteId: number, moved?: { id: number; position: number }) {
  const { rules } = tx.tables
  const rows = await tx.db.select({ id: rules.id, position: rules.position }).from(rules).where(eq(rules.siteId, siteId)).orderBy(asc(rules.position), asc(rules.id))
  const order = rows.map((r) => r.id).filter((id) => id !== moved?.id)
  if (moved) order.splice(Math.min(Math.max(moved.position, 1), order.length + 1) - 1, 0, moved.id)
  for (const [i, id] of order.entries()) {
    if (rows.find((r) => r.id === id)!.position !== i + 1) await tx.db.update(rules).set({ position: i + 1 }).where(eq(rules.id, id))
  }
}

/** What the record of changes says of a rule. */
const shownRule = (r: Pick<Rule, 'name' | 'enabled' | 'events' | 'afterMinutes' | 'conditions' | 'actions'>) => ({
  name: r.name,
  enabled: r.enabled,
  when: r.afterMinutes === null ? r.events.join(' ') : `after ${r.afterMinutes} minutes`,
  conditions: JSON.stringify(r.conditions),
  actions: JSON.stringify(r.actions),
})

/** What a rule's conditions are held against: the discussion, and the comment that started it. */
const subjectOf = (d: DiscussionRow, message?: string): RuleSubject => ({
  fields: Object.fromEntries(Object.entries(valuesOf(d.fields)).map(([key, value]) => [key, indexedTexts(value)])),
  state: d.state,
  categoryId: d.categoryId,
  channel: d.channel,
  tags: tagList(d.tags),
  assigneeId: d.assigneeId,
  authorEmail: d.authorEmail,
  awaitingTeam: d.awaitingTeam,
  title: d.title,
  message,
})

/** The moment a rule on time counts from, of a discussion. */
const anchorOf = (d: Pick<DiscussionRow, 'createdAt' | 'updatedAt' | 'lastUpdatedAt'>, since: RuleAnchor): Date => (since === 'created' ? d.createdAt : since === 'last_comment' ? d.lastUpdatedAt : d.updatedAt)

/** Who the record of changes says did what a rule did. */
export const ruleActor = (rule: { name: string }): Actor => ({ id: null, name: `rule "${rule.name}"`, via: 'rule' })

/**
 * Does what the field actions say (category, owner, tags: one change; then the state) to discussion
 * `d`, in the transaction `tx`, as `actor`. `leaveOutGone`: a category or owner gone since the
 * actions were saved is left out, the rest done (a rule's); else its StoreError is the caller's (a
 * macro applied by hand).
 */
async function applyFields(tx: StorePort, write: WriteContext, d: DiscussionRow, actions: readonly RuleAction[], actor: { id: number; name: string }, leaveOutGone: boolean): Promise<void> {
  const { siteId, number } = d
  const fields = fieldChangesOf(actions, tagList(d.tags))
  if (fields.categoryId !== undefined && !(await categoryOfSite(tx, siteId, fields.categoryId))) {
    if (!leaveOutGone) throw new StoreError(`names category ${fields.categoryId}, which is not a category of this site any more`, 'invalid', 'macro')
    delete fields.categoryId
  }
  if (leaveOutGone && typeof fields.owner === 'number' && !(await staffMemberOf(tx, siteId, fields.owner))) delete fields.owner
  // A rule's fields removed since it was saved are left out; a macro's are the caller's refusal.
  if (fields.fields && leaveOutGone) {
    const active = new Set((await activeFieldsIn(tx, siteId)).map((f) => f.key))
    fields.fields = Object.fromEntries(Object.entries(fields.fields).filter(([key]) => active.has(key)))
  }
  if (fields.categoryId !== undefined || fields.owner !== undefined || fields.tags !== undefined || fields.fields !== undefined) {
    let owner = fields.owner
    if (owner === 'round_robin') {
      // The category it goes to (there, checked above) or its own: a discussion's category is the site's.
      const category = (await categoryOfSite(tx, siteId, fields.categoryId ?? d.categoryId))!
      await lockSite(tx, siteId)
      owner = (await nextInTurn(tx, siteId, category)) ?? null
    }
    const changes = { categoryId: fields.categoryId, assigneeId: owner, tags: fields.tags, fields: fields.fields, actor }
    await updateDiscussionIn(tx, write, siteId, number, changes)
  }
  if (fields.state) {
    const now = await getIn(tx, siteId, number)
    const action = fields.state === 'resolved' ? 'resolve' : 'unresolve'
    if (now.state !== 'spam' && now.state !== 'deleted' && now.state !== fields.state) await actDiscussionIn(tx, write, siteId, number, action)
  }
}

/**
 * Does what a rule's actions say to discussion `d`, in the transaction `tx`, its events going to
 * `write.events` (the next depth's rules); records the firing in the discussion's history and the
 * site's record of changes. An action whose target has gone since the rule was saved (a supporter
 * who left, a category removed) is left out; the others are done.
 */
async function fire(tx: StorePort, write: WriteContext, webhooks: EventSink, rule: Rule, d: DiscussionRow, trigger: string, anchorAt: Date | null): Promise<boolean> {
  const { ruleFirings, savedReplies, sites, users } = tx.tables
  const now = new Date(write.clock())
  // A rule on time claims its moment first: of two processes at once, the second finds it taken.
  const [claimed] = await tx.db
    .insert(ruleFirings)
    .values({ siteId: d.siteId, ruleId: rule.id, ruleName: rule.name, discussionId: d.id, trigger, anchorAt, done: JSON.stringify(rule.actions), at: now })
    .onConflictDoNothing()
    .returning({ id: ruleFirings.id })
  if (!claimed) return false
  const { siteId, number } = d
  await applyFields(tx, write, d, rule.actions, { id: 0, name: `the rule "${rule.name}"` }, true)
  for (const action of rule.actions) {
    switch (action.type) {
      case 'add_note':
      case 'send_reply': {
        // Written as the administrator who saved the rule; by nobody when they are gone (left out).
        if (rule.authorId === null) break
        let body = action.type === 'add_note' ? action.body : ''
        if (action.type === 'send_reply') {
          const [saved] = await tx.db.select({ body: savedReplies.body }).from(savedReplies).where(and(eq(savedReplies.siteId, siteId), eq(savedReplies.id, tx.wide(action.saved_reply))))
          if (!saved) break
          const [site] = await tx.db.select({ name: sites.name }).from(sites).where(eq(sites.id, siteId))
          const [author] = await tx.db.select({ name: users.name }).from(users).where(eq(users.id, rule.authorId))
          const current = await getIn(tx, siteId, number)
          body = fillSavedReply(saved.body, { customerName: current.authorName, supporterName: author!.name, siteName: site!.name, number })
        }
        await replyDiscussionIn(tx, write, { siteId, number, body, internal: action.type === 'add_note', via: 'rule', supporterId: rule.authorId })
        break
      }
      case 'mark_spam':
        await actDiscussionIn(tx, write, siteId, number, 'spam')
        break
      case 'notify': {
        const current = await getIn(tx, siteId, number)
        await notifyByRule(tx, write.clock, { siteId, number, title: current.title, to: action.to, ownerId: current.assigneeId, rule: rule.name })
        break
      }
      case 'webhook':
        await webhooks(tx, { type: 'rule.fired', siteId, discussion: await getIn(tx, siteId, number), rule: { id: rule.id, name: rule.name } })
        break
    }
  }
  await recordChange(tx, write.clock, ruleActor(rule), siteId, 'rule.fired', `#${number} ${d.title}`, { trigger })
  return true
}

/** The site's rules on events that are on, in order: parsed once per version of them, per process. */
function createRuleCache() {
  const kept = new Map<number, { version: number; rules: ReadyRule[] }>()
  /** `version`: the site's rules' version, read with its listeners (db/stores/webhooks.ts, listenersIn). */
  return async function eventRulesOf(tx: StorePort, siteId: number, version: number): Promise<ReadyRule[]> {
    const { rules } = tx.tables
    // A site that never had a rule (or is gone): nothing more to read.
    if (version === 0) return []
    const cached = kept.get(siteId)
    if (cached?.version === version) return cached.rules
    const rows = await tx.db
      .select()
      .from(rules)
      .where(and(eq(rules.siteId, siteId), eq(rules.enabled, true), sql`${rules.afterMinutes} is null`))
      .orderBy(asc(rules.position), asc(rules.id))
    const ready = rows.map((r) => readied(ruleOf(r)))
    kept.set(siteId, { version, rules: ready })
    return ready
  }
}

/**
 * The sink every store tells its events to (plugins/stores.ts): tells the webhooks (`inner`), then
 * runs the site's rules on events the event starts, in order, each on the discussion as the rules
 * before it left it, in the same transaction: a rule's changes commit with their cause or not at
 * all. Their own events start rules one depth down; at MAX_RULE_DEPTH they start none, and a rule
 * fires at most once on a discussion in one write, however its rules feed each other.
 */
export function createRuleSink(inner: EventSink, clock: Clock, box: SecretBox): EventSink {
  const authorOf = createAuthors(clock, box)
  const eventRulesOf = createRuleCache()
  /** The sink at `depth` of one write's chain of rules; `fired`: the rules (on discussions) it fired. */
  const sinkAt = (depth: number, fired: Set<string> | null): EventSink =>
    async (tx: StorePort, event: StoreEvent) => {
      const triggers = depth < MAX_RULE_DEPTH && 'discussion' in event ? triggersOf(event as Parameters<typeof triggersOf>[0]) : []
      if (!('discussion' in event) || triggers.length === 0) {
        await inner(tx, event)
        return false
      }
      // Who listens, read once for the webhooks and the rules when the write did not.
      const listeners = event.listeners ?? (await listenersIn(tx, event.siteId))
      await inner(tx, { ...event, listeners })
      const rules = await eventRulesOf(tx, event.siteId, listeners.rulesVersion)
      if (rules.length === 0) return false
      const chain = fired ?? new Set<string>()
      const write: WriteContext = { clock, events: sinkAt(depth + 1, chain), authorOf }
      const message = 'comment' in event ? event.comment.body : undefined
      let d = event.discussion
      let changed = false
      for (const rule of rules) {
        if (d.state === 'spam' || d.state === 'deleted') break
        const trigger = triggers.find((t) => rule.events.includes(t))
        const key = `${rule.id} ${d.id}`
        if (!trigger || chain.has(key) || !conditionsHold(rule.ready, subjectOf(d, message))) continue
        chain.add(key)
        await fire(tx, write, inner, rule, d, trigger, null)
        changed = true
        d = await getIn(tx, d.siteId, d.number)
      }
      return changed
    }
  return sinkAt(0, null)
}

/** The site's rules on time that are on, across sites. */
async function timeRules(port: StorePort): Promise<Rule[]> {
  const { rules } = port.tables
  return (await port.db.select().from(rules).where(and(eq(rules.enabled, true), isNotNull(rules.afterMinutes))).orderBy(asc(rules.siteId), asc(rules.position))).map(ruleOf)
}

/** What a rule on time's conditions ask of the discussions' columns: its scan's filter (the rest is held in memory). */
function scanFilter(port: StorePort, rule: Rule): SQL {
  const { discussions } = port.tables
  const c = rule.conditions
  return and(
    eq(discussions.siteId, rule.siteId),
    inArray(discussions.state, c.states!),
    c.categories ? inArray(discussions.categoryId, c.categories) : undefined,
    c.awaiting ? eq(discussions.awaitingTeam, c.awaiting === 'team') : undefined,
    c.owner === 'none' ? sql`${discussions.assigneeId} is null` : c.owner === 'anyone' ? isNotNull(discussions.assigneeId) : undefined,
  )!
}

export function createRuleStore(port: StorePort, clock: Clock, box: SecretBox, events: EventSink) {
  const { db, tables: { discussions, ruleFirings, rules } } = port
  const authorOf = createAuthors(clock, box)
  const mine = (siteId: number, id: number) => and(eq(rules.siteId, siteId), eq(rules.id, port.wide(id)))
  const notFound = (id: number) => new StoreError(`there is no rule ${id} on this site`, 'not_found', 'id')

  /** Whether a rule on time is due for `d` now: by the clock, or in the business hours of its SLA policy's schedule. */
  async function dueNow(tx: StorePort, rule: Rule, d: DiscussionRow, now: Date): Promise<boolean> {
    let business: ((from: Date, to: Date) => number) | null = null
    if (rule.business) {
      const schedule = (await policiesOf(tx, d.siteId)).find((p) => p.id === d.slaPolicyId)?.schedule
      if (schedule) business = (from, to) => businessMinutesBetween(schedule, from, to)
    }
    return timeRuleDue(anchorOf(d, rule.since), now, rule.afterMinutes!, business)
  }

  return {
    async list(siteId: number): Promise<Rule[]> {
      return (await db.select().from(rules).where(eq(rules.siteId, siteId)).orderBy(asc(rules.position), asc(rules.id))).map(ruleOf)
    },

    async find(siteId: number, id: number): Promise<Rule | undefined> {
      const [row] = await db.select().from(rules).where(mine(siteId, id))
      return row && ruleOf(row)
    },

    /** A new rule; at most MAX_RULES a site (counted under the site's lock). */
    add(siteId: number, input: RuleInput, by: Actor): Promise<Rule> {
      return nameUnique(input.name, () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const [{ n }] = await tx.db.select({ n: count() }).from(rules).where(eq(rules.siteId, siteId))
          if (Number(n) >= MAX_RULES) throw new StoreError(`a site keeps at most ${MAX_RULES} rules; remove one first`, 'limit')
          const rule = await checkedRule(tx, siteId, withDefaults(input))
          const at = new Date(clock())
          const [row] = await tx.db.insert(rules).values({ siteId, position: Number(n) + 1, ...columnsOf(rule), authorId: by.id, createdAt: at, updatedAt: at }).returning()
          if (input.position !== undefined) await renumber(tx, siteId, { id: row!.id, position: input.position })
          await bumpRulesVersion(tx, siteId)
          await recordChange(tx, clock, by, siteId, 'rule.created', rule.name, shownRule(rule))
          return ruleOf((await tx.db.select().from(rules).where(eq(rules.id, row!.id)))[0]!)
        }),
      )
    },

    /** Changes what is given; the one who saves it signs what it writes from then on. */
    update(siteId: number, id: number, input: Partial<RuleInput>, by: Actor): Promise<Rule> {
      return nameUnique(input.name ?? '', () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const [row] = await tx.db.select().from(rules).where(mine(siteId, id))
          if (!row) throw notFound(id)
          const before = ruleOf(row)
          const rule = await checkedRule(tx, siteId, {
            name: input.name ?? before.name,
            enabled: input.enabled ?? before.enabled,
            events: input.events ?? (input.afterMinutes != null ? [] : before.events),
            afterMinutes: input.afterMinutes !== undefined ? input.afterMinutes : input.events?.length ? null : before.afterMinutes,
            business: input.business ?? before.business,
            since: input.since ?? before.since,
            conditions: input.conditions ?? before.conditions,
            actions: input.actions ?? before.actions,
          })
          await tx.db.update(rules).set({ ...columnsOf(rule), authorId: by.id ?? before.authorId, updatedAt: new Date(clock()) }).where(eq(rules.id, row.id))
          if (input.position !== undefined) await renumber(tx, siteId, { id: row.id, position: input.position })
          await bumpRulesVersion(tx, siteId)
          const difference = changedFields(shownRule(before), shownRule(rule))
          if (input.position !== undefined && input.position !== before.position) {
            difference.before.position = before.position
            difference.after.position = input.position
          }
          if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'rule.changed', before.name, difference)
          return ruleOf((await tx.db.select().from(rules).where(eq(rules.id, row.id)))[0]!)
        }),
      )
    },

    async remove(siteId: number, id: number, by: Actor): Promise<void> {
      await port.atomic(async (tx) => {
        await lockSite(tx, siteId)
        const [removed] = await tx.db.delete(rules).where(mine(siteId, id)).returning({ name: rules.name })
        if (!removed) throw notFound(id)
        await renumber(tx, siteId)
        await bumpRulesVersion(tx, siteId)
        await recordChange(tx, clock, by, siteId, 'rule.removed', removed.name)
      })
    },

    /**
     * Applies a macro (a saved reply with actions; db/stores/saved-replies.ts) to discussion `number`
     * by `supporter`, in one transaction: its text filled in and posted as their reply (or an
     * internal note), then its actions, each as if they did it by hand (the rules they start run).
     * The discussion as it is after.
     */
    applyMacro(siteId: number, number: number, macroId: number, supporter: { id: number; name: string }, how: { via: CommentVia; internal?: boolean }, expected?: Expected): Promise<DiscussionRow> {
      return port.atomic(async (tx) => {
        const { savedReplies, sites } = tx.tables
        const [macro] = await tx.db.select().from(savedReplies).where(and(eq(savedReplies.siteId, siteId), eq(savedReplies.id, tx.wide(macroId))))
        if (!macro) throw new StoreError(`there is no macro ${macroId} on this site`, 'not_found', 'macro')
        const before = await getIn(tx, siteId, number)
        const [site] = await tx.db.select({ name: sites.name }).from(sites).where(eq(sites.id, siteId))
        const body = fillSavedReply(macro.body, { customerName: before.authorName, supporterName: supporter.name, siteName: site!.name, number })
        const write: WriteContext = { clock, events, authorOf }
        const { discussion } = await replyDiscussionIn(tx, write, { siteId, number, body, internal: how.internal ?? false, via: how.via, supporterId: supporter.id }, expected)
        await applyFields(tx, write, discussion, JSON.parse(macro.actions) as RuleAction[], supporter, false)
        return getIn(tx, siteId, number)
      })
    },

    /** The firings of rules on a discussion, oldest first: its history. */
    async firings(discussionId: number): Promise<RuleFiring[]> {
      const rows = await db.select().from(ruleFirings).where(eq(ruleFirings.discussionId, port.wide(discussionId))).orderBy(asc(ruleFirings.id))
      return rows.map((r) => ({ ruleId: r.ruleId, ruleName: r.ruleName, trigger: r.trigger, actions: JSON.parse(r.done) as RuleAction[], at: r.at }))
    },

    /**
     * Which of the site's newest DRY_RUN_DISCUSSIONS discussions (deleted and spam aside) a rule would
     * fire on as they are now, and what it would do: a rule on events, if its conditions hold (its
     * words looked for in the title and the opening post); a rule on time, if they hold and its time
     * has come. Nothing is written; the rule is checked as saving it would.
     */
    dryRun(siteId: number, input: RuleInput): Promise<{ looked: number; matches: DiscussionRow[]; rule: Omit<Rule, 'id' | 'siteId' | 'position' | 'authorId' | 'createdAt' | 'updatedAt'> }> {
      return port.atomic(async (tx) => {
        const rule = await checkedRule(tx, siteId, withDefaults({ ...input, enabled: true }))
        const ready = readyConditions(rule.conditions)
        const { comments } = tx.tables
        const newest = await tx.db
          .select({ number: discussions.number, opening: comments.body })
          .from(discussions)
          .innerJoin(comments, and(eq(comments.discussionId, discussions.id), eq(comments.number, 1)))
          .where(and(eq(discussions.siteId, siteId), isLive(discussions.state)))
          .orderBy(desc(discussions.number))
          .limit(DRY_RUN_DISCUSSIONS)
        const now = new Date(clock())
        const matches: DiscussionRow[] = []
        for (const { number, opening } of newest) {
          const d = await getIn(tx, siteId, number)
          if (!conditionsHold(ready, subjectOf(d, rule.afterMinutes === null ? opening : undefined))) continue
          if (rule.afterMinutes !== null && !(await dueNow(tx, { ...rule, id: 0, siteId, position: 0, authorId: null, createdAt: now, updatedAt: now }, d, now))) continue
          matches.push(d)
        }
        return { looked: newest.length, matches, rule }
      })
    },

    /**
     * Fires the rules on time that are due (the SLA alerts' loop, plugins/sla-alerts.ts): for each,
     * the discussions in its states whose moment came, in pages of `batch`, each in a transaction
     * that takes its row's lock, holds the conditions again and claims the firing (rule, discussion,
     * moment): one process fires it, once; one due while every process slept fires at the next run.
     * How many fired.
     */
    async runDue(batch = 100): Promise<number> {
      const now = new Date(clock())
      let fired = 0
      for (const rule of await timeRules(port)) {
        const ready = readyConditions(rule.conditions)
        const anchor = rule.since === 'created' ? discussions.createdAt : rule.since === 'last_comment' ? discussions.lastUpdatedAt : discussions.updatedAt
        // At least this much time by the clock: business minutes are never more than the clock's.
        const cutoff = new Date(now.getTime() - rule.afterMinutes! * 60_000)
        let after: { at: Date; id: number } | undefined
        for (;;) {
          const page = await port.db
            .select({ id: discussions.id, number: discussions.number, at: anchor })
            .from(discussions)
            .where(
              and(
                scanFilter(port, rule),
                lte(anchor, cutoff),
                after ? or(gt(anchor, after.at), and(eq(anchor, after.at), gt(discussions.id, after.id))) : undefined,
                sql`not exists (select 1 from ${ruleFirings} where ${ruleFirings.ruleId} = ${rule.id} and ${ruleFirings.discussionId} = ${discussions.id} and ${ruleFirings.anchorAt} = ${anchor})`,
              ),
            )
            .orderBy(asc(anchor), asc(discussions.id))
            .limit(batch)
          for (const candidate of page) {
            const done = await port.atomic(async (tx) => {
              const d = await getIn(tx, rule.siteId, candidate.number, true)
              if (!rule.conditions.states!.includes(d.state) || !conditionsHold(ready, subjectOf(d)) || !(await dueNow(tx, rule, d, now))) return false
              // A rule on time's actions start rules on events, as any write's do.
              const write: WriteContext = { clock, events, authorOf }
              return fire(tx, write, events, rule, d, 'time', anchorOf(d, rule.since))
            })
            if (done) fired++
          }
          if (page.length < batch) break
          const last = page[page.length - 1]!
          after = { at: last.at, id: last.id }
        }
      }
      return fired
    },
  }
}

export type RuleStore = ReturnType<typeof createRuleStore>
