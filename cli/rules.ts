import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { OPERATOR } from '../db/stores/audit.ts'
import type { Rule, RuleInput } from '../db/stores/rules.ts'
import { actionNamesFrom, describeAction, MAX_ACTIONS, MAX_RULES, ruleActionTypes, ruleAnchors, ruleTriggers, type ActionNames, type RuleAction, type RuleAnchor, type RuleConditions, type RuleTrigger } from '../lib/rules.ts'
import { shown } from '../lib/terminal-text.ts'
import { RuleActionSchema, RuleConditionsSchema } from '../routes/api/rules.ts'
import { admin, type Stores } from './admin.ts'
import { UsageError, type Command, type Options, type Values } from './command.ts'

// A site's rules on the command line (issue 70; docs/decisions.md, "Rules and macros"), as the API
// has them: list them in order, add one (on events or on time; its conditions and actions as the
// API's JSON), switch one on or off, remove one, and try one on the site's discussions (the dry
// run: nothing saved). Each write is the rule store's own transaction, so the commands take none
// of their own (`atomic: false`); what they print follows the commit.

/** The site's rules, over the command's database (not part of every command's stores). */
const rulesOf = ({ engine, box, events }: Stores, clock: () => number) => engine.rules(clock, box, events)

const MAX_MINUTES = 525_600
const ID = /^[1-9]\d{0,9}$/

/** When a rule runs: its events, or its time. */
function when(rule: Pick<Rule, 'events' | 'afterMinutes' | 'since' | 'business'>): string {
  if (rule.afterMinutes === null) return `on ${rule.events.join(', ')}`
  return `after ${rule.afterMinutes} min since ${rule.since}${rule.business ? ', in business hours' : ''}`
}

/** One line of a rule: position, id, name, on or off, when, its conditions (the API's JSON), its actions in words. */
function line(rule: Rule, names: ActionNames): string {
  const conditions = Object.keys(rule.conditions).length === 0 ? 'every discussion' : JSON.stringify(rule.conditions)
  const actions = rule.actions.map((action) => describeAction(action, names)).join('; ')
  return [rule.position, rule.id, rule.name, rule.enabled ? 'on' : 'off', when(rule), conditions, actions].map((field) => shown(String(field))).join('\t')
}

/** The names actions point at (the site's categories, staff and saved replies), read once. */
async function actionNames(stores: Stores, siteId: number, clock: () => number): Promise<ActionNames> {
  const [{ categories }, staff, replies] = await Promise.all([stores.categories.list(siteId, 0, -1), stores.users.staffOf(siteId), stores.engine.savedReplies(clock).list(siteId)])
  return actionNamesFrom(categories, staff, replies)
}

// Each JSON option checked as the API checks its body, each problem named by the option and the place.
const checks = new Map<TSchema, ReturnType<typeof Compile<TSchema>>>()
const actionSchemas = new Map((RuleActionSchema.anyOf as TSchema[]).map((schema) => [(schema as { properties: { type: { enum: string[] } } }).properties.type.enum[0]!, schema]))

/** The first problem of `value` against `schema`, in words, or undefined. */
function problemOf(schema: TSchema, value: unknown): string | undefined {
  let check = checks.get(schema)
  if (!check) checks.set(schema, (check = Compile(schema)))
  if (check.Check(value)) return undefined
  // A property it does not take comes twice: once named (a false schema), once as the whole's.
  const error = [...check.Errors(value)].find((e) => e.keyword !== 'additionalProperties')!
  const at = error.instancePath.slice(1).replaceAll('/', '.')
  const words = error.keyword === 'boolean' ? 'is not one it takes' : error.keyword === 'enum' ? `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}` : error.message
  return at === '' ? words : `${at} ${words}`
}

function parsedJson(option: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UsageError(`--${option} is not JSON: ${(error as Error).message}`)
  }
}

function conditionsOf(value: unknown): RuleConditions | undefined {
  if (value === undefined) return undefined
  const conditions = parsedJson('conditions', String(value))
  if (typeof conditions !== 'object' || conditions === null || Array.isArray(conditions)) throw new UsageError('--conditions takes a JSON object, such as {"states":["open"],"tags":["vip"]}')
  const problem = problemOf(RuleConditionsSchema, conditions)
  if (problem) throw new UsageError(`--conditions: ${problem}`)
  return conditions as RuleConditions
}

