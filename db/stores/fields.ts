import { and, asc, count, eq, inArray, isNull, sql } from '../drizzle.ts'
import type { StorePort, Tables } from '../port.ts'
import type { Clock } from '../../lib/clock.ts'
import { definitionProblem, fieldValue, indexedTexts, MAX_FIELDS, REPORTED_KINDS, reportedValues, type FieldAudience, type FieldKind, type FieldShape, type FieldSubject, type FieldValue } from '../../lib/fields.ts'
import { isUniqueViolation } from '../../lib/database-errors.ts'
import { changedFields, recordChange, type Actor } from './audit.ts'
import { StoreError } from './errors.ts'
import { bumpSiteVersion, lockSite } from './sites.ts'
import { membershipOn } from './staff.ts'

// A site's custom fields (issue 72; lib/fields.ts; docs/decisions.md, "Custom fields"): defined by
// its administrators, given values on its discussions by the team. A discussion keeps its values
// twice, in its row as the API shows them (`fields`, JSON, as its tags are kept) and as the rows of
// field_values a filter finds it by, written in the same transaction. A field removed stays, marked
// removed: its key is never another field's, and its values stay readable on their discussions.

export type Field = Tables['fields']['$inferSelect']

export interface FieldInput {
  key: string
  name: string
  kind: FieldKind
  audience?: FieldAudience
  required?: boolean
  choices?: string[]
  /** What its values are kept on: each discussion (the default), or each customer. */
  of?: FieldSubject
}

export type FieldChange = Partial<Pick<FieldInput, 'name' | 'audience' | 'required' | 'choices'>>

/** A field's values as a discussion's row keeps them: by key. */
export type FieldValues = Record<string, FieldValue>

/** What a value of `field` is checked against (lib/fields.ts): its key, kind and choices. */
export const shapeOf = (field: Field): FieldShape => ({ key: field.key, kind: field.kind, choices: JSON.parse(field.choices) as string[] })

/** The values kept in a discussion's row. */
export const valuesOf = (json: string): FieldValues => JSON.parse(json) as FieldValues

/** The site's fields that take values now (not removed), of its discussions or of its customers, in their order. */
export async function activeFieldsIn(port: StorePort, siteId: number, of: FieldSubject = 'discussion'): Promise<Field[]> {
  const { fields } = port.tables
  return port.db.select().from(fields).where(and(eq(fields.siteId, siteId), isNull(fields.removedAt), eq(fields.of, of))).orderBy(asc(fields.position), asc(fields.id))
}

/**
 * The values after `given` (by key; null clears one) is applied to `before`, checked against the
 * site's fields: a key that is no field of the site, or a value its kind does not take, is refused
 * (invalid, naming `fields.<key>`).
 */
export async function valuesAfter(port: StorePort, siteId: number, before: FieldValues, given: Record<string, unknown>, of: FieldSubject = 'discussion'): Promise<FieldValues> {
  const fields = new Map((await activeFieldsIn(port, siteId, of)).map((f) => [f.key, f]))
  const after: FieldValues = { ...before }
  for (const [key, raw] of Object.entries(given)) {
    const field = fields.get(key)
    if (!field) throw new StoreError(`is not a field of this site's ${of === 'discussion' ? 'discussions' : 'customers'} (GET /<site>/fields lists them)`, 'invalid', `fields.${key}`)
    const checked = fieldValue(shapeOf(field), raw)
    if ('problem' in checked) throw new StoreError(checked.problem, 'invalid', `fields.${key}`)
    if (checked.value === null || (Array.isArray(checked.value) && checked.value.length === 0)) delete after[key]
    else after[key] = checked.value
  }
  return after
}

/** The keys of the site's fields a report is broken down by (REPORTED_KINDS), removed ones too: what was counted stays readable. */
export async function reportedKeysIn(port: StorePort, siteId: number): Promise<Set<string>> {
  const { fields } = port.tables
  const rows = await port.db.select({ key: fields.key }).from(fields).where(and(eq(fields.siteId, siteId), eq(fields.of, 'discussion'), inArray(fields.kind, [...REPORTED_KINDS])))
  return new Set(rows.map((r) => r.key))
}

