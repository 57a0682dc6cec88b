import { FILTERS } from './search-text.ts'

// Custom fields (issue 72; docs/decisions.md, "Custom fields"): what a site's field is, and what a
// value of each kind may be, as pure functions. A value is kept twice: in the discussion's row as
// the API shows it (its `fields`, JSON, like its tags), and as the rows a filter finds it by, each
// a canonical text (db/stores/fields.ts): a number as JavaScript writes it, a date as YYYY-MM-DD
// (which sorts as dates do), yes/no as true or false, each of several choices a row of its own.

export const fieldKinds = ['text', 'number', 'date', 'choice', 'choices', 'yes_no', 'link'] as const
export type FieldKind = (typeof fieldKinds)[number]

/** Who sees a field: the team only, or its customers too (asked on the support site's new discussion form). */
export const fieldAudiences = ['team', 'customers'] as const
export type FieldAudience = (typeof fieldAudiences)[number]

/** What a field's values are kept on: each discussion, or each customer of the site (their company, their plan). */
export const fieldSubjects = ['discussion', 'customer'] as const
export type FieldSubject = (typeof fieldSubjects)[number]

/**
 * The most fields a site has (docs/decisions.md, "Custom fields"): each is read and checked on every
 * write of a discussion and shown on every page of one, and Zammad slows past 150-200 (zammad#4754).
 */
export const MAX_FIELDS = 50
/** A field's key: what the API's `fields`, the listing's `?field.<key>=` and the search's `<key>:` name it by. */
export const FIELD_KEY = /^[a-z][a-z0-9_]{0,39}$/
export const MAX_FIELD_NAME = 100
export const MAX_CHOICES = 100
export const MAX_CHOICE = 100
export const MAX_TEXT_VALUE = 1_000
export const MAX_LINK = 2_048
/** Numbers kept exactly: within what a double holds to the unit. */
const MAX_NUMBER = 1e15

/** What a value of a field is checked against. */
export interface FieldShape {
  key: string
  kind: FieldKind
  choices: readonly string[]
}

/** A value as the API shows it. */
export type FieldValue = string | number | boolean | string[]

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Whether `text` is a date of the calendar, YYYY-MM-DD. */
function isDate(text: string): boolean {
  const m = DATE.exec(text)
  if (!m) return false
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])))
  return at.getUTCFullYear() === Number(m[1]) && at.getUTCMonth() === Number(m[2]) - 1 && at.getUTCDate() === Number(m[3])
}

function isLink(text: string): boolean {
  if (text.length > MAX_LINK || /\s/.test(text)) return false
  try {
    const url = new URL(text)
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== ''
  } catch {
    return false
  }
}

/** Text a person wrote: no control character but the line breaks and tabs. */
const plain = (text: string) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)

/**
 * A value given for `field` (the API's JSON), as it is kept and shown, or the problem with it; null
 * clears the field.
 */
export function fieldValue(field: FieldShape, given: unknown): { value: FieldValue | null } | { problem: string } {
  if (given === null) return { value: null }
  switch (field.kind) {
    case 'text': {
      if (typeof given !== 'string') return { problem: 'must be text' }
      const text = given.trim()
      if (text === '') return { problem: 'must not be blank (null clears it)' }
      if (text.length > MAX_TEXT_VALUE || !plain(text)) return { problem: `must be at most ${MAX_TEXT_VALUE} characters, without control characters` }
      return { value: text }
    }
    case 'number':
      if (typeof given !== 'number' || !Number.isFinite(given) || Math.abs(given) > MAX_NUMBER) return { problem: `must be a number between -${MAX_NUMBER} and ${MAX_NUMBER}` }
      return { value: Object.is(given, -0) ? 0 : given }
    case 'date':
      return typeof given === 'string' && isDate(given) ? { value: given } : { problem: 'must be a date, YYYY-MM-DD' }
    case 'choice':
      return typeof given === 'string' && field.choices.includes(given) ? { value: given } : { problem: `must be one of ${field.choices.join(', ')}` }
    case 'choices': {
      if (!Array.isArray(given) || !given.every((c): c is string => typeof c === 'string' && field.choices.includes(c))) return { problem: `must be a list of ${field.choices.join(', ')}` }
      // In the field's order, each once: the same set is the same value.
      const chosen = field.choices.filter((c) => given.includes(c))
      return { value: chosen }
    }
    case 'yes_no':
      return typeof given === 'boolean' ? { value: given } : { problem: 'must be true or false' }
    case 'link':
      return typeof given === 'string' && isLink(given.trim()) ? { value: given.trim() } : { problem: 'must be an http or https address' }
  }
}

/** The kinds of field a report is broken down by: those of few values. */
export const REPORTED_KINDS: readonly FieldKind[] = ['choice', 'choices', 'yes_no']

/** What a discussion's values are counted under in the reports (lib/reports.ts): `key=value` for each value of the fields in `reported`. */
export function reportedValues(values: Record<string, FieldValue>, reported: ReadonlySet<string>): string[] {
  return Object.entries(values).flatMap(([key, value]) => (reported.has(key) ? indexedTexts(value).map((text) => `${key}=${text}`) : [])).sort()
}

/**
 * Of values given by key (null clearing one), those `fields` take still: a key that is no field of
 * theirs, or a value its kind no longer takes (a choice taken away), is left out. For values kept
 * a while before they are written: a visitor's until their link is followed, a macro's.
 */
