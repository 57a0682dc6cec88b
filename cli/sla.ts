import { OPERATOR } from '../db/stores/audit.ts'
import type { SlaPolicyRow } from '../db/stores/sla-policies.ts'
import { slaChannels, type SlaChannel } from '../lib/sla.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A site's SLA policies on the command line (issue 68; docs/decisions.md, "SLA policies"), as the
// API has them: add one (at the end of the order, or at --position), list them in order, remove one.

const list = (value: unknown) => (typeof value === 'string' ? value.split(/[,\s]+/u).filter(Boolean) : [])

/** Whole minutes from an option, null when not given; a usage error otherwise. */
function minutes(option: string, value: unknown): number | null {
  if (value === undefined) return null
  if (typeof value !== 'string' || !/^\d{1,7}$/.test(value)) throw new UsageError(`--${option} takes whole minutes, not "${String(value)}"`)
  return Number(value)
}

/** One line of a policy: position, id, name, what it chooses, its hours and its targets in minutes. */
function line(p: SlaPolicyRow): string {
  const { categories, tags, domains, channels } = p.conditions
  const chooses = [categories.length ? `categories ${categories.join(',')}` : '', tags.length ? `tags ${tags.join(',')}` : '', domains.length ? `domains ${domains.join(',')}` : '', channels.length ? `channels ${channels.join(',')}` : '']
    .filter(Boolean)
    .join('; ')
  const target = (name: string, value: number | null) => (value === null ? '' : `${name} ${value} min`)
  const targets = [target('first reply', p.targets.firstReply), target('next reply', p.targets.nextReply), target('resolution', p.targets.resolution)].filter(Boolean).join(', ')
  return [p.position, p.id, p.name, chooses || 'every discussion', p.scheduleId === null ? 'around the clock' : `schedule ${p.scheduleId}`, targets, `warn ${p.warnBefore} min before`].map((field) => shown(String(field))).join('\t')
}

export const slaCommands: Command[] = [
  admin(
    {
      words: ['sla', 'add'],
      args: ['<site>', '<name>'],
      options: {
        'first-reply': { type: 'string', value: 'MINUTES', about: 'the first reply of the team is due this many minutes (of the hours) after the customer wrote' },
        'next-reply': { type: 'string', value: 'MINUTES', about: "the team's answer to each later message of the customer" },
        resolution: { type: 'string', value: 'MINUTES', about: 'resolved within this many minutes, the time it waits on the customer aside' },
        schedule: { type: 'string', value: 'ID', about: 'the business hours the minutes count in (schedule list); around the clock without' },
        warn: { type: 'string', value: 'MINUTES', about: 'warn this many minutes before a due time (30; 0: never)' },
        categories: { type: 'string', value: 'IDS', about: 'only discussions of these categories (comma-separated ids)' },
        tags: { type: 'string', value: 'TAGS', about: 'only discussions carrying one of these tags' },
        domains: { type: 'string', value: 'DOMAINS', about: "only customers of these domains (example.com: its subdomains too)" },
        channels: { type: 'string', value: 'CHANNELS', about: `only discussions that came by: ${slaChannels.join(', ')}` },
        position: { type: 'string', value: 'N', about: 'its place in the order (1: looked at first); the end without' },
      },
      usage: 'sla add <site> <name> [--first-reply MINUTES] [--next-reply MINUTES] [--resolution MINUTES] [--schedule ID] [--warn MINUTES] [--categories IDS] [--tags TAGS] [--domains DOMAINS] [--channels CHANNELS] [--position N]',
      summary: 'An SLA policy for the site: which discussions it chooses and how soon the team replies and resolves them.',
    },
    async ({ sites, slaPolicies }, [permalink, name], values, io) => {
      const ids = (option: string, value: unknown) =>
        list(value).map((id) => {
          if (!/^[1-9]\d{0,9}$/.test(id)) throw new UsageError(`--${option} takes ids, not "${id}"`)
          return Number(id)
        })
      const [scheduleId] = ids('schedule', values.schedule)
      const [position] = ids('position', values.position)
      const site = await sites.get(permalink!)
      const made = await slaPolicies.add(
        site.id,
        {
          name: name!,
          ...(position !== undefined && { position }),
          conditions: { categories: ids('categories', values.categories), tags: list(values.tags), domains: list(values.domains), channels: list(values.channels) as SlaChannel[] },
          scheduleId: scheduleId ?? null,
          targets: { firstReply: minutes('first-reply', values['first-reply']), nextReply: minutes('next-reply', values['next-reply']), resolution: minutes('resolution', values.resolution) },
          warnBefore: minutes('warn', values.warn) ?? 30,
        },
        OPERATOR,
      )
      io.stdout(`SLA policy ${made.id} of ${site.permalink}: ${line(made)}\n`)
    },
  ),
  admin(
    {
      words: ['sla', 'list'],
      args: ['<site>'],
      usage: 'sla list <site>',
      summary: "The site's SLA policies in order, one line each: position, id, name, what it chooses, its hours, its targets.",
      atomic: false,
    },
    async ({ sites, slaPolicies }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      for (const p of await slaPolicies.list(site.id)) io.stdout(`${line(p)}\n`)
    },
  ),
  admin(
    {
      words: ['sla', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'sla remove <site> <id>',
      summary: 'Remove an SLA policy of the site: the discussions it chose have no due times from then on.',
    },
    async ({ sites, slaPolicies }, [permalink, id], _values, io) => {
      if (!/^[1-9]\d{0,9}$/.test(id!)) throw new UsageError(`an SLA policy id is a number, not "${id}"`)
      const site = await sites.get(permalink!)
      const held = await slaPolicies.remove(site.id, Number(id), OPERATOR)
      io.stdout(`SLA policy ${id} of ${site.permalink} removed; discussions whose clocks it ran: ${held}\n`)
    },
  ),
]
