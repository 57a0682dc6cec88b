import type { FastifyInstance, FastifyReply } from 'fastify'
import { actorOf } from '../actor.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static, type TSchema } from 'typebox'
import { webhookEvents } from '../../db/values.ts'
import type { Webhook, WebhookDelivery, WebhookSettings } from '../../db/stores/webhooks.ts'
import { eventsOf, TEST_EVENT } from '../../db/stores/webhooks.ts'
import { SENDS_BY_HAND_PER_MINUTE } from '../../plugins/webhooks/delivery.ts'
import { ErrorBody, InvalidRequestBody, SiteParams } from '../schemas.ts'
import { moment } from './discussions/views.ts'
import { administratorsOnly } from './administrators-only.ts'

// The site's webhooks through the API (docs/decisions.md, "Webhooks"), for its administrators as
// the administration page and `service-desk webhook` are: where its events are posted, which ones,
// the secret that signs them (shown at creation and rotation only), a test event, and the log of
// the last three days' tries with "send again".

const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })
const Moment = Type.String({ format: 'date-time' })
const EventName = Type.Enum(webhookEvents)

export const WebhookResource = Type.Object({
  id: Type.Integer(),
  url: Type.String({ format: 'uri', description: 'Where the events are posted.' }),
  description: Type.String(),
  events: Type.Array(EventName, { description: 'The events posted to it.' }),
  internal_comments: Type.Boolean({ description: 'Whether comment.created tells it of internal notes too.' }),
  enabled: Type.Boolean({ description: 'False: nothing is posted to it (switched off by an administrator, or after failing for days).' }),
  disabled_reason: Nullable(Type.String(), 'Why it was switched off, when the service did it.'),
  failing_since: Nullable(Moment, 'Since when every delivery to it has failed; null when the last one succeeded.'),
  previous_secret_until: Nullable(Moment, 'After a rotation, until when the secret it replaced still signs beside the new one.'),
  created_at: Moment,
  updated_at: Moment,
  href: Type.String({ format: 'uri', description: 'PATCH changes it, DELETE removes it.' }),
  deliveries_href: Type.String({ format: 'uri', description: 'The log of its tries, three days.' }),
})

export const WebhookWithSecret = Type.Intersect([
  WebhookResource,
  Type.Object({ secret: Type.String({ description: 'The signing secret (whsec_...), shown this once: keep it where the receiver checks signatures.' }) }),
])

const Settings = {
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'An https (or http) address of a public host; private ranges only where the operator allows them (SERVICE_WEBHOOK_ALLOW).' }),
  description: Type.String({ maxLength: 200 }),
  events: Type.Array(EventName, { minItems: 1, maxItems: webhookEvents.length, uniqueItems: true, description: 'The events to post to it.' }),
  internal_comments: Type.Boolean({ description: 'Tell comment.created of internal notes too (off by default).' }),
  enabled: Type.Boolean(),
}

export const NewWebhook = Type.Object({
  url: Settings.url,
  events: Settings.events,
  description: Type.Optional(Settings.description),
  internal_comments: Type.Optional(Settings.internal_comments),
  enabled: Type.Optional(Settings.enabled),
})

export const WebhookChange = Type.Object({
  url: Type.Optional(Settings.url),
  events: Type.Optional(Settings.events),
  description: Type.Optional(Settings.description),
  internal_comments: Type.Optional(Settings.internal_comments),
  enabled: Type.Optional(Type.Boolean({ description: 'true switches it back on, forgetting why it was switched off.' })),
}, { minProperties: 1 })

export const DeliveryResource = Type.Object({
  id: Type.Integer(),
  event_id: Type.String({ description: 'The webhook-id header of the try: the same on every try of one event.' }),
  event_type: Type.String({ description: `One of the events, or ${TEST_EVENT}.` }),
  attempted_at: Moment,
  status: Nullable(Type.Integer(), 'The HTTP status of the answer; null when none came (refused, timed out, unreachable).'),
  duration_ms: Type.Integer(),
  answer: Type.String({ description: 'The first 500 characters of the answer.' }),
  error: Nullable(Type.String(), 'Why the try failed; null when it delivered.'),
  redeliver_href: Type.String({ format: 'uri', description: 'POST sends the event again, with its id.' }),
})