/** What a discussion's values (its row's JSON) are counted under in the reports; no query for a discussion without values. */
export async function reportedFieldsIn(port: StorePort, siteId: number, json: string): Promise<string[]> {
  return json === '{}' ? [] : reportedValues(valuesOf(json), await reportedKeysIn(port, siteId))
}

/** The JSON a row keeps of `values`: keys sorted, so the same values are the same text. */
export const valuesJson = (values: FieldValues): string => JSON.stringify(Object.fromEntries(Object.entries(values).sort(([a], [b]) => a.localeCompare(b))))

/** The rows a filter finds discussion `discussionId` by, made again from its values (in the write's transaction). */
export async function indexValuesIn(port: StorePort, siteId: number, discussionId: number, values: FieldValues): Promise<void> {
  const { fieldValues } = port.tables
  await port.db.delete(fieldValues).where(eq(fieldValues.discussionId, discussionId))
  if (Object.keys(values).length === 0) return
  const ids = new Map((await activeFieldsIn(port, siteId)).map((f) => [f.key, f.id]))
  const rows = Object.entries(values).flatMap(([key, value]) => (ids.has(key) ? indexedTexts(value).map((text) => ({ siteId, discussionId, fieldId: ids.get(key)!, value: text })) : []))
  if (rows.length > 0) await port.db.insert(fieldValues).values(rows)
}

/** The unique key's refusal, from the database's own (two writes at once cannot both pass). */
async function keyUnique<T>(key: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error)) throw new StoreError(`is "${key}", which a field of this site has (or had: a removed field's key stays its own)`, 'conflict', 'key')
    throw error
  }
}

function checkedDefinition(input: { key: string; name: string; kind: FieldKind; choices: string[]; of: FieldSubject; audience: FieldAudience; required: boolean }) {
  const problem = definitionProblem(input)
  if (problem) throw new StoreError(problem.problem, 'invalid', problem.field)
}

