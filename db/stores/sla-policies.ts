import { and, asc, eq, inArray, sql } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { NEVER, slaChannels, type SlaChannel, type SlaConditions, type SlaTargets } from '../../lib/sla.ts'
import { tagOf } from '../../lib/team-queue.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { namedOncePerSite, StoreError } from './errors.ts'
import { bumpRulesVersion, bumpSiteVersion, lockSite } from './sites.ts'

// A site's SLA policies (issue 68; docs/decisions.md, "SLA policies"), one store for both engines:
// ordered rules choosing discussions by category, tag, the customer's domain and channel, each
// with targets in minutes of a schedule of business hours (db/stores/schedules.ts) or around the
// clock. The clocks themselves are the discussions' (db/stores/sla.ts).

/** A site keeps at most this many policies; a condition lists at most MAX_LISTED values. */
export const MAX_POLICIES = 20
export const MAX_LISTED = 50
export const MAX_POLICY_NAME = 100
/** The longest target: a year of minutes. The longest warning: a day before. */
export const MAX_TARGET_MINUTES = 525_600
export const MAX_WARN_MINUTES = 1_440

export interface SlaPolicyRow {
  id: number
  siteId: number
  /** 1 is looked at first. */
  position: number
  name: string
  conditions: SlaConditions
  scheduleId: number | null
  targets: SlaTargets
  warnBefore: number
  createdAt: Date
  updatedAt: Date
}

export interface SlaPolicyInput {
  name: string
  /** Where it goes in the order (1: first); the end when not given. */
  position?: number
  conditions: SlaConditions
  scheduleId: number | null
  targets: SlaTargets
  warnBefore: number
}

/** A change of a policy: what is given replaces what it was, the conditions and targets one by one. */
export interface SlaPolicyChange {
  name?: string
  position?: number
  conditions?: Partial<SlaConditions>
  scheduleId?: number | null
  targets?: Partial<SlaTargets>
  warnBefore?: number
}

const listOf = (text: string) => (text === '' ? [] : text.split(' '))
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/

