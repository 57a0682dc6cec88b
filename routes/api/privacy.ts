import type { FastifyInstance, FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { Actor } from '../../db/stores/audit.ts'
import type { CustomerExport } from '../../db/stores/customer-data.ts'
import { eraseCustomer, MAX_RETENTION_MONTHS, type ErasurePlan, type ErasureStep } from '../../db/stores/erasure.ts'
import { erasureModes } from '../../db/values.ts'
import { exportZip } from '../../lib/customer-export.ts'
import { actorOf } from '../actor.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { notFound } from './discussions/http-errors.ts'
import { administratorsOnly } from './administrators-only.ts'

// A customer's data on request (issue 74; db/stores/customer-data.ts, db/stores/erasure.ts;
// docs/decisions.md, "A customer's data on request"), for the site's administrators: a customer's
// export as a ZIP, their erasure (a dry run first), and the site's privacy settings: what erasing
// does to the discussions a customer started, and after how long its resolved discussions go.

const CustomerParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: "The customer's id: their discussions' author id (GET /{site}/customers?email= finds it)." }) })

export const ErasureBody = Type.Object(
  { dry_run: Type.Optional(Type.Boolean({ description: 'Only say what the erasure would do (the default is to erase).' })) },
  { additionalProperties: false },
)

export const ErasureResource = Type.Object({
  customer: Type.Object({ id: Type.Integer(), name: Type.String(), email: Type.String() }, { description: 'Who, as they were: not kept anywhere once erased.' }),
  dry_run: Type.Boolean(),
  erasure: Type.Enum(erasureModes, { description: "The site's choice for the discussions they started: kept anonymised, or deleted." }),
  discussions: Type.Integer({ description: 'The discussions they started.' }),
  others: Type.Integer({ description: 'The other discussions they wrote in or were copied on: their part taken out.' }),
  comments: Type.Integer({ description: 'Their comments.' }),
  files: Type.Integer({ description: 'Their files (their mails as they came among them).' }),
  mails: Type.Integer({ description: 'Their mails taken in.' }),
  account: Type.Enum(['removed', 'kept'], { description: 'Their account: removed, or kept for the other sites they are on (taken off this one).' }),
  done: Type.Union([
    Type.Object({
      deleted: Type.Array(Type.Integer(), { description: 'The numbers of their discussions deleted.' }),
      anonymised: Type.Array(Type.Integer(), { description: 'The numbers of their discussions kept without them.' }),
      others: Type.Array(Type.Integer(), { description: 'The numbers of the other discussions their part was taken out of.' }),
    }),
    Type.Null(),
  ], { description: 'What the erasure did; null for a dry run.' }),
})

export const PrivacyResource = Type.Object({
  erasure: Type.Enum(erasureModes, { description: 'What erasing a customer does to the discussions they started: anonymise (kept, their text and name taken out) or delete.' }),
  retention_months: Type.Union([Type.Integer({ minimum: 1, maximum: MAX_RETENTION_MONTHS }), Type.Null()], { description: 'Resolved discussions (and those marked spam) are deleted this many months after their last activity; null: kept.' }),
  retention_due: Type.Integer({ description: 'How many discussions the retention would delete now (its dry run).' }),
  href: Type.String({ format: 'uri' }),
})

export const PrivacyChange = Type.Object(
  {
    erasure: Type.Optional(PrivacyResource.properties.erasure),
    retention_months: Type.Optional(PrivacyResource.properties.retention_months),
  },
  { additionalProperties: false },
)

const RetentionQuery = Type.Object({ retention_months: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RETENTION_MONTHS, description: 'The dry run of another retention: how many it would delete now.' })) })

/**
 * Answers a customer's export (db/stores/customer-data.ts) as a ZIP named `fileName`, streamed, kept
 * nowhere, after its line in the record of changes (`by`: an administrator, the operator, or the
 * customer themselves): the API's, the administrators' page's and the customer's own download.
 */
export async function sendExport(fastify: FastifyInstance, reply: FastifyReply, site: { id: number; name: string }, data: CustomerExport, by: Actor, fileName: string) {
  await fastify.customerData.recordExport(site.id, data.account.email, by)
  const zip = await exportZip(site.name, data, (fileId, seq) => fastify.files.piece(fileId, seq), new Date(fastify.clock()))
  return reply.type('application/zip').header('content-disposition', `attachment; filename="${fileName}"`).header('cache-control', 'no-store').send(zip)
}

