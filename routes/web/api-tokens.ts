import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { DAY_MS, shownMoment } from '../../lib/clock.ts'
import { holdsNul } from '../../lib/nul.ts'
import { maskedToken } from '../../lib/token-format.ts'
import type { EngineEvents } from '../../db/engine.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { defaultExpiry, expiryChoices } from '../../db/stores/site-policy.ts'
import { DEFAULT_EXPIRY_DAYS, MAX_ACTIVE_TOKENS, MAX_TOKEN_NAME, tokenState, type ListedToken, type TokenAddress } from '../../db/stores/token-rules.ts'
import { tokenDetail } from '../../db/stores/security-log.ts'
import { authorizedApplications } from './oauth.ts'
import { requireConfirmed } from './confirm.ts'
import { logPageEvent, notFoundPage, pageData, requireSupporter } from './pages.ts'

// Tokens expiring this soon stand out in the list.
const SOON_DAYS = 7
// Forms already used to create a token: a reload re-posts the same form, and must not make a second
// token nor show the value again. Bounded; the oldest are forgotten first.
export const USED_FORMS_LIMIT = 10_000
// The events channel on which the processes of one database claim forms (db/engine.ts).
export const FORMS_CHANNEL = 'token_forms'
// How long a claim waits to come back through the channel before this process decides alone.
export const CLAIM_WAIT_MS = 1_000
// What a form id looks like: render() makes 22 characters of base64url; anything else is no id.
const FORM_ID = /^[\w-]{16,64}$/

interface CreateBody {
  name?: unknown
  access?: unknown
  expires?: unknown
  form_id?: unknown
}

const when = shownMoment

function describe(token: ListedToken, addresses: TokenAddress[], now: number) {
  const days = Math.ceil((token.expiresAt.getTime() - now) / DAY_MS)
  return {
    id: token.id,
    name: token.name,
    access: token.access === 'write' ? 'Read and write' : 'Read only',
    masked: maskedToken(token.lastFour),
    created: when(token.createdAt),
    lastUsed: token.lastUsedAt ? `${when(token.lastUsedAt)} from ${token.lastUsedFrom}` : 'never',
    // The last addresses it was used from, most recent first (the first is the last use's).
    addresses: addresses.map((use) => ({ address: use.address, when: when(use.lastUsedAt) })),
    expires: when(token.expiresAt),
    expiresIn: days <= 1 ? 'within a day' : `in ${days} days`,
    soon: days <= SOON_DAYS,
    unusable: tokenState(token, now) === 'unusable',
  }
}

/**
 * Which forms were used, held alike by every process on the database (docs/decisions.md, "Shared
 * between the processes"). A form is claimed before its token is made: the claim is published on
 * the database's events, which every process hears in one same order, its own claims included, so
 * when this process hears its claim back it has heard every earlier one, and the first claim of a
 * form wins everywhere, whichever process it reached. A failed creation gives the form back. When
 * the channel fails (or the claim is not back within CLAIM_WAIT_MS) the process decides alone.
 */
