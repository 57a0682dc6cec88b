import { reportNames, reportQuery, toCsv, columnsOf, type ReportName } from '../lib/reports.ts'
import { admin } from './admin.ts'
import { UsageError, type Command } from './command.ts'

// The reports on the command line (issue 69; docs/decisions.md, "Reports"): one as CSV, as the
// API answers `Accept: text/csv`; and the day rows made again from the discussions' facts (after
// an upgrade from a version before the reports, or a restore of an older backup).

export const reportCommands: Command[] = [
  admin(
    {
      words: ['reports', 'show'],
      args: ['<site>', '<report>'],
      options: {
        by: { type: 'string', value: 'BY', about: 'day, week, month, supporter, category, channel, tag, or field.<key> (a custom field of one choice, several or yes/no) (day)' },
        from: { type: 'string', value: 'YYYY-MM-DD', about: 'the first day, UTC (29 days before --to)' },
        to: { type: 'string', value: 'YYYY-MM-DD', about: 'the last day, included (today)' },
      },
      usage: `reports show <site> ${reportNames.join('|')} [--by BY] [--from YYYY-MM-DD] [--to YYYY-MM-DD]`,
      summary: 'A report of the site as CSV: a line per period or group, then the total.',
      atomic: false,
    },
    async ({ sites, reports }, [permalink, name], values, io) => {
      if (!(reportNames as string[]).includes(name!)) throw new UsageError(`there is no report "${name}": there are ${reportNames.join(', ')}`)
      const text = (option: string) => (typeof values[option] === 'string' ? (values[option] as string) : undefined)
      const query = reportQuery({ from: text('from'), to: text('to'), by: text('by') }, new Date(io.clock()).toISOString().slice(0, 10))
      if ('problem' in query) throw new UsageError(`--${query.field} ${query.problem}`)
      const site = await sites.get(permalink!)
      const report = await reports.report(site.id, name as ReportName, query.by, query.from, query.to)
      io.stdout(toCsv(['key', 'label', ...columnsOf(name as ReportName)], [...report.lines, report.total]))
    },
  ),
  admin(
    {
      words: ['reports', 'rebuild'],
      args: ['<site>'],
      usage: 'reports rebuild <site>',
      summary: "The site's day rows made again from its discussions' facts: after an upgrade from before the reports.",
    },
    async ({ sites, reports }, [permalink], _values, io) => {
      const site = await sites.get(permalink!)
      const read = await reports.rebuild(site.id)
      io.stdout(`reports of ${site.permalink} made again; discussions read: ${read}\n`)
    },
  ),
]
