import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { eraseCustomer, MAX_RETENTION_MONTHS } from '../../db/stores/erasure.ts'
import type { ErasureMode } from '../../db/values.ts'
import { actorOf } from '../actor.ts'
import { sendExport } from '../api/privacy.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, requireAdministrator, wholeNumber } from './pages.ts'

// {site_url}/admin/privacy: a customer's data on request (issue 74; docs/decisions.md, "A
// customer's data on request"), as the API's /<site>/customers/<id>/export and /erase and
// /<site>/privacy have it: a customer found by their address, what erasing them would do (the dry
// run), their data downloaded, their erasure; and the site's choice for the discussions of an
// erased customer, and its retention, with how many discussions it would delete now.

const NOTICES: Record<string, string> = {
  saved: 'The privacy settings are saved.',
  erased: 'The customer is erased: nothing of them is left on this site. Their data may still be in backups and logs made before (the docs say how long).',
}

const adminPrivacyRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, erasure, customerData, users } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/privacy`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/privacy')] }

  async function privacyPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const { site } = request.web
    const settings = await erasure.settings(site.id)
    const query = request.query as { done?: unknown }
    const given = (request.body as { email?: unknown } | undefined)?.email
    const email = typeof given === 'string' ? given.trim().slice(0, 254) : ''
    const account = email === '' ? undefined : await users.find(email)
    const plan = account && (await erasure.plan(site.id, account.id))
    return reply.page(
      'admin_privacy',
      pageData(request, reply, {
        title: "Customers' data",
        settings,
        due: await erasure.retentionDue(site.id),
        maxMonths: MAX_RETENTION_MONTHS,
        email,
        plan: plan ?? null,
        notFound: email !== '' && !plan,
        notice: NOTICES[String(query.done)] ?? null,
        error: null,
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/admin/privacy', { preHandler: requireAdministrator }, (request, reply) => privacyPage(request, reply))

  // Found by a form posted, so their address is in no address bar, history or request log.
  fastify.post('/admin/privacy/find', { preHandler: [fastify.csrfProtection, requireAdministrator] }, (request, reply) => privacyPage(request, reply))

  fastify.post('/admin/privacy', action, async (request, reply) => {
    const body = request.body as Record<string, unknown>
    const mode = body.erasure === 'delete' || body.erasure === 'anonymise' ? (body.erasure as ErasureMode) : undefined
    const text = typeof body.retention_months === 'string' ? body.retention_months.trim() : ''
    const months = text === '' ? null : (wholeNumber(text, 3) ?? 0)
    if (!mode) return privacyPage(request, reply, 400, { error: 'Choose what erasing a customer does to the discussions they started.' })
    if (months !== null && (months < 1 || months > MAX_RETENTION_MONTHS)) return privacyPage(request, reply, 400, { error: `The retention is a whole number of months from 1 to ${MAX_RETENTION_MONTHS}, or empty to keep the discussions.` })
    await erasure.setSettings(request.web.site.id, { erasureMode: mode, retentionMonths: months }, actorOf(request))
    return reply.redirect(`${base(request)}?done=saved`, 303)
  })

  fastify.post('/admin/privacy/:id/export', action, async (request, reply) => {
    const { site } = request.web
    const data = await customerData.exportOf(site.id, wholeNumber((request.params as { id: string }).id, 10) ?? 0)
    if (!data) return privacyPage(request, reply, 404, { error: 'There is no such customer on this site.' })
    return sendExport(fastify, reply, site, data, actorOf(request), `${site.permalink}-customer-${data.account.id}.zip`)
  })

  fastify.post('/admin/privacy/:id/erase', action, async (request, reply) => {
    const { site } = request.web
    if ((request.body as { understood?: unknown } | undefined)?.understood !== 'yes') {
      return privacyPage(request, reply, 400, { error: 'Tick the box that says you understand an erasure cannot be undone.' })
    }
    const erased = await eraseCustomer(erasure, site.id, wholeNumber((request.params as { id: string }).id, 10) ?? 0, actorOf(request))
    if (!erased) return privacyPage(request, reply, 404, { error: 'There is no such customer on this site.' })
    return reply.redirect(`${base(request)}?done=erased`, 303)
  })
}

export default adminPrivacyRoutes
