import { OPERATOR } from '../db/stores/audit.ts'
import { StoreError } from '../db/stores/errors.ts'
import type { Field } from '../db/stores/fields.ts'
import { fieldAudiences, fieldKinds, fieldSubjects, type FieldAudience, type FieldKind, type FieldSubject } from '../lib/fields.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A site's custom fields on the command line (issue 72; docs/decisions.md, "Custom fields"), as
// the API and Administration -> Fields have them: list them (the removed ones too on request), add
// one, remove one (its values stay readable on their discussions).

/** One line of a field: id, key, kind, what it is kept on, audience, required or not, its choices, and removed when it is. */
function line(f: Field): string {
  const choices = (JSON.parse(f.choices) as string[]).join(',')
  return [f.id, f.key, f.kind, f.of, f.audience, f.required ? 'required' : 'optional', choices === '' ? '-' : choices, f.name, f.removedAt ? `removed ${f.removedAt.toISOString()}` : '-'].map((field) => shown(String(field))).join('\t')
}

const idOf = (id: string) => {
  if (!/^[1-9]\d{0,9}$/.test(id)) throw new UsageError(`a field id is a number, not "${id}"`)
  return Number(id)
}

export const fieldCommands: Command[] = [
  admin(
    {
      words: ['field', 'list'],
      args: ['<site>'],
      options: { removed: { type: 'boolean', about: 'the removed fields too' } },
      usage: 'field list <site> [--removed]',
      summary: "The site's custom fields in their order, one line each: id, key, kind, what it is kept on (discussion or customer), who sees it, required or optional, its choices, its name, and when it was removed.",
      atomic: false,
    },
    async ({ sites, fields }, [permalink], values, io) => {
      const site = await sites.get(permalink!)
      for (const f of await fields.list(site.id, { removed: values.removed === true })) io.stdout(`${line(f)}\n`)
    },
  ),
  admin(
    {
      words: ['field', 'add'],
      args: ['<site>', '<key>', '<name>'],
      options: {
        kind: { type: 'string', value: 'KIND', about: `what it holds: ${fieldKinds.join(', ')}` },
        audience: { type: 'string', value: 'WHO', about: 'team (the team only) or customers (asked on the support site too)', fallback: 'team' },
        required: { type: 'boolean', about: "a customer's new discussion must give it" },
        of: { type: 'string', value: 'WHAT', about: "what its values are kept on: discussion, or customer (the team's record of each customer)", fallback: 'discussion' },
        choice: { type: 'string', value: 'TEXT', multiple: true, about: 'one of its choices, for the kinds choice and choices (give it again for each)' },
      },
      usage: 'field add <site> <key> <name> --kind KIND [--of discussion|customer] [--audience team|customers] [--required] [--choice TEXT]...',
      summary: 'A new custom field, last in the order: its key (lower-case letters, digits and _) names it in the API, the filter and the search, and never changes.',
    },
    async ({ sites, fields }, [permalink, key, name], values, io) => {
      if (typeof values.kind !== 'string' || !(fieldKinds as readonly string[]).includes(values.kind)) throw new UsageError(`--kind is one of ${fieldKinds.join(', ')}`)
      const audience = values.audience ?? 'team'
      if (typeof audience !== 'string' || !(fieldAudiences as readonly string[]).includes(audience)) throw new UsageError(`--audience is ${fieldAudiences.join(' or ')}, not "${String(audience)}"`)
      const site = await sites.get(permalink!)
      const choices = (values.choice as unknown as string[] | undefined) ?? []
      const of = values.of ?? 'discussion'
      if (typeof of !== 'string' || !(fieldSubjects as readonly string[]).includes(of)) throw new UsageError(`--of is ${fieldSubjects.join(' or ')}, not "${String(of)}"`)
      const input = { key: key!, name: name!, kind: values.kind as FieldKind, audience: audience as FieldAudience, required: values.required === true, choices, of: of as FieldSubject }
      const made = await (async () => fields.add(site.id, input, OPERATOR))().catch((error: unknown) => {
        // Said with what it is about: "choices must be 1 to 100".
        throw error instanceof StoreError && error.field ? new StoreError(`${error.field} ${error.message}`, error.code) : error
      })
      io.stdout(`field ${made.id} of ${site.permalink}: ${line(made)}\n`)
    },
  ),
  admin(
    {
      words: ['field', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'field remove <site> <id>',
      summary: 'Remove a custom field (its id from `field list`): it takes no value from now on; the values given stay on their discussions, and its key stays its own.',
    },
    async ({ sites, fields }, [permalink, id], _values, io) => {
      const number = idOf(id!)
      const site = await sites.get(permalink!)
      await fields.remove(site.id, number, OPERATOR)
      io.stdout(`field ${number} of ${site.permalink} removed\n`)
    },
  ),
]