export function createFieldStore(port: StorePort, clock: Clock) {
  const { db, tables: { fields } } = port
  const mine = (siteId: number, id: number) => and(eq(fields.siteId, siteId), eq(fields.id, port.wide(id)))
  const notFound = (id: number) => new StoreError(`there is no field ${id} on this site`, 'not_found', 'id')

  return {
    /** The site's fields in their order, of its discussions or its customers or both; the removed ones too when asked (for export). */
    list: async (siteId: number, { removed = false, of }: { removed?: boolean; of?: FieldSubject } = {}): Promise<Field[]> =>
      db
        .select()
        .from(fields)
        .where(and(eq(fields.siteId, siteId), removed ? undefined : isNull(fields.removedAt), of === undefined ? undefined : eq(fields.of, of)))
        .orderBy(asc(fields.position), asc(fields.id)),

    find: async (siteId: number, id: number): Promise<Field | undefined> => (await db.select().from(fields).where(mine(siteId, id)))[0],

    /** A new field, last in the order; at most MAX_FIELDS a site (counted under the site's lock). */
    add(siteId: number, input: FieldInput, by: Actor): Promise<Field> {
      const choices = input.choices ?? []
      const of = input.of ?? 'discussion'
      checkedDefinition({ ...input, choices, of, audience: input.audience ?? 'team', required: input.required ?? false })
      return keyUnique(input.key, () =>
        port.atomic(async (tx) => {
          await lockSite(tx, siteId)
          const [{ n }] = await tx.db.select({ n: count() }).from(fields).where(and(eq(fields.siteId, siteId), isNull(fields.removedAt)))
          if (Number(n) >= MAX_FIELDS) throw new StoreError(`a site has at most ${MAX_FIELDS} fields; remove one first`, 'limit')
          const [{ last }] = await tx.db.select({ last: sql<number | null>`max(${fields.position})` }).from(fields).where(eq(fields.siteId, siteId))
          const [made] = await tx.db
            .insert(fields)
            .values({ siteId, key: input.key, name: input.name.trim(), kind: input.kind, audience: input.audience ?? 'team', required: input.required ?? false, choices: JSON.stringify(choices), of, position: (last ?? 0) + 1, createdAt: new Date(clock()) })
            .returning()
          await recordChange(tx, clock, by, siteId, 'field.created', made!.key, { kind: made!.kind, audience: made!.audience, of: made!.of })
          await bumpSiteVersion(tx, siteId)
          return made!
        }),
      )
    },

    /**
     * Its name, audience, whether it is required, and its choices (a choice taken away stays on the
     * discussions that have it until they are changed); its key and kind never change.
     */
    async update(siteId: number, id: number, change: FieldChange, by: Actor): Promise<Field> {
      return port.atomic(async (tx) => {
        const [before] = await tx.locked(tx.db.select().from(fields).where(mine(siteId, id)))
        if (!before || before.removedAt !== null) throw notFound(id)
        const next = { name: change.name?.trim() ?? before.name, audience: change.audience ?? before.audience, required: change.required ?? before.required, choices: change.choices ?? (JSON.parse(before.choices) as string[]) }
        checkedDefinition({ key: before.key, kind: before.kind, of: before.of, ...next })
        const [after] = await tx.db.update(fields).set({ ...next, choices: JSON.stringify(next.choices) }).where(eq(fields.id, before.id)).returning()
        const difference = changedFields({ name: before.name, audience: before.audience, required: before.required, choices: JSON.parse(before.choices) as string[] }, next)
        if (Object.keys(difference.after).length > 0) await recordChange(tx, clock, by, siteId, 'field.changed', before.key, difference)
        await bumpSiteVersion(tx, siteId)
        return after!
      })
    },

    /** A customer of the site with their values of its customer fields; undefined when they are none of its customers. */
    async customer(siteId: number, userId: number): Promise<Customer | undefined> {
      const { memberships, users } = port.tables
      const [found] = await db
        .select({ id: users.id, name: users.name, email: users.email, fields: memberships.fields })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(membershipOn(memberships, siteId, userId), eq(memberships.role, 'customer')))
      return found && { ...found, fields: valuesOf(found.fields) }
    },

    /**
     * A customer's values of the site's customer fields, as a discussion's are given (by key; null
     * clears one; each checked by its kind, refused naming `fields.<key>`), each change a line of
     * the record of changes; undefined when they are none of its customers.
     */
    async setCustomerValues(siteId: number, userId: number, given: Record<string, unknown>, by: Actor): Promise<Customer | undefined> {
      const { memberships, users } = port.tables
      return port.atomic(async (tx) => {
        const [row] = await tx.locked(
          tx.db.select({ fields: memberships.fields, email: users.email }).from(memberships).innerJoin(users, eq(users.id, memberships.userId)).where(and(membershipOn(memberships, siteId, userId), eq(memberships.role, 'customer'))),
        )
        if (!row) return undefined
        const before = valuesOf(row.fields)
        const kept = valuesJson(await valuesAfter(tx, siteId, before, given, 'customer'))
        if (kept !== row.fields) {
          await tx.db.update(memberships).set({ fields: kept }).where(membershipOn(memberships, siteId, userId))
          const after = valuesOf(kept)
          const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key])).sort()
          const difference = { before: Object.fromEntries(keys.map((key) => [key, before[key] ?? null])), after: Object.fromEntries(keys.map((key) => [key, after[key] ?? null])) }
          await recordChange(tx, clock, by, siteId, 'customer.fields_changed', row.email, difference)
        }
        return createFieldStore(tx, clock).customer(siteId, userId)
      })
    },

    /** Removes a field: no value is given to it from now on, and no filter finds by it; those given stay readable. */
    async remove(siteId: number, id: number, by: Actor): Promise<void> {
      await port.atomic(async (tx) => {
        const [removed] = await tx.db.update(fields).set({ removedAt: new Date(clock()) }).where(and(mine(siteId, id), isNull(fields.removedAt))).returning()
        if (!removed) throw notFound(id)
        await recordChange(tx, clock, by, siteId, 'field.removed', removed.key)
        await bumpSiteVersion(tx, siteId)
      })
    },
  }
}

/** A customer of a site, as its team sees them. */
export interface Customer {
  id: number
  name: string
  email: string
  fields: FieldValues
}

export type FieldStore = ReturnType<typeof createFieldStore>
