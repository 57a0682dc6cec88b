import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { negotiateCsv, SERIALIZED_JSON } from '../../lib/accept.ts'
import { breakdowns, columnsOf, reportNames, reportQuery, reports, toCsv, type ReportName } from '../../lib/reports.ts'
import { InvalidRequest } from '../../plugins/http/validation.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { notFound } from './discussions/http-errors.ts'
import { answeredAsDiscussions } from './administrators-only.ts'

// The reports through the API (issue 69; docs/decisions.md, "Reports"): read by the site's support
// staff, as JSON or, asked with `Accept: text/csv`, as CSV (one line per period or group, then the
// total). They read the day rows the writes keep (db/stores/reports.ts), never the discussions.

export const ReportSummary = Type.Object({
  name: Type.Enum(reportNames),
  description: Type.String(),
  href: Type.String({ format: 'uri' }),
})
export const ReportListing = Type.Object({ reports: Type.Array(ReportSummary) })

const Figures = { additionalProperties: Type.Union([Type.Number(), Type.Null()]) }
export const ReportLine = Type.Object(
  {
    key: Type.String({ description: 'The period\'s first day (YYYY-MM-DD), or the id of the supporter or category, the channel or the tag; "" for nobody and for the total.' }),
    label: Type.String({ description: 'What the line is called on the page.' }),
  },
  { ...Figures, description: 'The key, its label, and the report\'s figures (`columns`): counts, and times in minutes (null: none to measure).' },
)
export const ReportResource = Type.Object({
  name: Type.Enum(reportNames),
  description: Type.String(),
  by: Type.String({ description: `${breakdowns.join(', ')}, or field.<key>: a custom field of one choice, several or yes/no.` }),
  from: Type.String({ format: 'date' }),
  to: Type.String({ format: 'date' }),
  columns: Type.Array(Type.String(), { description: 'The figures of each line, in order (the CSV\'s columns after key and label).' }),
  lines: Type.Array(ReportLine),
  total: ReportLine,
})

const ReportQuery = Type.Object({
  from: Type.Optional(Type.String({ description: 'The first day (UTC), YYYY-MM-DD; 29 days before `to` when not given.' })),
  to: Type.Optional(Type.String({ description: 'The last day (UTC), YYYY-MM-DD, included; today when not given.' })),
  by: Type.Optional(Type.String({ description: `How its lines are broken down: ${breakdowns.join(', ')}, or field.<key> (a custom field of discussions of one choice, several choices or yes/no: a line per value); day when not given.` })),
})
const ReportParams = Type.Object({ site: SiteParams.properties.site, name: Type.String({ description: `The report: ${reportNames.join(', ')}.` }) })
const tags = ['Reports']

const reportRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  answeredAsDiscussions(fastify)
  const base = (permalink: string) => `${fastify.urls.site(permalink)}/reports`
  fastify.get('/:site/reports', { schema: { tags, operationId: 'listReports', summary: 'The reports there are', params: SiteParams, response: { 200: ReportListing, 404: ErrorBody } } }, async (request) => {
    const { site } = request.auth!
    return { reports: reportNames.map((name) => ({ name, description: reports[name], href: `${base(site.permalink)}/${name}` })) }
  })
  fastify.get(
    '/:site/reports/:name',
    {
      config: { anyMediaType: true },
      schema: {
        tags,
        operationId: 'getReport',
        summary: 'One report over a range of days, by period or by supporter, category, channel, tag or custom field; CSV with Accept: text/csv',
        params: ReportParams,
        querystring: ReportQuery,
        response: { 200: ReportResource, 400: InvalidRequestBody, 404: ErrorBody, 406: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const answer = negotiateCsv(request.headers.accept)
      if (answer === null) return reply.code(406).send({ error: 'not_acceptable', message: 'A report is answered as JSON or, with "Accept: text/csv", as CSV.' })
      const name = request.params.name as ReportName
      if (!(reportNames as string[]).includes(name)) throw notFound(`there is no report named ${JSON.stringify(request.params.name)}; there are ${reportNames.join(', ')}`)
      const query = reportQuery(request.query, new Date(fastify.clock()).toISOString().slice(0, 10))
      if ('problem' in query) throw new InvalidRequest([{ field: query.field, problem: query.problem }])
      const report = await fastify.reports.report(site.id, name, query.by, query.from, query.to)
      const columns = columnsOf(name)
      if (answer === 'csv') {
        const filename = `${site.permalink}-${name}-by-${query.by}-${query.from}-${query.to}.csv`
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="${filename}"`)
          .send(toCsv(['key', 'label', ...columns], [...report.lines, report.total]) as never)
      }
      request.apiMediaType = answer
      return reply.type(SERIALIZED_JSON).send({ ...report, description: reports[name], columns } as never)
    },
  )
}

export default reportRoutes
