import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { actorOf } from '../actor.ts'
import { StoreError } from '../../db/stores/errors.ts'
import { SENDS_BY_HAND_PER_MINUTE } from '../../plugins/webhooks/delivery.ts'
import { webhookEvents } from '../../db/values.ts'
import { shownMoment } from '../../lib/clock.ts'
import { sentence } from '../api/discussions/http-errors.ts'
import { deliveryView, testData, webhookSettings, webhookView } from '../api/webhooks.ts'
import { eventsOf, type WebhookSettings } from '../../db/stores/webhooks.ts'
import { requireConfirmed } from './confirm.ts'
import { pageData, requireAdministrator } from './pages.ts'

// {site_url}/admin/webhooks: the site's webhooks for its administrators (docs/decisions.md,
// "Webhooks"), as the API's /<site>/webhooks has them (routes/api/webhooks.ts): each endpoint, on
// or off and why, since when it fails; adding one (its secret shown on the page that answers, this
// once, never in an address), and per endpoint its log of three days with "Send again", the test
// event, a new secret, switching it on or off, and removing it. An address refused (a private or
// loopback one) is said so on the form.

const adminWebhookRoutes: FastifyPluginAsync = async (fastify) => {
  const { urls, webhooks } = fastify
  const base = (request: FastifyRequest) => `${urls.siteWeb(request.web.site.permalink)}/admin/webhooks`
  const action = { preHandler: [fastify.csrfProtection, requireAdministrator, requireConfirmed('administration', '/admin/webhooks')] }
  const text = (body: unknown, name: string) => {
    const value = (body as Record<string, unknown> | undefined)?.[name]
    return typeof value === 'string' ? value.trim() : ''
  }
  /** The checked boxes of a form field: one value or several. */
  const checked = (body: unknown, name: string) => {
    const value = (body as Record<string, unknown> | undefined)?.[name]
    return (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v): v is string => typeof v === 'string')
  }

  async function listPage(request: FastifyRequest, reply: FastifyReply, status = 200, extra: Record<string, unknown> = {}) {
    const site = request.web.site
    const rows = (await webhooks.list(site.id)).map((w) => ({ ...webhookView(fastify, site.permalink, w), failing: w.failingSince && shownMoment(w.failingSince) }))
    const values = { url: '', description: '', events: ['discussion.created', 'comment.created'], internal: false }
    return reply.page('admin_webhooks', pageData(request, reply, { title: 'Webhooks', rows, events: webhookEvents, values, notice: null, error: null, secret: null, ...extra }), status)
  }

  /** The webhook of the address, or the list page saying there is none. */
  async function found(request: FastifyRequest, reply: FastifyReply) {
    const id = Number((request.params as { id: string }).id)
    try {
      if (!Number.isSafeInteger(id)) throw new StoreError(`this site has no webhook ${(request.params as { id: string }).id}`, 'not_found')
      return await webhooks.get(request.web.site.id, id)
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      await listPage(request, reply, 404, { error: sentence(error.message) })
      return undefined
    }
  }

  async function webhookPage(request: FastifyRequest, reply: FastifyReply, id: number, extra: Record<string, unknown> = {}, status = 200) {
    const site = request.web.site
    const webhook = webhookView(fastify, site.permalink, await webhooks.get(site.id, id))
    const deliveries = (await webhooks.deliveries(id)).map((d) => ({ ...deliveryView(webhook.href, d), at: shownMoment(d.attemptedAt) }))
    return reply.page('admin_webhook', pageData(request, reply, { title: 'Webhooks', webhook, deliveries, notice: null, secret: null, ...extra }), status)
  }

  fastify.get('/admin/webhooks', { preHandler: requireAdministrator }, (request, reply) => listPage(request, reply))

  fastify.post('/admin/webhooks', action, async (request, reply) => {
    const values = { url: text(request.body, 'url'), description: text(request.body, 'description'), events: checked(request.body, 'events'), internal: text(request.body, 'internal') === 'on' }
    try {
      const settings = webhookSettings(fastify, { url: values.url, events: values.events as Array<(typeof webhookEvents)[number]>, description: values.description, internal_comments: values.internal })
      const { webhook, secret } = await webhooks.add(request.web.site.id, settings as WebhookSettings, actorOf(request))
      return await webhookPage(request, reply, webhook.id, { secret, notice: `The webhook is added: ${webhook.url} is told of ${eventsOf(webhook).join(', ')}.` })
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      // A field's words complete its name; the limit's are a sentence of their own.
      const words = error.field ? `The ${error.field === 'events' ? 'events' : 'address'} ${error.message}.` : sentence(error.message)
      return listPage(request, reply, error.code === 'limit' ? 409 : 400, { values, error: words })
    }
  })

  fastify.get('/admin/webhooks/:id', { preHandler: requireAdministrator }, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    const { done } = request.query as { done?: unknown }
    const notices: Record<string, string> = { test: 'The test event is queued: its try shows below in a few seconds.', again: 'The event is queued again, with its id.', on: 'The webhook is on.', off: 'The webhook is off: nothing is posted to it.' }
    return webhookPage(request, reply, webhook.id, { notice: typeof done === 'string' ? (notices[done] ?? null) : null })
  })

  /** Whether a send by hand may go now (the endpoint's minute, shared with the API); when not, the answer says when to try again. */
  const paced = (reply: FastifyReply, id: number) => {
    const verdict = fastify.webhookSendByHand(id)
    if (!verdict.allowed) reply.header('retry-after', String(verdict.retryAfter))
    return verdict.allowed
  }
  const tooOften = `This webhook was sent ${SENDS_BY_HAND_PER_MINUTE} times by hand this minute: wait a minute, then try again.`

  const back = (request: FastifyRequest, reply: FastifyReply, id: number, done: string) => reply.redirect(`${base(request)}/${id}?done=${done}`, 303)

  fastify.post('/admin/webhooks/:id/test', action, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    if (!paced(reply, webhook.id)) return webhookPage(request, reply, webhook.id, { notice: tooOften }, 429)
    await webhooks.queueTest(request.web.site.id, webhook.id, testData(fastify, request.web.site.permalink, webhook))
    return back(request, reply, webhook.id, 'test')
  })

  fastify.post('/admin/webhooks/:id/switch', action, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    const on = text(request.body, 'to') === 'on'
    await webhooks.update(request.web.site.id, webhook.id, { enabled: on }, actorOf(request))
    return back(request, reply, webhook.id, on ? 'on' : 'off')
  })

  fastify.post('/admin/webhooks/:id/rotate', action, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    const { secret } = await webhooks.rotate(request.web.site.id, webhook.id, actorOf(request))
    return webhookPage(request, reply, webhook.id, { secret, notice: 'A new secret signs its events; the old one signs beside it for a day.' })
  })

  fastify.post('/admin/webhooks/:id/redeliver', action, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    const delivery = text(request.body, 'delivery')
    try {
      if (!/^[1-9]\d{0,9}$/.test(delivery)) throw new StoreError('name a delivery of the log to send again', 'invalid')
      if (!paced(reply, webhook.id)) return webhookPage(request, reply, webhook.id, { notice: tooOften }, 429)
      await webhooks.redeliver(request.web.site.id, webhook.id, Number(delivery))
    } catch (error) {
      if (!(error instanceof StoreError)) throw error
      return webhookPage(request, reply, webhook.id, { notice: sentence(error.message) })
    }
    return back(request, reply, webhook.id, 'again')
  })

  fastify.post('/admin/webhooks/:id/remove', action, async (request, reply) => {
    const webhook = await found(request, reply)
    if (!webhook) return reply
    await webhooks.remove(request.web.site.id, webhook.id, actorOf(request))
    return listPage(request, reply, 200, { notice: `The webhook to ${webhook.url} is removed, with its queued events and its log.` })
  })
}

export default adminWebhookRoutes
