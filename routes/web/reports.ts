import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { REPORTED_KINDS } from '../../lib/fields.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { breakdowns, columnsOf, reportNames, reportQuery, reports, shownMinutes, toCsv, type Breakdown, type ReportLine, type ReportName } from '../../lib/reports.ts'
import { columnChart, type Series } from '../../lib/svg-chart.ts'
import { PAGE } from './queue.ts'
import { pageData, queryString, requireSupporter } from './pages.ts'

// {site_url}/reports: the site's reports for its support staff (issue 69; docs/decisions.md,
// "Reports"), as the API's /<site>/reports/<name> has them: a form (which report, by what, from
// and to), a chart drawn on the server (lib/svg-chart.ts), the table of every figure, and the
// same as CSV ({site_url}/reports/csv).

const BREAKDOWN_NAMES: Record<Breakdown, string> = { day: 'Day', week: 'Week', month: 'Month', supporter: 'Supporter', category: 'Category', channel: 'Channel', tag: 'Tag' }
const REPORT_TITLES: Record<ReportName, string> = { volume: 'Volume', first_reply: 'First reply time', resolution: 'Resolution time', sla: 'SLA kept and breached', satisfaction: 'Satisfaction' }
const COLUMN_NAMES: Record<string, string> = {
  created: 'Created',
  resolved: 'Resolved',
  reopened: 'Reopened',
  replies: 'Replies',
  count: 'Discussions',
  median_minutes: 'Median',
  p90_minutes: '90th percentile',
  median_business_minutes: 'Median, business hours',
  p90_business_minutes: '90th percentile, business hours',
  kept: 'Kept',
  breached: 'Breached',
  kept_percent: 'Kept %',
  good: 'Good',
  not_good: 'Not good',
  good_percent: 'Good %',
}

/** What each report draws: its series, from its lines, and their unit. */
function chartOf(name: ReportName, lines: readonly ReportLine[]): { series: Series[]; unit: string } {
  const of = (column: string, label: string): Series => ({ name: label, values: lines.map((l) => (l[column] as number | null) ?? null) })
  const hours = (column: string, label: string): Series => ({ name: label, values: lines.map((l) => (l[column] === null ? null : Math.round(((l[column] as number) / 60) * 10) / 10)) })
  switch (name) {
    case 'volume':
      return { series: [of('created', 'Created'), of('resolved', 'Resolved'), of('reopened', 'Reopened')], unit: 'discussions' }
    case 'first_reply':
    case 'resolution':
      return { series: [hours('median_minutes', 'Median'), hours('p90_minutes', '90th percentile'), hours('median_business_minutes', 'Median, business hours')], unit: 'hours' }
    case 'sla':
      return { series: [of('kept', 'Kept'), of('breached', 'Breached')], unit: 'discussions' }
    case 'satisfaction':
      return { series: [of('good', 'Good'), of('not_good', 'Not good')], unit: 'ratings' }
  }
}

const reportPageRoutes: FastifyPluginAsync = async (fastify) => {
  const { reports: store, urls } = fastify
  const today = () => new Date(fastify.clock()).toISOString().slice(0, 10)

  /** The report asked by the query, or what is wrong with the query (said on the page). */
  async function asked(request: FastifyRequest) {
    const query = request.query as Record<string, unknown>
    const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : undefined)
    const name = (reportNames as string[]).includes(text('report') ?? '') ? (text('report') as ReportName) : 'volume'
    const found = reportQuery({ from: text('from'), to: text('to'), by: text('by') }, today())
    if ('problem' in found) return { name, problem: `“${found.field === 'by' ? 'By' : found.field === 'from' ? 'From' : 'To'}” ${found.problem}.`, form: { from: text('from') ?? '', to: text('to') ?? '', by: text('by') ?? 'day' } }
    const form = { from: found.from, to: found.to, by: found.by }
    try {
      return { name, query: found, report: await store.report(request.web.site.id, name, found.by, found.from, found.to) }
    } catch (error) {
      // A field.<key> that is no field reported by: said on the page, as a wrong date is.
      if (error instanceof StoreError && error.field === 'by') return { name, problem: `“By” ${error.message}.`, form }
      throw error
    }
  }

  async function page(request: FastifyRequest, reply: FastifyReply) {
    const found = await asked(request)
    const base = urls.siteWeb(request.web.site.permalink)
    // The fields of discussions of few values (lib/fields.ts REPORTED_KINDS) break a report down too.
    const reported = (await fastify.fields.list(request.web.site.id, { of: 'discussion' })).filter((f) => REPORTED_KINDS.includes(f.kind))
    const byOptions = [...breakdowns.map((b) => ({ value: b as string, label: BREAKDOWN_NAMES[b] })), ...reported.map((f) => ({ value: `field.${f.key}`, label: `Field: ${f.name}` }))]
    const options = { reports: reportNames.map((n) => ({ value: n, label: REPORT_TITLES[n], description: reports[n] })), breakdowns: byOptions }
    if ('problem' in found) {
      return reply.page('reports', pageData(request, reply, { title: 'Reports', ...options, chosen: { report: found.name, ...found.form }, error: found.problem, report: null }), 400)
    }
    const { name, query, report } = found
    const columns = columnsOf(name)
    const minutes = (column: string) => column.endsWith('_minutes')
    const shown = (line: ReportLine) => ({ label: line.label, cells: columns.map((c) => (minutes(c) ? shownMinutes(line[c] as number | null) : line[c] === null ? '—' : String(line[c]))) })
    const chart = chartOf(name, report.lines)
    // A field by its name; one removed since (still reported by) by its key.
    const chosenBy = byOptions.find((o) => o.value === query.by)
    const byName = query.by.startsWith('field.') ? (chosenBy?.label.slice('Field: '.length) ?? query.by.slice('field.'.length)) : (chosenBy?.label ?? query.by).toLowerCase()
    const title = `${REPORT_TITLES[name]} by ${byName}, ${query.from} to ${query.to}`
    return reply.page(
      'reports',
      pageData(request, reply, {
        title: 'Reports',
        ...options,
        chosen: { report: name, ...query },
        error: null,
        report: {
          title,
          description: reports[name],
          chart: report.lines.length === 0 ? null : columnChart({ id: 'report-chart', title, unit: chart.unit, labels: report.lines.map((l) => l.label), series: chart.series }),
          columns: columns.map((c) => COLUMN_NAMES[c] ?? c),
          lines: report.lines.map(shown),
          total: shown(report.total),
          csv: `${base}/reports/csv${queryString({ report: name, by: query.by, from: query.from, to: query.to })}`,
          days: 'Days are UTC days.',
        },
      }),
    )
  }

  fastify.get('/reports', { ...PAGE, preHandler: requireSupporter }, page)

  fastify.get('/reports/csv', { ...PAGE, preHandler: requireSupporter }, async (request, reply) => {
    const found = await asked(request)
    if ('problem' in found) return reply.code(400).type('text/plain; charset=utf-8').send(`${found.problem}\n`)
    const { name, query, report } = found
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${request.web.site.permalink}-${name}-by-${query.by}-${query.from}-${query.to}.csv"`)
      .send(toCsv(['key', 'label', ...columnsOf(name)], [...report.lines, report.total]))
  })
}

export default reportPageRoutes