export function stillTaken(fields: readonly FieldShape[], given: Record<string, unknown>): Record<string, FieldValue | null> {
  const kept: Record<string, FieldValue | null> = {}
  for (const field of fields) {
    if (!(field.key in given)) continue
    const checked = fieldValue(field, given[field.key])
    if ('value' in checked) kept[field.key] = checked.value
  }
  return kept
}

/** The texts a filter finds a value by: one, or one per choice of several (none for an empty list). */
export function indexedTexts(value: FieldValue): string[] {
  if (Array.isArray(value)) return value
  return [String(value)]
}

/** A filter's text (`?field.<key>=`, the search's `<key>:`) as the rows keep it, or the problem with it. */
export function filterText(field: FieldShape, text: string): { text: string } | { problem: string } {
  switch (field.kind) {
    case 'number': {
      const n = text.trim() === '' ? Number.NaN : Number(text)
      return Number.isFinite(n) ? { text: String(Object.is(n, -0) ? 0 : n) } : { problem: 'must be a number' }
    }
    case 'yes_no':
      return /^(true|yes)$/i.test(text) ? { text: 'true' } : /^(false|no)$/i.test(text) ? { text: 'false' } : { problem: 'must be true or false' }
    case 'date':
      return isDate(text) ? { text } : { problem: 'must be a date, YYYY-MM-DD' }
    case 'choice':
    case 'choices':
      return field.choices.includes(text) ? { text } : { problem: `must be one of ${field.choices.join(', ')}` }
    case 'text':
    case 'link':
      return text.trim() === '' ? { problem: 'must not be blank' } : { text: text.trim() }
  }
}

/** A search's match of a field: one value (as the rows keep it), or for a date a range, both ends included. */
export type FieldMatch = { text: string } | { from: string | null; to: string | null }

/** The day before or after `day` (YYYY-MM-DD). */
function nextDay(day: string, by: 1 | -1): string {
  const [y, m, d] = day.split('-').map(Number)
  return new Date(Date.UTC(y!, m! - 1, d! + by)).toISOString().slice(0, 10)
}

const RANGE = /^(>=|<=|>|<)(.*)$|^(.*)\.\.(.*)$/s

/**
 * The search's `<key>:<text>`: what filterText reads, and for a date field a range as the
 * search's after: and before: are written: `>2026-01-31` (after that day), `>=`, `<`, `<=`, and
 * `2026-01-01..2026-03-31` (both days included). Dates as YYYY-MM-DD sort as text, so a range is
 * a range of the rows' texts.
 */
export function fieldMatch(field: FieldShape, text: string): FieldMatch | { problem: string } {
  const range = field.kind === 'date' ? RANGE.exec(text) : null
  if (!range) return filterText(field, text)
  const wrong = { problem: 'must be a date, YYYY-MM-DD, or a range of dates: >DATE, >=DATE, <DATE, <=DATE, DATE..DATE' }
  const [, op, day, first, last] = range
  if (op !== undefined) {
    if (!isDate(day!)) return wrong
    // After the last day there is: nothing (the next "day" would not sort after it as text).
    if (op === '>') return day === '9999-12-31' ? { problem: 'is a range after the last day there is' } : { from: nextDay(day!, 1), to: null }
    if (op === '>=') return { from: day!, to: null }
    return op === '<' ? { from: null, to: nextDay(day!, -1) } : { from: null, to: day! }
  }
  if (!isDate(first!) || !isDate(last!)) return wrong
  return first! <= last! ? { from: first!, to: last! } : { problem: `is a range that ends (${last}) before it starts (${first})` }
}

/** The problem with a field's definition, or undefined: its key, name, and choices for the kinds that have them. */
export function definitionProblem(field: { key: string; name: string; kind: FieldKind; choices: readonly string[]; of?: FieldSubject; audience?: FieldAudience; required?: boolean }): { field: string; problem: string } | undefined {
  // A customer's field is the team's record of them: never asked of them, never shown to them.
  if (field.of === 'customer' && field.audience === 'customers') return { field: 'audience', problem: "is the team's for a field of customers: their values are the team's record of them" }
  if (field.of === 'customer' && field.required) return { field: 'required', problem: "is for the fields of discussions asked of customers: a field of customers is never asked" }
  if (!FIELD_KEY.test(field.key)) return { field: 'key', problem: 'must be lower-case letters, digits and _, starting with a letter, at most 40' }
  if ((FILTERS as readonly string[]).includes(field.key)) return { field: 'key', problem: `is a filter of the search (${FILTERS.join(', ')}): the search names a field by its key` }
  const name = field.name.trim()
  if (name === '' || name.length > MAX_FIELD_NAME || !plain(name)) return { field: 'name', problem: `must be 1 to ${MAX_FIELD_NAME} characters, without control characters` }
  const chosen = field.kind === 'choice' || field.kind === 'choices'
  if (!chosen) return field.choices.length === 0 ? undefined : { field: 'choices', problem: `are for the kinds choice and choices, not ${field.kind}` }
  if (field.choices.length === 0 || field.choices.length > MAX_CHOICES) return { field: 'choices', problem: `must be 1 to ${MAX_CHOICES}` }
  if (new Set(field.choices).size !== field.choices.length) return { field: 'choices', problem: 'must each be given once' }
  const bad = field.choices.find((c) => c.trim() !== c || c === '' || c.length > MAX_CHOICE || !plain(c))
  return bad === undefined ? undefined : { field: 'choices', problem: `must each be 1 to ${MAX_CHOICE} characters, without spaces around them: "${bad}"` }
}