/** The erasure's answer: the plan, and what was done. */
export function erasureView(plan: ErasurePlan, done: ErasureStep | null): Static<typeof ErasureResource> {
  return { customer: plan.customer, dry_run: done === null, erasure: plan.mode, discussions: plan.discussions, others: plan.others, comments: plan.comments, files: plan.files, mails: plan.mails, account: plan.account, done }
}

const privacyRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  administratorsOnly(fastify, "its customers' data and its privacy settings", { strict: true })
  const none = (id: number) => notFound(`there is no customer ${id} on this site`)

  async function privacyView(siteId: number, permalink: string, months?: number): Promise<Static<typeof PrivacyResource>> {
    const settings = await fastify.erasure.settings(siteId)
    return {
      erasure: settings.erasureMode,
      retention_months: settings.retentionMonths,
      retention_due: await fastify.erasure.retentionDue(siteId, months),
      href: `${fastify.urls.site(permalink)}/privacy`,
    }
  }

  fastify.post(
    '/:site/customers/:id/export',
    {
      schema: {
        tags: ['customers'],
        operationId: 'exportCustomer',
        summary: "Everything the site holds of a customer, as a ZIP of JSON and their files (administrators): what they could see, never an internal note or another customer's text",
        params: CustomerParams,
        response: { 200: Type.Unsafe<string>({ type: 'string', format: 'binary', description: 'application/zip: README.txt, customer.json, discussions/<number>.json, files/.' }), 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const data = await fastify.customerData.exportOf(site.id, request.params.id)
      if (!data) throw none(request.params.id)
      return sendExport(fastify, reply, site, data, actorOf(request), `${site.permalink}-customer-${data.account.id}.zip`)
    },
  )

  fastify.post(
    '/:site/customers/:id/erase',
    {
      schema: {
        tags: ['customers'],
        operationId: 'eraseCustomer',
        summary: "Erase a customer at their request (administrators): their discussions deleted or kept anonymised (the site's choice), their part of the others taken out, their files, mails, links and account gone. dry_run says what it would do",
        params: CustomerParams,
        body: ErasureBody,
        response: { 200: ErasureResource, 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const { site } = request.auth!
      if (request.body.dry_run) {
        const plan = await fastify.erasure.plan(site.id, request.params.id)
        if (!plan) throw none(request.params.id)
        return erasureView(plan, null)
      }
      const erased = await eraseCustomer(fastify.erasure, site.id, request.params.id, actorOf(request))
      if (!erased) throw none(request.params.id)
      return erasureView(erased.plan, erased.done)
    },
  )

  fastify.get(
    '/:site/customers/:id/erasure',
    {
      schema: {
        tags: ['customers'],
        operationId: 'planErasure',
        summary: "What erasing a customer would do now (administrators): the dry run, read-only (the MCP tool's)",
        params: CustomerParams,
        response: { 200: ErasureResource, 400: InvalidRequestBody, 403: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const plan = await fastify.erasure.plan(request.auth!.site.id, request.params.id)
      if (!plan) throw none(request.params.id)
      return erasureView(plan, null)
    },
  )

  fastify.get(
    '/:site/privacy',
    { schema: { tags: ['site'], operationId: 'getPrivacy', summary: "The site's privacy settings: what erasing a customer does, its retention, and how many discussions the retention would delete now", params: SiteParams, querystring: RetentionQuery, response: { 200: PrivacyResource, 400: InvalidRequestBody, 403: ErrorBody } } },
    async (request) => {
      const { site } = request.auth!
      return privacyView(site.id, site.permalink, request.query.retention_months)
    },
  )

  fastify.put(
    '/:site/privacy',
    { schema: { tags: ['site'], operationId: 'changePrivacy', summary: "Set the site's privacy settings (each given; the others stay)", params: SiteParams, body: PrivacyChange, response: { 200: PrivacyResource, 400: InvalidRequestBody, 403: ErrorBody } } },
    async (request) => {
      const { site } = request.auth!
      await fastify.erasure.setSettings(site.id, { erasureMode: request.body.erasure, retentionMonths: request.body.retention_months }, actorOf(request))
      return privacyView(site.id, site.permalink)
    },
  )
}

export default privacyRoutes
