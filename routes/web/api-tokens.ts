import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { createBoundedSet } from '../../lib/bounded-set.ts'
import { DAY_MS } from '../../lib/clock.ts'
import { maskedToken } from '../../lib/token-format.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { DEFAULT_EXPIRY_DAYS, EXPIRY_DAYS, MAX_ACTIVE_TOKENS, MAX_TOKEN_NAME, tokenState, type ListedToken } from '../../db/stores/tokens.ts'
import { pageData, requireSupporter } from './pages.ts'

// Tokens expiring this soon stand out in the list.
const SOON_DAYS = 7
// Forms already used to create a token: a reload re-posts the same form, and must not make a second
// token nor show the value again. Bounded; the oldest are forgotten first.
const USED_FORMS_LIMIT = 10_000

interface CreateBody {
  name?: unknown
  access?: unknown
  expires?: unknown
  form_id?: unknown
}

const when = (date: Date) => date.toISOString().slice(0, 16).replace('T', ' ') + ' UTC'

function describe(token: ListedToken, now: number) {
  const days = Math.ceil((token.expiresAt.getTime() - now) / DAY_MS)
  return {
    id: token.id,
    name: token.name,
    access: token.access === 'write' ? 'Read and write' : 'Read only',
    masked: maskedToken(token.lastFour),
    created: when(token.createdAt),
    lastUsed: token.lastUsedAt ? `${when(token.lastUsedAt)} from ${token.lastUsedFrom}` : 'never',
    expires: when(token.expiresAt),
    expiresIn: days <= 1 ? 'within a day' : `in ${days} days`,
    soon: days <= SOON_DAYS,
    unusable: tokenState(token, now) === 'unusable',
  }
}

/** {site_url}/profile/api_tokens: create, list and revoke one's personal API tokens. */
const apiTokenRoutes: FastifyPluginAsync = async (fastify) => {
  const { tokens, urls, clock } = fastify
  const usedForms = createBoundedSet<string>(USED_FORMS_LIMIT)
  const pagePath = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/profile/api_tokens`

  async function activeTokens(request: FastifyRequest) {
    const now = clock()
    return (await tokens.listForSite(request.web.site.id, request.web.user!.id))
      .filter((token) => ['active', 'unusable'].includes(tokenState(token, now)))
      .map((token) => describe(token, now))
  }

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, extra: Record<string, unknown> = {}) {
    const list = await activeTokens(request)
    const remaining = Math.max(0, MAX_ACTIVE_TOKENS - (await tokens.activeCount(request.web.user!.id)))
    return reply.page(
      'api_tokens',
      pageData(request, reply, {
        title: 'Personal API tokens',
        tokens: list,
        remaining,
        limit: MAX_ACTIVE_TOKENS,
        expiryChoices: EXPIRY_DAYS,
        maxName: MAX_TOKEN_NAME,
        formId: randomBytes(16).toString('base64url'),
        values: { name: '', access: 'read', expires: String(DEFAULT_EXPIRY_DAYS) },
        errors: {},
        created: null,
        notice: null,
        ...extra,
      }),
      status,
    )
  }

  fastify.get('/profile/api_tokens', { preHandler: requireSupporter }, async (request, reply) => {
    const notice = (request.query as { revoked?: unknown }).revoked === '1' ? 'The token was revoked. It no longer works.' : null
    return render(request, reply, 200, { notice })
  })

  fastify.post('/profile/api_tokens', { preHandler: [fastify.csrfProtection, requireSupporter] }, async (request, reply) => {
    const body = (request.body ?? {}) as CreateBody
    const formId = typeof body.form_id === 'string' ? body.form_id : ''
    // A form already used (a reload, a double click): show the list, never a second value.
    if (usedForms.has(formId)) return reply.redirect(pagePath(request), 303)

    const values = {
      name: typeof body.name === 'string' ? body.name : '',
      access: body.access === 'write' ? 'write' : body.access === 'read' ? 'read' : '',
      expires: typeof body.expires === 'string' ? body.expires : '',
    }
    const errors: Record<string, string> = {}
    if (!values.access) errors.access = 'Choose Read only or Read and write.'
    const days = Number(values.expires)
    if (!EXPIRY_DAYS.map(String).includes(values.expires)) {
      errors.expires = `Choose ${EXPIRY_DAYS.join(', ')} days.`
    }
    if (values.name.trim() === '') errors.name = 'Give the token a name that says what it is for.'
    else if (values.name.trim().length > MAX_TOKEN_NAME) errors.name = `Keep the name to ${MAX_TOKEN_NAME} characters at most.`
    if (Object.keys(errors).length > 0) return render(request, reply, 400, { values, errors })

    try {
      const { value, token } = await tokens.create({
        siteId: request.web.site.id,
        userId: request.web.user!.id,
        name: values.name,
        access: values.access as 'read' | 'write',
        expiresInDays: days,
      })
      if (formId) usedForms.add(formId)
      return render(request, reply, 201, { created: { value, name: token.name } })
    } catch (error) {
      // The form was checked above and the page is for staff only: the limit is the one refusal left.
      if (!(error instanceof StoreError) || error.code !== 'limit') throw error
      const message = `You already have ${MAX_ACTIVE_TOKENS} active tokens, the most allowed. Revoke one you no longer use, then create the new one.`
      return render(request, reply, 409, { values, errors: { form: message } })
    }
  })

  /** The signed-in supporter's own active token named by the path, or undefined. */
  const ownActiveToken = async (request: FastifyRequest) =>
    (await activeTokens(request)).find((token) => String(token.id) === (request.params as { id: string }).id)
  const noSuchToken = (request: FastifyRequest, reply: FastifyReply) =>
    reply.page('not_found', pageData(request, reply, { title: 'No such token' }), 404)

  fastify.get('/profile/api_tokens/:id/revoke', { preHandler: requireSupporter }, async (request, reply) => {
    const token = await ownActiveToken(request)
    if (!token) return noSuchToken(request, reply)
    return reply.page('revoke', pageData(request, reply, { title: `Revoke ${token.name}`, token }))
  })

  fastify.post('/profile/api_tokens/:id/revoke', { preHandler: [fastify.csrfProtection, requireSupporter] }, async (request, reply) => {
    const token = await ownActiveToken(request)
    if (!token) return noSuchToken(request, reply)
    await tokens.revoke(request.web.site.id, token.id, request.web.user!.id)
    return reply.redirect(`${pagePath(request)}?revoked=1`, 303)
  })
}

export default apiTokenRoutes
