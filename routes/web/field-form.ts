import { shapeOf, type Field, type FieldValues } from '../../db/stores/fields.ts'
import { fieldValue, type FieldValue } from '../../lib/fields.ts'

// A site's custom fields on its pages (issue 72; docs/decisions.md, "Custom fields"): as the
// discussion page and the support site's new-discussion form show them (views/field_inputs.eta),
// and what their forms send, as the API's `fields` takes it.

/** A discussion's custom fields as its page shows them: the site's fields with its values, and the values of fields removed since. */
export function fieldsShown(defined: Field[], values: FieldValues) {
  const shown = (value: FieldValue | undefined) => (value === undefined ? '' : Array.isArray(value) ? value.join(', ') : typeof value === 'boolean' ? (value ? 'Yes' : 'No') : String(value))
  const active = defined.map((f) => {
    const value = values[f.key]
    const choices = JSON.parse(f.choices) as string[]
    return { key: f.key, name: f.name, kind: f.kind, shown: shown(value), value: value === undefined || Array.isArray(value) ? '' : String(value), choices: choices.map((c) => ({ choice: c, chosen: Array.isArray(value) ? value.includes(c) : value === c })) }
  })
  const removed = Object.entries(values).filter(([key]) => !defined.some((f) => f.key === key)).map(([key, value]) => ({ key, shown: shown(value) }))
  return { active, removed }
}

/**
 * What the fields form sends, as the API's `fields` takes it: each field of the site by `f.<key>`,
 * an empty one cleared, a number as a number (what is not one goes as text, refused with the
 * field's name), yes/no from yes or no, several choices as the boxes ticked (none: cleared).
 */
export function fieldsGiven(defined: Field[], body: Record<string, unknown>): Record<string, unknown> {
  const given: Record<string, unknown> = {}
  for (const f of defined) {
    const raw = body[`f.${f.key}`]
    if (f.kind === 'choices') {
      given[f.key] = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map(String)
      continue
    }
    const text = typeof raw === 'string' ? raw.trim() : ''
    if (text === '') given[f.key] = null
    else if (f.kind === 'number') given[f.key] = Number.isFinite(Number(text)) ? Number(text) : text
    else if (f.kind === 'yes_no') given[f.key] = text === 'yes' ? true : text === 'no' ? false : text
    else given[f.key] = text
  }
  return given
}

/**
 * A customer's new-discussion form, for the fields shown to customers (`defined`): the values to
 * keep, and what is wrong, by key (a value its kind does not take; a required field left empty).
 * `shown` is what to show again in the form when something is wrong: what they wrote, as they wrote it.
 */
export function customerFields(defined: Field[], body: Record<string, unknown>): { values: FieldValues; problems: Record<string, string>; shown: FieldValues } {
  const given = fieldsGiven(defined, body)
  const values: FieldValues = {}
  const problems: Record<string, string> = {}
  const shown: FieldValues = {}
  for (const f of defined) {
    const raw = given[f.key]
    if (raw === null || (Array.isArray(raw) && raw.length === 0)) {
      if (f.required) problems[f.key] = `${f.name} is required.`
      continue
    }
    const checked = fieldValue(shapeOf(f), raw)
    if ('problem' in checked) {
      problems[f.key] = `${f.name} ${checked.problem}.`
      shown[f.key] = String(raw)
    } else {
      values[f.key] = checked.value!
      shown[f.key] = checked.value!
    }
  }
  return { values, problems, shown }
}
