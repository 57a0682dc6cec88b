import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { FactorKind } from '../../db/values.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { shownMoment } from '../../lib/clock.ts'
import { requireConfirmed } from './confirm.ts'
import { checkName } from '../../db/stores/second-factors.ts'
import { registeredPasskey, registrationOptions } from './passkeys.ts'
import { logPageEvent, notFoundPage, pageData, requireSupporter, tellPerson, wholeNumber } from './pages.ts'

const PROFILE = { path: '/profile', label: 'Back to your profile' }

// {site_url}/profile/two_factor: a supporter's second factors (docs/decisions.md, "Second
// factors"): authenticator apps (TOTP), passkeys (routes/web/passkeys.ts) and the ten recovery
// codes. Adding or removing one asks for a recent confirmation (routes/web/confirm.ts). The QR
// code is drawn here as SVG markup in the page, so no image leaves the service and the content
// security policy stays as it is.

/** What each kind of factor is called on the pages, in the log and in mails. */
export const FACTOR_NAMES: Record<FactorKind, string> = { totp: 'authenticator app', passkey: 'passkey' }

/** A factor name from a form, or '' (which the store refuses with its reason). */
const nameIn = (body: unknown) => {
  const name = (body as { name?: unknown } | undefined)?.name
  return typeof name === 'string' ? name : ''
}

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
  const change = { preHandler: [fastify.csrfProtection, requireSupporter, requireConfirmed('factor', '/profile')], config: { ownAccount: true, accountWide: true } }
  // Adding one is open before a second factor the site requires (routes/web/enrollment.ts).
  const adding = { ...change, config: { beforeSecondFactor: true, ownAccount: true, accountWide: true } }

  async function enrollmentPage(request: FastifyRequest, reply: FastifyReply, pending: { id: number; secret: string; uri: string; name: string }, status = 200, error: string | null = null) {
    return reply.page(
      'two_factor_totp',
      pageData(request, reply, { title: 'Add an authenticator app', pending, qr: await qrSvg(pending.uri), error }),
      status,
    )
  }

  async function recoveryPage(request: FastifyRequest, reply: FastifyReply, codes: string[], added: FactorKind | null) {
    return reply.page('recovery_codes', pageData(request, reply, { title: 'Recovery codes', codes, added: added && FACTOR_NAMES[added] }))
  }

  const refused = (request: FastifyRequest, reply: FastifyReply, message: string, status = 400) =>
    reply.page('error', pageData(request, reply, { title: 'That did not work', message }), status)

  /** After a factor is added: the log, a mail, and with the first factor its recovery codes. */
  async function added(request: FastifyRequest, reply: FastifyReply, kind: FactorKind, name: string) {
    const user = request.web.user!
    await logPageEvent(request, 'factor_added', { kind: FACTOR_NAMES[kind], name })
    await tellPerson(request, user.email, `A second factor was added to your ${request.web.site.name} account`, [`The ${FACTOR_NAMES[kind]} "${name}" was added to your account ${user.email} on ${shownMoment(new Date(fastify.clock()))}.`])
    // The first factor comes with its recovery codes; a later one keeps the codes there are.
    if ((await secondFactors.recoveryCodesLeft(user.id)) > 0) return reply.redirect(`${profile(request)}?factor=${kind}`, 303)
    return recoveryPage(request, reply, await secondFactors.newRecoveryCodes(user.id), kind)
  }

  fastify.post('/profile/two_factor/totp', adding, async (request, reply) => {
    const name = nameIn(request.body)
    const user = request.web.user!
    try {
      const started = await secondFactors.startTotp(user.id, name, user.email, issuer(request))
      return enrollmentPage(request, reply, { ...started, name: name.trim() })
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return refused(request, reply, sentence(error.message))
    }
  })

  // A passkey: the page asks the browser to make one (views/assets/passkeys.js), then posts its answer.
  fastify.post('/profile/two_factor/passkey', adding, async (request, reply) => {
    const user = request.web.user!
    // The name is checked before the browser makes a passkey that could then not be kept.
    let name: string
    try {
      name = checkName(nameIn(request.body), 'passkey')
    } catch (error) {
      return refused(request, reply, sentence((error as StoreError).message))
    }
    const data = pageData(request, reply, { title: 'Add a passkey', name })
    const options = await registrationOptions(request, await secondFactors.passkeysOf(user.id))
    return reply.page('two_factor_passkey', { ...data, passkey: JSON.stringify(options) })
  })

  fastify.post('/profile/two_factor/passkey/register', adding, async (request, reply) => {
    const body = request.body as { passkey?: unknown } | undefined
    const credential = await registeredPasskey(request, body?.passkey)
    if (!credential) return refused(request, reply, 'The passkey could not be added: the browser did not answer, or its answer was not for this page. Try again.')
    try {
      const passkey = await secondFactors.addPasskey(request.web.user!.id, nameIn(request.body), credential)
      return added(request, reply, 'passkey', passkey.name)
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return refused(request, reply, sentence(error.message), error.code === 'conflict' ? 409 : 400)
    }
  })

  fastify.post('/profile/two_factor/totp/:id/confirm', adding, async (request, reply) => {
    const { id } = request.params as { id: string }
    const user = request.web.user!
    const factorId = wholeNumber(id, 16)
    const pending = factorId === undefined ? undefined : await secondFactors.pendingTotp(user.id, factorId, user.email, issuer(request))
    if (!pending) return notFoundPage(request, reply, { title: 'No such enrollment', message: 'There is no authenticator app of yours waiting for its first code here. Start adding it again.', back: PROFILE })
    const code = (request.body as { code?: unknown } | undefined)?.code
    if (!(await secondFactors.confirmTotp(user.id, pending.id, typeof code === 'string' ? code : ''))) {
      return enrollmentPage(request, reply, pending, 400, 'That code is not the current one of this app. Check the time of your phone, then enter the code it shows now.')
    }
    return added(request, reply, 'totp', pending.name)
  })

  fastify.post('/profile/two_factor/recovery_codes', change, async (request, reply) => {
    const user = request.web.user!
    if (!(await secondFactors.has(user.id))) return reply.redirect(profile(request), 303)
    return recoveryPage(request, reply, await secondFactors.newRecoveryCodes(user.id), null)
  })

  fastify.post('/profile/two_factor/:id/remove', change, async (request, reply) => {
    const { id } = request.params as { id: string }
    const factorId = wholeNumber(id, 16)
    const removed = factorId === undefined ? undefined : await secondFactors.remove(request.web.user!.id, factorId)
    if (!removed) return notFoundPage(request, reply, { title: 'No such second factor', message: 'There is no such second factor of yours. It may have been removed already.', back: PROFILE })
    await logPageEvent(request, 'factor_removed', { kind: FACTOR_NAMES[removed.kind], name: removed.name })
    await tellPerson(request, request.web.user!.email, `A second factor was removed from your ${request.web.site.name} account`, [`The ${FACTOR_NAMES[removed.kind]} "${removed.name}" was removed from your account ${request.web.user!.email} on ${shownMoment(new Date(fastify.clock()))}.`])
    return reply.redirect(`${profile(request)}?factor=removed`, 303)
  })
}

/** What the profile page shows of the person's second factors. */
export async function factorsOf(request: FastifyRequest) {
  const { secondFactors } = request.server
  const userId = request.web.user!.id
  const factors = await secondFactors.list(userId)
  return {
    factors: factors.map((factor) => ({ id: factor.id, name: factor.name, kind: FACTOR_NAMES[factor.kind], added: shownMoment(factor.createdAt), lastUsed: factor.lastUsedAt ? shownMoment(factor.lastUsedAt) : 'never' })),
    recoveryLeft: factors.length > 0 ? await secondFactors.recoveryCodesLeft(userId) : 0,
  }
}

export default secondFactorRoutes