function actionsOf(value: unknown): RuleAction[] {
  if (value === undefined) throw new UsageError('--actions is needed: a JSON array, such as [{"type":"add_tags","tags":["vip"]}]')
  const actions = parsedJson('actions', String(value))
  if (!Array.isArray(actions) || actions.length === 0 || actions.length > MAX_ACTIONS) throw new UsageError(`--actions takes a JSON array of 1 to ${MAX_ACTIONS} actions, such as [{"type":"add_tags","tags":["vip"]}]`)
  for (const [i, action] of actions.entries()) {
    const type = (action as { type?: unknown } | null)?.type
    const schema = typeof type === 'string' ? actionSchemas.get(type) : undefined
    if (!schema) throw new UsageError(`--actions: action ${i + 1} has no type it knows; its "type" is one of: ${ruleActionTypes.join(', ')}`)
    const problem = problemOf(schema, action)
    if (problem) throw new UsageError(`--actions: action ${i + 1} (${String(type)}): ${problem}`)
  }
  return actions as RuleAction[]
}

/** The rule the options describe, as the store takes it; usage errors for what does not fit. */
function ruleInput(values: Values): RuleInput {
  if (typeof values.name !== 'string') throw new UsageError('--name is needed: what the rule is called')
  const onTime = values['after-minutes'] !== undefined
  if (onTime === (values.events !== undefined)) throw new UsageError('a rule runs on events or after a time: give --events or --after-minutes, one of them')
  if (!onTime && (values.since !== undefined || values.business === true)) throw new UsageError('--since and --business are for a rule on time (--after-minutes)')
  const input: RuleInput = { name: values.name, actions: actionsOf(values.actions) }
  const conditions = conditionsOf(values.conditions)
  if (conditions) input.conditions = conditions
  if (onTime) {
    const minutes = String(values['after-minutes'])
    if (!/^\d{1,6}$/.test(minutes) || Number(minutes) < 1 || Number(minutes) > MAX_MINUTES) throw new UsageError(`--after-minutes takes whole minutes from 1 to ${MAX_MINUTES}, not "${minutes}"`)
    input.afterMinutes = Number(minutes)
    input.business = values.business === true
    if (values.since !== undefined) {
      if (!(ruleAnchors as readonly string[]).includes(String(values.since))) throw new UsageError(`--since is one of ${ruleAnchors.join(', ')}, not "${String(values.since)}"`)
      input.since = values.since as RuleAnchor
    }
  } else {
    const events = String(values.events).split(/[,\s]+/u).filter(Boolean)
    const unknown = events.find((event) => !(ruleTriggers as readonly string[]).includes(event))
    if (events.length === 0 || unknown !== undefined) throw new UsageError(`--events takes events, comma-separated, each one of: ${ruleTriggers.join(', ')}${unknown === undefined ? '' : `; not "${unknown}"`}`)
    input.events = [...new Set(events)] as RuleTrigger[]
  }
  if (values.position !== undefined) {
    const position = String(values.position)
    if (!ID.test(position) || Number(position) > MAX_RULES) throw new UsageError(`--position takes a place from 1 to ${MAX_RULES}, not "${position}"`)
    input.position = Number(position)
  }
  if (values.off === true) input.enabled = false
  return input
}

/** A rule id from its argument, or a usage error. */
function ruleId(id: string): number {
  if (!ID.test(id)) throw new UsageError(`a rule id is a number, not "${id}"`)
  return Number(id)
}

const RULE_OPTIONS: Options = {
  name: { type: 'string', value: 'TEXT', about: 'what it is called, unique in the site (required)' },
  events: { type: 'string', value: 'EVENTS', about: `a rule on events: what starts it, comma-separated: ${ruleTriggers.join(', ')}` },
  'after-minutes': { type: 'string', value: 'MINUTES', about: 'a rule on time: it fires this many minutes after --since (it needs conditions naming its states)' },
  since: { type: 'string', value: 'WHEN', about: `a rule on time counts from: ${ruleAnchors.join(', ')}`, fallback: 'updated' },
  business: { type: 'boolean', about: "a rule on time counts minutes of the business hours of the discussion's SLA policy (around the clock without one)" },
  conditions: {
    type: 'string',
    value: 'JSON',
    about: 'what must hold, as the API takes it: a JSON object of states, categories, channels, tags, no_tags, owner, domains, words, awaiting; such as {"states":["open"],"tags":["vip"]}',
    fallback: 'every discussion',
  },
  actions: {
    type: 'string',
    value: 'JSON',
    about: `what it does, as the API takes it (required): a JSON array of actions, each a type (${ruleActionTypes.join(', ')}) and what it needs; such as [{"type":"add_tags","tags":["vip"]}]`,
  },
  position: { type: 'string', value: 'N', about: 'its place in the order (1: runs first)', fallback: 'the end' },
  off: { type: 'boolean', about: 'saved switched off' },
}
/** The dry run takes add's options, so that a line tried can be saved as it is; where it goes and whether it is on change nothing it finds. */
const DRY_RUN_OPTIONS: Options = {
  ...RULE_OPTIONS,
  position: { type: 'string', value: 'N', about: 'taken as add takes it; the dry run does not use it' },
  off: { type: 'boolean', about: 'taken as add takes it; the dry run does not use it' },
}
const RULE_USAGE = '--name TEXT (--events EVENTS | --after-minutes MINUTES [--since WHEN] [--business]) [--conditions JSON] --actions JSON [--position N] [--off]'

