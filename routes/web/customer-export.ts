import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { LINK_MINUTES } from '../../db/stores/customer-links.ts'
import { isStaffRole } from '../../db/stores/staff.ts'
import { sendExport } from '../api/privacy.ts'
import { pageData } from './pages.ts'

// A customer's copy of their data, asked on the support site (issue 74; docs/decisions.md, "A
// customer's data on request"): "Download a copy of your data" mails them a link (a customer link,
// db/stores/customer-links.ts: once, LINK_MINUTES, this site only), so a browser left signed in is
// not enough to take it; the link's page has a button whose answer is the ZIP the administrators'
// export makes (lib/customer-export.ts), recorded in the site's record of changes.

const customerExportRoutes: FastifyPluginAsync = async (fastify) => {
  const { customerLinks, customerData, urls } = fastify
  const help = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/help`
  const notice = (request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string) =>
    reply.page('help_notice', pageData(request, reply, { title, message, help: help(request) }), status)

  fastify.post('/help/export', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const { user, site } = request.web
    if (!user || isStaffRole(user.role)) return reply.redirect(`${help(request)}/sign_in`, 303)
    const asked = await customerLinks.ask({
      siteId: site.id,
      purpose: 'data_export',
      email: user.email,
      address: request.ip,
      mail: (value, siteName) => ({
        subject: `A copy of your data on ${siteName}`,
        text: [
          `You asked for a copy of what ${siteName} holds of you. Open this link within ${LINK_MINUTES} minutes to download it:`,
          `${help(request)}/export/${value}`,
          'It works once. If you did not ask for it, ignore this mail: nothing is sent without the link.',
        ].join('\n\n'),
      }),
    })
    if (asked.kind === 'limited') {
      reply.header('retry-after', String(asked.retryAfter))
      return notice(request, reply, 429, 'Please wait a moment', `Too many links were asked for. Try again in ${Math.ceil(asked.retryAfter / 60)} minutes.`)
    }
    return notice(request, reply, 200, 'Check your mail', `We mailed ${user.email} a link to download a copy of your data. It works once, for ${LINK_MINUTES} minutes.`)
  })

  // The mailed link opens a page with a button; only its POST follows the link (a mail scanner opening every link uses nothing up).
  fastify.get('/help/export/:value', async (request, reply) => {
    return reply.page('confirm_download', pageData(request, reply, { title: 'Download a copy of your data', action: request.url.split('?')[0] }))
  })

  fastify.post('/help/export/:value', { preHandler: fastify.csrfProtection }, async (request, reply) => {
    const { site } = request.web
    const followed = await customerLinks.follow(site.id, 'data_export', (request.params as { value: string }).value)
    const data = followed.kind === 'signed_in' ? await customerData.exportOf(site.id, followed.userId) : undefined
    if (!data) {
      const why = followed.kind === 'expired' ? `It was valid for ${LINK_MINUTES} minutes.` : followed.kind === 'used' ? 'It was used already: each link works once.' : 'It is not a link of this site, or it was changed.'
      return notice(request, reply, 410, 'This link no longer works', `${why} Sign in and ask for a new one on your discussions page.`)
    }
    return sendExport(fastify, reply, site, data, { id: data.account.id, name: data.account.email, via: 'page', address: request.ip }, `${site.permalink}-my-data.zip`)
  })
}

export default customerExportRoutes
