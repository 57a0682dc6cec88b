import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { StoreError } from '../../db/stores/errors.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { shownMoment } from '../../lib/clock.ts'
import { requireConfirmed } from './confirm.ts'
import { logPageEvent, pageData, requireSupporter, tellPerson } from './pages.ts'

// {site_url}/profile/two_factor: a supporter's second factors (docs/decisions.md, "Second
// factors"): authenticator apps (TOTP) and the ten recovery codes. Adding or removing one asks for
// a recent confirmation (routes/web/confirm.ts). The QR code is drawn here as SVG markup in the
// page, so no image leaves the service and the content security policy stays as it is.

const ID = /^[1-9]\d{0,15}$/

/** The QR code of an otpauth URI, as SVG markup; qrcode is loaded on first use. */
async function qrSvg(uri: string): Promise<string> {
  const { toString } = await import('qrcode')
  return toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' })
}

const secondFactorRoutes: FastifyPluginAsync = async (fastify) => {
  const { secondFactors, urls } = fastify
  const profile = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/profile`
  const issuer = (request: FastifyRequest) => `${request.web.site.name} Service Desk`
  // Adding or removing a factor: CSRF, support staff, and a recent confirmation, back to the profile.
  const change = { preHandler: [fastify.csrfProtection, requireSupporter, requireConfirmed('factor', '/profile')] }

  async function enrollmentPage(request: FastifyRequest, reply: FastifyReply, pending: { id: number; secret: string; uri: string; name: string }, status = 200, error: string | null = null) {
    return reply.page(
      'two_factor_totp',
      pageData(request, reply, { title: 'Add an authenticator app', pending, qr: await qrSvg(pending.uri), error }),
      status,
    )
  }

  async function recoveryPage(request: FastifyRequest, reply: FastifyReply, codes: string[], added: boolean) {
    return reply.page('recovery_codes', pageData(request, reply, { title: 'Recovery codes', codes, added }))
  }

  fastify.post('/profile/two_factor/totp', change, async (request, reply) => {
    const name = (request.body as { name?: unknown } | undefined)?.name
    const user = request.web.user!
    try {
      const started = await secondFactors.startTotp(user.id, typeof name === 'string' ? name : '', user.email, issuer(request))
      return enrollmentPage(request, reply, { ...started, name: String(name).trim() })
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return reply.page('error', pageData(request, reply, { title: 'That did not work', message: sentence(error.message) }), 400)
    }
  })

  fastify.post('/profile/two_factor/totp/:id/confirm', change, async (request, reply) => {
    const { id } = request.params as { id: string }
    const user = request.web.user!
    const pending = ID.test(id) ? await secondFactors.pendingTotp(user.id, Number(id), user.email, issuer(request)) : undefined
    if (!pending) return reply.page('not_found', pageData(request, reply, { title: 'No such enrollment' }), 404)
    const code = (request.body as { code?: unknown } | undefined)?.code
    if (!(await secondFactors.confirmTotp(user.id, pending.id, typeof code === 'string' ? code : ''))) {
      return enrollmentPage(request, reply, pending, 400, 'That code is not the current one of this app. Check the time of your phone, then enter the code it shows now.')
    }
    await logPageEvent(request, 'factor_added', { kind: 'authenticator app', name: pending.name })
    await tellPerson(request, user.email, `A second factor was added to your ${request.web.site.name} account`, [`The authenticator app "${pending.name}" was added to your account ${user.email} on ${shownMoment(new Date(fastify.clock()))}.`])
    // The first factor comes with its recovery codes; a later one keeps the codes there are.
    if ((await secondFactors.recoveryCodesLeft(user.id)) > 0) return reply.redirect(`${profile(request)}?factor=added`, 303)
    return recoveryPage(request, reply, await secondFactors.newRecoveryCodes(user.id), true)
  })

  fastify.post('/profile/two_factor/recovery_codes', change, async (request, reply) => {
    const user = request.web.user!
    if (!(await secondFactors.has(user.id))) return reply.redirect(profile(request), 303)
    return recoveryPage(request, reply, await secondFactors.newRecoveryCodes(user.id), false)
  })

  fastify.post('/profile/two_factor/:id/remove', change, async (request, reply) => {
    const { id } = request.params as { id: string }
    const removed = ID.test(id) ? await secondFactors.remove(request.web.user!.id, Number(id)) : undefined
    if (!removed) return reply.page('not_found', pageData(request, reply, { title: 'No such second factor' }), 404)
    await logPageEvent(request, 'factor_removed', { kind: 'authenticator app', name: removed.name })
    await tellPerson(request, request.web.user!.email, `A second factor was removed from your ${request.web.site.name} account`, [`The authenticator app "${removed.name}" was removed from your account ${request.web.user!.email} on ${shownMoment(new Date(fastify.clock()))}.`])
    return reply.redirect(`${profile(request)}?factor=removed`, 303)
  })
}

/** What the profile page shows of the person's second factors. */
export async function factorsOf(request: FastifyRequest) {
  const { secondFactors } = request.server
  const userId = request.web.user!.id
  const factors = await secondFactors.list(userId)
  return {
    factors: factors.map((factor) => ({ id: factor.id, name: factor.name, added: shownMoment(factor.createdAt), lastUsed: factor.lastUsedAt ? shownMoment(factor.lastUsedAt) : 'never' })),
    recoveryLeft: factors.length > 0 ? await secondFactors.recoveryCodesLeft(userId) : 0,
  }
}

export default secondFactorRoutes