export const ruleCommands: Command[] = [
  admin(
    {
      words: ['rules', 'list'],
      args: ['<site>'],
      usage: 'rules list <site>',
      summary: "The site's rules in the order they run, one line each: position, id, name, on or off, when it runs, its conditions, what it does.",
      atomic: false,
    },
    async (stores, [permalink], _values, io) => {
      const site = await stores.sites.get(permalink!)
      const rules = await rulesOf(stores, io.clock).list(site.id)
      if (rules.length === 0) return
      const names = await actionNames(stores, site.id, io.clock)
      for (const rule of rules) io.stdout(`${line(rule, names)}\n`)
    },
  ),
  admin(
    {
      words: ['rules', 'add'],
      args: ['<site>'],
      options: RULE_OPTIONS,
      usage: `rules add <site> ${RULE_USAGE}`,
      summary: 'A rule for the site: on events (a discussion created, a reply, a change) or after a time, what must hold, and what it does. Try it first with rules dry-run.',
      atomic: false,
    },
    async (stores, [permalink], values, io) => {
      const input = ruleInput(values)
      const site = await stores.sites.get(permalink!)
      const made = await rulesOf(stores, io.clock).add(site.id, input, OPERATOR)
      io.stdout(`rule ${made.id} of ${site.permalink}: ${line(made, await actionNames(stores, site.id, io.clock))}\n`)
      if (made.actions.some((a) => a.type === 'add_note' || a.type === 'send_reply')) {
        io.stderr('service-desk: a rule saved here has no author, so its notes and replies are left out when it fires; an administrator who saves it (the API, or the administration page) signs them\n')
      }
    },
  ),
  ...(['enable', 'disable'] as const).map((verb) =>
    admin(
      {
        words: ['rules', verb],
        args: ['<site>', '<id>'],
        usage: `rules ${verb} <site> <id>`,
        summary: verb === 'enable' ? 'Switch a rule of the site on: it runs from then on.' : 'Switch a rule of the site off: it stays in its place and runs no more until switched on.',
        atomic: false,
      },
      async (stores, [permalink, id], _values, io) => {
        const rule = ruleId(id!)
        const site = await stores.sites.get(permalink!)
        const changed = await rulesOf(stores, io.clock).update(site.id, rule, { enabled: verb === 'enable' }, OPERATOR)
        io.stdout(`rule ${changed.id} of ${site.permalink} ("${shown(changed.name)}") is ${changed.enabled ? 'on' : 'off'}\n`)
      },
    ),
  ),
  admin(
    {
      words: ['rules', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'rules remove <site> <id>',
      summary: "Remove a rule of the site; its firings stay in the discussions' history.",
      atomic: false,
    },
    async (stores, [permalink, id], _values, io) => {
      const rule = ruleId(id!)
      const site = await stores.sites.get(permalink!)
      await rulesOf(stores, io.clock).remove(site.id, rule, OPERATOR)
      io.stdout(`rule ${rule} of ${site.permalink} removed\n`)
    },
  ),
  admin(
    {
      words: ['rules', 'dry-run'],
      args: ['<site>'],
      options: DRY_RUN_OPTIONS,
      usage: `rules dry-run <site> ${RULE_USAGE}`,
      summary:
        "Which of the site's newest 1,000 discussions (deleted and spam aside) a rule would fire on as they are now, one line each: number, title, what it would do. Nothing is saved or changed; the options are add's, so the same line with add saves it.",
      atomic: false,
    },
    async (stores, [permalink], values, io) => {
      const input = ruleInput(values)
      const site = await stores.sites.get(permalink!)
      const { looked, matches, rule } = await rulesOf(stores, io.clock).dryRun(site.id, input)
      const names = await actionNames(stores, site.id, io.clock)
      const would = rule.actions.map((action) => describeAction(action, names)).join('; ')
      for (const d of matches) io.stdout(`${[d.number, d.title, would].map((field) => shown(String(field))).join('\t')}\n`)
      io.stderr(`${matches.length} of the ${looked} discussions looked at would match; nothing was saved\n`)
    },
  ),
]
