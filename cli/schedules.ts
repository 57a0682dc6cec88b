import { OPERATOR } from '../db/stores/audit.ts'
import type { ScheduleRow } from '../db/stores/schedules.ts'
import { parseWeek, weekText } from '../lib/business-time.ts'
import { publicHolidays } from '../lib/holidays.ts'
import { shown } from '../lib/terminal-text.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// A site's business hours on the command line (issue 68; docs/decisions.md, "Business hours"), as
// the API has them: add one (its public holidays prefilled from a country's calendar on request),
// list them, remove one.

/** One line of a schedule: id, name, zone, its hours by day, and how many dates of its own. */
function line(s: ScheduleRow): string {
  return [s.id, s.name, s.timeZone, weekText(s.week), `${Object.keys(s.days).length} dates`].map((field) => shown(String(field))).join('\t')
}

export const scheduleCommands: Command[] = [
  admin(
    {
      words: ['schedule', 'add'],
      args: ['<site>', '<name>'],
      options: {
        zone: { type: 'string', value: 'ZONE', about: 'its IANA time zone (Europe/Berlin)' },
        hours: { type: 'string', value: 'HOURS', about: 'its week: "mon-fri 09:00-18:00; sat 10:00-14:00" (a day not named is closed)' },
        holidays: { type: 'string', value: 'PLACE', about: "days off: a country's public holidays (DE, or a region: DE-BE), this year and next" },
      },
      usage: 'schedule add <site> <name> --zone ZONE --hours HOURS [--holidays PLACE]',
      summary: "Business hours for the site: a week's hours in a time zone, and a country's public holidays as days off.",
    },
    async ({ sites, schedules }, [permalink, name], values, io) => {
      if (typeof values.zone !== 'string' || typeof values.hours !== 'string') throw new UsageError('--zone and --hours are needed')
      const week = parseWeek(values.hours)
      if (typeof week === 'string') throw new UsageError(`--hours ${week}`)
      const days = typeof values.holidays === 'string' ? await publicHolidays(values.holidays, io.clock()) : {}
      if (!days) throw new UsageError(`--holidays "${String(values.holidays)}" is not a country (DE) or region (DE-BE) the calendars know`)
      const site = await sites.get(permalink!)
      const made = await schedules.add(site.id, { name: name!, timeZone: values.zone, week, days }, OPERATOR)
      io.stdout(`schedule ${made.id} of ${site.permalink}: ${line(made)}\n`)
    },
  ),
  admin(
    {
      words: ['schedule', 'list'],
      args: ['<site>'],
      usage: 'schedule list <site>',
      summary: "The site's business hours, one line each: id, name, zone, hours, how many dates of their own.",
      atomic: false,
    },
    async ({ sites, schedules }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      for (const s of await schedules.list(site.id)) io.stdout(`${line(s)}\n`)
    },
  ),
  admin(
    {
      words: ['schedule', 'remove'],
      args: ['<site>', '<id>'],
      usage: 'schedule remove <site> <id>',
      summary: 'Remove business hours of the site.',
    },
    async ({ sites, schedules }, [permalink, id], _values, io) => {
      if (!/^[1-9]\d{0,9}$/.test(id!)) throw new UsageError(`a schedule id is a number, not "${id}"`)
      const site = await sites.get(permalink!)
      await schedules.remove(site.id, Number(id), OPERATOR)
      io.stdout(`schedule ${id} of ${site.permalink} removed\n`)
    },
  ),
]