export const Queued = Type.Object({ event_id: Type.String({ description: 'The webhook-id of the event queued.' }) })
export const WebhookListing = Type.Object({ webhooks: Type.Array(WebhookResource) })
export const DeliveryListing = Type.Object({ deliveries: Type.Array(DeliveryResource) })
const WebhookParams = Type.Object({ site: SiteParams.properties.site, id: Type.Integer({ minimum: 1, description: 'The webhook id.' }) })
const DeliveryParams = Type.Object({ ...WebhookParams.properties, delivery: Type.Integer({ minimum: 1, description: 'The delivery id.' }) })

/** An endpoint as the API and the page show it (never its secret). */
export function webhookView(fastify: Pick<FastifyInstance, 'urls' | 'clock'>, permalink: string, webhook: Webhook): Static<typeof WebhookResource> {
  const href = `${fastify.urls.site(permalink)}/webhooks/${webhook.id}`
  const at = (date: Date | null) => date && moment(date)
  return {
    id: webhook.id,
    url: webhook.url,
    description: webhook.description,
    events: eventsOf(webhook),
    internal_comments: webhook.internalComments,
    enabled: webhook.enabled,
    disabled_reason: webhook.disabledReason,
    failing_since: at(webhook.failingSince),
    previous_secret_until: webhook.previousUntil && webhook.previousUntil.getTime() > fastify.clock() ? moment(webhook.previousUntil) : null,
    created_at: moment(webhook.createdAt),
    updated_at: moment(webhook.updatedAt),
    href,
    deliveries_href: `${href}/deliveries`,
  }
}

export function deliveryView(webhookHref: string, delivery: WebhookDelivery): Static<typeof DeliveryResource> {
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    attempted_at: moment(delivery.attemptedAt),
    status: delivery.status,
    duration_ms: delivery.durationMs,
    answer: delivery.answer,
    error: delivery.error,
    redeliver_href: `${webhookHref}/deliveries/${delivery.id}/redeliver`,
  }
}

/** The settings of a request or a form, its address checked (plugins/webhooks/delivery.ts). */
export function webhookSettings(fastify: FastifyInstance, body: Partial<Static<typeof NewWebhook>>): Partial<WebhookSettings> {
  return {
    ...(body.url !== undefined && { url: fastify.webhookUrl(body.url) }),
    ...(body.events !== undefined && { events: body.events }),
    ...(body.description !== undefined && { description: body.description }),
    ...(body.internal_comments !== undefined && { internalComments: body.internal_comments }),
    ...(body.enabled !== undefined && { enabled: body.enabled }),
  }
}

/** What the test event carries: the endpoint as the API shows it (the command line gives its own URLs and clock). */
export const testData = (fastify: Pick<FastifyInstance, 'urls' | 'clock'>, permalink: string, webhook: Webhook) => ({ webhook: webhookView(fastify, permalink, webhook) })

const webhookRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { webhooks } = fastify
  administratorsOnly(fastify, 'its webhooks', { strict: true })
  const tags = ['webhooks']
  const errors = { 400: InvalidRequestBody, 404: ErrorBody }

  fastify.get(
    '/:site/webhooks',
    { schema: { tags, operationId: 'listWebhooks', summary: "The site's webhooks: where its events are posted", params: SiteParams, response: { 200: WebhookListing, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      return { webhooks: (await webhooks.list(site.id)).map((webhook) => webhookView(fastify, site.permalink, webhook)) }
    },
  )

  fastify.post(
    '/:site/webhooks',
    {
      schema: {
        tags,
        operationId: 'addWebhook',
        summary: 'Post the events named to an address; the answer holds the signing secret, shown this once',
        params: SiteParams,
        body: NewWebhook,
        response: { 201: WebhookWithSecret, ...errors, 429: ErrorBody },
      },
    },
    async (request, reply) => {
      const { site } = request.auth!
      const { webhook, secret } = await webhooks.add(site.id, webhookSettings(fastify, request.body) as WebhookSettings, actorOf(request))
      const resource = webhookView(fastify, site.permalink, webhook)
      return reply.code(201).header('location', resource.href).send({ ...resource, secret })
    },
  )

  fastify.get(
    '/:site/webhooks/:id',
    { schema: { tags, operationId: 'getWebhook', summary: 'A webhook', params: WebhookParams, response: { 200: WebhookResource, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      return webhookView(fastify, site.permalink, await webhooks.get(site.id, request.params.id))
    },
  )

  fastify.patch(
    '/:site/webhooks/:id',
    { schema: { tags, operationId: 'changeWebhook', summary: 'Change what is given: address, events, description, internal notes, switched on or off', params: WebhookParams, body: WebhookChange, response: { 200: WebhookResource, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      return webhookView(fastify, site.permalink, await webhooks.update(site.id, request.params.id, webhookSettings(fastify, request.body), actorOf(request)))
    },
  )

  fastify.delete(
    '/:site/webhooks/:id',
    { schema: { tags, operationId: 'removeWebhook', summary: 'Remove a webhook, its queued events and its log', params: WebhookParams, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      const { site } = request.auth!
      if (!(await webhooks.remove(site.id, request.params.id, actorOf(request)))) throw Object.assign(new Error(`This site has no webhook ${request.params.id}.`), { statusCode: 404, code: 'not_found' })
      return reply.code(204).send(null)
    },
  )

  fastify.post(
    '/:site/webhooks/:id/rotate',
    {
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'A new signing secret, shown this once; the old one signs beside it for a day',
        params: WebhookParams,
        response: { 200: WebhookWithSecret, ...errors },
      },
    },
    async (request) => {
      const { site } = request.auth!
      const { webhook, secret } = await webhooks.rotate(site.id, request.params.id, actorOf(request))
      return { ...webhookView(fastify, site.permalink, webhook), secret }
    },
  )

  /** A send by hand, queued while the endpoint's minute allows it (202), else 429 with when to try again. */
  async function byHand(reply: FastifyReply, webhookId: number, queue: () => Promise<string>) {
    const paced = fastify.webhookSendByHand(webhookId)
    if (!paced.allowed) {
      return reply
        .code(429)
        .header('retry-after', String(paced.retryAfter))
        .send({ error: 'rate_limited', message: `This webhook was sent ${SENDS_BY_HAND_PER_MINUTE} times by hand this minute. Try again in ${paced.retryAfter} seconds.` })
    }
    return reply.code(202).send({ event_id: await queue() })
  }

  fastify.post(
    '/:site/webhooks/:id/test',
    { schema: { tags, operationId: 'testWebhook', summary: `Send the test event (${TEST_EVENT}) now, switched on or off (at most ${SENDS_BY_HAND_PER_MINUTE} sends by hand a minute)`, params: WebhookParams, response: { 202: Queued, ...errors, 429: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const webhook = await webhooks.get(site.id, request.params.id)
      return byHand(reply as FastifyReply, webhook.id, () => webhooks.queueTest(site.id, webhook.id, testData(fastify, site.permalink, webhook)))
    },
  )

  fastify.get(
    '/:site/webhooks/:id/deliveries',
    { schema: { tags, operationId: 'listWebhookDeliveries', summary: 'The tries of the last three days, newest first (at most 100)', params: WebhookParams, response: { 200: DeliveryListing, ...errors } } },
    async (request) => {
      const { site } = request.auth!
      const webhook = await webhooks.get(site.id, request.params.id)
      const href = webhookView(fastify, site.permalink, webhook).href
      return { deliveries: (await webhooks.deliveries(webhook.id)).map((delivery) => deliveryView(href, delivery)) }
    },
  )

  fastify.post(
    '/:site/webhooks/:id/deliveries/:delivery/redeliver',
    { schema: { tags, operationId: 'redeliverWebhook', summary: `Send the event of a try again, now, with the same webhook-id (at most ${SENDS_BY_HAND_PER_MINUTE} sends by hand a minute)`, params: DeliveryParams, response: { 202: Queued, ...errors, 429: ErrorBody } } },
    async (request, reply) => {
      const { site } = request.auth!
      const webhook = await webhooks.get(site.id, request.params.id)
      return byHand(reply as FastifyReply, webhook.id, () => webhooks.redeliver(site.id, webhook.id, request.params.delivery))
    },
  )
}

export default webhookRoutes