function rowOf(row: Tables['slaPolicies']['$inferSelect']): SlaPolicyRow {
  return {
    id: row.id,
    siteId: row.siteId,
    position: row.position,
    name: row.name,
    conditions: { categories: listOf(row.categories).map(Number), tags: listOf(row.tags), domains: listOf(row.domains), channels: listOf(row.channels) as SlaChannel[] },
    scheduleId: row.scheduleId,
    targets: { firstReply: row.firstReplyMinutes, nextReply: row.nextReplyMinutes, resolution: row.resolutionMinutes },
    warnBefore: row.warnMinutes,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}

/** The input's own fields checked (a StoreError naming the field), the lists kept without repeats. */
export function checkedPolicy(input: Partial<SlaPolicyInput>): Partial<SlaPolicyInput> {
  const out = { ...input }
  if (input.name !== undefined) {
    const name = input.name.trim()
    if (name === '' || name.length > MAX_POLICY_NAME || holdsNul(name)) throw new StoreError(`must be 1 to ${MAX_POLICY_NAME} characters`, 'invalid', 'name')
    out.name = name
  }
  if (input.conditions) {
    const { categories, tags, domains, channels } = input.conditions
    for (const [field, list] of Object.entries({ categories, tags, domains, channels })) {
      if (list.length > MAX_LISTED) throw new StoreError(`at most ${MAX_LISTED}`, 'invalid', field)
    }
    const kept = tags.map((text) => {
      const found = tagOf(text)
      if ('problem' in found) throw new StoreError(`tag ${JSON.stringify(text.slice(0, 50))}: ${found.problem}`, 'invalid', 'tags')
      return found.tag
    })
    const domainsKept = domains.map((text) => {
      const domain = text.trim().toLowerCase().replace(/^@/, '')
      if (!DOMAIN.test(domain)) throw new StoreError(`"${text.slice(0, 260)}" is not a domain (example.com)`, 'invalid', 'domains')
      return domain
    })
    const badId = categories.find((id) => !(Number.isInteger(id) && id >= 1 && id <= 2_147_483_647))
    if (badId !== undefined) throw new StoreError(`${badId} is not a category id`, 'invalid', 'categories')
    const unknown = channels.find((channel) => !(slaChannels as readonly string[]).includes(channel))
    if (unknown !== undefined) throw new StoreError(`"${unknown}" is not a channel: ${slaChannels.join(', ')}`, 'invalid', 'channels')
    out.conditions = { categories: [...new Set(categories)], tags: [...new Set(kept)], domains: [...new Set(domainsKept)], channels: [...new Set(channels)] }
  }
  if (input.targets) {
    const { firstReply, nextReply, resolution } = input.targets
    for (const [field, minutes] of Object.entries({ first_reply_minutes: firstReply, next_reply_minutes: nextReply, resolution_minutes: resolution })) {
      if (minutes !== null && !(Number.isInteger(minutes) && minutes >= 1 && minutes <= MAX_TARGET_MINUTES)) throw new StoreError(`must be whole minutes from 1 to ${MAX_TARGET_MINUTES}, or null`, 'invalid', field)
    }
  }
  if (input.warnBefore !== undefined && !(Number.isInteger(input.warnBefore) && input.warnBefore >= 0 && input.warnBefore <= MAX_WARN_MINUTES)) {
    throw new StoreError(`must be whole minutes from 0 (no warning) to ${MAX_WARN_MINUTES}`, 'invalid', 'warn_minutes')
  }
  return out
}

/** A policy without a single target would choose discussions and promise nothing. */
function promisesSomething(targets: SlaTargets) {
  if (targets.firstReply === null && targets.nextReply === null && targets.resolution === null) throw new StoreError('a policy promises something: give at least one target', 'invalid', 'first_reply_minutes')
}

/** What the record of changes says of a policy. */
const shown = (p: SlaPolicyRow) => ({
  name: p.name,
  position: p.position,
  categories: p.conditions.categories.join(' '),
  tags: p.conditions.tags.join(' '),
  domains: p.conditions.domains.join(' '),
  channels: p.conditions.channels.join(' '),
  schedule: p.scheduleId,
  first_reply_minutes: p.targets.firstReply,
  next_reply_minutes: p.targets.nextReply,
  resolution_minutes: p.targets.resolution,
  warn_minutes: p.warnBefore,
})

export function createSlaPolicyStore(port: StorePort, clock: Clock) {
  const { db, tables: { categories, discussions, schedules, slaPolicies } } = port
  const notFound = (id: number) => new StoreError(`there is no SLA policy ${id} on this site`, 'not_found', 'sla_policy')

  /** The site's policies in order, read on `tx`. */
  const ordered = async (tx: StorePort, siteId: number) =>
    (await tx.db.select().from(slaPolicies).where(eq(slaPolicies.siteId, siteId)).orderBy(asc(slaPolicies.position), asc(slaPolicies.id))).map(rowOf)

  /** The categories and the schedule a policy names are the site's: refused by field otherwise. */
  async function checkReferences(tx: StorePort, siteId: number, input: Partial<SlaPolicyInput>) {
    const wanted = input.conditions?.categories ?? []
    if (wanted.length > 0) {
      const found = new Set((await tx.db.select({ id: categories.id }).from(categories).where(and(eq(categories.siteId, siteId), inArray(categories.id, wanted)))).map((c) => c.id))
      const missing = wanted.find((id) => !found.has(id))
      if (missing !== undefined) throw new StoreError(`${missing} is not a category of this site`, 'invalid', 'categories')
    }
    if (input.scheduleId !== undefined && input.scheduleId !== null) {
      const [schedule] = await tx.db.select({ id: schedules.id }).from(schedules).where(and(eq(schedules.siteId, siteId), eq(schedules.id, tx.wide(input.scheduleId))))
      if (!schedule) throw new StoreError(`${input.scheduleId} is not a schedule of this site`, 'invalid', 'schedule_id')
    }
  }

  /** Writes the positions of the policies in this order (1 first), those that moved only. */
  async function reorder(tx: StorePort, order: SlaPolicyRow[]) {
    for (const [i, policy] of order.entries()) {
      if (policy.position !== i + 1) await tx.db.update(slaPolicies).set({ position: i + 1 }).where(eq(slaPolicies.id, policy.id))
    }
  }

  const columnsOf = (input: Partial<SlaPolicyInput>) => ({
    ...(input.name !== undefined && { name: input.name }),
    ...(input.conditions && {
      categories: input.conditions.categories.join(' '),
      tags: input.conditions.tags.join(' '),
      domains: input.conditions.domains.join(' '),
      channels: input.conditions.channels.join(' '),
    }),
    ...(input.scheduleId !== undefined && { scheduleId: input.scheduleId }),
    ...(input.targets && { firstReplyMinutes: input.targets.firstReply, nextReplyMinutes: input.targets.nextReply, resolutionMinutes: input.targets.resolution }),
    ...(input.warnBefore !== undefined && { warnMinutes: input.warnBefore }),
  })

  return {
    /** The site's policies, in the order they are looked at. */
    list: (siteId: number): Promise<SlaPolicyRow[]> => ordered(port, siteId),

    async find(siteId: number, id: number): Promise<SlaPolicyRow | undefined> {
      const [row] = await db.select().from(slaPolicies).where(and(eq(slaPolicies.siteId, siteId), eq(slaPolicies.id, port.wide(id))))
      return row && rowOf(row)
    },

    /** A new policy, at `position` or last; at most MAX_POLICIES a site (counted under the site's lock). */
    async add(siteId: number, input: SlaPolicyInput, by?: Actor): Promise<SlaPolicyRow> {
      const checked = checkedPolicy(input) as SlaPolicyInput
      return namedOncePerSite('an SLA policy', checked.name, () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const order = await ordered(tx, siteId)
          if (order.length >= MAX_POLICIES) throw new StoreError(`a site keeps at most ${MAX_POLICIES} SLA policies; remove one first`, 'limit')
          await checkReferences(tx, siteId, checked)
          promisesSomething(checked.targets)
          const at = new Date(clock())
          const [row] = await tx.db
            .insert(slaPolicies)
            .values({ siteId, position: order.length + 1, ...columnsOf(checked), name: checked.name, createdAt: at, updatedAt: at })
            .returning()
          const made = rowOf(row!)
          const index = Math.min(Math.max((checked.position ?? order.length + 1) - 1, 0), order.length)
          await reorder(tx, [...order.slice(0, index), made, ...order.slice(index)])
          made.position = index + 1
          await bumpRulesVersion(tx, siteId)
          await recordChange(tx, clock, by, siteId, 'sla_policy.created', made.name, shown(made))
          return made
        }),
      )
    },

    /**
     * Changes what is given, moving it in the order when `position` is. A changed policy applies to
     * each discussion it chooses from that discussion's next change (docs/decisions.md, "SLA policies").
     */
    async update(siteId: number, id: number, change: SlaPolicyChange, by?: Actor): Promise<SlaPolicyRow> {
      return namedOncePerSite('an SLA policy', change.name?.trim(), () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const order = await ordered(tx, siteId)
          const before = order.find((p) => p.id === id)
          if (!before) throw notFound(id)
          // Merged with the policy as it is under the site's lock: two changes at once each keep the other's.
          const checked = checkedPolicy({
            ...change,
            conditions: change.conditions && { ...before.conditions, ...change.conditions },
            targets: change.targets && { ...before.targets, ...change.targets },
          })
          await checkReferences(tx, siteId, checked)
          promisesSomething(checked.targets ?? before.targets)
          const [row] = await tx.db.update(slaPolicies).set({ ...columnsOf(checked), updatedAt: new Date(clock()) }).where(eq(slaPolicies.id, id)).returning()
          const after = rowOf(row!)
          if (checked.position !== undefined) {
            const rest = order.filter((p) => p.id !== id)
            const index = Math.min(Math.max(checked.position - 1, 0), rest.length)
            await reorder(tx, [...rest.slice(0, index), after, ...rest.slice(index)])
            after.position = index + 1
          }
          const difference = changedFields(shown(before), shown(after))
          await bumpRulesVersion(tx, siteId)
          if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'sla_policy.changed', before.name, difference)
          return after
        }),
      )
    },

    /**
     * Removes a policy: the clocks of the discussions it chose stop (no due times; what they
     * breached stays said), each such discussion's version moved on. How many discussions it held.
     */
    async remove(siteId: number, id: number, by?: Actor): Promise<number> {
      return port.atomic(async (tx) => {
        await lockSite(tx, siteId)
        const order = await ordered(tx, siteId)
        const gone = order.find((p) => p.id === id)
        if (!gone) throw notFound(id)
        const held = await tx.db
          .update(discussions)
          .set({ slaPolicyId: null, firstReplyDueAt: null, nextReplyDueAt: null, resolutionDueAt: null, dueAt: NEVER, slaAlertAt: null, slaTold: '', version: sql`${discussions.version} + 1` })
          .where(and(eq(discussions.siteId, siteId), eq(discussions.slaPolicyId, id)))
          .returning({ id: discussions.id })
        // Their versions moved: so does the site's (what a listing's validator is made of).
        if (held.length > 0) await bumpSiteVersion(tx, siteId)
        await tx.db.delete(slaPolicies).where(eq(slaPolicies.id, id))
        await reorder(tx, order.filter((p) => p.id !== id))
        await bumpRulesVersion(tx, siteId)
        await recordChange(tx, clock, by, siteId, 'sla_policy.removed', gone.name, { discussions: held.length })
        return held.length
      })
    },
  }
}

export type SlaPolicyStore = ReturnType<typeof createSlaPolicyStore>

/**
 * A category removed (db/stores/discussions.ts, removeCategory), in its transaction: the policies
 * that choose by it choose by the category its discussions moved into instead. One left choosing
 * by no category at all would choose every discussion: refused, naming it.
 */
export async function policiesFollowCategory(port: StorePort, siteId: number, id: number, intoId: number | null): Promise<void> {
  const { slaPolicies } = port.tables
  let changed = false
  for (const row of await port.db.select().from(slaPolicies).where(eq(slaPolicies.siteId, siteId))) {
    const policy = rowOf(row)
    if (!policy.conditions.categories.includes(id)) continue
    const categories = [...new Set(policy.conditions.categories.map((c) => (c === id ? intoId : c)).filter((c) => c !== null))]
    if (categories.length === 0) throw new StoreError(`the SLA policy "${policy.name}" chooses by this category alone: change it first`, 'conflict', 'category')
    await port.db.update(slaPolicies).set({ categories: categories.join(' ') }).where(eq(slaPolicies.id, policy.id))
    changed = true
  }
  if (changed) await bumpRulesVersion(port, siteId)
}