function usedForms(events: EngineEvents, onError: (error: unknown) => void) {
  const used = new Set<string>()
  // This process's claims not yet heard back, by claim id.
  const waiting = new Map<string, (won: boolean) => void>()
  /** Whether the form is still free, taking it if so. */
  function take(form: string) {
    if (used.has(form)) return false
    used.add(form)
    if (used.size > USED_FORMS_LIMIT) used.delete(used.values().next().value!)
    return true
  }

  // Every process hears every claim, in the same order: the first of a form takes it.
  function heard(payload: string) {
    let message: { claim?: unknown; release?: unknown; id?: unknown }
    try {
      message = Object(JSON.parse(payload))
    } catch {
      return
    }
    const { claim, release, id } = message
    if (typeof release === 'string') used.delete(release)
    else if (typeof claim === 'string' && typeof id === 'string') {
      const won = take(claim)
      waiting.get(id)?.(won)
    }
  }

  const publish = (message: object) => events.publish(FORMS_CHANNEL, JSON.stringify(message))

  return {
    listen: () => events.subscribe(FORMS_CHANNEL, heard),
    /** Whether this request may use the form: true for the first claim of it, on any process. */
    async claim(form: string): Promise<boolean> {
      if (used.has(form)) return false
      const id = randomBytes(12).toString('base64url')
      let timer: NodeJS.Timeout | undefined
      const decided = new Promise<boolean | undefined>((resolve) => {
        waiting.set(id, resolve)
        timer = setTimeout(() => resolve(undefined), CLAIM_WAIT_MS)
      })
      const settle = () => {
        clearTimeout(timer)
        waiting.delete(id)
      }
      try {
        await publish({ claim: form, id })
      } catch (error) {
        settle()
        onError(error)
        return take(form)
      }
      const won = await decided
      settle()
      // Not heard back in time (the connection broke after sending): decided here alone.
      return won ?? take(form)
    },
    /** Gives a claimed form back: its token was not made. */
    async release(form: string): Promise<void> {
      used.delete(form)
      await publish({ release: form }).catch(onError)
    },
  }
}

