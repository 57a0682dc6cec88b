import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { StoreError } from '../../db/stores/errors.ts'
import { MAX_NOTE, MAX_RULE_NAME, type Rule, type RuleInput } from '../../db/stores/rules.ts'
import { discussionStates } from '../../db/values.ts'
import { describeAction, ruleAnchors, ruleTriggers, settableStates, type ActionNames, type FieldAction, type RuleAction, type RuleAnchor, type RuleConditions, type RuleTrigger } from '../../lib/rules.ts'
import { slaChannels, type SlaChannel } from '../../lib/sla.ts'
import { splitTags } from '../../lib/team-queue.ts'
import { actionNamesOf, ruleInputOf } from '../api/rules.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { actorOf } from '../actor.ts'
import { requireConfirmed } from './confirm.ts'
import { grouped } from '../../lib/numbers.ts'
import { pageData, refusalOf, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/rules: the site's rules for its administrators (issue 70; docs/decisions.md,
// "Rules and macros"), as the API's /<site>/rules has them: in order, each with what starts it,
// what it looks at and what it does, in words; one turned on or off, one removed, a new one added
// at the end, or tried first (the dry run: what it would do to the newest discussions, nothing saved).

const NOTICES: Record<string, string> = {
  added: 'The rule is added: it runs from now on.',
  removed: "The rule is removed; the discussions' history keeps what it did.",
  on: 'The rule is on.',
  off: 'The rule is off: it does nothing until it is turned on again.',
}
const STATUS: Partial<Record<StoreError['code'], number>> = { conflict: 409, not_found: 404, invalid: 400, limit: 429 }
/** How a refusal's field is named in its sentence; the store's words say the rest (db/stores/rules.ts). */
const FIELD_NAMES: Record<string, string> = {
  name: 'The name',
  'conditions.tags': 'The tags it has:',
  'conditions.no_tags': 'The tags it has none of:',
  'conditions.words': 'The words:',
  'conditions.categories': 'A condition',
  'actions[]': 'An action',
}

/** What starts a rule, as the page says it (its checkboxes, its "when"); `time` is a rule on time's firing (the history). */
export const TRIGGER_NAMES: Record<RuleTrigger | 'time', string> = {
  created: 'A discussion is created',
  customer_replied: 'The customer replies',
  team_replied: 'The team replies',
  note_added: 'An internal note is added',
  state_changed: 'Its state changes',
  category_changed: 'Its category changes',
  owner_changed: 'Its owner changes',
  tags_changed: 'Its tags change',
  fields_changed: 'Its custom fields change',
  sla_warning: 'An SLA warning',
  sla_breached: 'An SLA breach',
  time: 'Its time came',
}
const SINCE_NAMES: Record<RuleAnchor, string> = { created: 'it was created', updated: 'its last change', last_comment: 'its newest comment' }
const CHANNEL_NAMES: Record<SlaChannel, string> = { mail: 'Mail', web: 'The support site', api: 'The API' }
/** The states a condition names: deleted is never a rule's. */
const RULE_STATES = discussionStates.filter((s) => s !== 'deleted')
const MAX_MINUTES = 525_600

const lowerFirst = (text: string) => `${text[0]!.toLowerCase()}${text.slice(1)}`
const or = (list: ReadonlyArray<string | number>) => list.join(' or ')

/** The fields of the form, as typed (to show them again): texts, checkbox groups, single checkboxes. */
const TEXTS = ['name', 'after_minutes', 'since', 'category', 'words', 'tags', 'no_tags', 'domains', 'owner', 'awaiting', 'set_category', 'set_owner', 'add_tags', 'remove_tags', 'set_state', 'add_note', 'send_reply', 'notify'] as const
const LISTS = ['events', 'states', 'channels'] as const
const TICKS = ['business', 'mark_spam', 'webhook'] as const
export type RuleForm = Record<(typeof TEXTS)[number], string> & Record<(typeof LISTS)[number], string[]> & Record<(typeof TICKS)[number], boolean>

/** A form's fields (missing ones empty); the macros' form (routes/web/admin-queue.ts) reads its actions' fields with it too. */
export function formOf(body: unknown): RuleForm {
  const fields = Object(body) as Record<string, unknown>
  const text = (name: string) => {
    const value = fields[name]
    return typeof value === 'string' ? value.trim() : ''
  }
  return Object.fromEntries([
    ...TEXTS.map((name) => [name, text(name)]),
    ...LISTS.map((name) => [name, [fields[name]].flat().filter((v): v is string => typeof v === 'string')]),
    ...TICKS.map((name) => [name, fields[name] === 'yes']),
  ]) as RuleForm
}

/** The form as a new page shows it: empty, counted since the last change. */
const blankForm = () => formOf({ since: 'updated' })

/** An id from a select; anything else is 0, which the store refuses as no such thing, in its words. */
const id = (text: string) => wholeNumber(text, 10) ?? 0
/** The values of `allowed` among those given, in its order (anything else a form sends is left out). */
const known = <T extends string>(given: readonly string[], allowed: readonly T[]): T[] => allowed.filter((a) => given.includes(a))
const listed = <T>(list: T[]) => (list.length > 0 ? list : undefined)
const tagsAction = (type: 'add_tags' | 'remove_tags', text: string): FieldAction | undefined => (splitTags(text).length > 0 ? { type, tags: splitTags(text) } : undefined)

/** The field actions of a form (a rule's, or a macro's): category, owner, tags, state; each when chosen. */
export function fieldActionsOf(f: Pick<RuleForm, 'set_category' | 'set_owner' | 'add_tags' | 'remove_tags' | 'set_state'>): FieldAction[] {
  const [state] = known([f.set_state], settableStates)
  const actions: Array<FieldAction | undefined> = [
    f.set_category ? { type: 'set_category', category: id(f.set_category) } : undefined,
    f.set_owner ? { type: 'set_owner', owner: known([f.set_owner], ['none', 'round_robin'] as const)[0] ?? id(f.set_owner) } : undefined,
    tagsAction('add_tags', f.add_tags),
    tagsAction('remove_tags', f.remove_tags),
    state && { type: 'set_state', state },
  ]
  return actions.filter((a) => a !== undefined)
}

function conditionsOf(f: RuleForm): RuleConditions {
  const conditions: RuleConditions = {
    states: listed(known(f.states, RULE_STATES)),
    categories: f.category ? [id(f.category)] : undefined,
    channels: listed(known(f.channels, slaChannels)),
    tags: listed(splitTags(f.tags)),
    no_tags: listed(splitTags(f.no_tags)),
    owner: known([f.owner], ['none', 'anyone'] as const)[0],
    domains: listed(splitTags(f.domains)),
    // Words may be phrases: commas part them.
    words: listed(f.words.split(',').map((w) => w.trim()).filter(Boolean)),
    awaiting: known([f.awaiting], ['team', 'customer'] as const)[0],
  }
  return Object.fromEntries(Object.entries(conditions).filter(([, v]) => v !== undefined))
}

function actionsOf(f: RuleForm): RuleAction[] {
  const actions: Array<RuleAction | undefined> = [
    ...fieldActionsOf(f),
    f.add_note ? { type: 'add_note', body: f.add_note } : undefined,
    f.send_reply ? { type: 'send_reply', saved_reply: id(f.send_reply) } : undefined,
    f.notify ? { type: 'notify', to: known([f.notify], ['owner', 'team'] as const)[0] ?? id(f.notify) } : undefined,
    f.mark_spam ? { type: 'mark_spam' } : undefined,
    f.webhook ? { type: 'webhook' } : undefined,
  ]
  return actions.filter((a) => a !== undefined)
}

/** The form as the store takes it, through the API's own mapping (one shape of a rule, two doors). */
function ruleFrom(f: RuleForm, minutes: number | undefined): RuleInput {
  const body = {
    name: f.name,
    events: listed(known(f.events, ruleTriggers)),
    after_minutes: minutes,
    business: f.business,
    since: known([f.since], ruleAnchors)[0],
    conditions: conditionsOf(f),
    actions: actionsOf(f),
  }
  return ruleInputOf(body as Parameters<typeof ruleInputOf>[0]) as RuleInput
}

/** What starts a rule, in words. */
function whenOf(r: Pick<Rule, 'events' | 'afterMinutes' | 'business' | 'since'>): string {
  if (r.afterMinutes === null) return r.events.map((e, i) => (i === 0 ? TRIGGER_NAMES[e] : lowerFirst(TRIGGER_NAMES[e]))).join(' or ')
  return `${r.afterMinutes} min${r.business ? ' of business hours' : ''} after ${SINCE_NAMES[r.since]}`
}

/** What a rule looks at, in words. */
function conditionsInWords(c: RuleConditions, names: ActionNames): string {
  const owner = (o: NonNullable<RuleConditions['owner']>) => (o === 'none' ? 'owned by nobody' : o === 'anyone' ? 'owned by someone' : `owned by ${or(o.map(names.person))}`)
  const parts = [
    c.states && `state ${or(c.states)}`,
    c.categories && `in ${or(c.categories.map(names.category))}`,
    c.channels && `came by ${or(c.channels.map((ch) => lowerFirst(CHANNEL_NAMES[ch])))}`,
    c.tags && `tagged ${c.tags.join(' and ')}`,
    c.no_tags && `not tagged ${or(c.no_tags)}`,
    c.owner && owner(c.owner),
    c.domains && `from ${or(c.domains)}`,
    c.words && `mentions ${or(c.words.map((w) => `“${w}”`))}`,
    c.awaiting && `awaiting the ${c.awaiting}`,
    c.fields && Object.entries(c.fields).map(([key, values]) => `${key} ${or(values)}`).join(', '),
  ]
  return parts.filter(Boolean).join(', ') || 'every discussion'
}

const adminRuleRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, rules, categories, users, savedReplies } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/rules`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/rules')] }
  // The dry run changes nothing: CSRF and the administrators' check, no confirmation.
  const tryOut = { preHandler: [fastify.csrfProtection, requireAdministrator] }

  async function rulesPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const siteId = request.web.site.id
    const [list, names, all, staff, replies] = await Promise.all([rules.list(siteId), actionNamesOf(fastify, siteId), categories.list(siteId, 0, -1), users.staffOf(siteId), savedReplies.list(siteId)])
    const done = (request.query as { done?: unknown }).done
    return reply.page(
      'admin_rules',
      pageData(request, reply, {
        title: 'Rules',
        rows: list.map((r) => ({
          id: r.id,
          position: r.position,
          name: r.name,
          enabled: r.enabled,
          when: whenOf(r),
          conditions: conditionsInWords(r.conditions, names),
          actions: r.actions.map((a) => describeAction(a, names)).join(', '),
        })),
        triggers: ruleTriggers.map((value) => ({ value, label: TRIGGER_NAMES[value] })),
        anchors: ruleAnchors.map((value) => ({ value, label: `Since ${SINCE_NAMES[value]}` })),
        states: RULE_STATES,
        channels: slaChannels.map((value) => ({ value, label: CHANNEL_NAMES[value] })),
        categories: all.categories.map((c) => ({ id: String(c.id), name: c.name })),
        staff: staff.map((s) => ({ id: String(s.id), name: s.name })),
        replies: replies.map((r) => ({ id: String(r.id), title: r.title })),
        limits: { name: MAX_RULE_NAME, note: MAX_NOTE, minutes: MAX_MINUTES },
        values: blankForm(),
        dryRun: null,
        notice: NOTICES[String(done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  /** The page again with the store's refusal in a sentence, and what was typed. */
  function refused(request: FastifyRequest, reply: FastifyReply, error: StoreError, values = blankForm()) {
    const named = FIELD_NAMES[String(error.field).replace(/\[\d+\]$/, '[]')]
    return rulesPage(request, reply, STATUS[error.code], { values, error: sentence(named ? `${named} ${error.message}` : error.message) })
  }

  /**
   * The form's rule, or the page saying what is wrong with it: its minutes are the page's to check
   * (the API's schema checks them there), the rest is the store's.
   */
  async function withRule(request: FastifyRequest, reply: FastifyReply, work: (rule: RuleInput, values: RuleForm) => Promise<unknown>) {
    const values = formOf(request.body)
    const minutes = wholeNumber(values.after_minutes, 6)
    if (values.after_minutes !== '' && (minutes === undefined || minutes > MAX_MINUTES)) {
      return rulesPage(request, reply, 400, { values, error: `The minutes must be a whole number from 1 to ${grouped(MAX_MINUTES)}.` })
    }
    let answered: unknown
    const error = await refusalOf(async () => (answered = await work(ruleFrom(values, minutes), values)), ['invalid', 'conflict', 'limit'])
    return error ? refused(request, reply, error, values) : answered
  }

  fastify.get('/admin/rules', { preHandler: requireAdministrator }, (request, reply) => rulesPage(request, reply))

  fastify.post('/admin/rules', action, (request, reply) =>
    withRule(request, reply, async (rule) => {
      await rules.add(request.web.site.id, rule, actorOf(request))
      return reply.redirect(`${base(request)}?done=added`, 303)
    }),
  )

  fastify.post('/admin/rules/dry_run', tryOut, (request, reply) =>
    withRule(request, reply, async (rule, values) => {
      const siteId = request.web.site.id
      const { looked, matches, rule: checked } = await rules.dryRun(siteId, rule)
      const names = await actionNamesOf(fastify, siteId)
      const would = checked.actions.map((a) => describeAction(a, names)).join(', ')
      const discussions = urls.siteWeb(request.web.site.permalink)
      const shown = matches.map((d) => ({ number: d.number, title: d.title, href: `${discussions}/discussions/${d.number}`, would }))
      return rulesPage(request, reply, 200, { values, dryRun: { looked, matches: shown } })
    }),
  )

  const byId = (request: FastifyRequest) => wholeNumber((request.params as { id: string }).id, 10) ?? 0

  /** Runs a change of a rule, then back to the page with its notice; a refusal is the page with it. */
  async function changed(request: FastifyRequest, reply: FastifyReply, done: string, work: () => Promise<unknown>) {
    const error = await refusalOf(work, ['invalid', 'not_found'])
    return error ? refused(request, reply, error) : reply.redirect(`${base(request)}?done=${done}`, 303)
  }

  // One button per rule: it sends the switch it turns to.
  fastify.post('/admin/rules/:id/switch', action, (request, reply) => {
    const on = (request.body as { enabled?: unknown }).enabled === 'yes'
    return changed(request, reply, on ? 'on' : 'off', () => rules.update(request.web.site.id, byId(request), { enabled: on }, actorOf(request)))
  })

  fastify.post('/admin/rules/:id/remove', action, (request, reply) => changed(request, reply, 'removed', () => rules.remove(request.web.site.id, byId(request), actorOf(request))))
}

export default adminRuleRoutes