/** {site_url}/profile/api_tokens: create, list and revoke one's personal API tokens. */
const apiTokenRoutes: FastifyPluginAsync = async (fastify) => {
  const { tokens, urls, clock } = fastify
  const forms = usedForms(fastify.database.events, (error) => {
    fastify.log.warn({ err: error }, 'could not share a used token form with the other processes; this process decides alone')
  })
  await forms.listen().catch((error: unknown) => {
    fastify.log.warn({ err: error }, "could not hear the other processes' used token forms yet; trying again")
  })
  const pagePath = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/profile/api_tokens`

  async function activeTokens(request: FastifyRequest) {
    const now = clock()
    const active = (await tokens.listForSite(request.web.site.id, request.web.user!.id)).filter((token) =>
      ['active', 'unusable'].includes(tokenState(token, now)),
    )
    const addresses = await tokens.addresses(active.map((token) => token.id))
    return active.map((token) => describe(token, addresses.get(token.id) ?? [], now))
  }

  /** What the site's token policy lets the signed-in supporter create (db/stores/site-policy.ts). */
  function allowed(request: FastifyRequest) {
    const { site, user } = request.web
    return {
      expiryChoices: expiryChoices(site.tokenMaxDays),
      writeAllowed: site.writeTokens === 'everyone' || user!.administrator,
      maxDays: site.tokenMaxDays,
    }
  }

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, extra: Record<string, unknown> = {}) {
    const list = await activeTokens(request)
    const policy = allowed(request)
    const remaining = Math.max(0, MAX_ACTIVE_TOKENS - (await tokens.activeCount(request.web.user!.id)))
    return reply.page(
      'api_tokens',
      pageData(request, reply, {
        title: 'Personal API tokens',
        tokens: list,
        applications: await authorizedApplications(request),
        remaining,
        limit: MAX_ACTIVE_TOKENS,
        ...policy,
        maxName: MAX_TOKEN_NAME,
        formId: randomBytes(16).toString('base64url'),
        values: { name: '', access: 'read', expires: String(defaultExpiry(policy.maxDays, DEFAULT_EXPIRY_DAYS)) },
        errors: {},
        created: null,
        notice: null,
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/profile/api_tokens', { preHandler: requireSupporter }, async (request, reply) => {
    const query = request.query as { revoked?: unknown; app_revoked?: unknown }
    const notice =
      query.revoked === '1'
        ? 'The token was revoked. It no longer works.'
        : query.app_revoked === '1'
          ? "The application's access was revoked. Its tokens no longer work."
          : null
    return render(request, reply, 200, { notice })
  })

  // Creating a token asks for a recent sign-in or confirmation (routes/web/confirm.ts); revoking one does not.
  fastify.post('/profile/api_tokens', { preHandler: [fastify.csrfProtection, requireSupporter, requireConfirmed('token', '/profile/api_tokens')], config: { ownAccount: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as CreateBody
    const formId = typeof body.form_id === 'string' && FORM_ID.test(body.form_id) ? body.form_id : ''

    const values = {
      name: typeof body.name === 'string' ? body.name : '',
      access: body.access === 'write' ? 'write' : body.access === 'read' ? 'read' : '',
      expires: typeof body.expires === 'string' ? body.expires : '',
    }
    const errors: Record<string, string> = {}
    if (!values.access) errors.access = 'Choose Read only or Read and write.'
    const days = Number(values.expires)
    const { expiryChoices: choices, writeAllowed } = allowed(request)
    if (!choices.map(String).includes(values.expires)) {
      errors.expires = `Choose ${choices.join(', ')} days.`
    }
    if (values.access === 'write' && !writeAllowed) errors.access = "Only the site's administrators may create Read and write tokens here. Choose Read only."
    if (values.name.trim() === '') errors.name = 'Give the token a name that says what it is for.'
    else if (values.name.trim().length > MAX_TOKEN_NAME) errors.name = `Keep the name to ${MAX_TOKEN_NAME} characters at most.`
    else if (holdsNul(values.name)) errors.name = 'The name cannot contain the character U+0000 (NUL).'
    if (Object.keys(errors).length > 0) return render(request, reply, 400, { values, errors })
    // A form already used (a reload, a double click), here or on another process: show the list,
    // never a second value.
    if (formId && !(await forms.claim(formId))) return reply.redirect(pagePath(request), 303)

    let created: Awaited<ReturnType<typeof tokens.create>>
    try {
      created = await tokens.create({
        siteId: request.web.site.id,
        userId: request.web.user!.id,
        name: values.name,
        access: values.access as 'read' | 'write',
        expiresInDays: days,
      })
    } catch (error) {
      // No token was made: the same form may be sent again.
      if (formId) await forms.release(formId)
      // The form was checked above against the policy of this request's site, and the page is for
      // staff only: the limit is the one refusal left.
      if (!(error instanceof StoreError) || error.code !== 'limit') throw error
      const message = `You already have ${MAX_ACTIVE_TOKENS} active tokens, the most allowed. Revoke one you no longer use, then create the new one.`
      return render(request, reply, 409, { values, errors: { form: message } })
    }
    await logPageEvent(request, 'token_created', tokenDetail(created.token))
    return render(request, reply, 201, { created: { value: created.value, name: created.token.name } })
  })

  /** The signed-in supporter's own active token named by the path, or undefined. */
  const ownActiveToken = async (request: FastifyRequest) =>
    (await activeTokens(request)).find((token) => String(token.id) === (request.params as { id: string }).id)
  const noSuchToken = (request: FastifyRequest, reply: FastifyReply) =>
    notFoundPage(request, reply, {
      title: 'No such token',
      message: 'There is no such active token of yours on this site. It may have been revoked or have expired already.',
      back: { path: '/profile/api_tokens', label: 'Back to your API tokens' },
    })

  fastify.get('/profile/api_tokens/:id/revoke', { preHandler: requireSupporter }, async (request, reply) => {
    const token = await ownActiveToken(request)
    if (!token) return noSuchToken(request, reply)
    return reply.page('revoke', pageData(request, reply, { title: `Revoke ${token.name}`, token }))
  })

  fastify.post('/profile/api_tokens/:id/revoke', { preHandler: [fastify.csrfProtection, requireSupporter], config: { ownAccount: true } }, async (request, reply) => {
    const token = await ownActiveToken(request)
    if (!token) return noSuchToken(request, reply)
    const revoked = await tokens.revoke(request.web.site.id, token.id, request.web.user!.id)
    await logPageEvent(request, 'token_revoked', tokenDetail(revoked))
    return reply.redirect(`${pagePath(request)}?revoked=1`, 303)
  })
}

export default apiTokenRoutes
